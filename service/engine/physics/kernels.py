"""Achieved speed of one GPU on one operator, from the GPU's own figures.

A GPU is reduced to a :class:`Device`: its sustained matrix and vector FLOP rates (datasheet
peak x the clock it holds under its power limit x the share a well-shaped kernel reaches x its
vendor's software factor), its achieved memory bandwidth (x the same factor: the stack's
memory-bound kernels), its SM (CU) count and a fixed cost per kernel. Operators are then timed
one by one, each with its own roofline:

* GEMMs (and convolutions as implicit GEMMs) are cut into output tiles run one per SM per wave
  (NVIDIA "Matrix Multiplication Background" guide, wave quantization; Habitat, Yu et al.,
  USENIX ATC'21). A GEMM with fewer tiles than SMs is split along K (split-K / stream-K, as
  cuBLAS and CUTLASS do) while K allows; the last partial wave leaves SMs idle. Time =
  max(FLOPs / (rate x wave utilization), bytes / bandwidth).
* Memory-bound operators (norms, activations, residuals, softmax, optimizer updates, KV reads)
  move their bytes at achieved bandwidth.
* Every kernel pays a fixed launch/tail cost; every serving iteration a scheduling cost.

Units: seconds [s], bytes [B], FLOP, FLOP/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from service.engine import constants as c
from service.engine.physics import power
from service.engine.physics.performance import PeakRate, peak_rate
from service.engine.types import GpuSpec, ServingRuntime

_ceil = math.ceil
_INF = math.inf

Kernel = tuple[float, float]
"""(compute_s, memory_s) of one kernel or of a run of kernels timed together."""


def sustained_clock_fraction(gpu: GpuSpec, rate: PeakRate | None = None) -> float:
    """Share of the boost clock a GPU holds under sustained large-GEMM load at ``rate``
    (default: its 16-bit tensor rate, else FP32), from the power model of
    :mod:`physics.power`: the highest clock in [base, boost] whose power fits the board limit.
    Unknown clocks or node: :data:`constants.SUSTAINED_CLOCK_FRACTION_UNKNOWN`."""
    if rate is None:
        rate = peak_rate(gpu, "bf16") or peak_rate(gpu, "fp64")
    boost = gpu.boost_clock_mhz
    if rate is None or not boost:
        return c.SUSTAINED_CLOCK_FRACTION_UNKNOWN
    quoted = power.quoted_clock_mhz(gpu, rate) or boost
    return power.sustained_peak_share(gpu, rate, _gemm_utilization(rate)) * quoted / boost


def _gemm_utilization(rate: PeakRate) -> float:
    """Share of the unit's peak a large GEMM reaches at ``rate`` (what sets its power)."""
    if not rate.tensor:
        return c.EFF_NON_TENSOR
    if rate.precision_used == "fp64":
        return c.EFF_FP64_TENSOR  # DGEMM on matrix units (HPL's share)
    eight_bit = c.EFF_8BIT_GEMM if rate.precision_used in ("fp8", "int8") else 1.0
    return c.GEMM_EFFICIENCY * eight_bit


def peak_share(gpu: GpuSpec, rate: PeakRate) -> float:
    """Share of the datasheet peak behind ``rate`` that large GEMMs hold under the power
    limit: sustained clock / the clock the peak is quoted at (above 1 for Hopper parts that
    hold more than their 1,830 MHz quote)."""
    return power.sustained_peak_share(gpu, rate, _gemm_utilization(rate))


def vendor_factor(gpu: GpuSpec) -> float:
    """Software-stack factor of the GPU's vendor (1.0 for the reference CUDA stack)."""
    return c.VENDOR_EFFICIENCY.get(gpu.vendor.lower(), 1.0)


@dataclass(frozen=True)
class Device:
    """One GPU at one compute precision, as the operator model sees it."""

    matrix_flops_s: float
    """Sustained FLOP/s a large, well-shaped GEMM reaches at the precision [FLOP/s]."""
    attention_flops_s: float
    """Sustained FLOP/s of fused (flash) attention [FLOP/s]."""
    conv_flops_s: float
    """Sustained FLOP/s of training convolutions (cuDNN forward, data and weight gradients)."""
    conv_inference_flops_s: float
    """Sustained FLOP/s of inference convolutions (TensorRT, fused) [FLOP/s]."""
    vector_flops_s: float
    """Sustained FLOP/s of non-tensor math [FLOP/s] (FP32/FP64 vector units)."""
    bytes_s: float
    """Achieved DRAM bandwidth [B/s]."""
    sms: int
    """Tile slots per wave (SMs / CUs)."""
    kernel_s: float
    """Fixed cost per kernel [s]."""
    clock_fraction: float
    """Sustained clock of large GEMMs at the precision over the boost clock."""
    tensor: bool
    l2_bytes: float = 0.0
    """Last-level on-chip cache [B] (0 = unknown)."""


def device(gpu: GpuSpec, rate: PeakRate) -> Device:
    """The :class:`Device` for ``gpu`` running at ``rate`` (from :func:`peak_rate`)."""
    share = peak_share(gpu, rate)
    sustained = rate.tflops * 1e12 * share * vendor_factor(gpu)
    if rate.tensor:
        # FP8/INT8 kernels reach a smaller share of their doubled peak
        eight_bit = c.EFF_8BIT_GEMM if rate.precision_used in ("fp8", "int8") else 1.0
        matrix = sustained * c.GEMM_EFFICIENCY * eight_bit
        attention = sustained * c.ATTENTION_EFFICIENCY * eight_bit
        conv = sustained * c.CONV_EFFICIENCY * eight_bit
        conv_inference = sustained * c.CONV_INFERENCE_EFFICIENCY * eight_bit
    else:
        matrix = attention = conv = conv_inference = sustained * c.EFF_NON_TENSOR
    vector_rate = PeakRate(gpu.fp32_tflops or rate.tflops,
                           "fp32" if gpu.fp32_tflops else rate.precision_used, False)
    vector_peak = vector_rate.tflops * 1e12 * peak_share(gpu, vector_rate)
    boost = gpu.boost_clock_mhz
    clock = share * (power.quoted_clock_mhz(gpu, rate) or boost or 1.0) / (boost or 1.0)
    return Device(
        matrix_flops_s=matrix,
        attention_flops_s=attention,
        conv_flops_s=conv,
        conv_inference_flops_s=conv_inference,
        vector_flops_s=vector_peak * c.EFF_NON_TENSOR,
        bytes_s=gpu.memory_bandwidth_gb_s * c.GB * c.EFF_MEMORY_BW * vendor_factor(gpu),
        sms=max(1, gpu.sm_count or c.SM_COUNT_UNKNOWN),
        kernel_s=c.KERNEL_OVERHEAD_S,
        clock_fraction=clock,
        tensor=rate.tensor,
        l2_bytes=(gpu.l2_cache_mb or 0.0) * c.MIB,
    )


def runtime_device(gpu: GpuSpec, rate: PeakRate, runtime: ServingRuntime) -> Device:
    """:func:`device` as a serving runtime reaches it. llama.cpp's matrix-vector kernels hold
    too few bytes in flight to cover the DRAM latency of a large HBM part (Little's law), so
    their bandwidth is capped at SMs x boost clock x
    :data:`constants.LLAMACPP_STREAM_BYTES_PER_SM_CYCLE` (memory-bound kernels leave the clock
    at boost). Unknown SM count or clock: no cap. The cap applies to every memory-bound
    kernel of the runtime; its prompt GEMMs are compute-bound and do not feel it.

    Its GEMM and attention rates are :data:`constants.LLAMACPP_PROMPT_EFFICIENCY` x a batching
    server's (format conversions around each GEMM, unfused attention). Its F16 GEMMs (and its
    attention GEMMs over an F16 KV cache) accumulate in FP16,
    which GeForce cards run at :data:`constants.GEFORCE_FP16_ACCUMULATE_SPEEDUP` x the
    FP32-accumulate rate the catalog stores (:func:`fp16_accumulate_doubles`); the clock held
    is left at the FP32-accumulate one."""
    dev = device(gpu, rate)
    if runtime != "llama.cpp":
        return dev
    speedup = c.LLAMACPP_PROMPT_EFFICIENCY
    if rate.tensor and rate.precision_used == "fp16" and fp16_accumulate_doubles(gpu):
        speedup *= c.GEFORCE_FP16_ACCUMULATE_SPEEDUP
    dev = replace(dev, matrix_flops_s=dev.matrix_flops_s * speedup,
                  attention_flops_s=dev.attention_flops_s * speedup)
    if not gpu.sm_count or not gpu.boost_clock_mhz:
        return dev
    cap = gpu.sm_count * gpu.boost_clock_mhz * 1e6 * c.LLAMACPP_STREAM_BYTES_PER_SM_CYCLE
    return replace(dev, bytes_s=min(dev.bytes_s, cap)) if cap < dev.bytes_s else dev


def fp16_accumulate_doubles(gpu: GpuSpec) -> bool:
    """Whether FP16 tensor math with FP16 accumulation runs at twice the catalog's FP16 rate:
    NVIDIA GeForce (consumer) cards with tensor cores of Turing (2nd generation) or later."""
    return (gpu.vendor.lower() == "nvidia" and gpu.form_factor == "consumer"
            and (gpu.tensor_core_generation or 0) >= 2)


def replace_l2(dev: Device, l2_bytes: float) -> Device:
    """``dev`` with another last-level cache size [B] (0: none)."""
    return replace(dev, l2_bytes=l2_bytes)


class GemmShape:
    """A GEMM (m x k) @ (k x n) with N, K and element sizes fixed, timed for any M (rows) and
    number of independent problems (``groups``): the layer GEMMs of a model, whose row count is
    the only thing a batch changes. Everything that does not depend on M is computed once.

    For each tile shape of :data:`constants.GEMM_TILES` (the library picks the best, as cuBLAS
    heuristics do): tiles = ceil(m / tile_m) x ceil(n / tile_n) per problem, run one per SM per
    wave; fewer tiles than SMs: K is split into up to ``sms // tiles`` slices of at least
    :data:`constants.SPLIT_K_MIN` (split-K). Compute = waves x one tile's FLOPs at the per-SM
    rate, so partial tiles and a partial last wave cost full ones (the time never falls as the
    GEMM grows: a minimum of non-decreasing functions). Bytes = inputs + weights + outputs
    once."""

    __slots__ = ("k", "sms", "per_flop", "shapes", "weight_s", "row_s", "empty")

    def __init__(
        self,
        dev: Device,
        n: float,
        k: float,
        *,
        in_bytes: float,
        weight_bytes: float,
        out_bytes: float,
    ) -> None:
        self.k, self.sms = k, dev.sms
        self.per_flop = dev.sms / dev.matrix_flops_s
        split_cap = max(1, int(k // c.SPLIT_K_MIN))
        self.shapes = tuple(
            (tile_m, math.ceil(n / tile_n), split_cap, 2.0 * tile_m * tile_n)
            for tile_m, tile_n in c.GEMM_TILES
        )
        self.weight_s = k * n * weight_bytes / dev.bytes_s
        self.row_s = (k * in_bytes + n * out_bytes) / dev.bytes_s
        self.empty = k <= 0 or not self.shapes[0][1]

    def time(self, m: float, groups: float = 1.0) -> Kernel:
        """(compute_s, memory_s) of ``groups`` problems of ``m`` rows each. Once a tile shape
        makes the GEMM memory-bound the others are not tried: the kernel's time is its memory
        time either way (its compute figure is then an upper bound of the best tile's)."""
        if m <= 0 or self.empty:
            return 0.0, 0.0
        sms, k, per_flop = self.sms, self.k, self.per_flop
        memory = (self.weight_s + m * self.row_s) * groups
        enough = memory / per_flop  # work below this cannot change max(compute, memory)
        best = _INF
        for tile_m, n_tiles, split_cap, tile_flops in self.shapes:
            tiles = _ceil(m / tile_m) * n_tiles * groups
            depth = k
            if tiles < sms:
                split = sms // tiles
                if split > split_cap:
                    split = split_cap
                if split > 1:
                    tiles *= split
                    depth = k / split
            work = _ceil(tiles / sms) * tile_flops * depth
            if work < best:
                best = work
                if best <= enough:
                    break  # memory-bound whichever tile the library picks
        return best * per_flop, memory


def gemm(
    dev: Device,
    m: float,
    n: float,
    k: float,
    *,
    in_bytes: float,
    weight_bytes: float,
    out_bytes: float,
    groups: float = 1.0,
) -> Kernel:
    """(compute_s, memory_s) of ``groups`` GEMMs (m x k) @ (k x n) (see :class:`GemmShape`)."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0, 0.0
    shape = GemmShape(dev, n, k, in_bytes=in_bytes, weight_bytes=weight_bytes,
                      out_bytes=out_bytes)
    return shape.time(m, groups)
