"""The serving model evaluated over many batch sizes at once (numpy arrays).

:class:`~serving.ServingModel` times one batch per call, kernel by kernel, in Python floats:
the reference. The searches over the batch (the throughput-best batch of a split, the least
batch carrying an offered load) ask it for tens to hundreds of batches each, and that loop of
probes was most of a recommendation's time. Here the same operators are timed for a whole
vector of batches in one pass: every formula of :class:`~kernels.GemmShape.time`,
:meth:`~transformer_ops.LayerOps.forward` and :class:`~serving.ServingModel`'s phases,
written elementwise, in the same order of operations (IEEE double arithmetic elementwise is
the scalar arithmetic, so the figures agree with the reference to rounding: the differential
test in ``tests/unit/test_batched.py`` holds them within 1e-12 relative).

Only arrays of batches, and read-only attributes of the scalar objects: nothing here keeps
state, so a result depends on its arguments alone. CNN/detector models (``GenericModel``)
have no array form; callers fall back to the scalar model for them.

Units: seconds [s], requests/s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from service.engine.physics.transformer_ops import LayerOps
from service.engine.types import GenericModel, TransformerModel

if TYPE_CHECKING:  # pragma: no cover
    from service.engine.physics.serving import ServingModel

Array = NDArray[np.float64]
Phase = tuple[Array, Array, Array, Array]
"""(compute_s, memory_s, comm_s, stall_s) per batch, as :data:`serving._Phase`."""


def supported(model: ServingModel) -> bool:
    """Whether ``model`` has an array form: transformers (decoders and encoders), with or
    without pipeline stages."""
    return not isinstance(model.model, GenericModel)


class GemmStack:
    """The GEMMs of a :class:`LayerOps` (QKV, attention output, MLP up, MLP down, LM head: rows
    0-4; MoE layers also the busiest expert's up and down: rows 5-6) as arrays indexed [GEMM,
    tile shape, 1], so all are timed in one pass."""

    def __init__(self, ops: LayerOps) -> None:
        shapes = [ops.qkv, ops.out, ops.up, ops.down, ops.head]
        if ops.moe:
            shapes += [ops.up, ops.down]
        self.shapes = tuple(shapes)
        """The stacked GEMMs, row by row."""
        self.rows = len(shapes)
        self.sms = float(shapes[0].sms)
        self.per_flop = shapes[0].per_flop
        self.tiles = len(shapes[0].shapes)

        def column(values: list[float]) -> Array:
            return np.array(values, dtype=np.float64)[:, None]

        def table(i: int) -> Array:
            return np.array([[t[i] for t in sh.shapes] for sh in shapes],
                            dtype=np.float64)[:, :, None]

        self.k = column([sh.k for sh in shapes])[:, :, None]
        self.weight_s = column([sh.weight_s for sh in shapes])
        self.row_s = column([sh.row_s for sh in shapes])
        self.live = ~np.array([sh.empty for sh in shapes])[:, None]
        self.all_live = bool(self.live.all())
        self.row_index = np.arange(self.rows)[:, None]
        self.tile_m, self.n_tiles = table(0), table(1)
        self.split_cap, self.tile_flops = table(2), table(3)
        self.table: Array | None = None
        """These figures as one 2-D table for the compiled form (:mod:`compiled`)."""


def stack(ops: LayerOps) -> GemmStack:
    """The :class:`GemmStack` of ``ops``, built once (``ops`` lives in the shared cache)."""
    found = ops.stacked
    if not isinstance(found, GemmStack):
        found = ops.stacked = GemmStack(ops)
    return found


def gemm_times(st: GemmStack, m: Array, groups: Array | float) -> tuple[Array, Array]:
    """:meth:`GemmShape.time` of the stack's GEMMs: row ``g`` of ``m`` (and of ``groups``) is
    GEMM ``g``'s row count per element. Each element tries the tile shapes in the same order
    and stops at the same one as the scalar loop: the first whose running minimum of work makes
    the kernel memory-bound (a running minimum, then the first index at or below the memory
    time's work equivalent)."""
    sms = st.sms
    memory = st.weight_s + m * st.row_s
    m3 = m[:, None, :]
    # >= 1 wherever the answer is kept (m > 0); 1 elsewhere keeps the divisions finite
    tiles = np.ceil(m3 / st.tile_m) * st.n_tiles
    if isinstance(groups, np.ndarray):  # else 1.0 (dense layers), and x * 1.0 is x
        memory = memory * groups
        tiles = tiles * groups[:, None, :]
    enough = memory / st.per_flop
    tiles = np.maximum(tiles, 1.0)
    # >= 1 (only where tiles < sms is it used, and there it is >= 1 already)
    split = np.maximum(np.minimum(np.floor_divide(sms, tiles), st.split_cap), 1.0)
    splitting = (tiles < sms) & (split > 1)
    tiles = np.where(splitting, tiles * split, tiles)
    depth = np.where(splitting, st.k / split, st.k)
    work = np.ceil(tiles / sms) * st.tile_flops * depth
    least = np.minimum.accumulate(work, axis=1)
    bound = least <= enough[:, None, :]
    first = np.where(bound.any(axis=1), bound.argmax(axis=1), st.tiles - 1)
    best = least[st.row_index, first, np.arange(m.shape[1])]
    if st.all_live and m.min() > 0:  # nothing to zero
        return best * st.per_flop, memory
    keep = st.live & (m > 0)
    return np.where(keep, best * st.per_flop, 0.0), np.where(keep, memory, 0.0)


def forward_and_head(
    ops: LayerOps, tokens: Array, attn_flops: Array, attn_bytes: Array, head_rows: Array,
    touched: Array | float = 1.0,
) -> tuple[Array, Array, Array, Array, Array]:
    """:meth:`LayerOps.forward` (compute_s, memory_s, total_s) and :meth:`LayerOps.lm_head`
    (compute_s, memory_s) for every element."""
    st = stack(ops)
    m = np.empty((st.rows, tokens.shape[0]))
    m[0] = m[1] = tokens
    m[4] = head_rows
    groups: Array | float = 1.0
    if ops.moe:
        # the busiest expert runs its own rows (rows 5-6; none where it is no busier than the
        # mean), the other experts share the mean load (LayerOps.forward)
        g = np.maximum(1.0, ops.experts * touched)
        rows = tokens * ops.top_k / g
        p = ops.top_k / ops.experts
        mean = tokens * p
        busiest = np.maximum(rows, np.minimum(
            tokens, mean + ops.max_z * np.sqrt(tokens * p * (1.0 - p))))
        apart = (g > 1.0) & (busiest > rows)
        m[2] = m[3] = rows
        m[5] = m[6] = np.where(apart, busiest, 0.0)
        groups = np.ones_like(m)
        groups[2] = groups[3] = np.where(apart, g - 1.0, g)
        elementwise = ops.elementwise * tokens * ops.moe_elementwise
    else:
        m[2] = m[3] = tokens
        elementwise = ops.elementwise * tokens
    comp, memo = gemm_times(st, m, groups)
    if ops.moe:
        comp[2] += comp[5]
        comp[3] += comp[6]
        memo[2] += memo[5]
        memo[3] += memo[6]
    dev = ops.dev
    attn_c, attn_m = attn_flops / dev.attention_flops_s, attn_bytes / dev.bytes_s
    top = np.maximum(comp, memo)
    compute = comp[0] + comp[1] + comp[2] + comp[3] + attn_c
    memory = memo[0] + memo[1] + memo[2] + memo[3] + attn_m
    total = top[0] + top[1] + top[2] + top[3] + np.maximum(attn_c, attn_m)
    mem_s = elementwise / dev.bytes_s
    return (compute, memory + mem_s, total + mem_s + ops.kernels_s, comp[4], memo[4])


def _iteration(
    sm: ServingModel, rows: Array, attn_flops: Array, attn_bytes: Array, head_rows: Array
) -> Phase:
    """:meth:`ServingModel._iteration` for every element."""
    model = sm.model
    touched: Array | float = 1.0
    if sm.ops.moe and isinstance(model, TransformerModel) and model.experts > 1:
        touched = experts_touched(model, rows)
    lc, lm, lt, hc, hm = forward_and_head(sm.ops, rows, attn_flops, attn_bytes, head_rows,
                                          touched)
    layers = sm.layers
    compute = lc * layers + hc
    memory = lm * layers + hm
    total = lt * layers + np.maximum(hc, hm) + sm.fixed_s + sm.per_seq_s * head_rows
    links = _comm(sm, rows) + _pipeline(sm, rows)
    comm = links if isinstance(links, np.ndarray) else np.full_like(rows, links)
    return compute, memory, comm, np.maximum(0.0, total - np.maximum(compute, memory))


def experts_touched(model: TransformerModel, rows: Array) -> Array:
    """:func:`serving._experts_touched` for every element (numpy's power)."""
    touched: Array = 1.0 - (1.0 - model.experts_per_token / model.experts) ** np.maximum(
        rows, 1.0)
    return touched


def _comm(sm: ServingModel, tokens: Array) -> Array | float:
    """:meth:`ServingModel._comm` for every element."""
    if sm.tp <= 1:
        return 0.0
    nbytes = tokens * sm.h * sm.coll_b
    out = 2.0 * sm.layers * (sm.comm_vol * nbytes / sm.link_s + sm.coll_latency)
    return np.where(tokens <= 0, 0.0, out)


def _pipeline(sm: ServingModel, tokens: Array) -> Array | float:
    """:meth:`ServingModel._pipeline` for every element."""
    if sm.pp <= 1:
        return 0.0
    nbytes = tokens * sm.h * sm.coll_b
    return (sm.pp - 1) * (nbytes / sm.pp_link_s + sm.pp_latency)


def _kv_read(sm: ServingModel, seqs: Array) -> Array:
    """:meth:`ServingModel._kv_read` for every element."""
    sms = sm.dev.sms
    blocks = np.maximum(seqs * sm.kv_blocks, 1e-300)  # > 0: the division stays finite
    stretch = np.where(blocks < sms, sms / blocks, 1.0)
    return np.where(seqs <= 0, 0.0, seqs * sm.ctx * sm.kv_layer * stretch)


def cycle_rows(sm: ServingModel, batches: Array, arrivals: Array) -> tuple[Array, Array]:
    """The rows of :func:`cycle`'s iterations at every element: the one carrying prompt
    tokens (spread over every iteration, or one chunk) and a decode-only one."""
    spread = batches + arrivals / sm.out * sm.s
    rows = np.where(arrivals * sm.chunks >= sm.out, spread, batches + sm.s / sm.chunks)
    return rows, batches


def cycle(sm: ServingModel, batches: Array, arrivals: Array) -> Phase:
    """:meth:`ServingModel._cycle` at every element: the mean iteration at ``batches`` with
    ``arrivals`` prompts per ``out`` iterations."""
    kv = _kv_read(sm, batches)
    chunked = arrivals * sm.chunks
    share = arrivals / sm.out
    spread = _iteration(sm, batches + share * sm.s,
                        batches * sm.decode_attn + share * sm.prompt_attn,
                        kv + share * sm.prompt_attn_bytes, batches)
    alone = _iteration(sm, batches, batches * sm.decode_attn, kv, batches)
    k = sm.chunks
    mixed = _iteration(sm, batches + sm.s / k, batches * sm.decode_attn + sm.prompt_attn / k,
                       kv + sm.prompt_attn_bytes / k, batches)
    f = chunked / sm.out
    g = 1.0 - f
    device = f * (np.maximum(mixed[0], mixed[1]) + mixed[3]) + g * (
        np.maximum(alone[0], alone[1]) + alone[3])
    compute = f * mixed[0] + g * alone[0]
    memory = f * mixed[1] + g * alone[1]
    links = f * mixed[2] + g * alone[2]
    blend = (compute, memory, links, np.maximum(0.0, device - np.maximum(compute, memory)))
    full, none = chunked >= sm.out, chunked <= 0.0
    out = tuple(np.where(full, a, np.where(none, b, c))
                for a, b, c in zip(spread, alone, blend, strict=True))
    return out[0], out[1], out[2], out[3]


def decode(sm: ServingModel, batches: Array) -> Phase:
    """:meth:`ServingModel._decode` (the mean iteration with every arrival: throughput) at
    every batch."""
    return cycle(sm, batches, batches)


def tpot(sm: ServingModel, batches: Array) -> Phase:
    """:meth:`ServingModel._tpot` (the mean iteration one request sees) at every batch."""
    return cycle(sm, batches, batches - 1.0)


def prefill(sm: ServingModel, batches: Array) -> Phase:
    """:meth:`ServingModel._prefill` (TTFT) at every batch."""
    k = sm.chunks
    rest = batches - 1.0
    chunk = _iteration(sm, sm.s / k + rest, sm.prompt_attn / k + rest * sm.decode_attn,
                       sm.prompt_attn_bytes / k + _kv_read(sm, rest), 1.0 + rest)
    return chunk[0] * k, chunk[1] * k, chunk[2] * k, chunk[3] * k


def encode(sm: ServingModel, batches: Array) -> Phase:
    """An encoder's forward pass (:meth:`ServingModel.phases`' non-decoder branch)."""
    rows = batches * sm.tokens
    return _iteration(sm, rows, batches * sm.prompt_attn, batches * sm.prompt_attn_bytes,
                      np.zeros_like(batches))


def total(phase: Phase) -> Array:
    """:attr:`PhaseTime.total_s` of every element."""
    return np.maximum(phase[0], phase[1]) + phase[3] + phase[2]


def stage_s(sm: ServingModel, batches: Array, phase: Phase) -> Array:
    """:meth:`ServingModel._stage_s` for every element (``phase``: the decode iteration, the
    forward pass for encoders); 0 without pipeline stages."""
    model = sm.model
    if sm.pp <= 1 or not isinstance(model, TransformerModel):
        return np.zeros_like(batches)
    rows = batches + batches / sm.out * sm.s if sm.decoder else batches * sm.tokens
    head_rows = batches if sm.decoder else np.zeros_like(batches)
    hops = _pipeline(sm, rows)
    work = total(phase) - sm.fixed_s - sm.per_seq_s * head_rows - hops
    stage: Array = sm.stage_share * np.maximum(0.0, work) + hops / (sm.pp - 1)
    return stage


def _rates(sm: ServingModel, batches: Array, phase: Phase) -> Array:
    """:func:`serving.requests_per_s` of one replica at every batch, from the phase it times
    (the decode iteration; the forward pass for encoders): a decoder completes ``batch``
    requests every ``output_tokens`` iterations, an encoder ``batch`` per forward pass; with
    ``pp`` stages ``pp`` micro-batches are in flight, each iteration at least ``pp`` x the
    busiest stage."""
    iteration = total(phase)
    if sm.pp > 1:
        busiest = sm.pp * stage_s(sm, batches, phase)
        iteration = np.where(busiest > iteration, busiest, iteration)
    cycle = sm.spec.output_tokens * iteration if sm.decoder else iteration
    rps: Array = batches / cycle * sm.pp
    return rps


def requests_per_s(sm: ServingModel, batches: Array) -> Array:
    """:func:`serving.requests_per_s` of one replica at every batch."""
    return _rates(sm, batches, decode(sm, batches) if sm.decoder else encode(sm, batches))
