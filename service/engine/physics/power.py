"""The clock a GPU holds under its power limit, from energy per FLOP and per byte.

Board power at SM clock ``f`` running an operator that reaches a share ``u`` of the unit's
peak FLOP rate and moves ``B`` DRAM bytes per second::

    P(f) = P_static + u x E_flop x R_boost x (f / f_boost) ** alpha + E_byte x B

``B`` is the DRAM traffic of a large GEMM at that rate (its FLOPs over its arithmetic
intensity, at most the achieved bandwidth), not the memory's full bandwidth: a compute-bound
operator leaves the memory partly idle, so a part with more bandwidth does not pay for it on
compute-bound work.

``P_static`` is a share of the board limit (leakage, fans-off idle, I/O); ``E_flop`` is the
energy of one FLOP at the boost voltage, scaled by process node and by precision from a
16-bit tensor FLOP; ``R_boost`` is the unit's peak at the boost clock. Dynamic power is
``C V^2 f`` and the voltage rises with the clock over the DVFS range, so it grows as
``f ** alpha`` (alpha between 2 and 3). The clock an operator holds is the highest clock in
[base, boost] whose power fits the board limit (closed form below); the base clock is the
vendor's guarantee at the limit, so it is the floor.

A datasheet peak is quoted at a clock: ``peak = units x FLOP per clock per unit x clock``.
Most vendors quote at the boost clock; Hopper and Blackwell quote their dense tensor peaks at a
lower clock (H100 SXM 989.4 TFLOPS = 132 SMs x 4,096 x 1,830 MHz against a 1,980 MHz boost),
so the share of the datasheet peak an operator reaches is ``f / f_quoted`` (above 1 where the
part holds more than its quoted clock).

Units: watts [W], hertz ratios, picojoules [pJ], FLOP/s, B/s.
"""

from __future__ import annotations

from service.engine import constants as c
from service.engine.physics.performance import PeakRate
from service.engine.types import GpuSpec

_PJ = 1e-12


def node_energy_factor(gpu: GpuSpec) -> float | None:
    """Energy per FLOP of the GPU's process node relative to TSMC 4N (None = unknown)."""
    arch = gpu.architecture.lower()
    for key, factor in c.NODE_ENERGY_FACTOR:
        if key in arch:
            return factor
    return None


def _tensor16_flop_per_clock(gpu: GpuSpec) -> float | None:
    arch = gpu.architecture.lower()
    for key, flop in c.TENSOR16_FLOP_PER_CLOCK_PER_SM:
        if key in arch:
            return flop
    return None


def quoted_clock_mhz(gpu: GpuSpec, rate: PeakRate) -> float | None:
    """The clock [MHz] the datasheet figure behind ``rate`` is quoted at.

    Dense 16-bit-family tensor peaks (TF32, BF16/FP16, FP8, INT8 are fixed multiples per
    clock) of architectures whose per-SM rate is in :data:`constants.TENSOR16_FLOP_PER_CLOCK_
    PER_SM` are divided by SMs x FLOP per clock; everything else is quoted at boost. A result
    above boost (a rounded datasheet) is boost."""
    boost = gpu.boost_clock_mhz
    if not boost or boost <= 0:
        return None
    if not rate.tensor or rate.precision_used == "fp64" or not gpu.sm_count:
        return boost
    per_sm = _tensor16_flop_per_clock(gpu)
    sixteen = gpu.bf16_tflops or gpu.fp16_tflops
    if per_sm is None or not sixteen:
        return boost
    return min(boost, sixteen * 1e12 / (gpu.sm_count * per_sm) / 1e6)


def energy_ratio(rate: PeakRate) -> float:
    """Energy per FLOP of ``rate``'s unit and precision over a 16-bit tensor FLOP."""
    p = rate.precision_used
    if rate.tensor:
        if p in ("fp8", "int8"):
            return c.ENERGY_RATIO_TENSOR_8BIT
        if p == "tf32":
            return c.ENERGY_RATIO_TENSOR_TF32
        if p == "fp64":
            return c.ENERGY_RATIO_FP64
        return 1.0
    return c.ENERGY_RATIO_FP64 if p == "fp64" else c.ENERGY_RATIO_VECTOR_FP32


def dram_bytes_s(gpu: GpuSpec, flops_s: float, operand_bytes: float) -> float:
    """DRAM bytes per second [B/s] of a large GEMM running ``flops_s`` on operands of
    ``operand_bytes`` each: its FLOPs over the intensity of
    :data:`constants.GEMM_DRAM_FLOP_PER_BYTE_16BIT` (scaled to the operand width), at most
    the achieved bandwidth. A GEMM right of the ridge point moves fewer bytes than the memory
    could: the H200 and H100 run the same GEMM at the same rate and move the same bytes,
    whatever their bandwidths."""
    intensity = c.GEMM_DRAM_FLOP_PER_BYTE_16BIT * 2.0 / operand_bytes
    return min(gpu.memory_bandwidth_gb_s * c.GB * c.EFF_MEMORY_BW, flops_s / intensity)


def clock_ratio(
    gpu: GpuSpec, peak_tflops: float, ratio: float, utilization: float,
    operand_bytes: float = 2.0,
) -> float | None:
    """Sustained clock over boost for a compute-bound operator reaching ``utilization`` of a
    unit whose peak is ``peak_tflops`` at boost and costs ``ratio`` x a 16-bit tensor FLOP,
    on operands of ``operand_bytes``; its DRAM traffic is a large GEMM's at the boost rate
    (:func:`dram_bytes_s`: an upper bound of its memory power at the clock it holds). None
    where the node or clocks are unknown."""
    node = node_energy_factor(gpu)
    boost, base = gpu.boost_clock_mhz, gpu.base_clock_mhz
    if node is None or not boost or boost <= 0 or not gpu.tdp_w:
        return None
    floor = min(base, boost) / boost if base else c.SUSTAINED_CLOCK_FRACTION_UNKNOWN
    static_w = c.STATIC_POWER_FRACTION * gpu.tdp_w
    flops_s = utilization * peak_tflops * 1e12
    memory_w = dram_bytes_s(gpu, flops_s, operand_bytes) * c.DRAM_ENERGY_PJ_PER_BYTE * _PJ
    dynamic_at_boost_w = flops_s * c.TENSOR16_ENERGY_PJ_4N * node * ratio * _PJ
    budget_w = gpu.tdp_w - static_w - memory_w
    if dynamic_at_boost_w <= budget_w:
        return 1.0
    if budget_w <= 0:
        return floor
    held: float = (budget_w / dynamic_at_boost_w) ** (1.0 / c.DVFS_POWER_EXPONENT)
    return max(floor, held)


def sustained_peak_share(gpu: GpuSpec, rate: PeakRate, utilization: float) -> float:
    """Share of the datasheet peak behind ``rate`` that a compute-bound operator reaching
    ``utilization`` of it holds: sustained clock / the clock the peak is quoted at. Unknown
    clocks or node: :data:`constants.SUSTAINED_CLOCK_FRACTION_UNKNOWN`."""
    quoted = quoted_clock_mhz(gpu, rate)
    boost = gpu.boost_clock_mhz
    if quoted is None or not boost:
        return c.SUSTAINED_CLOCK_FRACTION_UNKNOWN
    peak_at_boost = rate.tflops * boost / quoted
    held = clock_ratio(gpu, peak_at_boost, energy_ratio(rate), utilization,
                       c.BYTES_PER_ELEMENT[rate.precision_used])
    if held is None:
        return c.SUSTAINED_CLOCK_FRACTION_UNKNOWN
    return held * boost / quoted
