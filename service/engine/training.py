"""Training estimate: memory plan (TP degree, ZeRO stage, micro-batch) and step time."""

from __future__ import annotations

import math
from dataclasses import dataclass

from service.engine import constants as c
from service.engine import memory as mem
from service.engine import parallelism as par
from service.engine.performance import PeakRate, all_gather_s, all_reduce_s, bandwidth_gb_s
from service.engine.types import (
    Bound,
    GenericModel,
    GpuSpec,
    MemoryBreakdown,
    Parallelism,
    Precision,
    Sharding,
    TrainingSpec,
    TransformerModel,
    Workload,
)

SHARDING_ORDER: tuple[Sharding, ...] = ("none", "zero1", "zero2", "zero3")


@dataclass(frozen=True)
class TrainPlan:
    """A memory plan for one GPU count."""

    layout: par.Layout
    micro_batch: int
    accumulation: int
    memory: MemoryBreakdown
    fits: bool


_NO_LAYOUT = par.Layout(Parallelism(1, 1, 1, 1), 0.0, 0.0, "none")
"""Placeholder layout of a ``fits_only`` plan."""


def _seq_len(spec: TrainingSpec, model: TransformerModel | GenericModel) -> int:
    return (spec.seq_len or 1) if isinstance(model, TransformerModel) else 1


def _memory(
    workload: Workload,
    spec: TrainingSpec,
    gpu: GpuSpec,
    precision_used: Precision,
    tp: int,
    dp: int,
    sharding: Sharding,
    micro_batch: int,
    checkpointing: bool,
) -> MemoryBreakdown:
    model = workload.model
    assert model is not None
    prec = precision_used
    states = mem.training_state_bytes(prec, spec.optimizer)
    w_div, g_div, o_div = mem.shard_divisors(sharding, dp)
    params_per_gpu = model.params / tp
    elem = mem.activation_bytes_per_element(prec)
    weights = params_per_gpu * states.weights / w_div
    if w_div > 1 and isinstance(model, TransformerModel):
        # ZeRO-3 gathers one layer's full weights at a time (x2 with prefetch)
        weights += 2.0 * params_per_gpu / model.layers * states.weights
    if isinstance(model, TransformerModel):
        act = mem.transformer_activation_bytes(
            model,
            _seq_len(spec, model),
            micro_batch,
            tp,
            flash_attention=spec.flash_attention,
            checkpointing=checkpointing,
            elem_bytes=elem,
        )
    else:
        act = mem.generic_activation_bytes(model, micro_batch, elem, training=True)
    return MemoryBreakdown(
        weights=weights / c.GB,
        gradients=params_per_gpu * states.gradients / g_div / c.GB,
        optimizer_states=params_per_gpu * states.optimizer / o_div / c.GB,
        activations=act / c.GB,
        overhead=c.FRAMEWORK_OVERHEAD_GB,
    )


def _micro_batches(per_gpu_batch: int) -> list[int]:
    """Candidate micro-batches, largest first: the full per-GPU batch, then powers of 2."""
    sizes = {per_gpu_batch, *par.powers_of_two_upto(per_gpu_batch)}
    return sorted(sizes, reverse=True)


def plan_training(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    precision_used: Precision,
    *,
    checkpointing: bool | None = None,
    sharding: Sharding | None = None,
    fits_only: bool = False,
) -> TrainPlan:
    """Choose the TP degree (smallest whose weights fit), the least ZeRO stage that fits
    (``auto``) and the largest micro-batch that fits. Returns a non-fitting plan
    (micro-batch 1, most sharding) when nothing fits. ``fits_only``: stop at the first fit
    and return a placeholder plan (only ``fits`` and ``memory`` at micro-batch 1 are real)."""
    spec = workload.training
    model = workload.model
    assert spec is not None and model is not None
    ckpt = spec.activation_checkpointing if checkpointing is None else checkpointing
    wanted = spec.sharding if sharding is None else sharding
    shardings = SHARDING_ORDER if wanted == "auto" else (wanted,)
    usable = mem.usable_memory_bytes(gpu.memory_gb) / c.GB
    tps = [1]
    if isinstance(model, TransformerModel):
        tps = [t for t in par.tp_candidates(gpu, gpu_count) if model.attention_heads % t == 0]
        # TP degree: the smallest power of 2 whose 16-bit weight shard fits; 'auto' sharding
        # may raise it further when even ZeRO-3 leaves no room for activations
        weight_bytes = (
            model.params * mem.training_state_bytes(precision_used, spec.optimizer).weights
        )
        fitting = [t for t in tps if weight_bytes / t / c.GB + c.FRAMEWORK_OVERHEAD_GB <= usable]
        start = tps.index(fitting[0]) if fitting else len(tps) - 1
        tps = tps[start:] if wanted == "auto" else tps[start : start + 1]
    # memory grows with the micro-batch (activations are linear in it), so a (TP, sharding)
    # pair fits at some micro-batch iff it fits at 1, and the largest fitting one is found by
    # bisection over the candidates (largest first), the same as trying them in turn
    fallback: tuple[int, Sharding, MemoryBreakdown] | None = None
    for tp in tps:
        dp = max(1, gpu_count // tp)
        per_gpu_batch = max(1, math.ceil(spec.batch_size / dp))
        for shard in shardings:
            eff_shard: Sharding = shard if dp > 1 else "none"
            args = (workload, spec, gpu, precision_used, tp, dp, eff_shard)
            smallest = _memory(*args, 1, ckpt)
            if smallest.total > usable:
                fallback = (tp, eff_shard, smallest)
                continue
            if fits_only:
                return TrainPlan(_NO_LAYOUT, 1, per_gpu_batch, smallest, True)
            micros = _micro_batches(per_gpu_batch)
            lo, hi = 0, len(micros) - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if _memory(*args, micros[mid], ckpt).total <= usable:
                    hi = mid
                else:
                    lo = mid + 1
            micro = micros[hi]
            breakdown = smallest if micro == 1 else _memory(*args, micro, ckpt)
            layout = par.make_layout(gpu, gpu_count, tp, 1, eff_shard)
            return TrainPlan(layout, micro, math.ceil(per_gpu_batch / micro), breakdown, True)
    assert fallback is not None
    tp, eff_shard, breakdown = fallback
    dp = max(1, gpu_count // tp)
    per_gpu_batch = max(1, math.ceil(spec.batch_size / dp))
    layout = par.make_layout(gpu, gpu_count, tp, 1, eff_shard)
    return TrainPlan(layout, 1, per_gpu_batch, breakdown, False)


def fits(workload: Workload, gpu: GpuSpec, gpu_count: int, precision_used: Precision) -> bool:
    """``plan_training(...).fits`` without choosing the micro-batch or building the layout."""
    return plan_training(workload, gpu, gpu_count, precision_used, fits_only=True).fits


def training_flops_per_step(workload: Workload, recompute: bool) -> float:
    """FLOPs of one optimizer step over the global batch [FLOP]: 6*N_active*tokens (8 with full
    recomputation) plus causal attention 3 x 2*L*h*s^2 per sequence; CNNs 3 x forward."""
    spec = workload.training
    model = workload.model
    assert spec is not None and model is not None
    if isinstance(model, GenericModel):
        factor = c.CNN_TRAIN_FLOPS_FACTOR + (1.0 if recompute else 0.0)
        return factor * model.gflops_per_sample * 1e9 * spec.batch_size
    seq = spec.seq_len or 1
    per_token = c.RECOMPUTE_FLOPS_PER_PARAM_TOKEN if recompute else c.TRAIN_FLOPS_PER_PARAM_TOKEN
    dense = per_token * mem.active_params(model) * seq * spec.batch_size
    passes = 4.0 if recompute else 3.0
    attention = passes * 2.0 * model.layers * model.hidden_size * seq * seq * spec.batch_size
    return dense + attention


@dataclass(frozen=True)
class StepTime:
    compute_s: float
    memory_s: float
    tp_comm_s: float
    dp_comm_s: float
    exposed_dp_s: float

    @property
    def total_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.tp_comm_s + self.exposed_dp_s

    @property
    def bound(self) -> Bound:
        comm = self.tp_comm_s + self.exposed_dp_s
        if comm > max(self.compute_s, self.memory_s):
            return "interconnect"
        return "compute" if self.compute_s >= self.memory_s else "memory_bandwidth"


def step_time(
    workload: Workload, gpu: GpuSpec, plan: TrainPlan, rate: PeakRate, recompute: bool
) -> StepTime:
    """Roofline step time [s] for the plan: compute at MFU, optimizer-state traffic at memory
    bandwidth, TP all-reduces (exposed) and data-parallel traffic overlapped with backward."""
    spec = workload.training
    model = workload.model
    assert spec is not None and model is not None
    p = plan.layout.parallelism
    n = p.gpu_count
    if not rate.tensor:
        eff = c.MFU_NON_TENSOR_TRAINING
    elif isinstance(model, TransformerModel):
        eff = c.MFU_TRANSFORMER_TRAINING
    else:
        eff = c.MFU_CNN_TRAINING
    flops = training_flops_per_step(workload, recompute)
    compute_s = flops / (n * rate.tflops * 1e12 * eff)
    state_bytes = (
        plan.memory.weights + plan.memory.gradients + plan.memory.optimizer_states
    ) * c.GB
    memory_s = 2.0 * state_bytes / (bandwidth_gb_s(gpu) * c.GB)
    weight_bytes_16 = model.params / p.tensor_parallel * 2.0
    dp = p.data_parallel
    if p.sharding == "zero3":
        # per micro-step: all-gather fwd + all-gather bwd + reduce-scatter grads (ZeRO §7)
        gather = all_gather_s(weight_bytes_16, dp, plan.layout.dp_link_gb_s)
        dp_comm = 3.0 * plan.accumulation * gather
    else:
        dp_comm = all_reduce_s(weight_bytes_16, dp, plan.layout.dp_link_gb_s)
    tp_comm = 0.0
    if p.tensor_parallel > 1 and isinstance(model, TransformerModel):
        seq = spec.seq_len or 1
        act = seq * plan.micro_batch * model.hidden_size * 2.0
        per_layer = (6.0 if recompute else 4.0) * all_reduce_s(
            act, p.tensor_parallel, plan.layout.tp_link_gb_s
        )
        tp_comm = per_layer * model.layers * plan.accumulation
    exposed = max(0.0, dp_comm - c.BACKWARD_OVERLAP_FRACTION * compute_s)
    return StepTime(compute_s, memory_s, tp_comm, dp_comm, exposed)
