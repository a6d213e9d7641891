"""Training estimate: layout choice (TP degree, ZeRO stage, micro-batch) and step time.

For a GPU count the engine enumerates every feasible layout -- tensor-parallel degree t (powers
of 2 inside the fast-interconnect domain, dividing the attention heads), ZeRO stage (all four
when the user asked for ``auto``, else the user's), the largest micro-batch that fits -- and
keeps the one with the lowest step time; near-ties (:data:`LAYOUT_TIE`) go to the smallest t,
then the least sharding: TP costs that the roofline does not see (smaller GEMMs, collectives
on the critical path) are real, while ZeRO-1 moves the same bytes as plain data parallelism.
This is what Megatron-LM practice arrives at (TP = 8 inside an NVLink node, distributed
optimizer / ZeRO-1 across nodes; Narayanan et al. 2021), rather than the least TP whose
weights fit plus ZeRO-3 over the network. Memory per split: :mod:`training_splits`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import NamedTuple

from service.engine import constants as c
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.physics import training_splits as splits
from service.engine.physics.performance import PeakRate, all_gather_s, all_reduce_s, bandwidth_gb_s
from service.engine.types import (
    Bound,
    GenericModel,
    GpuSpec,
    MemoryBreakdown,
    Precision,
    Sharding,
    TransformerModel,
    Workload,
)

SHARDING_ORDER = splits.SHARDING_ORDER
LAYOUT_TIE = 1.001
"""A layout must be more than 0.1% faster than one with smaller TP / less sharding to win."""
LAYOUT_CACHE_SIZE = 4096
"""Memoized layout sets and plans: one per (workload, GPU, count, options) asked."""


@dataclass(frozen=True)
class StepTime:
    """One optimizer step [s]: compute and optimizer-state traffic (roofline), and the link
    time of the TP and data-parallel collectives, of which the part beyond what overlaps
    with compute (:data:`constants.BACKWARD_OVERLAP_FRACTION`) is exposed."""

    compute_s: float
    memory_s: float
    tp_comm_s: float
    dp_comm_s: float
    exposed_s: float

    @property
    def total_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.exposed_s

    @property
    def bound(self) -> Bound:
        if self.tp_comm_s + self.dp_comm_s > max(self.compute_s, self.memory_s):
            return "interconnect"
        return "compute" if self.compute_s >= self.memory_s else "memory_bandwidth"


@dataclass(frozen=True)
class TrainPlan:
    """A layout for one GPU count, with its memory and (when rated) step time."""

    layout: par.Layout
    micro_batch: int
    accumulation: int
    memory: MemoryBreakdown
    fits: bool
    step: StepTime | None = None


class _Job(NamedTuple):
    """What every layout of one (workload, GPU, rate, recompute) shares."""

    step_flops: float
    """FLOPs of one step over the global batch."""
    flop_rate: float
    """Achieved FLOP/s of one GPU (peak x MFU)."""
    bandwidth: float
    """Achievable memory bandwidth [GB/s]."""
    grad_bytes: float
    weight_bytes: float
    """Unsharded gradient / working-weight bytes of the whole model [B]."""
    tp_bytes: float
    """Bytes of one TP all-reduce at micro-batch 1: s*h*activation bytes."""
    tp_per_layer: float
    """TP all-reduces per layer per micro-step: 2 forward + 2 backward (+2 recompute)."""
    layers: int


def training_mfu(workload: Workload, rate: PeakRate) -> float:
    """The share of peak a training step reaches: by tensor path and model family (the same
    figure for the estimate and for the ranking's lower bounds)."""
    if not rate.tensor:
        return c.MFU_NON_TENSOR_TRAINING
    if isinstance(workload.model, TransformerModel):
        return c.MFU_TRANSFORMER_TRAINING
    return c.MFU_CNN_TRAINING


def _job(workload: Workload, gpu: GpuSpec, rate: PeakRate, recompute: bool) -> _Job:
    spec, model = workload.training, workload.model
    assert spec is not None and model is not None
    eff = training_mfu(workload, rate)
    states = mem.training_state_bytes(rate.precision_used, spec.optimizer)
    tp_bytes, layers = 0.0, 0
    if isinstance(model, TransformerModel):
        elem = mem.activation_bytes_per_element(rate.precision_used)
        tp_bytes, layers = splits.seq_len(spec, model) * model.hidden_size * elem, model.layers
    return _Job(
        training_flops_per_step(workload, recompute),
        rate.tflops * 1e12 * eff,
        bandwidth_gb_s(gpu),
        model.params * states.gradients,
        model.params * states.weights,
        tp_bytes,
        6.0 if recompute else 4.0,
        layers,
    )


def _resolve(
    workload: Workload, checkpointing: bool | None, sharding: Sharding | None
) -> tuple[bool, Sharding]:
    spec = workload.training
    assert spec is not None
    ckpt = spec.activation_checkpointing if checkpointing is None else checkpointing
    return ckpt, spec.sharding if sharding is None else sharding


def _plan(gpu: GpuSpec, gpu_count: int, option: splits.Split, micro: int, fits: bool) -> TrainPlan:
    layout = par.make_layout(gpu, gpu_count, option.tp, 1, option.sharding)
    accumulation = math.ceil(option.per_gpu_batch / micro)
    return TrainPlan(layout, micro, accumulation, option.memory(micro), fits)


def min_memory_plan(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    precision_used: Precision,
    *,
    checkpointing: bool | None = None,
    sharding: Sharding | None = None,
) -> TrainPlan:
    """The layout with the least memory per GPU (micro-batch 1): in practice the most sharding
    and the largest TP allowed. It fits iff any layout fits, and its memory never rises with
    the GPU count (more ranks to shard over, TP never falls)."""
    ckpt, wanted = _resolve(workload, checkpointing, sharding)
    options = splits.splits(workload, gpu, gpu_count, precision_used, ckpt, wanted)
    best = min(options, key=lambda o: o.fixed_gb + o.act_gb)
    return _plan(gpu, gpu_count, best, 1, best.largest_micro(splits.usable_gb(gpu)) > 0)


def fits(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    precision_used: Precision,
    *,
    checkpointing: bool | None = None,
    sharding: Sharding | None = None,
) -> bool:
    """Whether some layout fits memory (cheap: no step times, no layout records)."""
    ckpt, wanted = _resolve(workload, checkpointing, sharding)
    least = splits.least_gb(workload, gpu, gpu_count, precision_used, ckpt, wanted)
    return least <= splits.usable_gb(gpu)


_Step = tuple[float, float, float, float, float]
"""(compute_s, memory_s, tp_comm_s, dp_comm_s, exposed_s) of a :class:`StepTime`."""
_Found = tuple[splits.Split, int, _Step]


def _total(step: _Step) -> float:
    """:attr:`StepTime.total_s`."""
    return max(step[0], step[1]) + step[4]


def _walk(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    rate: PeakRate,
    checkpointing: bool,
    wanted: Sharding,
    stop_at: float,
    prune: bool = True,
) -> list[_Found]:
    """(split, micro-batch, step time) of the fitting layouts in preference order, stopping
    after the first whose step time is at most ``stop_at`` [s].

    ``prune``: once a TP degree runs its whole per-GPU batch in one micro-step and is not
    memory-bound, more sharding at that degree cannot be faster (same compute and TP traffic,
    no less data-parallel traffic), so those layouts are skipped."""
    usable = splits.usable_gb(gpu)
    nodes, per_node = par.node_layout(gpu, gpu_count)
    dp_link = par.group_link(gpu, per_node, spans_nodes=nodes > 1)[1]
    job = _job(workload, gpu, rate, checkpointing)
    tp_links: dict[int, float] = {}
    out: list[_Found] = []
    options = splits.splits(workload, gpu, gpu_count, rate.precision_used, checkpointing, wanted)
    settled: set[int] = set()
    for option in options:
        if option.tp in settled:
            continue
        micro = option.largest_micro(usable)
        if micro == 0:
            continue
        tp_link = tp_links.get(option.tp)
        if tp_link is None:
            tp_link = tp_links[option.tp] = par.group_link(gpu, option.tp, spans_nodes=False)[1]
        accumulation = math.ceil(option.per_gpu_batch / micro)
        state_gb = option.weights + option.gradients + option.optimizer
        split = (option.tp, option.dp, option.sharding)
        step = _step(workload, job, split, (micro, accumulation), state_gb, (tp_link, dp_link))
        out.append((option, micro, step))
        if _total(step) <= stop_at:
            break
        if prune and micro == option.per_gpu_batch and step[1] <= step[0]:
            settled.add(option.tp)
    return out


def candidate_plans(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    rate: PeakRate,
    *,
    checkpointing: bool | None = None,
    sharding: Sharding | None = None,
) -> tuple[TrainPlan, ...]:
    """Every layout that fits, at its largest micro-batch, with its step time; smallest TP
    first, then least sharding."""
    ckpt, wanted = _resolve(workload, checkpointing, sharding)
    found = _walk(workload, gpu, gpu_count, rate, ckpt, wanted, -math.inf, prune=False)
    return tuple(
        replace(_plan(gpu, gpu_count, option, micro, True), step=StepTime(*step))
        for option, micro, step in found
    )


@functools.lru_cache(maxsize=LAYOUT_CACHE_SIZE)
def _fastest(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    rate: PeakRate,
    checkpointing: bool,
    wanted: Sharding,
) -> _Found | None:
    """The first layout in preference order within :data:`LAYOUT_TIE` of the fastest.

    No layout beats its own compute time, so none beats the least compute time of any split
    (the busiest GPU's share of the FLOPs, nothing exposed): the walk stops at the first
    layout within the tie of that bound."""
    spec = workload.training
    assert spec is not None
    job = _job(workload, gpu, rate, checkpointing)
    options = splits.splits(workload, gpu, gpu_count, rate.precision_used, checkpointing, wanted)
    least = min(o.per_gpu_batch / o.tp for o in options)
    ideal = job.step_flops * least / spec.batch_size / job.flop_rate
    found = _walk(workload, gpu, gpu_count, rate, checkpointing, wanted, ideal * LAYOUT_TIE)
    if not found:
        return None
    limit = min(_total(f[2]) for f in found) * LAYOUT_TIE
    return next(f for f in found if _total(f[2]) <= limit)


def plan_training(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    rate: PeakRate,
    *,
    checkpointing: bool | None = None,
    sharding: Sharding | None = None,
) -> TrainPlan:
    """The fastest layout that fits (near-ties: smallest TP, then least sharding), with its
    step time. When nothing fits: the minimum-memory layout at micro-batch 1, ``fits`` False
    (its step time is still given, as if it ran)."""
    ckpt, wanted = _resolve(workload, checkpointing, sharding)
    best = _fastest(workload, gpu, gpu_count, rate, ckpt, wanted)
    if best is None:
        plan = min_memory_plan(
            workload, gpu, gpu_count, rate.precision_used, checkpointing=ckpt, sharding=wanted
        )
        return replace(plan, step=step_time(workload, gpu, plan, rate, ckpt))
    option, micro, step = best
    return replace(_plan(gpu, gpu_count, option, micro, True), step=StepTime(*step))


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


def _dp_comm_s(
    dp: int,
    sharding: Sharding,
    grad_bytes: float,
    weight_bytes: float,
    accumulation: int,
    link: float,
) -> float:
    """Data-parallel traffic per step [s] over the slowest link spanning the DP group (ZeRO,
    Rajbhandari et al. 2020, §7): none = gradient all-reduce once per step; ZeRO-1
    (Megatron distributed optimizer) = reduce-scatter of gradients + all-gather of updated
    weights, once per step (the same volume); ZeRO-2 = the reduce-scatter every micro-step
    (gradients are not kept whole between micro-steps); ZeRO-3 = forward and backward weight
    all-gathers and the gradient reduce-scatter every micro-step."""
    if sharding == "zero3":
        gather = all_gather_s(weight_bytes, dp, link)
        return accumulation * (2.0 * gather + all_gather_s(grad_bytes, dp, link))
    if sharding == "zero2":
        return accumulation * all_gather_s(grad_bytes, dp, link) + all_gather_s(
            weight_bytes, dp, link
        )
    if sharding == "zero1":
        return all_gather_s(grad_bytes, dp, link) + all_gather_s(weight_bytes, dp, link)
    return all_reduce_s(grad_bytes, dp, link)


def step_time(
    workload: Workload, gpu: GpuSpec, plan: TrainPlan, rate: PeakRate, recompute: bool
) -> StepTime:
    """Roofline step time [s] for the plan (see :func:`_step`)."""
    p = plan.layout.parallelism
    m = plan.memory
    step = _step(
        workload,
        _job(workload, gpu, rate, recompute),
        (p.tensor_parallel, p.data_parallel, p.sharding),
        (plan.micro_batch, plan.accumulation),
        m.weights + m.gradients + m.optimizer_states,
        (plan.layout.tp_link_gb_s, plan.layout.dp_link_gb_s),
    )
    return StepTime(*step)


def _step(
    workload: Workload,
    job: _Job,
    split: tuple[int, int, Sharding],
    micro: tuple[int, int],
    state_gb: float,
    links: tuple[float, float],
) -> _Step:
    """Roofline step time [s] of ``split`` = (TP, DP, sharding) at ``micro`` = (micro-batch,
    accumulation steps) over ``links`` = (TP link, DP link) one-way [GB/s]; ``state_gb``:
    weights, gradients and optimizer states per GPU [GB].

    Compute: the busiest GPU's share (ceil(batch / dp) samples, split t ways) at MFU.
    Memory: optimizer-state traffic at memory bandwidth. TP: 2 all-reduces per layer forward
    and 2 backward (+2 with recomputation), 2(t-1)/t x s*b*h*bytes each over the intra-node
    link (Megatron-LM; sequence parallelism's reduce-scatter + all-gather move the same
    volume). DP: :func:`_dp_comm_s`. All link time shares the compute-overlap budget
    (:data:`constants.BACKWARD_OVERLAP_FRACTION`): the MFU constant is end-to-end from runs
    that already used in-node TP (Llama 2/3), so only traffic beyond the budget is exposed.
    """
    spec = workload.training
    assert spec is not None
    tp, dp, sharding = split
    micro_batch, accumulation = micro
    per_gpu_batch = max(1, math.ceil(spec.batch_size / dp))
    compute_s = job.step_flops * per_gpu_batch / spec.batch_size / (tp * job.flop_rate)
    memory_s = 2.0 * state_gb / job.bandwidth
    dp_comm = _dp_comm_s(
        dp, sharding, job.grad_bytes / tp, job.weight_bytes / tp, accumulation, links[1]
    )
    tp_comm = 0.0
    if tp > 1 and job.layers:
        per_layer = job.tp_per_layer * all_reduce_s(job.tp_bytes * micro_batch, tp, links[0])
        tp_comm = per_layer * job.layers * accumulation
    exposed = max(0.0, tp_comm + dp_comm - c.BACKWARD_OVERLAP_FRACTION * compute_s)
    return compute_s, memory_s, tp_comm, dp_comm, exposed
