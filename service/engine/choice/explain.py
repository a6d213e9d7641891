"""Human-readable reasons, with figures, for recommendation candidates and rejections; and
the :class:`Option` record a candidate is built from (:func:`candidate`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from service.engine.cache import Memo
from service.engine.choice import cost as co
from service.engine.choice import guardrails
from service.engine.choice.bounds import BALANCED_WEIGHT, Minima, ratio_to_min
from service.engine.choice.provision import provision
from service.engine.constants import MEMORY_RESERVE_FRACTION
from service.engine.physics.estimate import estimate
from service.engine.physics.kernels import sustained_clock_fraction
from service.engine.physics.memory import memory_size, usable_gb
from service.engine.physics.performance import peak_rate
from service.engine.physics.serving import decode_longer
from service.engine.recommend_types import (
    NOT_PROVISIONED,
    Candidate,
    Constraints,
    CostBreakdown,
    CostSettings,
    Notice,
    Objective,
    Offer,
    Rejection,
    RejectionCode,
)
from service.engine.types import Estimate, Fix, GpuSpec, InferenceSpec, MemoryBreakdown, Workload


@dataclass(frozen=True)
class Failure:
    """Why an option (or a GPU) failed: the check's stage (later = came closer), the code,
    the reason, the nearest fix, and the relative overage for ordering."""

    stage: int
    code: RejectionCode
    reason: str
    fix: Fix
    overage: float = 0.0
    other_fixes: tuple[Fix, ...] = ()

    def rejection(self, gpu: GpuSpec) -> Rejection:
        return Rejection(gpu.slug, gpu.name, self.reason, self.fix, self.code, self.other_fixes)


def closest(a: Failure | None, b: Failure) -> Failure:
    """Keep the failure that came closest: the latest stage, then the smallest overage."""
    if a is None or (b.stage, -b.overage) > (a.stage, -a.overage):
        return b
    return a


def precision_failure(precision: str) -> Failure:
    return Failure(
        0, "precision", f"no {precision} support listed",
        Fix("precision", precision, f"use a GPU with {precision} support, or another "
            "precision", "precision"),
    )


def no_quote_failure(first: int | None = None) -> Failure:
    """No usable quote at all (``first`` None), or none holding ``first``+ GPUs."""
    if first is None:
        reason = "no usable price quote under the given providers/regions/pricing"
    else:
        reason = f"no usable quote holds {first}+ GPUs in whole nodes"
    return Failure(0, "no_quote", reason, Fix(
        "quote", first, "add a quote or relax the providers/regions/pricing filter"))


@dataclass(frozen=True)
class Option:
    """One feasible (GPU, count, offer) choice with the figures it is ranked on."""

    gpu: GpuSpec
    est: Estimate
    offer: Offer | None
    instances: int
    """Instances (or owned units) per replica."""
    cost: CostBreakdown
    money: float | None
    """The ``cost`` objective's figure: USD to finish (training/compute), USD per million
    output tokens or per 1000 requests (inference); None when no price is known."""
    time: float
    """The ``time`` objective's figure: hours to finish (training/compute), end-to-end latency
    [ms] (inference)."""
    energy: float
    """The ``energy`` objective's figure: kWh to finish (training/compute), kWh per million
    output tokens or per 1000 requests (inference)."""
    proxy: float
    """GPU-hours (to finish, or per unit of work): the cost stand-in when no price is known."""
    first_fit: int
    """Smallest GPU count that fits memory (min_gpus_to_fit)."""

    @property
    def gpu_count(self) -> int:
        return self.est.gpu_count

    @property
    def usd_per_hour(self) -> float | None:
        return self.cost.usd_per_hour

    def full(self) -> Option:
        return self


class LightOption:
    """An option known by the figures it is ranked on, before its estimate and cost are built:
    a ranking compares hundreds of (GPU, count, offer) options to list ten, so the ones never
    listed never get an :class:`Option`. ``make`` builds the option (the same figures, from
    the full estimate) the first time :meth:`full`, :attr:`est` or :attr:`cost` is read, and
    is then dropped."""

    __slots__ = ("gpu", "offer", "instances", "money", "time", "energy", "proxy", "first_fit",
                 "gpu_count", "usd_per_hour", "idle_gpus", "padded", "_made", "_make")

    def __init__(self, gpu: GpuSpec, offer: Offer | None, instances: int, gpu_count: int,
                 usd_per_hour: float | None, money: float | None, time: float, energy: float,
                 proxy: float, first_fit: int, make: Callable[[], Option],
                 idle_gpus: bool = False, padded: bool = False) -> None:
        self.gpu, self.offer, self.instances = gpu, offer, instances
        self.gpu_count, self.usd_per_hour = gpu_count, usd_per_hour
        self.money, self.time, self.energy, self.proxy = money, time, energy, proxy
        self.first_fit = first_fit
        self.idle_gpus, self.padded = idle_gpus, padded
        """Serving: what ``ranking.idle_gpus`` and ``ranking.padded`` read off the estimate."""
        self._made: Option | None = None
        self._make: Callable[[], Option] | None = make

    def full(self) -> Option:
        """The :class:`Option` with its estimate and cost (built once)."""
        if self._made is None:
            assert self._make is not None
            self._made, self._make = self._make(), None
        return self._made

    @property
    def est(self) -> Estimate:
        return self.full().est

    @property
    def cost(self) -> CostBreakdown:
        return self.full().cost


Ranked = Option | LightOption
"""What a ranking compares: a built option, or one known by its figures only."""


_PARTS = (
    ("weights", "weights"),
    ("gradients", "grads"),
    ("optimizer_states", "optimizer"),
    ("activations", "activations"),
    ("kv_cache", "KV"),
    ("overhead", "overhead"),
)


def memory_parts(mem: MemoryBreakdown) -> str:
    """ "weights 140.0 + KV 8.2 + overhead 1.2 GB" (zero terms left out)."""
    parts = [
        f"{label} {getattr(mem, name):.1f}" for name, label in _PARTS if getattr(mem, name) >= 0.05
    ]
    return " + ".join(parts) + " GB" if parts else "0 GB"


def layout(est: Estimate) -> str:
    """ "TP=2", "TP=8 x PP=2, 4 replicas", "DP=64 with zero3" and the slowest link."""
    p = est.parallelism
    bits = []
    if p.tensor_parallel > 1:
        bits.append(f"TP={p.tensor_parallel}")
    if p.pipeline_parallel > 1:
        bits.append(f"PP={p.pipeline_parallel}")
    text = " x ".join(bits)
    if p.data_parallel > 1:
        dp = f"{p.data_parallel} replicas" if est.replicas else f"DP={p.data_parallel}"
        text = f"{text}, {dp}" if text else dp
        if p.sharding != "none":
            text += f" with {p.sharding}"
    if not text:
        text = "1 GPU"
    if p.link not in ("none", "") and p.link_bandwidth_gb_s:
        text += f", slowest link {p.link} {p.link_bandwidth_gb_s:g} GB/s"
    if p.nodes > 1:
        text += f", {p.nodes} nodes of {p.gpus_per_node}"
    return text


def memory_reasons(
    workload: Workload, gpu: GpuSpec, est: Estimate, first_fit: int, memo: Memo | None = None
) -> list[str]:
    """The memory arithmetic: what one GPU would need, and what each GPU needs as split."""
    per_gpu = (
        f"needs {est.memory_per_gpu_gb:.1f} GB per GPU for {memory_parts(est.memory)}; "
        f"{gpu.name} has {memory_size(gpu)}"
    )
    if est.gpu_count == 1:
        return [per_gpu]
    out = [f"{per_gpu}, across {est.gpu_count} GPUs ({layout(est)})"]
    if first_fit > 1 and workload.kind == "inference":
        single = estimate(workload, gpu, 1, memo=memo)
        out.append(
            f"on one GPU it would need {single.memory_per_gpu_gb:.1f} GB "
            f"({memory_parts(single.memory)}) > {memory_size(gpu)}, so it is split"
        )
    if first_fit > 1:
        out.append(f"fits memory from at least {first_fit} GPUs of {memory_size(gpu)}")
    return out


def _phase(workload: Workload, est: Estimate) -> str:
    if workload.kind == "training":
        return "each training step"
    if workload.kind == "compute":
        return "the job"
    spec = workload.inference
    if spec is not None and est.tpot_ms is not None and est.ttft_ms is not None:
        return "decode" if decode_longer(spec, est.ttft_ms, est.tpot_ms) else "prefill"
    return "the forward pass"


def bound_reason(workload: Workload, gpu: GpuSpec, est: Estimate) -> str:
    phase = _phase(workload, est)
    if est.bound == "memory_bandwidth":
        return f"{phase} is memory-bandwidth bound at {gpu.memory_bandwidth_gb_s / 1000:.2f} TB/s"
    if est.bound == "compute":
        rate = est.compute_tflops_used or 0.0
        unit = "TOPS" if est.precision_used in ("int8", "int4") else "TFLOPS"
        clock = sustained_clock_fraction(gpu, peak_rate(gpu, est.precision_used))
        return (
            f"{phase} is compute bound at {rate:g} {unit} dense {est.precision_used} per GPU, "
            f"held at ~{clock:.0%} of boost clock under its {gpu.tdp_w:g} W limit"
        )
    if est.bound == "interconnect":
        p = est.parallelism
        return f"{phase} is interconnect bound over {p.link} at {p.link_bandwidth_gb_s or 0:g} GB/s"
    return ""


def performance_reason(workload: Workload, est: Estimate, replicas: int) -> str:
    if workload.kind != "inference":
        hours = est.time_to_complete_hours
        speed = ""
        if est.tokens_per_s:
            speed = f" at {est.tokens_per_s:,.0f} tokens/s"
        elif est.samples_per_s:
            speed = f" at {est.samples_per_s:,.1f} samples/s"
        if hours is None:
            return f"runs{speed}; no length given, so no time to finish"
        startup = ""
        if est.startup_s and est.startup_s >= 0.05 * hours * 3600.0:
            startup = (f" ({co.duration(est.startup_s / 3600.0)} of it starting up "
                       f"{est.gpu_count:,} GPUs)")
        return f"finishes in {co.duration(hours)}{startup}{speed}"
    rps = est.requests_per_s or 0.0
    text = (
        f"{rps:,.1f} requests/s per group of {est.gpu_count} GPU(s) at batch {est.batch_size}, "
        f"latency {est.latency_ms or 0:,.1f} ms"
    )
    if est.tokens_per_s:
        text += f", {est.tokens_per_s:,.0f} output tokens/s"
    if replicas > 1:
        text += f"; {replicas} replicas meet the target"
    return text


MAX_DEADLINE_DIGITS = 12
"""Decimal places of hours a suggested deadline keeps at most (1e-12 h: 3.6 ns; a finer step
would overflow a float in :func:`round_up`)."""


def _per_unit(hours: float) -> int:
    """Steps per hour a suggested deadline is rounded up to: tenths of an hour from 0.1 h,
    three significant figures below (a 4-s job is not told to allow 6 minutes)."""
    if not hours > 0 or hours >= 0.1:
        return 10
    return int(10 ** min(MAX_DEADLINE_DIGITS, 2 - math.floor(math.log10(hours))))


def round_up(x: float, per_unit: int) -> float:
    """``x`` rounded up to a multiple of 1/``per_unit`` and never below ``x`` (a limit set to
    it holds: ``ceil(x * 100) / 100`` can fall a float step short of ``x``)."""
    value = math.ceil(x * per_unit) / per_unit
    while value < x:
        value = (round(value * per_unit) + 1) / per_unit
    return value


def _latency_misses(spec: InferenceSpec, ttft_ms: float | None, tpot_ms: float | None,
                    latency_ms: float | None) -> list[tuple[str, float, float, str]]:
    """The latency limits the figures exceed: (name, figure, limit, field)."""
    checks = (
        ("time to first token", ttft_ms, spec.max_ttft_ms, "inference.max_ttft_ms"),
        ("time per output token", tpot_ms, spec.max_tpot_ms, "inference.max_tpot_ms"),
        ("latency", latency_ms, spec.max_latency_ms, "inference.max_latency_ms"),
    )
    return [(name, got, lim, fld) for name, got, lim, fld in checks
            if got is not None and lim is not None and got > lim]


def latency_overage(spec: InferenceSpec, ttft_ms: float | None, tpot_ms: float | None,
                    latency_ms: float | None) -> float:
    """:func:`latency_miss`'s overage from the figures alone (0.0 where none exceeds its
    limit)."""
    misses = _latency_misses(spec, ttft_ms, tpot_ms, latency_ms)
    return max(got / lim for _, got, lim, _ in misses) - 1 if misses else 0.0


def latency_failure(workload: Workload, ttft_ms: float | None, tpot_ms: float | None,
                    latency_ms: float | None, batch: int | None) -> Failure:
    """:func:`limit_failure` of an option that fits and misses a latency limit, from its
    latencies and the batch they were timed at (the estimate's: a ranking's light serving
    figures give the same floats without building it)."""
    reason, over, fix = latency_miss(workload, ttft_ms, tpot_ms, latency_ms, batch)
    return Failure(1, "latency", reason, fix, over)


def latency_miss(workload: Workload, ttft_ms: float | None, tpot_ms: float | None,
                 latency_ms: float | None, batch: int | None) -> tuple[str, float, Fix]:
    """Which latency limit the latencies timed at ``batch`` miss, by how much (relative), and
    the limit that would hold."""
    spec = workload.inference
    assert spec is not None
    misses = _latency_misses(spec, ttft_ms, tpot_ms, latency_ms)
    if not misses:
        return "misses the latency limits", 0.0, Fix(
            "latency_limit", None, "a faster GPU or looser latency limits")
    name, got, lim, fld = max(misses, key=lambda m: m[1] / m[2])
    at = f"at batch {batch}" if spec.batch_size is not None else "even at batch 1"
    reason = f"{name} {got:,.1f} ms > max {lim:g} ms {at}"
    if len(misses) > 1:
        # no one field holds all the limits: not a fix a caller can apply as one change
        wanted = " and ".join(f"{f.split('.')[-1]} >= {round_up(g, 10):g} ms"
                              for _, g, _, f in misses)
        return reason, got / lim - 1, Fix(
            "latency_limit", None, f"{wanted} together, or a faster GPU")
    # the same split at the same batch meets the relaxed limit: the figure it missed by is its
    # own latency there (see the estimate's split search), so this value is re-checked by it
    value = round_up(got, 10)
    fix = Fix("latency_limit", value,
              f"{fld.split('.')[-1]} >= {value:g} ms, or a faster GPU", fld)
    return reason, got / lim - 1, fix


MEMORY_FIXES = frozenset({"weight_precision", "activation_checkpointing", "sharding",
                          "gpu_memory", "gpu_count", "max_gpus"})
"""The fix kinds that answer a memory failure (less memory per GPU, or more GPUs to split
over); speed fixes (a faster GPU, looser latency limits) never do."""


def memory_failure(gpu: GpuSpec, est: Estimate, first: int | None, cap: int) -> Failure:
    """No count up to ``cap`` (the request's max_gpus, or the search's own cap) fits: the
    memory figures of the best layout at the largest count tried (``est``, whose split needs
    the least memory per GPU) and the fixes that make it fit, each checked by the estimate
    (quantized weights, checkpointing, sharding) or by the count search (``first``)."""
    split = f"{layout(est)}; " if est.gpu_count > 1 else ""
    reason = (
        f"needs {est.memory_per_gpu_gb:.1f} GB per GPU at {est.gpu_count} GPU(s) "
        f"({split}{memory_parts(est.memory)}); {gpu.name} has {memory_size(gpu)}"
    )
    # the estimate's count fix is min_gpus_to_fit (``first``): the ranking offers it as a
    # max_gpus above the cap (no count up to the cap fits, so it is above)
    fixes = [f for f in est.fixes if f.kind in MEMORY_FIXES and f.kind != "gpu_count"]
    if first is not None and first > cap:
        fixes.append(_max_gpus_fix(first, cap))
    fixes.extend(_gpu_memory_fix(est))
    return _failure(0, "memory", reason, fixes)


MEMORY_UNEXPLAINED = Failure(0, "memory", "", Fix("gpu_memory", None, ""))
"""A memory failure in a ranked summary, which shows a rejected GPU's slug and code only: no
memory estimate taken for its reason and fixes (:func:`memory_failure`'s, for ~150 GPU
types of 5,000 for an 8B model: ~47 ms a request under cProfile)."""


def _max_gpus_fix(first: int, cap: int | None) -> Fix:
    was = f" from {cap}" if cap is not None else ""
    return Fix("max_gpus", first, f"needs {first} GPUs: raise max_gpus{was} to {first}",
               "constraints.max_gpus")


def _gpu_memory_fix(est: Estimate) -> list[Fix]:
    need = gpu_memory_needed(est.memory_per_gpu_gb)
    if need is None:
        return []
    return [Fix("gpu_memory", need, f"use a GPU like it with >= {need} GB "
                f"({est.memory_per_gpu_gb:.1f} GB per GPU plus the fragmentation reserve)")]


def gpu_memory_needed(per_gpu_gb: float) -> int | None:
    """Smallest whole GB of GPU memory whose usable part (after the fragmentation reserve)
    holds ``per_gpu_gb``; None when nothing is needed."""
    if per_gpu_gb <= 0:
        return None
    need = math.ceil(per_gpu_gb / (1.0 - MEMORY_RESERVE_FRACTION))
    while need * (1.0 - MEMORY_RESERVE_FRACTION) < per_gpu_gb:  # float rounding
        need += 1
    return need


def _fewer_gpus_fixes(est: Estimate) -> list[Fix]:
    """A count whose replicas would idle for want of samples: cap the GPUs at the largest
    count that keeps every replica busy (the estimate's count fix), when there is one."""
    return [Fix("max_gpus", f.value, f"{f.detail}: set max_gpus to {f.value}",
                "constraints.max_gpus") for f in est.fixes if f.kind == "gpu_count"]


def _failure(stage: int, code: RejectionCode, reason: str, fixes: list[Fix],
             overage: float = 0.0) -> Failure:
    """A failure whose fix is the first of ``fixes``, the rest listed as alternatives."""
    if not fixes:
        fixes = [Fix("constraint", None, "no change to this request removes this failure")]
    return Failure(stage, code, reason, fixes[0], overage, tuple(fixes[1:]))


def score_reason(
    objective: Objective,
    score: float,
    money: float | None,
    time: float,
    energy: float,
    proxy: float,
    mins: Minima,
    workload: Workload,
) -> str:
    inference = workload.kind == "inference"
    t_unit = "ms latency" if inference else "h"

    if objective == "balanced":
        w, rest = BALANCED_WEIGHT, 1.0 - BALANCED_WEIGHT
        # the ratios the score itself used
        if money is None:
            per_proxy = ratio_to_min(proxy, mins.proxy)
            per_time = ratio_to_min(time, mins.time_unpriced)
            return (
                f"score {score:.3f} = {w:g} x GPU-hours/min ({per_proxy:.2f}) + "
                f"{rest:g} x time/min ({per_time:.2f}) among unpriced GPUs"
            )
        per_money, per_time = ratio_to_min(money, mins.money), ratio_to_min(time, mins.time)
        return (
            f"score {score:.3f} = {w:g} x cost/min cost ({per_money:.2f}) + "
            f"{rest:g} x time/min time ({per_time:.2f}); lower is better"
        )
    if objective == "time":
        return f"score {score:,.4g} = {t_unit} to {'serve' if inference else 'finish'}"
    if objective == "energy":
        unit = "kWh to finish"
        if inference:
            unit = "kWh per million tokens" if _llm(workload) else "kWh per 1000 requests"
        return f"score {score:,.4g} = {unit}"
    if money is None:
        return f"score {score:,.4g} = GPU-hours (no price known; ranked after priced GPUs)"
    unit = "USD to finish"
    if inference:
        unit = "USD per million output tokens" if _llm(workload) else "USD per 1000 requests"
    return f"score {score:,.4g} = {unit}"


def _llm(workload: Workload) -> bool:
    spec = workload.inference
    return spec is not None and spec.output_tokens > 0


def constraint_failure(gpu: GpuSpec, c: Constraints) -> Failure | None:
    if c.gpu_slugs is not None and gpu.slug not in c.gpu_slugs:
        return Failure(0, "constraint", "not in the requested gpu_slugs", Fix(
            "constraint", gpu.slug, "add it to gpu_slugs", "constraints.gpu_slugs"))
    if gpu.slug in c.exclude_gpu_slugs:
        return Failure(0, "constraint", "excluded by exclude_gpu_slugs", Fix(
            "constraint", gpu.slug, "remove the exclusion", "constraints.exclude_gpu_slugs"))
    if c.vendors is not None and gpu.vendor.lower() not in {v.lower() for v in c.vendors}:
        return Failure(0, "constraint", f"vendor {gpu.vendor} not allowed", Fix(
            "constraint", gpu.vendor, "allow the vendor", "constraints.vendors"))
    if c.form_factors is not None and gpu.form_factor not in c.form_factors:
        return Failure(
            0, "constraint", f"form factor {gpu.form_factor} not allowed", Fix(
                "constraint", gpu.form_factor, "allow the form factor",
                "constraints.form_factors")
        )
    if c.max_power_w is not None and gpu.tdp_w > c.max_power_w:
        over = gpu.tdp_w - c.max_power_w
        return Failure(
            0,
            "power",
            f"TDP {gpu.tdp_w:g} W per GPU",
            Fix("max_power", gpu.tdp_w,
                f"exceeds max_power_w {c.max_power_w:g} W by {over:g} W; allow {gpu.tdp_w:g} W",
                "constraints.max_power_w"),
        )
    if c.require_fast_interconnect and gpu.interconnect not in ("nvlink", "infinity_fabric"):
        return Failure(
            0,
            "interconnect",
            f"{gpu.interconnect} only, no NVLink or Infinity Fabric",
            Fix("interconnect", False,
                "use an NVLink/Infinity Fabric GPU or drop require_fast_interconnect",
                "constraints.require_fast_interconnect"),
        )
    return None


def limit_failure(
    workload: Workload, gpu: GpuSpec, est: Estimate, cost: CostBreakdown, c: Constraints
) -> Failure | None:
    """The first limit an option of ``gpu`` misses (memory, latency, max_gpus, deadline,
    budget, $/h)."""
    if not est.fits:
        if workload.kind == "training" and est.memory_per_gpu_gb <= usable_gb(gpu):
            # memory holds: the count leaves data-parallel replicas without a sample
            return _failure(0, "constraint", "; ".join(est.infeasible_reasons),
                            _fewer_gpus_fixes(est))
        return _failure(0, "memory", "; ".join(est.infeasible_reasons),
                        _capped_fixes(est, c.max_gpus))
    if est.latency_ok is False:
        return latency_failure(workload, est.ttft_ms, est.tpot_ms, est.latency_ms,
                               est.batch_size)
    hours = est.time_to_complete_hours
    found = cost_limit_miss(c, cost.gpus, hours, cost.total_usd, cost.usd_per_hour)
    if found is None:
        return None
    missed, over = found
    if missed == 2:
        assert c.max_gpus is not None
        return Failure(
            2,
            "constraint",
            f"needs {cost.gpus} GPUs in total ({cost.replicas} replicas)",
            Fix("max_gpus", cost.gpus,
                f"over max_gpus {c.max_gpus} by {over:.0%}; raise max_gpus to {cost.gpus}",
                "constraints.max_gpus"),
            over,
        )
    if missed == 3:
        assert hours is not None and c.deadline_hours is not None
        return Failure(
            3,
            "deadline",
            f"needs {co.duration(hours)} at best",
            Fix("deadline", round_up(hours, _per_unit(hours)),
                f"over deadline {c.deadline_hours:g} h by {over:.0%}; allow more GPUs or "
                "more time", "constraints.deadline_hours"),
            over,
        )
    if missed == 4:
        assert cost.total_usd is not None and c.budget_usd is not None
        return Failure(
            4,
            "budget",
            f"costs ${cost.total_usd:,.0f} at best",
            Fix("budget", math.ceil(cost.total_usd),
                f"over budget by {over:.0%} (budget ${c.budget_usd:,.0f})",
                "constraints.budget_usd"),
            over,
        )
    usd_h = cost.usd_per_hour  # missed == 5, the last limit
    assert missed == 5 and usd_h is not None and c.max_usd_per_hour is not None
    return Failure(
        5,
        "budget",
        f"costs ${usd_h:,.2f}/h at best",
        Fix("max_usd_per_hour", round_up(usd_h, 100),
            f"over max_usd_per_hour by {over:.0%}", "constraints.max_usd_per_hour"),
        over,
    )


def cost_limit_miss(c: Constraints, gpus: int, hours: float | None, total_usd: float | None,
                    usd_per_hour: float | None) -> tuple[int, float] | None:
    """The first limit after memory and latency that an option of ``gpus`` GPUs in all,
    ``hours`` to finish, ``total_usd`` to finish and ``usd_per_hour`` misses, and by how much
    (a share above 1): the :attr:`Failure.stage` (2 max_gpus, 3 deadline, 4 budget,
    5 max_usd_per_hour) and :attr:`Failure.overage` :func:`limit_failure` reports and
    :func:`closest` compares; None where it misses none (an unknown figure misses nothing)."""
    for stage, value, limit in ((2, gpus, c.max_gpus), (3, hours, c.deadline_hours),
                                (4, total_usd, c.budget_usd),
                                (5, usd_per_hour, c.max_usd_per_hour)):
        if limit is not None and value is not None and value > limit:
            return stage, value / limit - 1
    return None


def _capped_fixes(est: Estimate, max_gpus: int | None) -> list[Fix]:
    """An estimate's memory fixes as a ranking offers them: a recommendation request has no
    gpu_count, so a count becomes max_gpus; a GPU with more memory is always a fix."""
    out = [f if f.kind != "gpu_count" or not isinstance(f.value, int)
           else _max_gpus_fix(f.value, max_gpus) for f in est.fixes]
    return out + _gpu_memory_fix(est)


def network_reason(offer: Offer, est: Estimate) -> str:
    """How the nodes of a multi-node option are joined, from the offer."""
    p = est.parallelism
    return (
        f"{p.nodes} nodes of {p.gpus_per_node} GPUs joined by the offer's "
        f"{offer.fabric} network, {offer.network_gbps or 0:g} Gb/s per instance "
        f"({p.link_bandwidth_gb_s or 0:g} GB/s per GPU on the slowest link; source: "
        f"{offer.network_source or 'quote'})"
    )


def replica_layout(workload: Workload, est: Estimate, copies: int) -> tuple[int, int]:
    """(model copies, GPUs per copy) of an answer running ``copies`` copies of ``est``'s
    group: inference, the group's replicas (TP x PP GPUs each) times the copies; training,
    the data-parallel replicas; compute jobs, one job over every GPU."""
    p = est.parallelism
    if workload.kind == "compute":
        return 1, est.gpu_count * copies
    group = p.tensor_parallel * p.pipeline_parallel
    if workload.kind == "inference":
        return (est.replicas or 1) * copies, group
    return p.data_parallel * copies, group


def stale_offer_message(offer: Offer) -> str:
    """Names the offer whose price is past the staleness limit, when it was observed and how
    many days ago, so the reader knows which price to re-check."""
    day = f"{offer.observed_at.isoformat()}, " if offer.observed_at else ""
    return (f"quote {offer.quote_id} is stale: the {offer.provider} {offer.instance_type} "
            f"({offer.region}, {offer.pricing}) price was observed {day}"
            f"{offer.age_days:.0f} days ago; check the current price")


def candidate(
    workload: Workload,
    rank: int,
    opt: Option,
    score: float,
    *,
    pareto: bool,
    extra_warnings: list[Notice],
    objective: Objective,
    mins: Minima,
    settings: CostSettings,
    constraints: Constraints,
    skypilot_names: Mapping[str, str] | None,
    node_labels: Mapping[str, str] | None,
    memo: Memo | None = None,
    explained: bool = True,
) -> Candidate:
    """The returned candidate for ``opt``: reasons, warnings and provisioning specs
    (``explained`` False: warnings only, for a ranked summary; see
    :attr:`Recommendation.explained`)."""
    gpu, est, offer = opt.gpu, opt.est, opt.offer
    reasons = [
        score_reason(objective, score, opt.money, opt.time, opt.energy, opt.proxy, mins, workload),
        *memory_reasons(workload, gpu, est, opt.first_fit, memo),
        bound_reason(workload, gpu, est),
        performance_reason(workload, est, opt.cost.replicas),
    ] if explained else []
    warnings = [Notice("estimate", w) for w in est.warnings] + extra_warnings
    if offer is not None:
        if explained:
            reasons.append(co.describe_offer(offer, opt.instances, settings))
        if explained and est.parallelism.nodes > 1:
            reasons.append(network_reason(offer, est))
        if offer.stale:
            warnings.append(Notice("stale_quote", stale_offer_message(offer)))
        if offer.pricing == "spot":
            warnings.append(Notice(
                "spot_capacity", "spot capacity can be reclaimed at any time; checkpoint often"))
    else:
        warnings.append(Notice("no_price", "no usable price quote; cost unknown"))
    warnings += guardrails.notices(workload, est, offer, constraints)
    if explained:
        reasons.append(co.describe_cost(workload, opt.cost, est))
    if explained and opt.cost.break_even_months is not None:
        reasons.append(
            f"buying breaks even with the cheapest rental after "
            f"{opt.cost.break_even_months:,.1f} months of 24/7 use"
        )
    replicas, per_replica = replica_layout(workload, est, opt.cost.replicas)
    return Candidate(
        rank=rank,
        gpu_slug=gpu.slug,
        gpu_name=gpu.name,
        gpu_count=opt.cost.gpus,
        replicas=replicas,
        gpus_per_replica=per_replica,
        offer=offer,
        estimate=est,
        cost=opt.cost,
        score=score,
        pareto_optimal=pareto,
        reasons=tuple(r for r in reasons if r),
        warnings=tuple(dict.fromkeys(warnings)),
        provision=provision(
            workload,
            gpu,
            est,
            offer,
            instances_per_replica=opt.instances,
            replicas=opt.cost.replicas,
            owned=co.owns(constraints),
            skypilot_names=skypilot_names,
            node_labels=node_labels,
            memo=memo,
        ) if explained else NOT_PROVISIONED,
    )
