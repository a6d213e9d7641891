"""CNN serving floors of every GPU type of a catalog at once (numpy columns).

:func:`bounds._inference` gives a CNN's floors one GPU type at a time: the request floor of
its one-GPU serving model (:meth:`serving.ServingModel.request_floor_s`) and, where options
run at the throughput batch, the batch-1 (or fixed-batch) latency of the layer table
(:meth:`physics.cnn.Net.time` through :meth:`serving.Context.least_latency_ms`). Building two
serving models and a context per GPU and timing ~20 convolution groups through
:class:`kernels.GemmShape` took ~150 us a type: ~95% of a ResNet-50 ranking on a catalog of
5,000 types. Here the same figures are array operations over the GPUs:

* what a type's layer table holds (:class:`physics.cnn.Net`, kept per device in the shared
  cache) is gathered once per catalog and serving setup (:class:`Columns`, kept by the
  screen's table): per convolution group its GEMM's bandwidth terms, SMs, FLOP time and
  split-K cap per GPU; per pool its bytes' time; the cache, kernel costs and request floor;
* per request, :func:`latency_ms` times every type's table at the batch with the scalar code's
  operations in its order (:meth:`kernels.GemmShape.time`'s tile loop and early stop,
  :meth:`physics.cnn.Net._time`'s sums, :class:`performance.PhaseTime`'s total), so each
  element is the float the scalar path gives (tests/unit/test_screen_columns.py compares
  them bit for bit on the seeded catalog and on perturbed clones).

Types whose network has no layer table (:class:`physics.cnn.Aggregate`) keep the scalar path.

Units: seconds [s] inside, milliseconds [ms] for latencies out, bytes [B], FLOP.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from service.engine.cache import Memo, memo_of
from service.engine.physics import cnn, kernels
from service.engine.physics import serving as inf
from service.engine.physics.performance import PeakRate
from service.engine.types import GenericModel, GpuSpec, ServingRuntime, Workload

Array = NDArray[np.float64]


@dataclass(frozen=True)
class _Conv:
    """One convolution group of the table, its forward GEMM per GPU."""

    count: float
    pixels: float
    empty: bool
    shapes: tuple[tuple[int, int, float], ...]
    """(tile_m, n tiles, tile FLOPs) per tile shape, in the library's order."""
    extra: Array
    """Bytes per sample outside the GEMM (the shortcut read of a residual add), per GPU (its
    activation width)."""
    resident: Array
    """Bytes per sample that decide whether its activations stay on chip, per GPU."""
    k: Array
    sms: Array
    per_flop: Array
    split_cap: Array
    weight_s: Array
    row_s: Array


@dataclass
class Columns:
    """The CNN layer tables of a catalog's GPU types (those with a rate) at one serving
    setup, a GPU per element."""

    index: dict[str, int]
    """GPU slug -> element."""
    request_s: Array
    """:meth:`serving.ServingModel.request_floor_s` of the one-GPU model [GPU-s]."""
    fixed_s: Array
    """The table's kernel costs per pass (:attr:`physics.cnn.Net.kernels_s`) [s]."""
    bytes_s: Array
    on_chip: Array
    pool_s: Array
    pools: tuple[tuple[Array, Array], ...]
    """Per pool: its bytes' time [s] and its bytes per sample, per GPU."""
    convs: tuple[_Conv, ...]

    def latency_floor_ms(self) -> Array:
        """:meth:`serving.ServingModel.latency_floor_ms`: kernel costs plus the request
        floor [ms]."""
        return (self.fixed_s + self.request_s) * 1e3

    def latency_ms(self, batch: int, ceiling: float | None) -> Array:
        """End-to-end latency [ms] of one pass of ``batch`` on every GPU, as
        :meth:`serving.Context.least_latency_ms` gives it for a CNN (its one split),
        with a host/input ceiling of ``ceiling`` samples/s per GPU (None: none). Not kept:
        a request asks once, and every request's batch may differ."""
        return _latency_ms(self, batch, ceiling)


def columns(workload: Workload, gpus: Sequence[GpuSpec], rates: Sequence[PeakRate],
            runtime: ServingRuntime, memo: Memo) -> Columns | None:
    """The :class:`Columns` of ``gpus`` at ``rates`` (None where some type's network has no
    layer table, or the tables differ in shape: the scalar path then applies)."""
    model = workload.model
    assert isinstance(model, GenericModel)
    m = memo_of(memo)
    nets: list[cnn.Net] = []
    request: list[float] = []
    for gpu, rate in zip(gpus, rates, strict=True):
        dev = inf.serving_device(gpu, rate, runtime, m)
        wbpp, act_b, _ = inf.element_bytes(workload, rate.precision_used)
        net = _network(model, dev, act_b, wbpp, m)
        if not isinstance(net, cnn.Net):
            return None
        nets.append(net)
        # ServingModel.request_floor_s, on the serving device (its conv rate and bandwidth)
        request.append(max(net.flops / dev.conv_inference_flops_s,
                           net.floor_bytes / dev.bytes_s))
    if not nets:
        return None
    kept: dict[bytes, Array] = {}

    def column(values: list[float]) -> Array:
        """``values`` as an array, the same object as an equal one gathered before (the SMs
        and FLOP time of every group, most widths and caps: ~half the arrays are repeats)."""
        arr = np.array(values, dtype=np.float64)
        return kept.setdefault(arr.tobytes(), arr)

    first = nets[0]
    if any(len(net._convs) != len(first._convs) or len(net._pools) != len(first._pools)
           for net in nets):
        return None
    convs: list[_Conv] = []
    for j, (count, ops, pixels, _, _) in enumerate(first._convs):
        shape = ops.fwd
        tiles = tuple((t[0], t[1], t[3]) for t in shape.shapes)
        rows = [net._convs[j] for net in nets]
        # the layer's place in the table and its tile shapes are the model's (the widths
        # and the GEMM's K, rates and bandwidth are each GPU's)
        if any((r[0], r[2], r[1].fwd.empty) != (count, pixels, shape.empty)
               or tuple((t[0], t[1], t[3]) for t in r[1].fwd.shapes) != tiles
               for r in rows):
            return None
        fwd = [r[1].fwd for r in rows]
        convs.append(_Conv(
            count, pixels, shape.empty, tiles,
            column([r[3] for r in rows]), column([r[4] for r in rows]),
            column([g.k for g in fwd]), column([g.sms for g in fwd]),
            column([g.per_flop for g in fwd]), column([g.shapes[0][2] for g in fwd]),
            column([g.weight_s for g in fwd]), column([g.row_s for g in fwd])))
    pools = tuple((np.array([net._pools[j][0] for net in nets], dtype=np.float64),
                   np.array([net._pools[j][1] for net in nets], dtype=np.float64))
                  for j in range(len(first._pools)))
    return Columns(
        {g.slug: i for i, g in enumerate(gpus)},
        np.array(request, dtype=np.float64),
        np.array([net.kernels_s for net in nets], dtype=np.float64),
        np.array([net.dev.bytes_s for net in nets], dtype=np.float64),
        np.array([net.l2_bytes for net in nets], dtype=np.float64),
        np.array([net._pool_s for net in nets], dtype=np.float64),
        pools, tuple(convs))


def _network(model: GenericModel, dev: kernels.Device, act_b: float, wbpp: float,
             memo: Memo) -> cnn.Net | cnn.Aggregate:
    """The inference network :class:`serving.ServingModel` times on ``dev`` (the shared
    cache's ``cnn_network`` entry, as it keys it)."""
    return memo.get("cnn_network", (model, dev, act_b, wbpp),
                    lambda: cnn.network(model, dev, act_b, wbpp, training=False))


def _gemm(cv: _Conv, m: float) -> tuple[Array, Array]:
    """:meth:`kernels.GemmShape.time` of ``m`` rows (one problem) on every GPU: the first tile
    shape (in order) that makes the GEMM memory-bound stops the search, as there."""
    memory = (cv.weight_s + m * cv.row_s) * 1.0
    enough = memory / cv.per_flop
    best = np.full(len(memory), math.inf)
    done = np.zeros(len(memory), dtype=bool)
    for tile_m, n_tiles, tile_flops in cv.shapes:
        tiles = math.ceil(m / tile_m) * n_tiles * 1.0
        small = tiles < cv.sms
        split = np.floor_divide(cv.sms, tiles)
        split = np.where(split > cv.split_cap, cv.split_cap, split)
        # split-K where the tiles leave SMs idle (x 1.0, / 1.0 elsewhere: the same floats)
        div = np.where(small & (split > 1), split, 1.0)
        work = np.ceil(tiles * div / cv.sms) * tile_flops * (cv.k / div)
        better = ~done & (work < best)
        best = np.where(better, work, best)
        done |= better & (best <= enough)
        if done.all():
            break  # every GPU stopped: the later shapes change nothing
    return best * cv.per_flop, memory


def _latency_ms(col: Columns, batch: int, ceiling: float | None) -> Array:
    """:meth:`physics.cnn.Net._time` (inference) at ``batch`` on every GPU, then the serving
    model's phase (:meth:`serving.ServingModel.phases`: the host/input floor) and latency."""
    b = float(batch)
    on_chip = col.on_chip
    pooled = np.zeros(len(on_chip))
    for s, nbytes in col.pools:
        pooled = pooled + np.where(b * nbytes > on_chip, s, 0.0)
    memory = np.where(on_chip != 0.0, b * pooled, b * col.pool_s)
    compute = np.zeros(len(on_chip))
    for cv in col.convs:
        if cv.empty:
            k0 = k1 = np.zeros(len(on_chip))
        else:
            k0, k1 = _gemm(cv, b * cv.pixels)
        resident = b * cv.resident <= on_chip
        k1 = np.where(resident, cv.weight_s, k1)
        extra = np.where(resident, 0.0, cv.extra)
        extra_s = b * extra / col.bytes_s
        compute = compute + k0 * cv.count
        memory = memory + (k1 + extra_s) * cv.count
    # inference: the layers overlap (Net._time: the larger sum bounds), then the kernel costs
    total = np.maximum(compute, memory) + col.fixed_s
    total = np.maximum(total, cnn.input_floor_s(b, ceiling))
    top = np.maximum(compute, memory)
    stall = np.maximum(0.0, total - top)
    return (top + stall + 0.0) * 1e3


__all__ = ["Columns", "columns"]
