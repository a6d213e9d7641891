"""Training memory per GPU for every (TP degree, ZeRO stage) split of a GPU count.

A split's model states (weights, gradients, optimizer states) are fixed; its activations grow
linearly with the micro-batch (Korthikanti et al. 2022), so one evaluation at micro-batch 1
gives the largest micro-batch that fits in closed form. :mod:`service.engine.physics.training` picks
among the splits by step time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from service.engine import constants as c
from service.engine.cache import Memo, memo_of
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.types import (
    GenericModel,
    GpuSpec,
    MemoryBreakdown,
    Precision,
    Sharding,
    TrainingSpec,
    TransformerModel,
    Workload,
)

SHARDING_ORDER: tuple[Sharding, ...] = ("none", "zero1", "zero2", "zero3")


class Split(NamedTuple):
    """One (TP, sharding) split: model states per GPU [GB]; activations [GB] grow linearly
    with the micro-batch."""

    tp: int
    dp: int
    sharding: Sharding
    per_gpu_batch: int
    weights: float
    gradients: float
    optimizer: float
    act_gb: float
    """Activations per sample of micro-batch [GB]."""

    @property
    def fixed_gb(self) -> float:
        return self.weights + self.gradients + self.optimizer + c.FRAMEWORK_OVERHEAD_GB

    def memory(self, micro: int) -> MemoryBreakdown:
        return MemoryBreakdown(
            weights=self.weights,
            gradients=self.gradients,
            optimizer_states=self.optimizer,
            activations=self.act_gb * micro,
            overhead=c.FRAMEWORK_OVERHEAD_GB,
        )

    def largest_micro(self, usable_gb: float) -> int:
        """The micro-batch the per-GPU batch runs in when spread evenly (0: none fits): the
        whole batch when it fits, else :func:`even_micro` of the largest micro-batch memory
        holds."""
        limit = self._limit(usable_gb)
        if not limit:
            return 0
        if self.per_gpu_batch <= limit:
            return self.per_gpu_batch
        return even_micro(self.per_gpu_batch, math.floor(limit))

    def micro_choices(self, usable_gb: float) -> tuple[int, ...]:
        """The micro-batches worth timing (none: none fits): the whole batch when it fits;
        else :func:`exact_micro` (when there is one and it differs) and :func:`even_micro`,
        of which the step time keeps the faster."""
        even = self.largest_micro(usable_gb)
        if even == 0 or even == self.per_gpu_batch:
            return (even,) if even else ()
        exact = exact_micro(self.per_gpu_batch, math.floor(self._limit(usable_gb)))
        return (exact, even) if exact not in (0, even) else (even,)

    def _limit(self, usable_gb: float) -> float:
        """Samples of micro-batch the room beside the fixed states holds (0: not one; inf:
        activations take no memory)."""
        room = usable_gb - self.fixed_gb
        if room < self.act_gb:
            return 0.0
        return room / self.act_gb if self.act_gb > 0 else math.inf


def even_micro(batch: int, most: int) -> int:
    """The micro-batch of ``batch`` samples per GPU when at most ``most`` (1 <= most < batch)
    fit at once: the fewest accumulation steps that hold the batch, k = ceil(batch / most),
    with the batch spread evenly over them, ceil(batch / k) <= most. A step time counts k
    micro-batches of that size, so the padding is under k samples: 30 samples with room for
    15 run as 15 x 2, where the largest power of 2 (8 x 4 = 32) would pay for 2 samples that
    do not exist and twice the micro-steps."""
    steps = -(-batch // most)
    return -(-batch // steps)


def exact_micro(batch: int, most: int) -> int:
    """The largest micro-batch <= ``most`` that divides ``batch`` in at most twice the fewest
    accumulation steps (0: none does). Megatron-LM, DeepSpeed and the Hugging Face Trainer
    take a global batch of micro-batch x accumulation x data-parallel ranks, so the batch an
    engineer states runs in a divisor of it (llm-foundry's MPT-13B runs: 240 / 8 GPUs in 10 x
    3; 256 / 8 in 2 x 16). Past twice the fewest steps, :func:`even_micro` pads less than
    one sample in ``most`` and the divisor is not worth timing."""
    fewest = -(-batch // most)
    if most < fewest:  # walk the shorter range: micro-batches down from ``most``
        for micro in range(most, 0, -1):
            if batch // micro > 2 * fewest:
                break
            if batch % micro == 0:
                return micro
        return 0
    for steps in range(fewest, 2 * fewest + 1):
        if batch % steps == 0:
            return batch // steps
    return 0


def seq_len(spec: TrainingSpec, model: TransformerModel | GenericModel) -> int:
    """Tokens per sample: the sequence length for transformers, 1 for CNNs."""
    return (spec.seq_len or 1) if isinstance(model, TransformerModel) else 1


def activation_bytes(
    workload: Workload, tp: int, prec: Precision, checkpointing: bool
) -> float:
    """Activations per GPU at micro-batch 1 [B]."""
    spec, model = workload.training, workload.model
    assert spec is not None and model is not None
    elem = mem.activation_bytes_per_element(prec)
    if isinstance(model, TransformerModel):
        return mem.transformer_activation_bytes(
            model,
            seq_len(spec, model),
            1,
            tp,
            flash_attention=spec.flash_attention,
            checkpointing=checkpointing,
            elem_bytes=elem,
            lm_head_fraction=spec.lm_head_fraction,
        )
    return mem.generic_activation_bytes(model, 1, elem, training=True)


def tp_degrees(workload: Workload, gpu: GpuSpec, gpu_count: int) -> list[int]:
    """TP degrees a split of ``gpu_count`` may use (see :func:`batch_bounded`)."""
    model = workload.model
    if not isinstance(model, TransformerModel):
        return batch_bounded(workload, [1], gpu_count)
    return batch_bounded(
        workload,
        [t for t in par.tp_candidates(gpu, gpu_count) if model.attention_heads % t == 0],
        gpu_count,
    )


def batch_bounded(workload: Workload, tps: list[int], gpu_count: int) -> list[int]:
    """The degrees of ``tps`` whose data-parallel degree ``gpu_count // tp`` is at most the
    global batch: a replica takes at least one sample per step, so a wider data-parallel
    group would leave GPUs idle and TP must absorb them. When no degree does, all of them
    (the estimate then marks the count infeasible: :func:`idle_replicas`)."""
    spec = workload.training
    assert spec is not None
    kept = [t for t in tps if gpu_count // t <= spec.batch_size]
    return kept or tps


def idle_replicas(workload: Workload, data_parallel: int) -> int:
    """Data-parallel replicas beyond the global batch (0 when every replica has a sample)."""
    spec = workload.training
    assert spec is not None
    return max(0, data_parallel - spec.batch_size)


def splits(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    prec: Precision,
    checkpointing: bool,
    wanted: Sharding,
    memo: Memo | None = None,
) -> tuple[Split, ...]:
    """Every (TP, sharding) split, smallest TP first, then least sharding (memoized: a tuple
    of immutable records). The GPU matters only through its TP degrees, so GPU types of one
    node class share the tuple."""
    memo = memo_of(memo)
    key = _key(workload, gpu, gpu_count, prec, checkpointing, wanted, memo)
    return memo.get("training_splits", key, lambda: _splits(*key))


_Key = tuple[Workload, tuple[int, ...], int, Precision, bool, Sharding]


def _key(workload: Workload, gpu: GpuSpec, gpu_count: int, prec: Precision,
         checkpointing: bool, wanted: Sharding, memo: Memo) -> _Key:
    """The memo key of a count's splits: the GPU only through its TP degrees."""
    tps = memo.get("training_tp_degrees", (workload, gpu, gpu_count),
                   lambda: tuple(tp_degrees(workload, gpu, gpu_count)))
    return workload, tps, gpu_count, prec, checkpointing, wanted


def _states(
    workload: Workload,
    tps: Iterable[int],
    gpu_count: int,
    prec: Precision,
    checkpointing: bool,
    wanted: Sharding,
) -> Iterator[tuple[int, int, Sharding, float, float, float, float]]:
    """(tp, dp, sharding, weights, gradients, optimizer states, activations at micro-batch 1)
    per GPU [GB] for every TP degree of ``tps`` and sharding, smallest TP first, then least
    sharding: the one computation :func:`_splits` and :func:`_least_gb` share."""
    spec, model = workload.training, workload.model
    assert spec is not None and model is not None
    states = mem.training_state_bytes(prec, spec.optimizer)
    shardings = SHARDING_ORDER if wanted == "auto" else (wanted,)
    layers = model.layers if isinstance(model, TransformerModel) else 0
    for tp in tps:
        dp = max(1, gpu_count // tp)
        act_gb = activation_bytes(workload, tp, prec, checkpointing) / c.GB
        params = model.params / tp / c.GB
        # a single data-parallel rank has nothing to shard over
        for eff in shardings if dp > 1 else ("none",):
            w_div, g_div, o_div = mem.shard_divisors(eff, dp)
            weights = params * states.weights / w_div
            if w_div > 1 and layers:
                # ZeRO-3 gathers one layer's full weights at a time (x2 with prefetch)
                weights += 2.0 * params / layers * states.weights
            grads = params * states.gradients / g_div
            optim = params * states.optimizer / o_div
            yield tp, dp, eff, weights, grads, optim, act_gb


def _splits(
    workload: Workload,
    tps: tuple[int, ...],
    gpu_count: int,
    prec: Precision,
    checkpointing: bool,
    wanted: Sharding,
) -> tuple[Split, ...]:
    spec = workload.training
    assert spec is not None
    return tuple(
        Split(tp, dp, eff, max(1, math.ceil(spec.batch_size / dp)), weights, grads, optim, act)
        for tp, dp, eff, weights, grads, optim, act in _states(
            workload, tps, gpu_count, prec, checkpointing, wanted))


def least_gb(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    prec: Precision,
    checkpointing: bool,
    wanted: Sharding,
    memo: Memo | None = None,
) -> float:
    """``min(o.fixed_gb + o.act_gb for o in splits(...))`` with the same arithmetic in the same
    order, without building the split records: the memory-fit check asked for every GPU type
    of a catalog, most of which are never estimated. The GPU matters only through its TP
    degrees (powers of 2 up to ``min(fast domain, count)``), so the figure is memoized on
    that limit: GPU types of one node class share it."""
    limit = min(par.fast_domain_size(gpu), gpu_count)
    key = (workload, limit, gpu_count, prec, checkpointing, wanted)
    return memo_of(memo).get(
        "training_least_gb", key,
        lambda: _least_gb(workload, limit, gpu_count, prec, checkpointing, wanted))


def _least_gb(
    workload: Workload,
    tp_limit: int,
    gpu_count: int,
    prec: Precision,
    checkpointing: bool,
    wanted: Sharding,
) -> float:
    model = workload.model
    assert model is not None
    heads = model.attention_heads if isinstance(model, TransformerModel) else 1
    tps = batch_bounded(
        workload, [tp for tp in par.powers_of_two_upto(tp_limit) if not heads % tp], gpu_count)
    overhead = c.FRAMEWORK_OVERHEAD_GB
    best = math.inf
    for _, _, _, weights, grads, optim, act_gb in _states(
            workload, tps, gpu_count, prec, checkpointing, wanted):
        total = weights + grads + optim + overhead + act_gb
        if total < best:
            best = total
    return best
