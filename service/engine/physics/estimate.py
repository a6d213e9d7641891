"""One workload on ``gpu_count`` GPUs of one type: the full estimate, feasible or not."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, replace

from service.engine import constants as c
from service.engine.cache import Memo, memo_of
from service.engine.physics import compiled_scaling, kernels, scaling
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.physics import serving as inf
from service.engine.physics import training as tr
from service.engine.physics import training_splits as splits
from service.engine.physics.batched import Array
from service.engine.physics.parallelism import gpu_count_candidates
from service.engine.physics.performance import PeakRate, bandwidth_gb_s, peak_rate
from service.engine.types import (
    Assumption,
    Estimate,
    Fix,
    GpuSpec,
    InferenceSpec,
    MemoryBreakdown,
    Parallelism,
    Precision,
    TransformerModel,
    Workload,
)

SPLIT_TIE = 1.001
"""A larger model split must beat a smaller one by more than 0.1% (requests/s, or latency in
latency mode) to be chosen: near-ties go to the split with fewer GPUs per replica."""


def _assumption_set(*groups: tuple[str, ...]) -> tuple[Assumption, ...]:
    names: list[str] = []
    for group in (c.COMMON_KEYS, *groups, c.LINK_KEYS):
        names.extend(n for n in group if n not in names)
    return tuple(c.ASSUMPTIONS[n] for n in names)


_ASSUMPTION_SETS: dict[tuple[tuple[str, ...], ...], tuple[Assumption, ...]] = {
    groups: _assumption_set(*groups)
    for groups in ((), (c.COMPUTE_KEYS,), (c.TRAINING_KEYS,), (c.TRAINING_KEYS, c.GEFORCE_KEYS),
                   (c.INFERENCE_KEYS,), (c.INFERENCE_KEYS, c.LLAMACPP_KEYS))
}
"""The constants each kind of estimate lists, built once at import (a table, not a cache)."""


def _assumptions(*groups: tuple[str, ...]) -> tuple[Assumption, ...]:
    return _ASSUMPTION_SETS[groups]


def workload_rate(workload: Workload, gpu: GpuSpec) -> PeakRate | None:
    """The peak rate a workload runs at on ``gpu`` (shared with the ranking's bounds): compute
    jobs in FP64 use the matrix (tensor) units only when their code does
    (``fp64_units == "matrix"``); everything else uses the tensor rate of its precision."""
    matmul = True
    if workload.kind == "compute" and workload.compute is not None:
        matmul = workload.compute.fp64_units == "matrix"
    return peak_rate(gpu, workload.precision, matmul=matmul)


def power_w(gpu: GpuSpec, gpu_count: int) -> float:
    """Sustained board power of ``gpu_count`` x ``gpu`` [W]."""
    return gpu_count * gpu.tdp_w * c.POWER_UTILIZATION


def _no_rate(workload: Workload, gpu: GpuSpec, gpu_count: int) -> Estimate:
    reason = f"{gpu.name} has no {workload.precision} throughput figure"
    if workload.precision == "fp64":
        reason = f"{gpu.name} has no FP64 support listed; FP64 work cannot fall back"
    return Estimate(
        gpu_slug=gpu.slug,
        gpu_count=gpu_count,
        fits=False,
        precision_used=workload.precision,
        memory_per_gpu_gb=0.0,
        memory_available_gb=mem.capacity_gb(gpu),
        memory=MemoryBreakdown(),
        parallelism=par.make_layout(gpu, gpu_count, 1, 1, "none").parallelism,
        bound=None,
        infeasible_reasons=(reason,),
        assumptions=_assumptions(),
    )


def estimate(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    *,
    latency_mode: bool = False,
    memo: Memo | None = None,
    efficiency: bool = True,
) -> Estimate:
    """Estimate ``workload`` on ``gpu_count`` x ``gpu``: memory per GPU, fit, speed, energy.

    The workload is assumed valid (see :func:`validate_workload`). Inference without a fixed
    ``batch_size`` runs at the throughput-optimal batch (the largest meeting the limits);
    ``latency_mode`` picks the latency-optimal one instead (batch 1, replicas supply the
    throughput). Other kinds ignore it. ``memo``: the caller's memo (see :mod:`cache`).
    ``efficiency`` False leaves a training estimate's ``parallel_efficiency`` None: it plans
    every smaller count to find the yardstick, and a ranking, which never reads it, estimates
    hundreds of counts to list ten (it adds it to those with :func:`with_efficiency`).
    """
    if gpu_count < 1:
        raise ValueError("gpu_count must be >= 1")
    memo = memo_of(memo)
    # an Estimate is immutable (frozen, tuples inside): safe to share across requests. Compute
    # jobs too: theirs is a few divisions, but building the Estimate (layout, warnings) costs
    # ~10x a lookup, and a balanced ranking estimates ~200 of them on the seeded catalog.
    key = (workload, gpu, gpu_count, latency_mode)
    est = memo.get("estimate", key,
                   lambda: _estimate(workload, gpu, gpu_count, latency_mode, memo))
    return with_efficiency(workload, gpu, est, memo) if efficiency else est


def with_efficiency(workload: Workload, gpu: GpuSpec, est: Estimate, memo: Memo | None = None
                    ) -> Estimate:
    """``est`` (of ``workload`` on ``gpu``) with its ``parallel_efficiency``: training estimates
    that fit only; any other is returned as it is."""
    if workload.kind != "training" or not est.fits or est.samples_per_s is None:
        return est
    memo = memo_of(memo)
    key = (workload, gpu, est.gpu_count, est.samples_per_s)
    value = memo.get("parallel_efficiency", key, lambda: _training_efficiency(
        workload, gpu, est.gpu_count, est.samples_per_s or 0.0, memo))
    return replace(est, parallel_efficiency=value)


def _estimate(
    workload: Workload, gpu: GpuSpec, gpu_count: int, latency_mode: bool, memo: Memo
) -> Estimate:
    if gpu_count > 1 and par.single_module(gpu):
        return _single_module(workload, gpu, gpu_count, latency_mode, memo)
    rate = workload_rate(workload, gpu)
    if rate is None:
        return _no_rate(workload, gpu, gpu_count)
    if workload.kind == "compute":
        return _estimate_compute(workload, gpu, gpu_count, rate, memo)
    if workload.kind == "training":
        return _estimate_training(workload, gpu, gpu_count, rate, memo)
    return _estimate_inference(workload, gpu, gpu_count, rate, memo, latency_mode)


def _single_module(
    workload: Workload, gpu: GpuSpec, gpu_count: int, latency_mode: bool, memo: Memo
) -> Estimate:
    """``gpu_count`` > 1 of a single-module device: no multi-GPU plan exists. Infeasible, with
    the figures of the one module it can run on; the fix is one module when that fits."""
    one = estimate(workload, gpu, 1, latency_mode=latency_mode, memo=memo)
    reason = (f"{gpu.name} is a single-module device: it runs on one module, never split "
              f"across {gpu_count}; the figures are for 1 module")
    fixes = (Fix("gpu_count", 1, "fits on one module", "gpu_count"),) if one.fits else ()
    return replace(one, gpu_count=gpu_count, fits=False, latency_ok=None,
                   infeasible_reasons=(reason, *one.infeasible_reasons), fixes=fixes,
                   min_gpus_to_fit=1 if one.fits else None)


def _warnings(
    workload: Workload, gpu: GpuSpec, rate: PeakRate, own: list[str] | None = None
) -> tuple[str, ...]:
    """The estimate's warnings: the precision fallback first, the FP64-on-vector note last."""
    out = [rate.warning] if rate.warning else []
    out.extend(own or ())
    if workload.precision == "fp64" and not rate.tensor:
        out.append(
            f"FP64 runs on {gpu.name}'s vector units at {rate.tflops:g} TFLOPS "
            "(no FP64 tensor cores)"
        )
    return tuple(out)


# ---------------------------------------------------------------- compute jobs


def compute_job_efficiency(workload: Workload, rate: PeakRate) -> float:
    """Share of the sustained-clock peak a generic compute job reaches (shared with the
    ranking's bounds): FP64 on matrix units at the HPL figure, other tensor work at the
    dense-linear-algebra figure, vector work at the SGEMM/DGEMM-on-CUDA-cores figure."""
    if workload.precision == "fp64" and rate.tensor:
        return c.EFF_FP64_TENSOR
    return c.EFF_COMPUTE_JOB if rate.tensor else c.EFF_NON_TENSOR


def compute_job_seconds(workload: Workload, gpu: GpuSpec, rate: PeakRate,
                        memo: Memo | None = None) -> tuple[float, float]:
    """(compute_s, memory_s) of a compute job on one GPU: its FLOPs at the sustained clock
    (:func:`kernels.peak_share`, a pure function of the GPU and the rate: kept in the shared
    cache when a ``memo`` is given) x efficiency x vendor factor, its bytes at achieved
    bandwidth. With a ``memo``, once per call (the ranking's floors, figures and full
    estimates each ask)."""
    if memo is None:
        return _compute_job_seconds(workload, gpu, rate, None)
    return memo.scratch("compute_one_gpu", (workload, gpu, rate),
                        lambda: _compute_job_seconds(workload, gpu, rate, memo))


def _compute_job_seconds(workload: Workload, gpu: GpuSpec, rate: PeakRate,
                         memo: Memo | None) -> tuple[float, float]:
    spec = workload.compute
    assert spec is not None
    eff = compute_job_efficiency(workload, rate)
    share = kernels.peak_share(gpu, rate) if memo is None else memo.get(
        "peak_share", (gpu, rate), lambda: kernels.peak_share(gpu, rate))
    sustained = rate.tflops * share * kernels.vendor_factor(gpu)
    return spec.total_tflop / (sustained * eff), spec.total_gb_moved / bandwidth_gb_s(gpu)


def packed_compute_job(workload: Workload, gpu: GpuSpec, rate: PeakRate, memo: Memo
                       ) -> Array:
    """:func:`compiled_scaling.pack` of the compute job on ``gpu``, once per call (the
    ranking's bounds and figures both read it; :func:`compiled_scaling.hours` does not write
    it), its GPU figures once per GPU type in the shared cache."""
    spec = workload.compute
    assert spec is not None

    def build() -> Array:
        row = memo.get("compute_pack_gpu", gpu, lambda: compiled_scaling.pack_gpu(gpu))
        return compiled_scaling.pack(spec, gpu, compute_job_seconds(workload, gpu, rate, memo),
                                     c.BYTES_PER_ELEMENT[rate.precision_used], row)

    return memo.scratch("compute_packed", (workload, gpu), build)


def _estimate_compute(
    workload: Workload, gpu: GpuSpec, n: int, rate: PeakRate, memo: Memo
) -> Estimate:
    spec = workload.compute
    assert spec is not None
    scaled = scaling.scaled_time(spec, gpu, n, compute_job_seconds(workload, gpu, rate, memo),
                                 c.BYTES_PER_ELEMENT[rate.precision_used],
                                 exchange(gpu, n, memo))
    total_s = scaled.total_s
    per_gpu_gb = spec.memory_gb / n + c.FRAMEWORK_OVERHEAD_GB
    usable_gb = mem.usable_gb(gpu)
    fits = per_gpu_gb <= usable_gb
    # the fix is a count the search tries (1, 2, 4, 8, whole nodes), not ceil(memory/room)
    needed = min_gpus_to_fit(workload, gpu, memo)
    hours = total_s / 3600.0
    power = power_w(gpu, n)
    layout = par.layout(gpu, n, 1, 1, "none", memo)
    return Estimate(
        gpu_slug=gpu.slug,
        gpu_count=n,
        fits=fits,
        precision_used=rate.precision_used,
        memory_per_gpu_gb=per_gpu_gb,
        memory_available_gb=mem.capacity_gb(gpu),
        memory=MemoryBreakdown(
            activations=spec.memory_gb / n, overhead=c.FRAMEWORK_OVERHEAD_GB
        ),
        parallelism=layout.parallelism,  # tp = pp = 1: data_parallel is already n
        bound=scaled.bound,
        time_to_complete_hours=hours,
        power_w=power,
        energy_kwh_total=power * hours / 1000.0,
        infeasible_reasons=() if fits else (f"needs {per_gpu_gb:.1f} GB per GPU",),
        fixes=() if fits or needed is None or needed <= n else (_gpu_count_fix(needed),),
        min_gpus_to_fit=needed,
        assumptions=_assumptions(c.COMPUTE_KEYS),
        warnings=_warnings(workload, gpu, rate, _scaling_warnings(scaled)),
        compute_tflops_used=rate.tflops,
        startup_s=scaled.startup_s,
        parallel_efficiency=scaled.efficiency,
    )


def exchange(gpu: GpuSpec, n: int, memo: Memo | None) -> scaling.Exchange | None:
    """:func:`scaling.exchange` of ``n`` x ``gpu`` from the shared cache (None on one GPU,
    where nothing is exchanged)."""
    if n <= 1:
        return None
    return memo_of(memo).get("exchange", (gpu, n), lambda: scaling.exchange(gpu, n))


LOW_EFFICIENCY = 0.5
"""Parallel efficiency below which an estimate warns that most of the added GPUs idle."""


def _input_bound(ceiling: float | None, per_gpu: float) -> list[str]:
    """A warning when the stated host/input ceiling [samples/s per GPU] sets the speed."""
    if ceiling is None or per_gpu < ceiling * 0.999:
        return []
    return [f"held at the stated input-pipeline ceiling of {ceiling:g} samples/s per GPU: "
            "the GPUs wait for data"]


def _scaling_warnings(scaled: scaling.ScaledTime) -> list[str]:
    if scaled.gpus == 1 or scaled.efficiency >= LOW_EFFICIENCY:
        return []
    return [
        f"parallel efficiency {scaled.efficiency:.0%} on {scaled.gpus} GPUs: communication "
        f"{scaled.transfer_s + scaled.latency_s:.3g} s, start-up {scaled.startup_s:.3g} s and "
        f"serial work {scaled.serial_s:.3g} s against {scaled.parallel_s:.3g} s of divided "
        "work; fewer GPUs cost less"
    ]


def _gpu_count_fix(needed: int) -> Fix:
    return Fix("gpu_count", needed, f"needs {needed} GPUs", "gpu_count")


# ---------------------------------------------------------------- training


def _estimate_training(
    workload: Workload, gpu: GpuSpec, n: int, rate: PeakRate, memo: Memo
) -> Estimate:
    spec = workload.training
    model = workload.model
    assert spec is not None and model is not None
    prec = rate.precision_used
    plan = tr.plan_training(workload, gpu, n, rate, memo=memo)
    step = plan.step
    assert step is not None
    warnings: list[str] = []
    if plan.fits and plan.accumulation > 1:
        warnings.append(
            f"micro-batch {plan.micro_batch} x {plan.accumulation} gradient-accumulation steps "
            "per GPU to fit memory"
        )
    seq = (spec.seq_len or 1) if isinstance(model, TransformerModel) else 1
    step_s = step.total_s
    samples_s = sustained_samples_s(workload, n, spec.batch_size / step_s, seq)
    warnings += _input_bound(spec.input_samples_per_s_per_gpu, samples_s / n)
    tokens_s = samples_s * seq if isinstance(model, TransformerModel) else None
    hours = training_job_hours(workload, n, samples_s, seq)
    power = power_w(gpu, n)
    fixes, reasons, needed = _training_fixes(workload, gpu, n, prec, plan, memo)
    fits = plan.fits
    idle = splits.idle_replicas(workload, plan.layout.parallelism.data_parallel)
    if idle:
        fits = False
        most = _most_batch_gpus(workload, gpu, n)
        reasons = (*reasons, (
            f"global batch {spec.batch_size} < data-parallel degree "
            f"{plan.layout.parallelism.data_parallel}: a replica needs at least one sample, "
            f"so {idle * plan.layout.parallelism.tensor_parallel} GPUs would idle"))
        # only a smaller count fixes an idle replica (memory fixes leave it idle), and only
        # one whose memory holds the job
        fixes = ()
        if most is not None and _runs(workload, gpu, most, memo):
            fixes = (Fix("gpu_count", most,
                         f"at most {most} GPUs for a global batch of {spec.batch_size}",
                         "gpu_count"),)
    return Estimate(
        gpu_slug=gpu.slug,
        gpu_count=n,
        fits=fits,
        precision_used=prec,
        memory_per_gpu_gb=plan.memory.total,
        memory_available_gb=mem.capacity_gb(gpu),
        memory=plan.memory,
        parallelism=plan.layout.parallelism,
        bound=step.bound,
        samples_per_s=samples_s,
        tokens_per_s=tokens_s,
        step_time_ms=step_s * 1e3,
        time_to_complete_hours=hours,
        power_w=power,
        energy_kwh_total=None if hours is None else power * hours / 1000.0,
        warnings=_warnings(workload, gpu, rate, warnings),
        compute_tflops_used=rate.tflops,
        infeasible_reasons=reasons,
        fixes=fixes,
        min_gpus_to_fit=needed,
        micro_batch_size=plan.micro_batch,
        gradient_accumulation_steps=plan.accumulation,
        startup_s=scaling.job_startup_s(n),
        assumptions=(_assumptions(c.TRAINING_KEYS, c.GEFORCE_KEYS)
                     if kernels.fp16_accumulate_doubles(gpu) else _assumptions(c.TRAINING_KEYS)),
    )


def sustained_samples_s(workload: Workload, n: int, healthy_samples_s: float, seq: int
                         ) -> float:
    """Samples/s over the whole job: the healthy step rate times the goodput of ``n`` GPUs
    over the job's length (:func:`training.goodput`)."""
    return healthy_samples_s * tr.goodput(
        n, training_hours(workload, healthy_samples_s, seq))


def _runs(workload: Workload, gpu: GpuSpec, n: int, memo: Memo) -> bool:
    """Whether training runs on ``n`` GPUs: its plan fits memory and no replica idles (what
    :func:`_estimate_training` calls feasible), without building the estimate."""
    rate = workload_rate(workload, gpu)
    if rate is None:
        return False
    plan = tr.plan_training(workload, gpu, n, rate, memo=memo)
    return plan.fits and not splits.idle_replicas(workload, plan.layout.parallelism.data_parallel)


def _most_batch_gpus(workload: Workload, gpu: GpuSpec, n: int) -> int | None:
    """The largest searched count below ``n`` whose layouts keep every replica busy."""
    fitting = [m for m in gpu_count_candidates(gpu) if m < n and not splits.idle_replicas(
        workload, m // max(splits.tp_degrees(workload, gpu, m)))]
    return fitting[-1] if fitting else None


def _training_efficiency(
    workload: Workload, gpu: GpuSpec, n: int, samples_s: float, memo: Memo
) -> float | None:
    """Samples/s per GPU at ``n`` over the best samples/s per GPU of any searched count from
    the smallest whose memory holds the job up to ``n`` (1.0 at the best; a count squeezed
    for memory -- a small micro-batch, a wide TP -- is not the yardstick, so the figure never
    exceeds 1); None when no count up to ``n`` holds it."""
    needed = min_gpus_to_fit(workload, gpu, memo)
    if needed is None or needed > n:
        return None
    spec = workload.training
    assert spec is not None
    rate = workload_rate(workload, gpu)
    assert rate is not None
    best = samples_s / n
    seq = (spec.seq_len or 1) if isinstance(workload.model, TransformerModel) else 1
    smaller = [m for m in gpu_count_candidates(gpu, n, memo) if needed <= m < n]
    for m, fitted in zip(smaller, tr.fitted_steps(workload, gpu, smaller, rate, memo),
                         strict=True):
        if fitted is not None and not splits.idle_replicas(workload, fitted[0]):
            sustained = sustained_samples_s(workload, m, spec.batch_size / fitted[1], seq)
            best = max(best, sustained / m)
    return (samples_s / n) / best


def training_samples(workload: Workload, seq: int) -> float | None:
    """Samples (sequences of ``seq`` tokens) the training job runs; None: no length given."""
    spec = workload.training
    assert spec is not None
    if spec.tokens is not None:
        return spec.tokens / seq
    if spec.samples is not None:
        return spec.samples
    if spec.epochs is not None and spec.dataset_samples is not None:
        return spec.epochs * spec.dataset_samples
    return None


def training_hours(workload: Workload, samples_s: float, seq: int) -> float | None:
    """Hours the job's samples take at ``samples_s`` (no start-up); None: no length given."""
    samples = training_samples(workload, seq)
    return None if samples is None else samples / samples_s / 3600.0


def training_job_hours(workload: Workload, n: int, samples_s: float, seq: int
                       ) -> float | None:
    """A training job's time to finish on ``n`` GPUs [h]: its samples at ``samples_s`` (the
    sustained rate) after the job's start-up (:func:`scaling.job_startup_s`)."""
    hours = training_hours(workload, samples_s, seq)
    return None if hours is None else hours + scaling.job_startup_s(n) / 3600.0


def _training_fixes(
    workload: Workload, gpu: GpuSpec, n: int, prec: Precision, plan: tr.TrainPlan, memo: Memo
) -> tuple[tuple[Fix, ...], tuple[str, ...], int | None]:
    if plan.fits:
        return (), (), n
    spec = workload.training
    assert spec is not None
    reasons = (
        f"needs {plan.memory.total:.1f} GB per GPU at micro-batch 1; {mem.usable_text(gpu)}",
    )
    fixes: list[Fix] = []
    if not spec.activation_checkpointing and tr.fits(
        workload, gpu, n, prec, checkpointing=True, memo=memo
    ):
        fixes.append(Fix("activation_checkpointing", True, "fits with activation checkpointing",
                         "training.activation_checkpointing"))
    if spec.sharding not in ("auto", "zero3") and n > 1:
        if tr.fits(workload, gpu, n, prec, sharding="zero3", memo=memo):
            fixes.append(Fix("sharding", "zero3", "fits with sharding zero3 (FSDP)",
                             "training.sharding"))
    needed = min_gpus_to_fit(workload, gpu, memo)
    if needed is not None and needed > n and _runs(workload, gpu, needed, memo):
        # offered only where the job runs: memory holds it and no replica idles
        fixes.append(_gpu_count_fix(needed))
    return tuple(fixes), reasons, needed


# ---------------------------------------------------------------- inference


def copies_needed(spec_target: float | None, capacity_rps: float) -> int:
    """Copies of a GPU group (or replicas) needed to carry ``spec_target`` requests/s when one
    completes ``capacity_rps`` at capacity (1 without a target or a capacity)."""
    if not spec_target or capacity_rps <= 0:
        return 1
    return max(1, math.ceil(spec_target / capacity_rps - 1e-9))


def more_replicas_than_needed(target: float | None, requests_s: float, replicas: int) -> bool:
    """Whether ``replicas`` replicas that complete ``requests_s`` requests/s together hold
    more of them than ``target`` requests/s needs (False without a target or one replica)."""
    if not target or not replicas or replicas <= 1:
        return False
    per_replica = requests_s / replicas
    if per_replica <= 0:
        return False
    return copies_needed(target, per_replica) < replicas


def operating_batch(
    ctx: inf.Context, tp: int, pp: int, capacity_batch: int, load_rps: float
) -> int:
    """Sequences in flight on one replica of split (tp, pp) carrying ``load_rps`` requests/s.

    Continuous batching settles where the replica completes requests as fast as they arrive
    (Little's law: in flight = arrival rate x time each request spends decoding; Orca, Yu et
    al. OSDI'22; Sarathi-Serve, Agrawal et al. OSDI'24, sec. 2): the least batch b whose
    throughput ``b / (output_tokens x TPOT(b))`` (encoders/CNNs: ``b / latency(b)``) covers the
    load. Throughput mostly grows with the batch but not everywhere (tile waves: see
    :meth:`serving.Context.capacity_batch`), so no bisection (it can land far above the
    least): the batches of a :data:`serving.CAPACITY_GRID_STEP` grid are tried upwards to the
    first that covers the load, then every batch between it and the grid point below, so the
    answer is the least covering batch above the last grid batch that does not cover (a
    wiggle below that is missed: at most one grid step, 25%). The capacity batch always
    covers a load at most the capacity."""
    if capacity_batch <= 1:
        return 1
    need = load_rps * (1 - 1e-9)
    # the grid in one array evaluation (batch 1 first), then the batches below the first
    # covering grid batch in another
    grid = sorted(inf.batch_grid(capacity_batch) | {1})
    rates = ctx.requests_per_s_at(tp, pp, grid)
    if rates[0] >= need:
        return 1
    below = 1
    for g, rate in zip(grid[1:], rates[1:], strict=True):
        if rate >= need:
            between = list(range(below + 1, g))
            return next((b for b, r in zip(between, ctx.requests_per_s_at(tp, pp, between),
                                           strict=True) if r >= need), g)
        below = g
    return capacity_batch


def _shallower_pipeline_carries(
    ctx: inf.Context, tp: int, pp: int, target: float, replicas: int
) -> bool:
    """Whether split (tp, p) with fewer stages p < ``pp`` holds the model and carries
    ``target`` requests/s with at most ``replicas`` replicas: then the deeper pipeline buys
    only a smaller batch (pipeline stages add hops; they shorten no token's time)."""
    spec = ctx.workload.inference
    assert spec is not None
    p = pp // 2
    while p >= 1:
        if ctx.fits(tp, p, 1):
            batch = ctx.capacity_batch(tp, p)
            if batch is not None:
                per_replica = inf.requests_per_s(spec, ctx.timing(tp, p, batch), p, 1)
                if copies_needed(target, per_replica) <= replicas:
                    return True
        p //= 2
    return False


def split_choice(ctx: inf.Context, n: int, latency_mode: bool) -> tuple[
        int, int, int, int, int] | None:
    """The split an inference estimate of ``n`` GPUs runs on: (tp, pp, capacity batch, batch
    at the offered load, replicas in the group), None when no split that fits has a batch.

    Every split that fits, each timed by the same serving model. Its capacity batch: a
    fixed batch, else the largest meeting the limits within memory and the runtime's
    sequence cap (latency mode without a target: batch 1). With a target, the copies of
    the group that carry it and the batch each replica settles at under its share of the
    load (operating_batch). Keep the split with the most capacity (latency mode: the lowest
    latency at the load); ties within SPLIT_TIE go to the smaller split. Dense transformers
    run it compiled (:meth:`serving.Context.split_plan`, the same choice); this is the
    reference, and what MoE models and CNNs run."""
    spec = ctx.workload.inference
    assert spec is not None
    min_batch = spec.batch_size or 1
    target = spec.target_requests_per_s
    found: tuple[int, int, int, int, int] | None = None
    best = -math.inf if not latency_mode else math.inf
    was_padded = True
    for o_tp, o_pp in ctx.splits(n):
        if not ctx.fits(o_tp, o_pp, min_batch):
            continue
        if spec.batch_size is not None:
            batch: int | None = spec.batch_size
        else:
            limit = ctx.limit_batch(o_tp, o_pp)
            if latency_mode and not target:
                batch = 1 if limit >= 1 else None
            else:
                batch = ctx.capacity_batch(o_tp, o_pp)
        if batch is None:
            continue
        cap_t = ctx.timing(o_tp, o_pp, batch)
        in_group = max(1, n // (o_tp * o_pp))
        capacity = inf.requests_per_s(spec, cap_t, o_pp, in_group)
        load = batch
        padded = False
        if target and spec.batch_size is None:
            per_replica = target / (copies_needed(target, capacity) * in_group)
            load = operating_batch(ctx, o_tp, o_pp, batch, per_replica)
            # more replicas in the group than the load needs: its latency is bought with
            # idle copies; any split that is not padded wins over it
            padded = in_group > 1 and copies_needed(target, capacity / in_group) < in_group
        if padded and not was_padded:
            continue
        if latency_mode:
            load_t = ctx.timing(o_tp, o_pp, load)
            better = (value := inf.latencies(spec, load_t)[2]) * SPLIT_TIE < best
        else:
            better = (value := capacity) > best * SPLIT_TIE
        if better or (was_padded and not padded):
            best, found = value, (o_tp, o_pp, batch, load, in_group)
            was_padded = padded
    return found


def _estimate_inference(
    workload: Workload,
    gpu: GpuSpec,
    n: int,
    rate: PeakRate,
    memo: Memo,
    latency_mode: bool = False,
) -> Estimate:
    spec = workload.inference
    assert spec is not None
    prec = rate.precision_used
    ctx = inf.context(workload, gpu, prec, rate, memo)
    min_batch = spec.batch_size or 1
    fitting_splits = ctx.fitting(n, min_batch)
    fitting = fitting_splits[0] if fitting_splits else None
    fits = fitting is not None
    # no split fits: the count is judged (and its rejection explained) on its best layout,
    # the split needing the least memory per GPU, timed as if it ran at the smallest batch
    tp, pp = fitting or ctx.least_memory_split(n, min_batch)
    target = spec.target_requests_per_s
    warnings: list[str] = []
    found: tuple[inf.Timing, inf.Timing, int] | None = None
    if fits:
        chosen = (ctx.split_plan(n, latency_mode, SPLIT_TIE) if ctx.compiled_splits
                  else split_choice(ctx, n, latency_mode))
        if chosen is not None:
            tp, pp, cap_b, load_b, in_group = chosen
            found = (ctx.timing(tp, pp, cap_b), ctx.timing(tp, pp, load_b), in_group)
    if found is None:
        t0 = ctx.timing(tp, pp, min_batch)
        found = (t0, t0, max(1, n // (tp * pp)))
    cap_timing, timing, in_group = found
    placement, size = ctx.placement(n, tp, pp), ctx.sizing(tp, pp)
    batch = timing.batch
    point = _point(ctx, n, tp, pp, cap_timing, timing)
    ttft, tpot, latency = point.latencies
    latency_ok, requests_s, tokens_s = point.latency_ok, point.requests_s, point.tokens_s
    offered, deeper = point.offered, point.deeper
    if target is not None and requests_s < target:
        replicas_needed = math.ceil(target / (requests_s / placement.replicas))
        warnings.append(
            f"{requests_s:.3g} requests/s is below the target "
            f"{target:g}; needs ~{replicas_needed} replicas of "
            f"{placement.tp * placement.pp} GPU(s)"
        )
    warnings += _input_bound(spec.input_samples_per_s_per_gpu, requests_s / n)
    # the phase a request spends longer in, as its latencies (and the explanation) say: its
    # own decode iterations (the TPOT it sees) or its prompt (TTFT)
    dominant = timing.prefill
    if timing.tpot is not None and inf.decode_longer(spec, ttft, tpot):
        dominant = timing.tpot
    power = point.power_w
    # memory is sized for the capacity batch: the replica must hold the load's peaks
    breakdown = size.breakdown(cap_timing.batch)
    fixes, reasons, needed = _inference_fixes(workload, gpu, n, prec, fits, breakdown, memo)
    return Estimate(
        gpu_slug=gpu.slug,
        gpu_count=n,
        fits=fits,
        precision_used=prec,
        memory_per_gpu_gb=breakdown.total,
        memory_available_gb=mem.capacity_gb(gpu),
        memory=breakdown,
        parallelism=placement.layout.parallelism,
        bound=dominant.bound,
        samples_per_s=requests_s,
        tokens_per_s=tokens_s,
        ttft_ms=ttft,
        tpot_ms=tpot,
        latency_ms=latency,
        batch_size=batch,
        requests_per_s=requests_s,
        capacity_batch_size=cap_timing.batch,
        offered_requests_per_s=offered,
        pipeline_deeper_than_needed=deeper,
        power_w=power,
        energy_kwh_per_hour=power / 1000.0,
        latency_ok=latency_ok,
        warnings=_warnings(workload, gpu, rate, warnings),
        infeasible_reasons=reasons,
        fixes=fixes,
        min_gpus_to_fit=needed,
        replicas=placement.replicas,
        assumptions=(_assumptions(c.INFERENCE_KEYS, c.LLAMACPP_KEYS)
                     if spec.runtime == "llama.cpp" else _assumptions(c.INFERENCE_KEYS)),
        compute_tflops_used=rate.tflops,
    )


@dataclass(frozen=True, slots=True)
class ServingPoint:
    """What an inference estimate derives from its split and timings, and a ranking compares:
    :func:`serving_point` gives it without the rest of the estimate."""

    tp: int
    pp: int
    replicas: int
    """Replicas in the group of ``gpu_count`` GPUs (the placement's)."""
    latencies: tuple[float, float | None, float]
    """(ttft_ms, tpot_ms, latency_ms) at the batch the load runs at."""
    latency_ok: bool | None
    """Whether that batch meets the latency limits (None: the workload sets none)."""
    requests_s: float
    """Requests/s of the group at its capacity batch."""
    tokens_s: float | None
    offered: float | None
    """Requests/s each copy of the group carries under the target (None: no target)."""
    deeper: bool
    """The pipeline is deeper than the model and the load need."""
    power_w: float


def _point(ctx: inf.Context, n: int, tp: int, pp: int, cap_timing: inf.Timing,
           timing: inf.Timing) -> ServingPoint:
    """The figures of split (tp, pp) on ``n`` GPUs at its capacity and load timings."""
    spec = ctx.workload.inference
    assert spec is not None
    replicas = max(1, n // (tp * pp))  # the placement's (serving.Context.placement)
    latency_ok = inf.meets(spec, timing) if _has_limits(spec) else None
    return _assembled(ctx, n, tp, pp, replicas, inf.latencies(spec, timing), latency_ok,
                      inf.requests_per_s(spec, cap_timing, pp, replicas))


def _has_limits(spec: InferenceSpec) -> bool:
    return any(x is not None for x in (spec.max_ttft_ms, spec.max_tpot_ms, spec.max_latency_ms))


def _assembled(ctx: inf.Context, n: int, tp: int, pp: int, replicas: int,
               latencies: tuple[float, float | None, float], latency_ok: bool | None,
               requests_s: float) -> ServingPoint:
    """A :class:`ServingPoint` from its split's requests/s and latencies."""
    spec = ctx.workload.inference
    assert spec is not None
    tokens_s = requests_s * spec.output_tokens if spec.output_tokens > 0 else None
    offered = None
    deeper = False
    target = spec.target_requests_per_s
    if target:
        copies = copies_needed(target, requests_s)
        offered = target / copies
        if spec.batch_size is None and pp > 1:
            deeper = _shallower_pipeline_carries(ctx, tp, pp, target, copies * replicas)
    return ServingPoint(tp, pp, replicas, latencies, latency_ok, requests_s, tokens_s, offered,
                        deeper, power_w(ctx.gpu, n))


def serving_point(workload: Workload, gpu: GpuSpec, n: int, memo: Memo,
                  latency_mode: bool = False) -> ServingPoint | None:
    """:func:`estimate`'s serving figures for ``n`` x ``gpu`` (in ``latency_mode`` or
    throughput mode, the same floats), without building the estimate (where no fitting split
    has a batch that meets the latency limits: the first fitting split at the smallest batch,
    as the estimate times it); None where the estimate is needed for what it explains or runs
    another path (a single-module device asked for several, no rate, no compiled split table
    (MoE, CNNs), no split that fits)."""
    if n > 1 and par.single_module(gpu):
        return None
    rate = workload_rate(workload, gpu)
    spec = workload.inference
    if rate is None or spec is None:
        return None
    ctx = inf.context(workload, gpu, rate.precision_used, rate, memo)
    if not ctx.compiled_splits:
        return None
    # the split plan and its point in one compiled call (no split with a batch:
    # _estimate_inference's fallback, the first fitting split at the smallest batch)
    point = ctx.split_point(n, latency_mode, SPLIT_TIE)
    if point is None:
        return None
    tp, pp, replicas, requests_s, latencies, meets = point
    return _assembled(ctx, n, tp, pp, replicas, latencies,
                      meets if _has_limits(spec) else None, requests_s)


def known_padded_point(workload: Workload, gpu: GpuSpec, n: int, memo: Memo) -> bool:
    """Whether :func:`serving_point` of ``n`` x ``gpu`` in throughput mode is known, without
    computing it, to hold more replicas than the target needs (its figures'
    :func:`more_replicas_than_needed`): from the context this call made for ``gpu`` at its
    other counts (:meth:`serving.Context.known_padded`). False where it cannot tell."""
    if n > 1 and par.single_module(gpu):
        return False  # serving_point gives None: the estimate decides
    rate = workload_rate(workload, gpu)
    if rate is None or workload.inference is None:
        return False
    ctx = inf.made_context(workload, gpu, rate.precision_used, rate, memo)
    return ctx is not None and ctx.known_padded(n)


def _inference_fixes(
    workload: Workload,
    gpu: GpuSpec,
    n: int,
    prec: Precision,
    fits: bool,
    breakdown: MemoryBreakdown,
    memo: Memo,
) -> tuple[tuple[Fix, ...], tuple[str, ...], int | None]:
    if fits:
        return (), (), n
    reasons = (
        f"needs {breakdown.total:.1f} GB per GPU; {mem.usable_text(gpu)}",
    )
    fixes: list[Fix] = []
    spec = workload.inference
    assert spec is not None
    wps: tuple[Precision, ...] = ("int8", "int4")
    for wp in wps:
        current = mem.stored_weight_precision(workload)
        if current == "int4" or (current == "int8" and wp == "int8"):
            continue
        quantized = replace(workload, weight_precision=wp)
        if inf.place(quantized, gpu, n, prec, spec.batch_size or 1, memo)[2]:
            fixes.append(Fix("weight_precision", wp, f"fits with {wp} weights",
                             "weight_precision"))
            break
    needed = min_gpus_to_fit(workload, gpu, memo)
    if needed is not None and needed > n:
        fixes.append(_gpu_count_fix(needed))
    return tuple(fixes), reasons, needed


# ---------------------------------------------------------------- search


def _fits(workload: Workload, gpu: GpuSpec, n: int, prec: Precision, memo: Memo) -> bool:
    if workload.kind == "training":
        return tr.fits(workload, gpu, n, prec, memo=memo)
    if workload.kind == "inference":
        spec = workload.inference
        assert spec is not None
        return inf.fits_any(workload, gpu, n, prec, spec.batch_size or 1, memo)
    spec_c = workload.compute
    assert spec_c is not None
    return compute_fits(spec_c.memory_gb, mem.usable_gb(gpu), n)


def compute_fits(memory_gb: float, usable_gb: float, n: int) -> bool:
    """Whether a compute job's ``memory_gb``, divided evenly over ``n`` GPUs, fits beside the
    framework's overhead in ``usable_gb`` each."""
    return memory_gb / n + c.FRAMEWORK_OVERHEAD_GB <= usable_gb


def min_gpus_to_fit(workload: Workload, gpu: GpuSpec, memo: Memo | None = None) -> int | None:
    """Smallest GPU count (1, 2, 4, 8, then whole nodes up to 4096) at which it fits memory.

    Fitting is monotone in the count (more GPUs divide the sharded states and the tensor-
    parallel share, and add nothing per GPU; tests/unit/test_engine_training.py checks
    "fits on n => fits on 2n" and that this equals a linear scan), so: one check at the
    smallest count, one at the largest, then a bisection (about 7 checks instead of up to 21);
    serving starts at the weights' share of the room (:func:`serving.least_gpus_for_weights`),
    and scans where a split is pinned (the pin holds only from its own count, so fitting is not
    monotone there); a compute job's is a few comparisons (:func:`least_compute_count`).
    Training and serving searches are memoized in the shared
    :class:`~service.engine.cache.EngineCache` when the memo has one: a pure function of two
    frozen dataclasses, asked again for every rejected count.
    """
    memo = memo_of(memo)
    rate = workload_rate(workload, gpu)
    if rate is None:
        return None
    if workload.kind == "compute":
        spec = workload.compute
        assert spec is not None
        # cheaper than a memo lookup, whose key alone (the memory twin) costs as much
        return least_compute_count(spec.memory_gb, mem.usable_gb(gpu),
                                   gpu_count_candidates(gpu, memo=memo))
    # once per memory configuration: every GPU type of the same one fits at the same count
    twin = par.memory_twin(gpu, rate.precision_used, memo)
    return memo.get("min_gpus_to_fit", (workload, twin), lambda: _min_gpus(workload, twin, memo))


def least_compute_count(memory_gb: float, usable_gb: float, counts: tuple[int, ...]
                        ) -> int | None:
    """The least of ``counts`` (a GPU type's searched counts, ascending) on which a compute
    job's ``memory_gb`` fits GPUs of ``usable_gb`` each (:func:`compute_fits`, :func:`_fits`'
    test): its memory divides evenly, so the smallest count is ``ceil(memory / room)`` rounded
    up to a searched count; the two neighbours are checked with that test itself, so float
    rounding cannot make the two answers differ. Reads nothing else of the GPU, so the screen
    asks it once per memory configuration."""
    room = usable_gb - c.FRAMEWORK_OVERHEAD_GB
    if room <= 0:
        return None
    need = memory_gb / room
    if need > counts[-1]:
        return None
    i = bisect.bisect_left(counts, need)
    while i > 0 and compute_fits(memory_gb, usable_gb, counts[i - 1]):
        i -= 1
    while i < len(counts) and not compute_fits(memory_gb, usable_gb, counts[i]):
        i += 1
    return counts[i] if i < len(counts) else None


def _min_gpus(workload: Workload, gpu: GpuSpec, memo: Memo) -> int | None:
    rate = workload_rate(workload, gpu)
    if rate is None:
        return None
    prec = rate.precision_used
    counts = gpu_count_candidates(gpu, memo=memo)
    if workload.kind == "training":
        return tr.least_fitting_count(workload, gpu, counts, prec, memo)
    if workload.kind == "inference":
        # no count below the weights' share of the room: every split of n GPUs holds
        # weights / (tp pp) per GPU with tp pp <= n, beside the overhead (serving.sizing)
        low = inf.least_gpus_for_weights(workload, gpu, prec)
        if low is None:
            return None
        counts = counts[bisect.bisect_left(counts, low):]
        if not counts:
            return None
        spec = workload.inference
        assert spec is not None
        if spec.tensor_parallel or spec.pipeline_parallel:
            # a pinned split runs only from the count that holds it (serving.Context.splits),
            # so fitting is not monotone in the count (the default splits of 8 GPUs may hold a
            # long context that a pinned TP 1 x PP 16 cannot): a scan, not a bisection
            return next((n for n in counts if _fits(workload, gpu, n, prec, memo)), None)
    return par.least_count(counts, lambda n: _fits(workload, gpu, n, prec, memo))


__all__ = ["estimate", "gpu_count_candidates", "min_gpus_to_fit", "Parallelism", "workload_rate",
           "training_samples"]
