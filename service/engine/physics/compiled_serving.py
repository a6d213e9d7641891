"""An inference estimate's split loop, compiled (numba): for one GPU count, every model split
that fits is given its batch (the largest meeting the latency limits, the throughput-best
batch below it, the batch the offered load settles at) and the best split is kept.

``estimate._estimate_inference`` asks, for each count of a GPU type, each fitting split's
limit batch (:func:`serving.largest_meeting`), capacity batch
(:meth:`serving.Context.capacity_batch`: ~30 requests/s figures), capacity, operating batch
(:func:`estimate.operating_batch`: ~20 more) and keeps the split with the most capacity (the
lowest latency in latency mode). In Python that is ~10 calls per split, each crossing into a
compiled serving search and back; the crossings, dict memos and list building cost several
times the arithmetic. Here the whole loop over a count's splits is one compiled call
(:func:`split_plan`), reading the splits' packed serving models (:class:`compiled.Packed`)
stacked in one table per context (:class:`SplitTable`), whose limit and capacity batches are
memoized in arrays across the counts of the GPU type, as the context's dicts memoize them.

Every operation is the reference's, in the same order, in IEEE doubles (the settings of
:mod:`compiled`): the same batches and the same split come out, bit for bit. Dense
transformers only (a MoE layer's expert coverage is numpy's power in the reference's
requests/s, :func:`compiled.requests_per_s`); MoE models and CNNs keep the Python loop, which
stays the reference: ``tests/unit/test_compiled_serving.py`` compares the two on random
serving workloads over every catalog GPU and count, and the differential test checks the
answers.

Units: requests/s; batches in sequences (decoders) or samples (encoders).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from service.engine.physics.batched import Array
from service.engine.physics.compiled import (
    _DECODER,
    _MAX_LATENCY,
    _MAX_TPOT,
    _MAX_TTFT,
    _OUTPUT_TOKENS,
    _PARAMS,
    _PP,
    _TILE_TABLES,
    _TP,
    _jit,
    _largest_meeting,
    _timing,
    _total,
    rate,
)

if TYPE_CHECKING:  # pragma: no cover
    from service.engine.physics.serving import Context

Ints = NDArray[np.int64]
_NONE, _UNKNOWN = -1, -2
"""Capacity batch memo: no batch meets the limits; not computed yet."""
_GRID_ROOM = 128
"""Room for a batch grid: log(1024) / log(1.25) ~ 31 batches, plus the top step's."""


@_jit
def _grid(top: int, step: float, out: Ints, start: int) -> int:
    """:func:`serving.batch_grid` of ``top`` with batch 1, ascending, written from
    ``out[start]``; returns the end. The grid's values come out non-increasing (``x`` falls),
    so reversing them and dropping repeats sorts the set."""
    desc = np.empty(_GRID_ROOM, np.int64)
    desc[0] = top
    k = 1
    x = float(top)
    while x > 1.0:
        x /= step
        desc[k] = max(1, int(x))
        k += 1
    if desc[k - 1] != 1:
        desc[k] = 1
        k += 1
    end = start
    for i in range(k - 1, -1, -1):
        if end == start or out[end - 1] != desc[i]:
            out[end] = desc[i]
            end += 1
    return end


_SKIP_SLACK = 1e-9
"""Relative margin of the batch skips below (rounding of the rates, ~1e-16, is far inside)."""


@_jit
def _skip_to(b: int, r: float, value: float) -> float:
    """The least batch that can reach ``value`` requests/s, given batch ``b`` reaches ``r``.

    A replica's cycle (the iterations in which its batch completes) never gets shorter as the
    batch grows: every GEMM's tile waves, its bytes, attention, the KV read and the
    collectives grow with the rows (tile and wave quantization make requests/s per batch
    wiggle, never the cycle fall). So at any batch ``b' >= b`` the rate ``b' / cycle(b')`` is at
    most ``b' x r / b``, and a batch below ``value x b / r`` cannot reach ``value``: the scans
    below skip those batches untimed, which leaves their answers exactly the full scans'
    (:meth:`serving.Context.capacity_batch`, :func:`estimate.operating_batch`)."""
    if r <= 0.0:
        return float(b + 1)
    return value * b / r * (1.0 - _SKIP_SLACK)


@_jit
def _capacity(p: Array, g: Array, top: int, step: float) -> int:
    """:meth:`serving.Context.capacity_batch`'s search below ``top`` (>= 1): every batch of the
    top grid step and the grid below it; the first with the most requests/s. The top batch is
    timed first; a batch that cannot reach the best rate timed so far (:func:`_skip_to`) is
    skipped."""
    floor = max(1, int(math.ceil(top / step)))
    batches = np.empty(top - floor + 1 + _GRID_ROOM, np.int64)
    end = _grid(floor, step, batches, 0)
    for b in range(floor + 1, top + 1):
        batches[end] = b
        end += 1
    at = end - 1
    best = rate(p, g, float(batches[at]), 1.0, 1.0)
    i = 0
    while i < at:
        b = batches[i]
        r = rate(p, g, float(b), 1.0, 1.0)
        if r >= best:  # the first of equal rates: every earlier one was below
            best, at = r, i
            break
        bound = _skip_to(b, r, best)
        i += 1
        while i < at and batches[i] < bound:
            i += 1
    # past the first batch at the best rate so far, only a strictly higher rate moves it (the
    # top batch, timed first, is not timed again)
    i = at + 1
    while i < end - 1:
        b = batches[i]
        r = rate(p, g, float(b), 1.0, 1.0)
        if r > best:
            best, at = r, i
        bound = _skip_to(b, r, best)
        i += 1
        while i < end - 1 and batches[i] < bound:
            i += 1
    found: int = batches[at]
    return found


@_jit
def _operating(p: Array, g: Array, capacity_batch: int, load: float, step: float) -> int:
    """:func:`estimate.operating_batch`: the least batch covering ``load`` requests/s above
    the last grid batch that does not. Batches that cannot cover it (:func:`_skip_to`) are
    skipped untimed, grid batches included (they count as not covering)."""
    if capacity_batch <= 1:
        return 1
    need = load * (1 - 1e-9)
    grid = np.empty(_GRID_ROOM, np.int64)
    end = _grid(capacity_batch, step, grid, 0)
    r = rate(p, g, float(grid[0]), 1.0, 1.0)
    if r >= need:
        return 1
    bound = _skip_to(grid[0], r, need)
    below = 1
    for i in range(1, end):
        top = grid[i]
        if top < bound:
            below = top
            continue
        r = rate(p, g, float(top), 1.0, 1.0)
        if r >= need:
            b = below + 1
            while b < top:
                rb = rate(p, g, float(b), 1.0, 1.0)
                if rb >= need:
                    return b
                b = max(b + 1, int(math.ceil(_skip_to(b, rb, need))))
            found: int = top
            return found
        bound = _skip_to(top, r, need)
        below = top
    return capacity_batch


@_jit
def _copies(target: float, capacity: float) -> int:
    """:func:`estimate.copies_needed` (``target`` > 0)."""
    if capacity <= 0.0:
        return 1
    return max(1, int(math.ceil(target / capacity - 1e-9)))


@_jit
def _latency_ms(p: Array, g: Array, b: int) -> float:
    """:func:`serving.latencies`' end-to-end latency [ms] at batch ``b``."""
    prefill, _, tpot, _ = _timing(p, g, float(b))
    ttft = _total(prefill) * 1e3
    if p[_DECODER] > 0.0:
        latency: float = ttft + p[_OUTPUT_TOKENS] * (_total(tpot) * 1e3)
        return latency
    return ttft


@_jit
def least_latency_ms(params: Array, gemms: Array, rows: Ints, b: int) -> float:
    """The least :func:`_latency_ms` at batch ``b`` over the table rows ``rows``."""
    best = math.inf
    for j in range(rows.shape[0]):
        i = rows[j]
        value = _latency_ms(params[i], gemms[i], b)
        if value < best:
            best = value
    return best


@_jit
def split_plan(
    params: Array, gemms: Array, caps: Ints, limits: Ints, capacities: Ints, order: Ints,
    n: int, target: float, fixed: int, latency_mode: bool, top_auto: int, step: float,
    near: float, tie: float,
) -> tuple[int, int, int, int]:
    """``estimate._estimate_inference``'s loop over the splits ``order`` (table rows of the
    splits of ``n`` GPUs that fit, in the context's order): (the row kept or -1, its capacity
    batch, the batch it runs at under the load, replicas in the group). ``target``: requests/s
    (0: none); ``fixed``: the request's batch size (0: none); ``limits`` and ``capacities``:
    the table's memos (-1 / :data:`_UNKNOWN` where not computed yet), filled here."""
    found, cap_b, load_b, group = -1, 0, 0, 1
    best = math.inf if latency_mode else -math.inf
    was_padded = True
    for j in range(order.shape[0]):
        i = order[j]
        p, g = params[i], gemms[i]
        if fixed > 0:
            batch = fixed
        else:
            if limits[i] < 0:
                limits[i] = _largest_meeting(p, g, max(1, caps[i]), near)
            limit = limits[i]
            if latency_mode and not target > 0.0:
                batch = 1 if limit >= 1 else 0
            else:
                if capacities[i] == _UNKNOWN:
                    # serving.clamp_batch of the limit batch and the memory / runtime cap
                    hi = max(1, min(caps[i], top_auto))
                    top = hi if hi <= limit else limit
                    capacities[i] = _capacity(p, g, top, step) if top > 0 else _NONE
                batch = capacities[i] if capacities[i] > 0 else 0
        if batch <= 0:
            continue
        in_group = max(1, n // (int(p[_TP]) * int(p[_PP])))
        capacity = rate(p, g, float(batch), 1.0, 1.0) * in_group
        load = batch
        padded = False
        if target > 0.0 and fixed <= 0:
            per_replica = target / (_copies(target, capacity) * in_group)
            load = _operating(p, g, batch, per_replica, step)
            padded = in_group > 1 and _copies(target, capacity / in_group) < in_group
        if padded and not was_padded:
            continue
        if latency_mode:
            value = _latency_ms(p, g, load)
            better = value * tie < best
        else:
            value = capacity
            better = value > best * tie
        if better or (was_padded and not padded):
            best, found, cap_b, load_b, group = value, i, batch, load, in_group
            was_padded = padded
    return found, cap_b, load_b, group


@_jit
def point_figures(p: Array, g: Array, cap_b: int, load_b: int, replicas: int) -> tuple[
        float, float, float, float, bool]:
    """``estimate._point``'s figures of a split's row: (requests/s of ``replicas`` copies at
    the capacity batch ``cap_b``; TTFT, TPOT (NaN: an encoder's) and end-to-end latency [ms]
    at ``load_b``; whether those meet the row's latency limits), as :func:`serving.
    requests_per_s`, :func:`serving.latencies` and :func:`serving.meets` give them from the
    two :class:`serving.Timing` (the same floats: :func:`compiled.rate` is
    :func:`serving.requests_per_s` of one replica, and a dense row's expert coverage is 1)."""
    requests_s = rate(p, g, float(cap_b), 1.0, 1.0) * replicas
    prefill, _, tpot_phase, _ = _timing(p, g, float(load_b))
    ttft = _total(prefill) * 1e3
    if p[_DECODER] > 0.0:
        tpot = _total(tpot_phase) * 1e3
        latency = ttft + p[_OUTPUT_TOKENS] * tpot
    else:
        tpot = math.nan
        latency = ttft
    ok = True
    for value, limit in ((ttft, p[_MAX_TTFT]), (tpot, p[_MAX_TPOT]),
                         (latency, p[_MAX_LATENCY])):
        if not math.isnan(limit) and not math.isnan(value):
            ok = ok and not value > limit
    return requests_s, ttft, tpot, latency, ok


@_jit
def split_point(
    params: Array, gemms: Array, caps: Ints, limits: Ints, capacities: Ints, order: Ints,
    n: int, target: float, fixed: int, latency_mode: bool, top_auto: int, step: float,
    near: float, tie: float, min_batch: int,
) -> tuple[int, int, int, int, int, float, float, float, float, bool]:
    """:func:`split_plan` (``order`` not empty) and the chosen row's :func:`point_figures` in
    one call: (the row kept or -1, the row timed, its capacity batch, its batch at the load,
    replicas in the group, then the point's requests/s, TTFT, TPOT, latency and whether they
    meet the limits). Where no split has a batch (-1), the row timed is the first fitting
    split (``order[0]``) at ``min_batch`` for both batches, as ``estimate.serving_point``
    times it."""
    found, cap_b, load_b, group = split_plan(params, gemms, caps, limits, capacities, order, n,
                                             target, fixed, latency_mode, top_auto, step,
                                             near, tie)
    row = found
    if found < 0:
        row, cap_b, load_b = order[0], min_batch, min_batch
        group = max(1, n // (int(params[row, _TP]) * int(params[row, _PP])))
    requests_s, ttft, tpot, latency, ok = point_figures(params[row], gemms[row], cap_b,
                                                        load_b, group)
    return found, row, cap_b, load_b, group, requests_s, ttft, tpot, latency, ok


@_jit
def padded_plan(params: Array, gemms: Array, capacities: Ints, rows: Ints, n: int,
                target: float) -> bool:
    """Whether :func:`split_plan` of ``n`` GPUs over the splits ``rows`` (throughput mode,
    ``target`` > 0 requests/s, no fixed batch) keeps a padded split, read off the capacity
    batches memoized at other counts alone: True only where every row's capacity batch is
    known (a split's capacity batch does not depend on the count), at least one row has a
    batch, and each row with a batch holds more replicas than ``target`` needs (split_plan's
    ``padded``, the same floats). The plan keeps a padded split only where no split with a
    batch is unpadded. False: not padded, or not known without the search."""
    found = False
    for j in range(rows.shape[0]):
        i = rows[j]
        batch = capacities[i]
        if batch == _UNKNOWN:
            return False
        if batch <= 0:
            continue
        p = params[i]
        in_group = max(1, n // (int(p[_TP]) * int(p[_PP])))
        capacity = rate(p, gemms[i], float(batch), 1.0, 1.0) * in_group
        # a replica completing nothing reads as padded here but not in the figures
        # (estimate.more_replicas_than_needed): not told apart, so not known
        if not (in_group > 1 and capacity > 0.0
                and _copies(target, capacity / in_group) < in_group):
            return False
        found = True
    return found


Base = tuple[Array, Array, float, float]
"""A split's packed serving model as a stack keeps it: (figures, GEMM table, activation bytes
per element, one token's KV cache bytes)."""


class SplitStack:
    """The packed serving models of one context's splits (model, GPU, rate, runtime,
    precisions, whether it decodes: :meth:`serving.Context.split_stack`), stacked: one row
    per split, in the order first asked over the requests, with the figures that depend on
    the request's lengths and limits left as packed. Kept across requests in the shared
    cache and never written once published (a split table reads its GEMM tables in place and
    copies its figures): a new split makes a new stack, the rows there kept in their rows, and
    that one replaces it (:meth:`with_rows`)."""

    __slots__ = ("rows", "splits", "params", "gemms", "entries")

    def __init__(self, splits: tuple[tuple[int, int], ...], params: Array, gemms: Array,
                 entries: tuple[tuple[int, float, float], ...]) -> None:
        self.splits = splits
        """Row -> split (tp, pp)."""
        self.rows = {s: i for i, s in enumerate(splits)}
        self.params, self.gemms = params, gemms
        self.entries = entries
        """Row -> (TP degree, activation bytes per element, one token's KV cache bytes):
        what the request's entries of the row depend on."""

    def with_rows(self, splits: list[tuple[int, int]], bases: list[Base]) -> SplitStack:
        """This stack and rows for ``splits`` (not in it) after its own: a new stack."""
        width, (rows, cols) = len(bases[0][0]), bases[0][1].shape
        used, size = len(self.splits), len(self.splits) + len(splits)
        params, gemms = np.empty((size, width)), np.empty((size, rows, cols))
        if used:
            params[:used], gemms[:used] = self.params, self.gemms
        for k, (p, g, _, _) in enumerate(bases):
            params[used + k], gemms[used + k] = p, g
        return SplitStack(self.splits + tuple(splits), params, gemms, self.entries + tuple(
            (tp, b[2], b[3]) for (tp, _), b in zip(splits, bases, strict=True)))


class SplitTable:
    """A context's splits as :func:`split_plan` reads them: the rows of its
    :class:`SplitStack` (the GEMM tables read in place; the figures copied, with this
    request's entries written over them for the splits asked here), and the memo arrays
    :func:`split_plan` fills (the largest batch memory holds, the limit and capacity batches)
    for those splits. Takes a larger stack when a count brings a split the stack lacks;
    mutable, one request's, like its context."""

    __slots__ = ("rows", "stack", "params", "caps", "limits", "capacities", "orders")

    def __init__(self) -> None:
        self.rows: dict[tuple[int, int], int] = {}
        """The splits asked in this request -> their rows."""
        self.stack = EMPTY_STACK
        # no rows yet (never written: :meth:`_take` replaces them before the first row)
        self.params = _NO_PARAMS
        self.caps = self.limits = self.capacities = _NO_INTS
        self.orders: dict[int, Ints] = {}

    @property
    def splits(self) -> tuple[tuple[int, int], ...]:
        """Row -> split (tp, pp), the stack's."""
        return self.stack.splits

    @property
    def gemms(self) -> Array:
        return self.stack.gemms

    def order(self, ctx: Context, n: int, batch: int) -> Ints:
        """Table rows of the splits of ``n`` GPUs that fit ``batch`` (in the context's order),
        once per count; splits not yet in the table are added first."""
        found = self.orders.get(n)
        if found is not None:
            return found
        found = self.orders[n] = self.rows_of(ctx, ctx.fitting(n, batch))
        return found

    def rows_of(self, ctx: Context, splits: list[tuple[int, int]]) -> Ints:
        """The table rows of ``splits``, those not there yet added first (at once)."""
        new = [s for s in splits if s not in self.rows]
        if new:
            self._extend(ctx, new)
        return np.array([self.rows[s] for s in splits], np.int64)

    def known_rows(self, splits: list[tuple[int, int]]) -> Ints | None:
        """The table rows of ``splits`` where every one is in the table already (None
        otherwise: nothing is added)."""
        rows = self.rows
        if any(s not in rows for s in splits):
            return None
        return np.array([rows[s] for s in splits], np.int64)

    def row(self, ctx: Context, tp: int, pp: int) -> int:
        """The table row of split (tp, pp), added first when it is not there yet."""
        found = self.rows.get((tp, pp))
        if found is None:
            self._extend(ctx, [(tp, pp)])
            found = self.rows[tp, pp]
        return found

    def _extend(self, ctx: Context, splits: list[tuple[int, int]]) -> None:
        """Rows for ``splits``: the stack's (the context's shared one, or a larger one where
        it lacks some: :meth:`serving.Context.grown_stack`), this request's entries written
        over their figures (:meth:`serving.Context.write_entries`), their memory caps taken
        (their limit and capacity memos are unset until :func:`split_plan` fills them)."""
        stack = self.stack
        if not stack.splits:
            stack = ctx.split_stack()
        missing = [s for s in splits if s not in stack.rows]
        if missing:
            stack = ctx.grown_stack(stack, missing)
        if stack is not self.stack:
            self._take(stack)
        rows = [stack.rows[s] for s in splits]
        ctx.write_entries(self.params, stack, rows)
        caps = self.caps
        for s, r in zip(splits, rows, strict=True):
            self.rows[s] = r
            caps[r] = ctx.batch_cap(*s)

    def _take(self, stack: SplitStack) -> None:
        """Read ``stack`` from now on (this table's rows are a prefix of it): its figures
        copied past the rows already here, the memo arrays lengthened (one allocation)."""
        used, size = len(self.stack.splits), len(stack.splits)
        params = stack.params.copy()
        ints = np.repeat(_UNSET, size, axis=1)  # caps 0, limits -1, capacities unknown
        if used:
            params[:used] = self.params[:used]
            ints[0, :used], ints[1, :used] = self.caps[:used], self.limits[:used]
            ints[2, :used] = self.capacities[:used]
        self.stack, self.params = stack, params
        self.caps, self.limits, self.capacities = ints[0], ints[1], ints[2]


_NO_PARAMS = np.empty((0, 0))
_NO_GEMMS = np.empty((0, 0, 0))
_UNSET = np.array([[0], [-1], [_UNKNOWN]], np.int64)
"""A split table's memo column of a row not asked yet: (memory cap, limit batch, capacity
batch)."""
_NO_INTS = np.empty(0, np.int64)
"""An empty :class:`SplitStack`'s and :class:`SplitTable`'s arrays (zero rows: nothing is
ever written to them)."""
EMPTY_STACK = SplitStack((), _NO_PARAMS, _NO_GEMMS, ())
"""The stack of no splits (a context none was kept for; read only, so one for all)."""


def warm_up() -> None:
    """Compile (or load from numba's cache) the loops before the first request needs them
    (:func:`split_plan` and :func:`point_figures` run only inside :func:`split_point`)."""
    p = np.ones((1, _PARAMS))
    g = np.ones((1, 5, _TILE_TABLES + 4))
    one = np.ones(1, np.int64)
    least_latency_ms(p, g, np.zeros(1, np.int64), 1)
    padded_plan(p, g, np.full(1, 2, np.int64), np.zeros(1, np.int64), 4, 1.0)
    split_point(p, g, one, np.full(1, -1, np.int64), np.full(1, _UNKNOWN, np.int64),
                np.zeros(1, np.int64), 1, 1.0, 0, False, 1024, 1.25, 0.02, 1.001, 1)
