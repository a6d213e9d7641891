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

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from service.engine import constants as c
from service.engine.cache import Memo, memo_of
from service.engine.physics import cnn, kernels
from service.engine.physics import compiled_training as ct
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.physics import training_splits as splits
from service.engine.physics import transformer_ops as tops
from service.engine.physics.performance import (
    PeakRate,
    all_gather_s,
    all_reduce_s,
    bandwidth_gb_s,
    exposed_comm_s,
)
from service.engine.physics.transformer_ops import LayerOps
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


@dataclass(frozen=True)
class StepTime:
    """One optimizer step [s] on the busiest GPU: its micro-steps timed operator by operator
    (kernel compute and memory times, and what their sum of maxima and fixed costs add:
    ``stall_s``), the optimizer update after them, and the link time of the TP and
    data-parallel collectives, of which the part beyond what overlaps with compute
    (:data:`constants.BACKWARD_OVERLAP_FRACTION`) is exposed."""

    compute_s: float
    memory_s: float
    tp_comm_s: float
    dp_comm_s: float
    exposed_s: float
    stall_s: float = 0.0

    @property
    def total_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.stall_s + self.exposed_s

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
    floor_rate: float
    """FLOP/s no training kernel exceeds on this GPU (the GEMM or conv rate) [FLOP/s]."""
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
    micro: MicroStep
    vendor: float
    """The vendor's software factor (:func:`kernels.vendor_factor`): its collectives reach that
    share of NCCL's (its kernels' rates and bandwidth carry it already, in the device)."""


class MicroStep:
    """Operator-level time of one micro-step (forward, backward, and a second forward with
    full recomputation) of ``micro`` samples on one GPU of a TP group, memoized per
    (micro-batch, TP) for one walk over the layouts (one call's object, never shared).

    Transformers: every layer's GEMMs (data and weight gradients in backward), flash attention
    (or the materialized scores' traffic without it), non-GEMM traffic and kernel costs
    (:class:`transformer_ops.LayerOps`), then the LM head and the loss over the vocabulary.
    CNNs: :mod:`cnn` (each layer's forward, data- and weight-gradient GEMMs, batch norm /
    ReLU / residual traffic, kernel costs; the aggregate path for models without a layer
    table)."""

    def __init__(
        self, workload: Workload, dev: kernels.Device, recompute: bool, memo: Memo
    ) -> None:
        self.workload, self.dev, self.recompute, self.memo = workload, dev, recompute, memo
        self.act_b = mem.activation_bytes_per_element(workload.precision)
        self._memo: dict[tuple[int, int], tuple[float, float, float]] = {}
        self._ops: dict[int, LayerOps] = {}
        self._net: cnn.Net | cnn.Aggregate | None = None
        self._shape = step_shape(workload)

    def time(self, micro: int, tp: int) -> tuple[float, float, float]:
        """(compute_s, memory_s, total_s) of one micro-step: floats, kept in the shared cache
        under the step's shape (:func:`step_shape`), not the workload: every GPU count, and
        every request training the same model at the same sequence length and precision,
        asks again whatever its batch, token count or objective."""
        key = (micro, tp)
        found = self._memo.get(key)
        if found is None:
            shared = (self._shape, self.dev, self.recompute, micro, tp)
            found = self.memo.get("training_micro_step", shared,
                                  lambda: self._time(micro, tp))
            self._memo[key] = found
        return found

    def _time(self, micro: int, tp: int) -> tuple[float, float, float]:
        model = self.workload.model
        if isinstance(model, TransformerModel):
            return self._transformer(model, micro, tp)
        assert isinstance(model, GenericModel)
        return self._generic(model, micro)

    def _transformer(self, model: TransformerModel, micro: int, tp: int) -> tuple[
            float, float, float]:
        spec = self.workload.training
        assert spec is not None
        dev, act_b = self.dev, self.act_b
        seq = splits.seq_len(spec, model)
        tokens = float(micro * seq)
        ops = self._ops.get(tp)
        if ops is None:
            ops = self._ops[tp] = tops.layer_ops(model, dev, tp, act_b, act_b, self.memo)
        pairs = mem.attention_pairs(model, seq, spec.flash_attention) * micro
        attn = tops.attention_flops(model, pairs, tp)
        fwd_bytes, bwd_bytes = attention_bytes(model, seq, micro, tp, act_b,
                                               spec.flash_attention)
        fc, fm, ft = ops.forward(tokens, attn, fwd_bytes)
        bwd_attn = tops.backward_attention_factor(spec.flash_attention) * attn
        bc, bm, bt = ops.backward(tokens, bwd_attn, bwd_bytes)
        passes = 2.0 if self.recompute else 1.0
        compute = (passes * fc + bc) * model.layers
        memory = (passes * fm + bm) * model.layers
        total = (passes * ft + bt) * model.layers
        rows = tokens * spec.lm_head_fraction
        if rows <= 0.0:
            return compute, memory, total
        vocab = model.vocab_size / tp
        h = model.hidden_size
        head = [ops.lm_head(rows), ops.head_grad.time(rows), ops.gemm(h, vocab, rows)]
        for k0, k1 in head:
            compute, memory, total = compute + k0, memory + k1, total + max(k0, k1)
        loss = 3.0 * rows * vocab * c.LOGIT_BYTES / dev.bytes_s
        return compute, memory + loss, total + loss

    def _generic(self, model: GenericModel, micro: int) -> tuple[float, float, float]:
        net = self._net
        if net is None:
            spec = self.workload.training
            assert spec is not None
            net = self._net = cnn.network(model, self.dev, self.act_b, self.act_b,
                                          training=True, recompute=self.recompute,
                                          memory_format=spec.memory_format)
        return net.time(micro)


def attention_bytes(model: TransformerModel, seq: int, micro: int, tp: int, act_b: float,
                    flash: bool) -> tuple[float, float]:
    """(forward, backward) attention memory traffic of one layer on one GPU of a TP group
    [B]: Q, K, V and O (read once forward, twice backward); without a fused kernel also the
    materialised scores, :data:`constants.EAGER_ATTENTION_FORWARD_PASSES` and
    :data:`constants.EAGER_ATTENTION_BACKWARD_PASSES` score-sized tensors of ``act_b`` bytes
    each way plus the dropout mask, per head and (query, key) pair (every pair: the score
    matrix is written whole, causal or not)."""
    qkvo = 4.0 * micro * seq * model.hidden_size * act_b / tp
    if flash:
        return qkvo, 2.0 * qkvo
    scores = model.attention_heads / tp * seq * seq * micro
    mask = c.EAGER_ATTENTION_DROPOUT_MASK_BYTES
    return (qkvo + scores * (c.EAGER_ATTENTION_FORWARD_PASSES * act_b + mask),
            2.0 * qkvo + scores * (c.EAGER_ATTENTION_BACKWARD_PASSES * act_b + mask))


def step_shape(workload: Workload) -> tuple[object, ...]:
    """What one micro-step's time depends on besides the device, recomputation, micro-batch
    and TP: the model, the precision (activation bytes), and for transformers the sequence
    length, flash attention and the LM head's share of tokens, for CNNs the memory format
    (:meth:`MicroStep._time` reads nothing else of the workload)."""
    spec = workload.training
    assert spec is not None
    model = workload.model
    if isinstance(model, TransformerModel):
        return (model, workload.precision, splits.seq_len(spec, model), spec.flash_attention,
                spec.lm_head_fraction)
    return (model, workload.precision, spec.memory_format)


def training_device(
    workload: Workload, gpu: GpuSpec, rate: PeakRate, memo: Memo | None = None
) -> kernels.Device:
    """The :class:`kernels.Device` training kernels run on: transformer training GEMMs and
    attention at :func:`training_kernel_factor` of their inference rates; CNN training
    convolutions at :func:`half_rate_hides` of their training share of the inference
    convolution rate on GeForce cards (cuDNN accumulates FP16 convolutions in FP32). With a
    ``memo``, built once per (GPU, rate, transformer or not) in the shared cache (the power
    model's clocks make a device worth keeping: every layout a request walks asks again)."""
    transformer = isinstance(workload.model, TransformerModel)

    def build() -> kernels.Device:
        dev = kernels.device(gpu, rate)
        if transformer and rate.tensor:
            f = training_kernel_factor(gpu)
            dev = replace(dev, matrix_flops_s=dev.matrix_flops_s * f,
                          attention_flops_s=dev.attention_flops_s * f)
        elif rate.tensor and kernels.fp16_accumulate_doubles(gpu):
            share = c.CONV_EFFICIENCY / c.CONV_INFERENCE_EFFICIENCY
            dev = replace(dev, conv_flops_s=dev.conv_inference_flops_s * half_rate_hides(share))
        return dev

    return build() if memo is None else memo.get("training_device", (gpu, rate, transformer),
                                                 build)


def training_kernel_factor(gpu: GpuSpec) -> float:
    """Share of its inference GEMM / attention rate a transformer training kernel reaches on
    ``gpu``: :data:`constants.TRAINING_KERNEL_FACTOR`, except on GeForce cards, whose catalog
    tensor rates (FP32 accumulation, as PyTorch AMP and TransformerEngine run) are half of what
    the same SM's array retires with FP16 accumulation (:func:`kernels.fp16_accumulate_doubles`,
    :data:`constants.GEFORCE_FP16_ACCUMULATE_SPEEDUP`). What the factor stands for (operand
    staging of the transposed backward GEMMs, fp32 main-gradient epilogues, issue and
    synchronisation between kernels) costs time per FLOP of the full-rate array; an array that
    retires half the FLOPs per clock hides that cost under its own math while
    factor x speedup >= 1, so those kernels reach their inference share of the half rate:
    min(1, factor x speedup) (:func:`half_rate_hides`). A model choice from the datasheet
    ratio, not a fitted number."""
    f = c.TRAINING_KERNEL_FACTOR
    if kernels.fp16_accumulate_doubles(gpu):
        return half_rate_hides(f)
    return f


def half_rate_hides(share: float) -> float:
    """What a training kernel that reaches ``share`` of its inference rate on a full-rate
    tensor array reaches on a GeForce card's half-rate (FP32-accumulate) array: its extra
    cost per FLOP hides under math that takes twice as long, up to all of it:
    min(1, share x :data:`constants.GEFORCE_FP16_ACCUMULATE_SPEEDUP`)."""
    return min(1.0, share * c.GEFORCE_FP16_ACCUMULATE_SPEEDUP)


def goodput(gpu_count: int, healthy_hours: float | None) -> float:
    """Share of a job's wall time that advances training [0-1]: interruptions arrive at
    :data:`constants.TRAINING_INTERRUPTIONS_PER_GPU_HOUR` x ``gpu_count`` per hour and each
    costs :data:`constants.TRAINING_HOURS_LOST_PER_INTERRUPTION` (restart, reload, steps
    since the last checkpoint), or half the job when it is shorter than twice that
    (``healthy_hours``: the job's length at the healthy step rate; None: unknown, taken as
    long). goodput = 1 / (1 + rate x lost): ~0.9 at 16k GPUs (Llama 3's 'higher than 90%'),
    ~0.99 at 1k, ~1 on one node. Kernel efficiency (the healthy step) is separate:
    :data:`constants.TRAINING_KERNEL_FACTOR`."""
    lost_h = c.TRAINING_HOURS_LOST_PER_INTERRUPTION
    if healthy_hours is not None:
        lost_h = min(lost_h, healthy_hours / 2.0)
    return 1.0 / (1.0 + c.TRAINING_INTERRUPTIONS_PER_GPU_HOUR * gpu_count * lost_h)


def training_floor_rate(
    workload: Workload, gpu: GpuSpec, rate: PeakRate, memo: Memo | None = None
) -> float:
    """FLOP/s no kernel of a training step exceeds on ``gpu`` (the ranking's lower bounds and
    the layout walk's stop test divide FLOPs by it): the GEMM rate for transformers, the
    convolution rate for CNNs."""
    dev = training_device(workload, gpu, rate, memo)
    if isinstance(workload.model, TransformerModel):
        return max(dev.matrix_flops_s, dev.attention_flops_s)
    return dev.conv_flops_s


def training_floor_flops(workload: Workload, recompute: bool | None = None) -> float:
    """FLOPs of one step that some GEMM, attention or conv kernel must run:
    :func:`training_flops_per_step` less the input embedding's 6 x V x h per token, which is a
    table lookup, not a GEMM, and the LM head's 6 x V x h on the tokens that skip it
    (``lm_head_fraction``; a lower bound whether or not the head is tied to the embedding);
    with recomputation (``recompute``; None: the workload's ``activation_checkpointing``,
    which every plan the ranking evaluates follows), plus the layers' forward GEMMs run again
    (:func:`transformer_ops.layer_forward_flops_per_token`); CNNs with a layer table:
    :func:`cnn.training_floor_flops`."""
    model, spec = workload.model, workload.training
    assert model is not None and spec is not None
    if isinstance(model, GenericModel):
        per_sample = cnn.training_floor_flops(model)
        if per_sample is not None:  # the layer table's GEMMs (Winograd where it can run)
            return per_sample * spec.batch_size
    flops = training_flops_per_step(workload, False)
    if isinstance(model, TransformerModel):
        tokens = float(spec.batch_size * (spec.seq_len or 1))
        # the embedding lookup, and the LM head's rows that never run (tied or untied alike)
        vh = model.vocab_size * model.hidden_size
        flops -= c.TRAIN_FLOPS_PER_PARAM_TOKEN * vh * tokens * (2.0 - spec.lm_head_fraction)
        flops = max(flops, 0.0)
        if spec.activation_checkpointing if recompute is None else recompute:
            # every plan recomputes (the workload asks for it: training._resolve): each
            # micro-step runs its layers' forward GEMMs twice (MicroStep._transformer)
            flops += tops.layer_forward_flops_per_token(model) * tokens
    return max(flops, 0.0)


def _job(
    workload: Workload, gpu: GpuSpec, rate: PeakRate, recompute: bool, memo: Memo | None = None
) -> _Job:
    """The figures every layout of (workload, GPU, rate, recomputation) shares, once per call
    (the plan of every GPU count asks for it twice, and its :class:`MicroStep` then keeps the
    micro-step times of every count in one table)."""
    if memo is None:
        return _new_job(workload, gpu, rate, recompute, None)
    # the job's MicroStep gets its own memo over the shared cache, not ``memo``: ``memo``
    # keeps the job, and a job keeping ``memo`` back would make every request's memo a
    # reference cycle, freed only by the collector
    return memo.scratch("training_job", (workload, gpu, rate, recompute),
                        lambda: _new_job(workload, gpu, rate, recompute, Memo(memo.shared)))


def _new_job(
    workload: Workload, gpu: GpuSpec, rate: PeakRate, recompute: bool, memo: Memo | None
) -> _Job:
    spec, model = workload.training, workload.model
    assert spec is not None and model is not None
    states = mem.training_state_bytes(rate.precision_used, spec.optimizer)
    vendor = kernels.vendor_factor(gpu)
    tp_bytes, layers = 0.0, 0
    if isinstance(model, TransformerModel):
        elem = mem.activation_bytes_per_element(rate.precision_used)
        tp_bytes, layers = splits.seq_len(spec, model) * model.hidden_size * elem, model.layers
    return _Job(
        training_flops_per_step(workload, recompute),
        training_floor_rate(workload, gpu, rate, memo),
        bandwidth_gb_s(gpu) * vendor,
        model.params * states.gradients,
        model.params * states.weights,
        tp_bytes,
        6.0 if recompute else 4.0,
        layers,
        MicroStep(workload, training_device(workload, gpu, rate, memo), recompute, memo_of(memo)),
        vendor,
    )


def _resolve(
    workload: Workload, checkpointing: bool | None, sharding: Sharding | None
) -> tuple[bool, Sharding]:
    spec = workload.training
    assert spec is not None
    ckpt = spec.activation_checkpointing if checkpointing is None else checkpointing
    return ckpt, spec.sharding if sharding is None else sharding


def _plan(gpu: GpuSpec, gpu_count: int, option: splits.Split, micro: int, fits: bool,
          step: StepTime | None = None) -> TrainPlan:
    layout = par.make_layout(gpu, gpu_count, option.tp, 1, option.sharding)
    accumulation = math.ceil(option.per_gpu_batch / micro)
    return TrainPlan(layout, micro, accumulation, option.memory(micro), fits, step)


def min_memory_plan(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    precision_used: Precision,
    *,
    checkpointing: bool | None = None,
    sharding: Sharding | None = None,
    memo: Memo | None = None,
) -> TrainPlan:
    """The layout with the least memory per GPU (micro-batch 1): in practice the most sharding
    and the largest TP allowed. It fits iff any layout fits, and its memory never rises with
    the GPU count (more ranks to shard over, TP never falls)."""
    ckpt, wanted = _resolve(workload, checkpointing, sharding)
    options = splits.splits(workload, gpu, gpu_count, precision_used, ckpt, wanted, memo)
    best = min(options, key=lambda o: o.fixed_gb + o.act_gb)
    return _plan(gpu, gpu_count, best, 1, best.largest_micro(mem.usable_gb(gpu)) > 0)


def least_fitting_count(
    workload: Workload, gpu: GpuSpec, counts: tuple[int, ...], precision_used: Precision,
    memo: Memo,
) -> int | None:
    """The least of ``counts`` (ascending; fitting is monotone in the count) at which some
    layout fits memory with the workload's checkpointing and sharding, None when none does:
    :func:`parallelism.least_count` of :func:`fits` -- compiled for transformers
    (:func:`compiled_training.least_fitting`, the same probes and sums)."""
    ckpt, wanted = _resolve(workload, None, None)
    if ct.supported(workload):
        i = ct.least_fitting(ct.packed_memory(workload, gpu, precision_used, ckpt, memo),
                             counts, wanted)
        return counts[i] if i >= 0 else None

    return par.least_count(
        counts, lambda n: fits(workload, gpu, n, precision_used, memo=memo))


def fits(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    precision_used: Precision,
    *,
    checkpointing: bool | None = None,
    sharding: Sharding | None = None,
    memo: Memo | None = None,
) -> bool:
    """Whether some layout fits memory (cheap: no step times, no layout records)."""
    ckpt, wanted = _resolve(workload, checkpointing, sharding)
    least = splits.least_gb(workload, gpu, gpu_count, precision_used, ckpt, wanted, memo)
    return least <= mem.usable_gb(gpu)


_Step = tuple[float, float, float, float, float, float]
"""(compute_s, memory_s, tp_comm_s, dp_comm_s, exposed_s, stall_s) of a :class:`StepTime`."""
_Found = tuple[splits.Split, int, _Step]


def _total(step: _Step) -> float:
    """:attr:`StepTime.total_s`."""
    return max(step[0], step[1]) + step[5] + step[4]


def _walk(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    rate: PeakRate,
    checkpointing: bool,
    wanted: Sharding,
    stop_at: float,
    prune: bool = True,
    memo: Memo | None = None,
    known: tuple[_Job, tuple[splits.Split, ...]] | None = None,
) -> list[_Found]:
    """(split, micro-batch, step time) of the fitting layouts in preference order, stopping
    after the first whose step time is at most ``stop_at`` [s].

    ``prune``: once a TP degree runs its whole per-GPU batch in one micro-step and is not
    memory-bound, more sharding at that degree cannot be faster (same compute and TP traffic,
    no less data-parallel traffic), so those layouts are skipped. ``known``: the job and the
    splits, when the caller has them."""
    usable = mem.usable_gb(gpu)
    nodes, per_node = par.node_layout(gpu, gpu_count)
    dp_link = par.group_link(gpu, per_node, spans_nodes=nodes > 1)[1]
    if known is None:
        job = _job(workload, gpu, rate, checkpointing, memo)
        options = splits.splits(
            workload, gpu, gpu_count, rate.precision_used, checkpointing, wanted, memo
        )
    else:
        job, options = known
    tp_links: dict[int, float] = {}
    out: list[_Found] = []
    settled: set[int] = set()
    for option in options:
        if option.tp in settled:
            continue
        micros = option.micro_choices(usable)
        if not micros:
            continue
        tp_link = tp_links.get(option.tp)
        if tp_link is None:
            tp_link = tp_links[option.tp] = par.group_link(gpu, option.tp, spans_nodes=False)[1]
        state_gb = option.weights + option.gradients + option.optimizer
        split = (option.tp, option.dp, option.sharding)
        micro, step = 0, None
        for candidate in micros:  # the faster; the first on a tie
            accumulation = math.ceil(option.per_gpu_batch / candidate)
            timed = _step(workload, job, split, (candidate, accumulation), state_gb,
                          (tp_link, dp_link))
            if step is None or _total(timed) < _total(step):
                micro, step = candidate, timed
        assert step is not None
        out.append((option, micro, step))
        if _total(step) <= stop_at:
            break
        if prune and micro == option.per_gpu_batch and step[1] <= step[0]:
            settled.add(option.tp)
    return out


def _fastest(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    rate: PeakRate,
    checkpointing: bool,
    wanted: Sharding,
    memo: Memo,
) -> _Found | None:
    """The first layout in preference order within :data:`LAYOUT_TIE` of the fastest:
    transformers through the compiled walk (:mod:`compiled_training`), the same floats as
    :func:`fastest_scalar`, which CNNs use.

    The compiled walk plans :data:`PLAN_CHUNK` counts a call: on a miss, ``gpu_count`` and
    the next searched counts of its node class (within a node, or whole nodes: a GPU spanning
    nodes is another object, carrying its offer's network), which a ranking asks next."""
    if not ct.supported(workload):
        return fastest_scalar(workload, gpu, gpu_count, rate, checkpointing, wanted, memo)
    return ct.chosen(_planned(workload, gpu, gpu_count, rate, checkpointing, wanted, memo))


def _planned(workload: Workload, gpu: GpuSpec, gpu_count: int, rate: PeakRate,
             checkpointing: bool, wanted: Sharding, memo: Memo) -> list[float]:
    """The compiled walk's row (:func:`compiled_training.plans`) of a transformer job's count,
    planned with the chunk it falls in (see :func:`_fastest`)."""
    rows = _rows(workload, gpu, rate, checkpointing, wanted, memo)
    found = rows.get(gpu_count)
    if found is None:
        _plan_counts(workload, gpu, rate, checkpointing, wanted, memo, rows,
                     _chunk(gpu, gpu_count, rows, memo))
        found = rows[gpu_count]
    return found


def _rows(workload: Workload, gpu: GpuSpec, rate: PeakRate, checkpointing: bool,
          wanted: Sharding, memo: Memo) -> dict[int, list[float]]:
    """The compiled walk's rows of a transformer job planned so far in this call, by count."""
    rows: dict[int, list[float]] = memo.scratch(
        "training_plan_rows", (workload, gpu, rate, checkpointing, wanted), dict)
    return rows


def _plan_counts(workload: Workload, gpu: GpuSpec, rate: PeakRate, checkpointing: bool,
                 wanted: Sharding, memo: Memo, rows: dict[int, list[float]],
                 counts: list[int]) -> None:
    """Plan ``counts`` in one compiled call, into ``rows``."""
    packed = memo.scratch("training_packed_job", (workload, gpu, rate, checkpointing),
                          lambda: _packed_job(workload, gpu, rate, checkpointing, memo))
    rows.update(zip(counts, ct.plans(packed, counts, wanted), strict=True))


def job_shape(workload: Workload) -> tuple[object, ...]:
    """What a transformer job's packed figures (:func:`compiled_training.pack_job`) depend on
    besides the GPU, the rate, recomputation, the global batch and the step's floor FLOPs:
    :func:`step_shape` (model, precision, sequence length, flash attention, the LM head's
    share), the optimizer (state bytes) and the input pipeline's ceiling. Not the batch, the
    tokens or the sharding asked for: a stream of jobs training one model shape at many
    batches and lengths shares one packed job per GPU."""
    spec = workload.training
    assert spec is not None
    return (step_shape(workload), spec.optimizer, spec.input_samples_per_s_per_gpu)


def _packed_job(workload: Workload, gpu: GpuSpec, rate: PeakRate, recompute: bool,
                memo: Memo) -> ct.PackedJob:
    """The job's :class:`compiled_training.PackedJob`: the figures of its shape
    (:func:`job_shape`) on the GPU from the shared cache (``training_packed``; packed from the
    first job of that shape, read only), with this job's global batch and floor FLOPs written
    over a copy of its scalars (:func:`compiled_training.with_batch`): the same floats as
    packing this job afresh."""
    spec = workload.training
    assert spec is not None
    shaped = memo.get("training_packed", (job_shape(workload), gpu, rate, recompute),
                      lambda: ct.pack_job(workload, gpu, rate.precision_used,
                                          _job(workload, gpu, rate, recompute, memo), memo,
                                          LAYOUT_TIE, 0.0))
    return ct.with_batch(shaped, spec.batch_size, _floor_flops(workload, recompute, memo))


PLAN_CHUNK = 8
"""Counts the compiled walk plans per call (see :func:`_fastest`)."""


def _chunk(gpu: GpuSpec, gpu_count: int, planned: dict[int, list[float]], memo: Memo
           ) -> list[int]:
    """``gpu_count`` and up to :data:`PLAN_CHUNK` - 1 searched counts above it of the same
    node class, not planned yet."""
    per_node = max(1, gpu.max_gpus_per_node)
    spans = gpu_count > per_node
    out = [gpu_count]
    for n in par.gpu_count_candidates(gpu, par.NODE_SEARCH_LIMIT, memo):
        if len(out) >= PLAN_CHUNK:
            break
        if n > gpu_count and (n > per_node) == spans and n not in planned:
            out.append(n)
    return out


def _floor_flops(workload: Workload, recompute: bool, memo: Memo) -> float:
    """:func:`training_floor_flops` of plans that recompute or not (the walk's own setting)."""
    return memo.get("training_floor_flops", (workload, recompute),
                    lambda: training_floor_flops(workload, recompute))


def fastest_scalar(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    rate: PeakRate,
    checkpointing: bool,
    wanted: Sharding,
    memo: Memo,
) -> _Found | None:
    """The first layout in preference order within :data:`LAYOUT_TIE` of the fastest, in
    Python (the compiled walk's reference).

    No layout beats its own compute time, so none beats the least compute time of any split
    (the busiest GPU's share of the FLOPs, nothing exposed): the walk stops at the first
    layout within the tie of that bound."""
    spec = workload.training
    assert spec is not None
    job = _job(workload, gpu, rate, checkpointing, memo)
    options = splits.splits(
        workload, gpu, gpu_count, rate.precision_used, checkpointing, wanted, memo
    )
    least = min(o.per_gpu_batch / o.tp for o in options)
    ideal = _floor_flops(workload, checkpointing, memo) * least / spec.batch_size / \
        job.floor_rate
    found = _walk(
        workload, gpu, gpu_count, rate, checkpointing, wanted, ideal * LAYOUT_TIE, True, memo,
        (job, options),
    )
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
    memo: Memo | None = None,
) -> TrainPlan:
    """The fastest layout that fits (near-ties: smallest TP, then least sharding), with its
    step time. When nothing fits: the minimum-memory layout at micro-batch 1, ``fits`` False
    (its step time is still given, as if it ran)."""
    ckpt, wanted = _resolve(workload, checkpointing, sharding)
    memo = memo_of(memo)
    key = (workload, gpu, gpu_count, rate, ckpt, wanted)
    # one (frozen) plan per key and call: the light figures and the estimate ask again
    return memo.get("training_plan", key,
                    lambda: _new_plan(workload, gpu, gpu_count, rate, ckpt, wanted, memo))


def fitted_steps(
    workload: Workload, gpu: GpuSpec, counts: Sequence[int], rate: PeakRate, memo: Memo
) -> list[tuple[int, float] | None]:
    """(data-parallel degree, step time [s]) of :func:`plan_training`'s plan (the workload's
    checkpointing and sharding) on each of ``counts`` where it fits, None where no layout
    fits. Transformers read them from the compiled walk's plans without building the plans'
    records (a ranking asks this of every count it ranks, and builds the plan only for the
    options it lists), the counts not planned yet in one compiled call."""
    if not ct.supported(workload):
        out: list[tuple[int, float] | None] = []
        for n in counts:
            plan = plan_training(workload, gpu, n, rate, memo=memo)
            if not plan.fits or plan.step is None:
                out.append(None)
            else:
                out.append((plan.layout.parallelism.data_parallel, plan.step.total_s))
        return out
    ckpt, wanted = _resolve(workload, None, None)
    rows = _rows(workload, gpu, rate, ckpt, wanted, memo)
    missing = [n for n in counts if n not in rows]
    if missing:
        _plan_counts(workload, gpu, rate, ckpt, wanted, memo, rows, missing)
    found = [rows[n] for n in counts]
    return [None if math.isnan(row[ct.P_MICRO]) else (int(row[ct.P_DP]), row[ct.P_TOTAL])
            for row in found]


def _new_plan(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    rate: PeakRate,
    ckpt: bool,
    wanted: Sharding,
    memo: Memo,
) -> TrainPlan:
    best = _fastest(workload, gpu, gpu_count, rate, ckpt, wanted, memo)
    if best is None:
        plan = min_memory_plan(
            workload, gpu, gpu_count, rate.precision_used, checkpointing=ckpt, sharding=wanted,
            memo=memo,
        )
        return replace(plan, step=step_time(workload, gpu, plan, rate, ckpt, memo))
    option, micro, step = best
    return _plan(gpu, gpu_count, option, micro, True, StepTime(*step))


def training_flops_per_step(workload: Workload, recompute: bool) -> float:
    """FLOPs of one optimizer step over the global batch [FLOP]: 6*N_active*tokens (8 with full
    recomputation) plus attention, 3 x 4*L*h per (query, key) pair of a sequence
    (:func:`memory.attention_pairs`: 3 x 2*L*h*s^2 for a causal decoder without a window); CNNs 3 x
    forward."""
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
    # 2 x pairs is s^2 exactly for a causal decoder without a window (the same float)
    twice = 2.0 * mem.attention_pairs(model, seq)
    attention = passes * 2.0 * model.layers * model.hidden_size * twice * spec.batch_size
    return dense + attention


ONCE_PER_STEP: tuple[Sharding, ...] = ("none", "zero1")
"""Shardings whose data-parallel traffic runs once per step, beside the last micro-step
(:func:`_dp_comm_s`); ZeRO-2 and ZeRO-3 move theirs in every micro-step
(:func:`performance.exposed_comm_s`)."""


def _dp_comm_s(
    dp: int,
    sharding: Sharding,
    grad_bytes: float,
    weight_bytes: float,
    accumulation: int,
    link: float,
    vendor: float,
) -> float:
    """Data-parallel traffic per step [s] over the slowest link spanning the DP group (ZeRO,
    Rajbhandari et al. 2020, §7): none = gradient all-reduce once per step; ZeRO-1
    (Megatron distributed optimizer) = reduce-scatter of gradients + all-gather of updated
    weights, once per step (the same volume); ZeRO-2 = the reduce-scatter every micro-step
    (gradients are not kept whole between micro-steps); ZeRO-3 = forward and backward weight
    all-gathers and the gradient reduce-scatter every micro-step. ``vendor``: the collective
    library's software factor (:func:`performance.all_reduce_s`)."""
    if sharding == "zero3":
        gather = all_gather_s(weight_bytes, dp, link, vendor)
        return accumulation * (2.0 * gather + all_gather_s(grad_bytes, dp, link, vendor))
    if sharding == "zero2":
        return accumulation * all_gather_s(grad_bytes, dp, link, vendor) + all_gather_s(
            weight_bytes, dp, link, vendor
        )
    if sharding == "zero1":
        return all_gather_s(grad_bytes, dp, link, vendor) + all_gather_s(
            weight_bytes, dp, link, vendor)
    return all_reduce_s(grad_bytes, dp, link, vendor)


def step_time(
    workload: Workload,
    gpu: GpuSpec,
    plan: TrainPlan,
    rate: PeakRate,
    recompute: bool,
    memo: Memo | None = None,
) -> StepTime:
    """Roofline step time [s] for the plan (see :func:`_step`)."""
    p = plan.layout.parallelism
    m = plan.memory
    step = _step(
        workload,
        _job(workload, gpu, rate, recompute, memo),
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
    kc, km, kt = job.micro.time(micro_batch, tp)
    compute_s = accumulation * kc
    # the optimizer reads and writes every state once per step, after the backward pass
    optimizer_s = 2.0 * state_gb / job.bandwidth
    memory_s = accumulation * km + optimizer_s
    total = accumulation * kt + optimizer_s
    dp_comm = _dp_comm_s(
        dp, sharding, job.grad_bytes / tp, job.weight_bytes / tp, accumulation, links[1],
        job.vendor,
    )
    tp_comm = 0.0
    if tp > 1 and job.layers:
        per_layer = job.tp_per_layer * all_reduce_s(job.tp_bytes * micro_batch, tp, links[0],
                                                    job.vendor)
        tp_comm = per_layer * job.layers * accumulation
    exposed = exposed_comm_s(sharding in ONCE_PER_STEP, accumulation, kc, tp_comm, dp_comm,
                             c.BACKWARD_OVERLAP_FRACTION)
    stall = max(0.0, total - max(compute_s, memory_s))
    # a stated host/input ceiling: the GPU waits for its samples when the loader is slower
    fed = cnn.input_floor_s(micro_batch * accumulation / tp, spec.input_samples_per_s_per_gpu)
    stall += max(0.0, fed - (max(compute_s, memory_s) + stall + exposed))
    return compute_s, memory_s, tp_comm, dp_comm, exposed, stall
