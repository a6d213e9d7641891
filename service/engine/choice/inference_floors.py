"""Transformer serving floors of every GPU type of a catalog at once (numpy columns).

:func:`bounds.floors` gives each GPU type its lower bounds one at a time: the request floor
of a one-GPU serving model and the least batch-1 latency over the splits of its count cap, the
estimate's own serving model timed at every split (:meth:`serving.Context.least_latency_ms`).
Building that model for a GPU (its layer GEMM tables on the GPU's device, a split table, the
compiled timing) is ~0.3 ms; on a catalog of thousands of types it was a third of a serving
recommendation. Here the same two floors are array operations over the GPUs:

* the request floor (:meth:`serving.ServingModel.request_floor_s`, term for term: the one-GPU
  model's FLOPs and bytes at each GPU's rates);
* a latency floor at each tensor-parallel degree ``t``: the time to first token (its prompt
  chunks beside ``batch - 1`` decoders) plus ``output`` TPOT iterations (decode-only ones
  and those carrying the other requests' prompt chunks, weighted as the model weights
  them, :meth:`serving.ServingModel._tpot`), where every
  kernel the serving model times (:meth:`serving.ServingModel._iteration`) is taken at the
  larger of its FLOPs at the device's rate and its bytes at its bandwidth: a GEMM's tile waves
  cover at least its FLOPs, an MoE layer's experts at least its routed rows and the weights of
  the experts touched, and TP all-reduces, kernel launches, elementwise traffic, the KV read
  and the fixed per-iteration costs are the model's own. A request's TPOT iterations carry
  at least the decode-only work, and a pipeline split runs its stages in sequence over the
  same layers (plus hops), so no split of ``t`` TP ranks, pipelined or not, beats the
  floor at ``t``; the least over the degrees a count holds bounds that count.

These are lower bounds of the model's figures, not copies of them (no tile quantization, no
split-K), so they sit a little below :func:`bounds._latency_floor`'s; the property suite
checks they never exceed the estimate's latency at any count. CNNs with a layer table have
columns of their own (:mod:`cnn_floors`); detectors without one keep the per-GPU path.

Units: seconds [s] inside, milliseconds [ms] for latencies out, bytes [B], FLOP.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from service.engine import constants as c
from service.engine.cache import Memo
from service.engine.physics import kernels
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.physics import serving as inf
from service.engine.physics import transformer_ops as tops
from service.engine.physics.performance import PeakRate
from service.engine.types import GpuSpec, Precision, ServingRuntime, TransformerModel, Workload

Array = NDArray[np.float64]


@dataclass
class Columns:
    """One catalog's serving devices at one runtime, a GPU per element (every GPU has a
    rate): what :class:`serving.ServingModel` reads of its device and links."""

    gpus: tuple[GpuSpec, ...]
    rates: tuple[PeakRate, ...]
    matrix: Array
    """Sustained GEMM FLOP/s (:attr:`kernels.Device.matrix_flops_s`)."""
    attention: Array
    bytes_s: Array
    kernel_s: Array
    sms: Array
    per_node: NDArray[np.int64]
    _links: dict[int, tuple[Array, Array]] = field(default_factory=dict)

    def links(self, tp: int) -> tuple[Array, Array]:
        """(all-reduce bytes/s, latency [s]) of a TP group of ``tp`` GPUs inside one node on
        each GPU, as :class:`serving.ServingModel` takes them from :func:`serving.links`;
        where ``tp`` exceeds the node the figures are those of a node's worth (never read:
        :func:`latency_floors` masks such degrees)."""
        found = self._links.get(tp)
        if found is None:
            pairs = [inf.tp_link(gpu, inf.links(gpu, min(tp, max(1, gpu.max_gpus_per_node)), 1)[
                "link_gb_s"]) for gpu in self.gpus]
            found = self._links[tp] = (np.array([r for r, _ in pairs]),
                                       np.array([lat for _, lat in pairs]))
        return found


def columns(gpus: Sequence[GpuSpec], rates: Sequence[PeakRate], runtime: ServingRuntime,
            memo: Memo) -> Columns:
    """The :class:`Columns` of ``gpus`` at their ``rates``."""
    devs = [inf.serving_device(g, r, runtime, memo) for g, r in zip(gpus, rates, strict=True)]

    def col(values: list[float]) -> Array:
        return np.array(values, dtype=np.float64)

    return Columns(
        tuple(gpus), tuple(rates),
        col([d.matrix_flops_s for d in devs]), col([d.attention_flops_s for d in devs]),
        col([d.bytes_s for d in devs]), col([d.kernel_s for d in devs]),
        col([float(d.sms) for d in devs]),
        np.array([max(1, g.max_gpus_per_node) for g in gpus], dtype=np.int64),
    )


def supported(workload: Workload) -> bool:
    """Transformer serving (decoders and encoders): the workloads these floors cover."""
    return workload.kind == "inference" and isinstance(workload.model, TransformerModel) \
        and workload.inference is not None


def tp_degrees(workload: Workload, cap: int, per_node: int) -> list[int]:
    """Every TP degree a split of up to ``cap`` GPUs may use on nodes of up to ``per_node``
    GPUs (:meth:`serving.Context._split_list`: powers of two dividing the heads, inside a
    node), and a pinned degree whatever it divides."""
    model, spec = workload.model, workload.inference
    assert isinstance(model, TransformerModel) and spec is not None
    out = [t for t in par.powers_of_two_upto(min(max(1, cap), per_node))
           if model.attention_heads % t == 0]
    if spec.tensor_parallel and spec.tensor_parallel not in out:
        out.append(spec.tensor_parallel)
    return sorted(out)


@dataclass(frozen=True)
class _Shapes:
    """One precision's serving figures at one TP degree (from the model's own layer shapes,
    :class:`transformer_ops.LayerOps`, and request lengths, :func:`serving.lengths`)."""

    ops: tops.LayerOps
    ln: inf.Lengths
    act_b: float
    coll_b: float
    wbpp: float


def _shapes(workload: Workload, precision: Precision, tp: int, any_dev: kernels.Device,
            memo: Memo) -> _Shapes:
    model, spec = workload.model, workload.inference
    assert isinstance(model, TransformerModel) and spec is not None
    wbpp, act_b, coll_b = inf.element_bytes(workload, precision)
    kv = mem.kv_bytes_per_token(model, inf.kv_precision(workload, precision))
    # the layer's shapes do not depend on the device it is built on (only its GEMM timings)
    ops = tops.layer_ops(model, any_dev, tp, act_b, wbpp, memo)
    return _Shapes(ops, inf.lengths(model, spec, tp, act_b, kv), act_b, coll_b, wbpp)


def _gemm(flops: float, nbytes: float, cols: Columns, at: NDArray[np.intp]) -> Array:
    """max(FLOPs at the GEMM rate, bytes at bandwidth) of one GEMM on each GPU of ``at``."""
    out: Array = np.maximum(flops / cols.matrix[at], nbytes / cols.bytes_s[at])
    return out


def _iteration(sh: _Shapes, model: TransformerModel, cols: Columns, at: NDArray[np.intp],
               tp: int, rows: float, attn_flops: float, attn_bytes: Array, head_rows: float,
               fixed: float) -> Array:
    """Floor [s] of :meth:`serving.ServingModel._iteration` on each GPU of ``at``."""
    ops, act_b, w_b = sh.ops, sh.act_b, sh.wbpp
    h = float(ops.h)
    layer = np.zeros(len(at))
    if rows > 0:
        mlp = ((ops.up_n, h), (h, ops.down_k))
        for n, k in ((ops.qkv_n, h), (h, ops.o_k)) + (() if ops.moe else mlp):
            layer += _gemm(2.0 * rows * n * k, k * n * w_b + rows * (k + n) * act_b, cols, at)
        if ops.moe:
            groups = max(1.0, ops.experts * inf._experts_touched(model, rows))
            routed = rows * ops.top_k
            for n, k in mlp:
                layer += _gemm(2.0 * routed * n * k,
                               groups * k * n * w_b + routed * (k + n) * act_b, cols, at)
        # moe_elementwise is exactly 1 for a dense layer (LayerOps)
        layer += ops.elementwise * rows * ops.moe_elementwise / cols.bytes_s[at]
    layer += np.maximum(attn_flops / cols.attention[at], attn_bytes / cols.bytes_s[at])
    layer += c.TRANSFORMER_KERNELS_PER_LAYER * cols.kernel_s[at]
    total = layer * model.layers + fixed
    if head_rows > 0:
        total += _gemm(2.0 * head_rows * ops.vocab_n * h,
                       h * ops.vocab_n * w_b + head_rows * (h + ops.vocab_n) * act_b, cols, at)
    if tp > 1 and rows > 0:
        link_s, latency = cols.links(tp)
        vol = 2.0 * (tp - 1) / tp
        total += 2.0 * model.layers * (vol * rows * h * sh.coll_b / link_s[at] + latency[at])
    return total


def _kv_read(sh: _Shapes, cols: Columns, at: NDArray[np.intp], seqs: float) -> Array:
    """:meth:`serving.ServingModel._kv_read` on each GPU of ``at`` (its SMs set the stretch)."""
    if seqs <= 0:
        return np.zeros(len(at))
    ln = sh.ln
    blocks = seqs * ln.kv_blocks
    sms = cols.sms[at]
    stretch = np.where(blocks < sms, sms / blocks, 1.0)
    out: Array = seqs * ln.ctx * ln.kv_layer * stretch
    return out


def _latency_s(sh: _Shapes, model: TransformerModel, cols: Columns, at: NDArray[np.intp],
               tp: int, batch: int) -> Array:
    """Floor [s] of the end-to-end latency at ``batch`` on ``tp`` TP ranks (see the module
    docstring) on each GPU of ``at``."""
    ln, b = sh.ln, float(batch)
    if not ln.decoder:
        return _iteration(sh, model, cols, at, tp, b * ln.tokens, b * ln.prompt_attn,
                          np.full(len(at), b * ln.prompt_attn_bytes), 0.0, 0.0)
    fixed = c.STEP_OVERHEAD_S
    per_seq = c.SEQUENCE_STEP_OVERHEAD_S
    k, rest = ln.chunks, b - 1.0
    chunk = _iteration(sh, model, cols, at, tp, ln.s / k + rest,
                       ln.prompt_attn / k + rest * ln.decode_attn,
                       ln.prompt_attn_bytes / k + _kv_read(sh, cols, at, rest), 1.0 + rest,
                       fixed + per_seq * (1.0 + rest))
    return k * chunk + ln.out * _tpot(sh, model, cols, at, tp, b, fixed + per_seq * b)


def _tpot(sh: _Shapes, model: TransformerModel, cols: Columns, at: NDArray[np.intp],
          tp: int, b: float, fixed: float) -> Array:
    """Floor [s] of the mean iteration a request sees at batch ``b``
    (:meth:`serving.ServingModel._tpot`: the other ``b - 1`` arrivals' prompt chunks in their
    own iterations, or spread over all of them once they fill them), each iteration at its
    floor and weighted as the model weights it."""
    ln = sh.ln
    kv = _kv_read(sh, cols, at, b)
    arrivals = b - 1.0
    chunked = arrivals * ln.chunks
    if chunked >= ln.out:
        share = arrivals / ln.out
        return _iteration(sh, model, cols, at, tp, b + share * ln.s,
                          b * ln.decode_attn + share * ln.prompt_attn,
                          kv + share * ln.prompt_attn_bytes, b, fixed)
    alone = _iteration(sh, model, cols, at, tp, b, b * ln.decode_attn, kv, b, fixed)
    if chunked <= 0.0:
        return alone
    k = ln.chunks
    mixed = _iteration(sh, model, cols, at, tp, b + ln.s / k,
                       b * ln.decode_attn + ln.prompt_attn / k, kv + ln.prompt_attn_bytes / k,
                       b, fixed)
    f = chunked / ln.out
    out: Array = f * mixed + (1.0 - f) * alone
    return out


def _request_s(sh: _Shapes, model: TransformerModel, cols: Columns,
               at: NDArray[np.intp]) -> Array:
    """:meth:`serving.ServingModel.request_floor_s` of the one-GPU model (``sh`` at TP 1) on
    each GPU of ``at``."""
    ops, ln, h = sh.ops, sh.ln, float(sh.ops.h)
    mlp = h * ops.up_n + ops.down_k * h
    if ops.moe:
        mlp *= ops.top_k
    per_token = 2.0 * model.layers * (h * ops.qkv_n + ops.o_k * h + mlp)
    dense = per_token / cols.matrix[at]
    per_gpu_attn = model.layers / cols.attention[at]
    if not ln.decoder:
        out: Array = ln.tokens * dense + per_gpu_attn * ln.prompt_attn
        return out
    linear = (ln.s + ln.out) * dense
    attention = per_gpu_attn * (ln.prompt_attn + ln.out * ln.decode_attn)
    kv_read = model.layers * ln.out * ln.ctx * ln.kv_layer / cols.bytes_s[at]
    out = linear + np.maximum(attention, kv_read)
    return out


@dataclass(frozen=True)
class Table:
    """A request's floors over a catalog's :class:`Columns`."""

    tps: tuple[int, ...]
    latency_ms: Array
    """[TP degree, GPU]: the latency floor [ms] at that degree (inf where the GPU's node is
    smaller than the degree)."""
    request_s: Array
    """Per GPU: the request floor [GPU-seconds]."""
    index: dict[str, int]
    """GPU slug -> its column."""
    per_node: NDArray[np.int64]
    pinned: tuple[int, int] | None
    """The request's pinned (TP, PP) split, if any (:meth:`serving.Context._split_list`)."""
    cols: Columns | None = None
    """The columns the table was built on (:mod:`load_floors` reads them too)."""
    rows: Array | None = None
    """The request's figures packed for the compiled floors, [TP degree, GPU, figure], where
    the table was built with them (:func:`load_floors.floor_table`)."""

    @cached_property
    def running_least_ms(self) -> Array:
        """[TP degree, GPU]: the least latency floor over the degrees up to each (the degrees
        ascend and min is exact, so row ``j`` is the least over the degrees a count holding
        ``tps[j]`` holds); once per table."""
        rows = np.vstack((np.full((1, self.latency_ms.shape[1]), math.inf), self.latency_ms))
        out: Array = np.fmin.accumulate(rows, axis=0)[1:]
        return out

    def _rows_min(self, n: int) -> Array:
        """Per GPU: the least floor over the degrees up to ``n`` (inf for none)."""
        rows = [j for j, t in enumerate(self.tps) if t <= n]
        if not rows:
            return np.full(self.latency_ms.shape[1], math.inf)
        out: Array = self.latency_ms[rows].min(axis=0)
        return out

    def least_latency_column(self, cap: int) -> Array:
        """Per GPU: the least latency floor of any count up to ``cap``. A pinned split runs
        only from its own count (TP x PP) up, on a node that holds its TP degree; smaller
        counts fall back to every split they hold (:meth:`serving.Context._split_list`), which
        may be faster than the pinned one."""
        free = self._rows_min(cap)
        pinned = self.pinned
        if pinned is None:
            return free
        size = pinned[0] * pinned[1]
        pin = (self.latency_ms[self.tps.index(pinned[0])] if size <= cap
               else np.full(self.latency_ms.shape[1], math.inf))
        held = np.minimum(self._rows_min(min(cap, size - 1)), pin)
        out: Array = np.where(self.per_node >= pinned[0], held, free)
        return out

    def least_latency_ms(self, slug: str, n: int) -> float | None:
        """The latency floor of ``n`` GPUs of ``slug`` (None: not in the table): the pinned
        split's where the count and the node hold it, else the least over the degrees
        ``n`` GPUs hold."""
        found = self.least_latencies_ms(slug, (n,))
        return None if found is None else found[0]

    def least_latencies_ms(self, slug: str, counts: Sequence[int]) -> list[float] | None:
        """:meth:`least_latency_ms` of each of ``counts`` (the GPU's column read once)."""
        i = self.index.get(slug)
        if i is None:
            return None
        pinned = self.pinned
        least = self.running_least_ms[:, i].tolist()
        out = []
        for n in counts:
            if pinned is not None and pinned[0] * pinned[1] <= n \
                    and self.per_node[i] >= pinned[0]:
                out.append(float(self.latency_ms[self.tps.index(pinned[0]), i]))
                continue
            held = bisect.bisect_right(self.tps, n)
            out.append(least[held - 1] if held else math.inf)
        return out


def precision_groups(cols: Columns, runtime: ServingRuntime, memo: Memo) -> list[
        tuple[Precision, NDArray[np.intp], kernels.Device]]:
    """The GPUs of ``cols`` by the precision they run at: (precision, their columns, the
    serving device of the first, whose layer shapes every GPU of the group shares)."""
    groups: dict[Precision, list[int]] = {}
    for i, r in enumerate(cols.rates):
        groups.setdefault(r.precision_used, []).append(i)
    return [(precision, np.array(members, dtype=np.intp),
             inf.serving_device(cols.gpus[members[0]], cols.rates[members[0]], runtime, memo))
            for precision, members in groups.items()]


def table(workload: Workload, cols: Columns, cap: int, memo: Memo) -> Table:
    """The request's :class:`Table` over ``cols`` for counts of up to ``cap`` GPUs."""
    model, spec = workload.model, workload.inference
    assert isinstance(model, TransformerModel) and spec is not None
    n = len(cols.gpus)
    per_node_max = int(cols.per_node.max()) if n else 1
    tps = tp_degrees(workload, cap, per_node_max)
    latency = np.full((len(tps), n), math.inf)
    request = np.zeros(n)
    batch = spec.batch_size or 1
    for precision, at, dev in precision_groups(cols, spec.runtime, memo):
        for j, t in enumerate(tps):  # TP 1 first: every count holds it
            sh = _shapes(workload, precision, t, dev, memo)
            if t == 1:
                request[at] = _request_s(sh, model, cols, at)
            floor = _latency_s(sh, model, cols, at, t, batch) * 1e3
            latency[j, at] = np.where(cols.per_node[at] >= t, floor, math.inf)
    pinned = ((spec.tensor_parallel or 1, spec.pipeline_parallel or 1)
              if spec.tensor_parallel or spec.pipeline_parallel else None)
    return Table(tuple(tps), latency, request, {g.slug: i for i, g in enumerate(cols.gpus)},
                 cols.per_node, pinned, cols)


__all__ = ["Columns", "Table", "columns", "precision_groups", "supported", "table",
           "tp_degrees"]
