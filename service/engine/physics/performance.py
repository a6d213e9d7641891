"""Roofline time: compute vs memory bandwidth vs interconnect.

Peak rates come from the GPU spec (dense tensor figures, [TFLOPS]); efficiencies are named
constants in :mod:`service.engine.constants`.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.engine import constants as c
from service.engine.types import Bound, GpuSpec, Precision, _cached_hash

FALLBACK_ORDER: dict[Precision, tuple[Precision, ...]] = {
    "fp64": ("fp64",),
    "fp32": ("fp32",),
    "tf32": ("tf32", "fp32"),
    "bf16": ("bf16", "fp16", "tf32", "fp32"),
    "fp16": ("fp16", "bf16", "tf32", "fp32"),
    "fp8": ("fp8", "fp16", "bf16", "tf32", "fp32"),
    "int8": ("int8", "fp16", "bf16", "tf32", "fp32"),
    "int4": ("int8", "fp16", "bf16", "tf32", "fp32"),
}
"""Nearest supported precision, in order. FP64 never falls back."""

TENSOR_PRECISIONS: frozenset[Precision] = frozenset({"tf32", "bf16", "fp16", "fp8", "int8"})


@dataclass(frozen=True)
class PeakRate:
    """The compute rate a precision runs at on one GPU."""

    __hash__ = _cached_hash

    tflops: float
    precision_used: Precision
    tensor: bool
    """True when the figure is a tensor/matrix-core rate."""
    warning: str | None = None


def _raw_rate(gpu: GpuSpec, precision: Precision) -> float | None:
    rates: dict[Precision, float | None] = {
        "fp32": gpu.fp32_tflops,
        "tf32": gpu.tf32_tflops,
        "bf16": gpu.bf16_tflops,
        "fp16": gpu.fp16_tflops,
        "fp8": gpu.fp8_tflops,
        "int8": gpu.int8_tops,
    }
    value = rates.get(precision)
    return value if value is not None and value > 0 else None


def peak_rate(gpu: GpuSpec, precision: Precision, *, matmul: bool = True) -> PeakRate | None:
    """Dense peak [TFLOPS] for ``precision`` on ``gpu``, falling back when unsupported.

    FP64 uses the FP64 tensor rate for matrix work when the GPU has a faster one than its vector
    rate, else the vector rate;
    it never falls back to a lower precision. Returns None when nothing applies (e.g. no FP64).
    Consumer GeForce fp16/bf16 catalog figures already are the FP32-accumulate rate.

    Kept on the (frozen) GPU object, as its hash is (:func:`types._cached_hash`): at most one
    entry per precision and matmul flag, living and dying with the object, so a request's
    hundred asks return one object, whose hash is then taken once (every memo key holds it).
    """
    table: dict[tuple[str, bool], PeakRate | None] | None = gpu.__dict__.get("_peak_rates")
    if table is None:
        table = {}
        object.__setattr__(gpu, "_peak_rates", table)
    key = (precision, matmul)
    if key in table:
        return table[key]
    found = table[key] = _peak_rate(gpu, precision, matmul)
    return found


def _peak_rate(gpu: GpuSpec, precision: Precision, matmul: bool) -> PeakRate | None:
    if precision == "fp64":
        # DGEMM libraries use the matrix units only where they are faster (B200: 37 TFLOPS
        # on either, so its FP64 work is timed on the vector path)
        if matmul and gpu.fp64_tensor_tflops and gpu.fp64_tensor_tflops > (gpu.fp64_tflops or 0):
            return PeakRate(gpu.fp64_tensor_tflops, "fp64", True)
        if gpu.fp64_tflops:
            return PeakRate(gpu.fp64_tflops, "fp64", False)
        return None
    wanted: Precision = "int8" if precision == "int4" else precision
    for candidate in FALLBACK_ORDER[precision]:
        rate = _raw_rate(gpu, candidate)
        if rate is None:
            continue
        warning = None
        if candidate != wanted:
            warning = (
                f"{gpu.name} has no {wanted} support; runs at {candidate} ({rate:g} TFLOPS)"
            )
        return PeakRate(rate, candidate, candidate in TENSOR_PRECISIONS, warning)
    return None


def bandwidth_gb_s(gpu: GpuSpec) -> float:
    """Achievable memory bandwidth [GB/s]."""
    return gpu.memory_bandwidth_gb_s * c.EFF_MEMORY_BW


@dataclass(frozen=True)
class PhaseTime:
    """Roofline time of one phase [s] and what bounds it."""

    compute_s: float
    memory_s: float
    comm_s: float = 0.0
    stall_s: float = 0.0
    """Time sequential kernels cannot overlap (see :func:`sequential`) [s]."""

    @property
    def total_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.stall_s + self.comm_s

    @property
    def bound(self) -> Bound:
        if self.comm_s > max(self.compute_s, self.memory_s):
            return "interconnect"
        return "compute" if self.compute_s >= self.memory_s else "memory_bandwidth"


def _ring_s(volume: float, link_gb_s: float, vendor: float) -> float:
    """``volume`` bytes over the one-way link at :data:`constants.COLLECTIVE_EFFICIENCY`, plus
    one collective's latency, at the vendor's software factor (``vendor``:
    :func:`kernels.vendor_factor`; its collective library reaches that share of NCCL's
    bandwidth and pays its latency over it)."""
    return (volume / (link_gb_s * c.GB * (c.COLLECTIVE_EFFICIENCY * vendor))
            + c.COLLECTIVE_LATENCY_S / vendor)


def all_reduce_s(nbytes: float, ranks: int, link_gb_s: float, vendor: float = 1.0) -> float:
    """Ring all-reduce time [s]: volume 2(n-1)/n x bytes (:func:`_ring_s`)."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return _ring_s(2.0 * (ranks - 1) / ranks * nbytes, link_gb_s, vendor)


def all_gather_s(nbytes: float, ranks: int, link_gb_s: float, vendor: float = 1.0) -> float:
    """Ring all-gather (or reduce-scatter) time [s] of ``nbytes`` total: (n-1)/n x bytes
    (:func:`_ring_s`)."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return _ring_s((ranks - 1) / ranks * nbytes, link_gb_s, vendor)


def exposed_comm_s(once: bool, accumulation: float, micro_compute_s: float, tp_comm_s: float,
                   dp_comm_s: float, overlap: float) -> float:
    """Link time a training step waits for [s]: each micro-step hides ``overlap``
    (:data:`constants.BACKWARD_OVERLAP_FRACTION`) of its compute. TP collectives run in every
    micro-step; ``once`` (no sharding, ZeRO-1): the gradient reduction runs beside the last
    micro-step only (PyTorch DDP's ``no_sync`` until then; Megatron-LM reduces the
    accumulated gradients once), so only that micro-step's compute can hide it; otherwise the
    DP traffic is spread over the micro-steps like the TP traffic. Pure arithmetic: the
    compiled training walk runs it as it is."""
    budget = overlap * micro_compute_s
    if once and accumulation > 1:
        tp_micro = tp_comm_s / accumulation
        return ((accumulation - 1) * max(0.0, tp_micro - budget)
                + max(0.0, tp_micro + dp_comm_s - budget))
    return max(0.0, tp_comm_s + dp_comm_s - overlap * (accumulation * micro_compute_s))
