"""Options of compute and training jobs known by their ranked figures alone, without building
an estimate.

A ranking compares every usable count of every GPU type -- about 200 (GPU, count, offer)
options of a compute job on the seeded catalog, ~165 of a training job -- to list ten, and
building each option's :class:`~service.engine.types.Estimate` (layout, memory breakdown,
warnings, fixes, assumptions) and :class:`~service.engine.recommend_types.CostBreakdown` was
most of a compute job's time. The figures the ranking compares (USD to finish, hours, kWh,
GPU-hours, USD/h) are a few multiplications of the job's time on that count and the offer's
price: a compute job's one-GPU time and exchanges (:func:`scaling.scaled_time`), a training
job's fitted step (:func:`training.fitted_steps`: the compiled layout walk's data-parallel
degree and step time, the plan's own figures). :func:`figures` computes exactly those, through
the same functions the estimate and the costing call in the same order
(:func:`cost.hourly_usd`), so they are the same floats; :func:`figures_of` does it for all the
counts of a GPU type a ranking evaluates at once (the rate once per network, the steps planned
together). The ranking keeps such options as :class:`~service.engine.choice.explain.LightOption`
and builds the full option only for the ones it lists (tests/differential.py holds every answer
byte for byte). Serving options in throughput mode likewise (:func:`serving_figures`): their
figures come out of the serving searches (:func:`estimate.serving_point`, the split chosen
and its capacity and load timings, the estimate's own code) and the same costing, without the
estimate's layout, memory breakdown, warnings, fixes and assumptions; latency mode and the
serving models without a compiled split table (MoE, CNNs) are built in full.

An option that misses a limit (memory, idle replicas, max_gpus, deadline, budget, $/h), a
single-module device asked for several modules and a GPU without the job's rate get None: the
caller builds those in full, since their failure carries the reason and the fix. A count of a
job that runs and misses a cost limit (deadline, budget, $/h; max_gpus caps a job's counts),
and a serving count that misses a latency or cost limit, gets :class:`Missed` (that limit's
stage and overage, as :func:`explain.limit_failure` gives them, the same floats): where every
count of a GPU type misses, the ranking builds only the one whose failure it reports
(:func:`ranking._walk_counts`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from service.engine.cache import Memo
from service.engine.choice import cost as co
from service.engine.choice.explain import cost_limit_miss, latency_overage
from service.engine.physics import compiled_scaling
from service.engine.physics import parallelism as par
from service.engine.physics import training as tr
from service.engine.physics import training_splits as splits
from service.engine.physics.estimate import (
    copies_needed,
    more_replicas_than_needed,
    packed_compute_job,
    power_w,
    serving_point,
    sustained_samples_s,
    training_job_hours,
    workload_rate,
)
from service.engine.recommend_types import Constraints, CostSettings, Offer
from service.engine.types import GpuSpec, TransformerModel, Workload


@dataclass(frozen=True, slots=True)
class Figures:
    """What :func:`ranking._metrics` and the option's cost give the ranking."""

    gpu_count: int
    usd_per_hour: float | None
    money: float | None
    """USD to finish (USD/h for a training job of no stated length; None without an
    offer)."""
    time: float
    """Hours to finish (inf: no stated length)."""
    energy: float
    """kWh to finish (inf: no stated length)."""
    proxy: float
    """GPU-hours to finish (GPUs for a job of no stated length); serving: per unit of work."""
    idle_gpus: bool = False
    """Serving: some of the GPUs hold no replica (:func:`ranking.idle_gpus`)."""
    padded: bool = False
    """Serving: more replicas or pipeline stages than the load needs (:func:`ranking.padded`)."""


Count = tuple[int, Offer | None, int]
"""(GPU count, the offer it runs on or None, instances of it)."""


def figures(
    workload: Workload,
    gpu: GpuSpec,
    n: int,
    offer: Offer | None,
    instances: int,
    settings: CostSettings,
    constraints: Constraints,
    memo: Memo,
) -> Figures | None:
    """The ranked figures of ``n`` x ``gpu`` on ``instances`` of ``offer`` for the compute or
    training job ``workload``, as the full option would give them; None where the full option
    is needed (see the module docstring)."""
    fig = figures_of(workload, gpu, ((n, offer, instances),), settings, constraints, memo)[0]
    assert not isinstance(fig, Slower)  # no time_cut
    return fig if isinstance(fig, Figures) else None


LIGHT_KINDS = ("compute", "training")
"""Kinds whose counts :func:`figures_of` figures: a count of theirs gets None exactly when its
full option misses a limit (memory, idle replicas, a cost limit), so a ranking can skip its
estimate unless it needs the failure."""


class Missed(NamedTuple):
    """A count that runs and misses a limit: the :class:`Failure` stage and overage
    :func:`explain.limit_failure` gives its full option, from the same floats (a job's: 3
    deadline, 4 budget, 5 $/h, :func:`explain.cost_limit_miss`; a serving option's also 1
    latency and 2 max_gpus, :func:`serving_figures`)."""

    stage: int
    overage: float
    idle_gpus: bool = False
    """Serving: ``ranking.idle_gpus`` of the full option (the walk passes such a count over,
    its failure unreported)."""
    padded: bool = False
    """Serving: ``ranking.padded`` of the full option (passed over past the smallest count)."""
    latencies: tuple[float, float | None, float] | None = None
    """Serving, a latency limit missed (stage 1): the (TTFT, TPOT, latency) [ms] its full
    estimate has, from which :func:`explain.latency_failure` states its failure."""


class Slower(NamedTuple):
    """A count that runs and misses no limit, left unfigured: its hours are above
    ``time_cut`` times the fastest such count's (:func:`figures_of`). One object,
    :data:`SLOWER`: nothing reads such a count's figures, and most counts of a GPU type are
    slower (~15 of ~30 counts on the seeded catalog)."""


SLOWER = Slower()


def figures_of(
    workload: Workload,
    gpu: GpuSpec,
    counts: Sequence[Count],
    settings: CostSettings,
    constraints: Constraints,
    memo: Memo,
    time_cut: float | None = None,
    networks: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
) -> list[Figures | Slower | Missed | None]:
    """:func:`figures` of each of ``counts`` of one GPU type: the rate looked up once per
    network the counts run on, a training job's steps planned together
    (:func:`training.fitted_steps`), the same floats.

    ``time_cut`` (objective time: no option slower than that many times the fastest can be
    chosen): the counts are figured fastest first, and a count whose hours exceed
    ``time_cut`` x the hours of the fastest count that misses no limit is
    :class:`Slower` instead (the figures of a count do not depend on the others').
    ``networks``: :func:`cost.plan_networks` of ``counts`` where the caller keeps it (a
    compute job's; :meth:`cost.OfferIndex.plan_networks`)."""
    if workload.kind not in LIGHT_KINDS:
        return [None] * len(counts)
    hours: Sequence[float | None]
    if workload.kind == "compute":
        order, hours = _compute_order(workload, gpu, counts, memo, time_cut is not None,
                                      networks)
        gpus = [gpu] * len(counts)
    else:
        per_node = max(1, gpu.max_gpus_per_node)
        # the GPU as each count runs it: with its offer's network when it spans nodes
        # (co.network_gpu is the GPU itself within a node and without an offer: not asked)
        gpus = [gpu if n <= per_node or offer is None
                else co.network_gpu(gpu, offer, n, memo) for n, offer, _ in counts]
        got = _hours(workload, gpus, [n for n, _, _ in counts], par.single_module(gpu), memo)
        order = list(range(len(counts)))
        if time_cut is not None:
            keys = [_sort_hours(g) for g in got]
            order.sort(key=keys.__getitem__)
        order = [i for i in order if got[i] is not None]
        hours = [None if g is None else g[0] for g in got]
    out: list[Figures | Slower | Missed | None] = [None] * len(counts)
    cut = math.inf
    for i in order:
        h = hours[i]
        if h is not None and h > cut:
            out[i] = SLOWER
            continue
        n, offer, instances = counts[i]
        fig = out[i] = _figures(n, offer, instances, gpus[i], (h,), settings, constraints)
        if isinstance(fig, Figures) and time_cut is not None and cut == math.inf:
            cut = fig.time * time_cut
    return out


def _compute_order(workload: Workload, gpu: GpuSpec, counts: Sequence[Count], memo: Memo,
                   by_hours: bool,
                   networks: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
                   ) -> tuple[list[int], list[float]]:
    """A compute job's counts that run, in order (``by_hours``: fastest first, a stable sort
    as ``sorted`` of the hours; else as given), and every count's hours (NaN where it does
    not run): all of them in one compiled call, a count spanning nodes at its offer's network
    rate (:func:`cost.plan_networks`: the compiled hours take it per count, no GPU variant
    per rate, the same floats as :func:`cost.network_gpu` of it; ``networks`` where the
    caller has it)."""
    rate = workload_rate(workload, gpu)
    if rate is None:
        return [], []
    if networks is None:
        networks = co.plan_networks({n: (offer, k) for n, offer, k in counts},
                                    max(1, gpu.max_gpus_per_node))
    ns, nets = networks
    # one module only: a count above it does not run
    order, hours = compiled_scaling.hours_in_order(
        packed_compute_job(workload, gpu, rate, memo), ns, nets, par.single_module(gpu),
        by_hours)
    return order, hours


def _sort_hours(got: _Hours | None) -> float:
    """A count's hours to sort by (inf: it does not run, or the job states no length)."""
    if got is None or got[0] is None:
        return math.inf
    return got[0]


_Hours = tuple[float | None]
"""Hours to finish of a count that runs (None inside: the job states no length)."""


def _hours(workload: Workload, gpus: list[GpuSpec], counts: list[int], single_module: bool,
           memo: Memo) -> list[_Hours | None]:
    """A training job's hours to finish on each count's GPU (one GPU type on the networks its
    counts run on; ``single_module``: :func:`parallelism.single_module` of it), None where the
    count does not run (a single-module device asked for several modules, no rate, memory,
    idle replicas). Compute jobs: :func:`_compute_order`."""
    out: list[_Hours | None] = [None] * len(counts)
    by_gpu: dict[GpuSpec, list[int]] = {}
    for i, (gpu_n, n) in enumerate(zip(gpus, counts, strict=True)):
        if not (n > 1 and single_module):
            by_gpu.setdefault(gpu_n, []).append(i)
    for gpu_n, indices in by_gpu.items():
        rate = workload_rate(workload, gpu_n)
        if rate is None:
            continue
        fitted = tr.fitted_steps(workload, gpu_n, [counts[i] for i in indices], rate, memo)
        for i, step in zip(indices, fitted, strict=True):
            out[i] = _training_job_hours(workload, counts[i], step)
    return out


def _figures(n: int, offer: Offer | None, instances: int, gpu_n: GpuSpec, got: _Hours,
             settings: CostSettings, constraints: Constraints) -> Figures | Missed:
    """A running count's figures from its hours (:class:`Missed`: it misses a cost limit)."""
    hours = got[0]
    power = power_w(gpu_n, n)
    replicas = 1  # cost.replicas_needed: a compute or training job runs once
    gpus = n * replicas
    usd_h = total = None
    if offer is not None:
        usd_h = co.hourly_usd(offer, instances, replicas, power, settings)[0]
        total = usd_h * hours if hours is not None else None
    # explain.limit_failure's limits after memory (these jobs have no latency)
    missed = cost_limit_miss(constraints, gpus, hours, total, usd_h)
    if missed is not None:
        return Missed(*missed)
    energy = None if hours is None else power * hours / 1000.0  # the estimate's kWh
    return Figures(n, usd_h, *job_metrics(hours, usd_h, total, gpus, energy))


def serving_figures(workload: Workload, gpu_n: GpuSpec, n: int, offer: Offer | None,
                    instances: int, settings: CostSettings, constraints: Constraints,
                    memo: Memo, latency_mode: bool = False) -> Figures | Missed | None:
    """The ranked figures of a serving option of ``n`` x ``gpu_n`` (the GPU as the count runs
    it) on ``instances`` of ``offer``, as :func:`ranking._metrics` gives them from the full
    estimate and cost, in ``latency_mode`` or throughput mode (the same floats:
    :func:`estimate.serving_point`, :func:`cost.unit_rates_of`); None where the full option is
    needed (no serving point); :class:`Missed` where it misses a latency limit (stage 1: no
    batch meets it, or the batch at the load does not; the overage
    :func:`explain.latency_miss` gives) or a cost limit (stages 2-5,
    :func:`explain.cost_limit_miss`): its full estimate is needed only for the failure,
    which carries the reason and the fix."""
    point = serving_point(workload, gpu_n, n, memo, latency_mode)
    if point is None:
        return None
    spec = workload.inference
    assert spec is not None
    idle = n % (point.tp * point.pp) != 0
    padded = point.deeper or more_replicas_than_needed(spec.target_requests_per_s,
                                                       point.requests_s, point.replicas)
    if point.latency_ok is False:
        return Missed(1, latency_overage(spec, *point.latencies), idle, padded,
                      point.latencies)
    replicas = copies_needed(spec.target_requests_per_s, point.requests_s)  # cost's copies
    gpus = n * replicas
    usd_h = None
    if offer is not None:
        usd_h = co.hourly_usd(offer, instances, replicas, point.power_w, settings)[0]
    # explain.limit_failure's limits after memory and latency (no deadline or total here)
    missed = cost_limit_miss(constraints, gpus, None, None, usd_h)
    if missed is not None:
        return Missed(*missed, idle, padded)
    per_mtok, per_1k, energy = co.unit_rates_of(workload, point.power_w, point.requests_s,
                                                point.tokens_s, replicas, usd_h)
    g_mtok, g_1k, _ = co.unit_rates_of(workload, point.power_w, point.requests_s,
                                       point.tokens_s, replicas, float(gpus))
    unit_proxy = g_mtok if g_mtok is not None else g_1k
    unit_money = per_mtok if per_mtok is not None else per_1k
    return Figures(n, usd_h, unit_money if offer is not None else None, point.latencies[2],
                   energy if energy is not None else math.inf,
                   unit_proxy if unit_proxy is not None else math.inf, idle, padded)


def job_metrics(hours: float | None, usd_per_hour: float | None, total_usd: float | None,
                gpus: int, energy_kwh: float | None) -> tuple[float | None, float, float, float]:
    """(money, time, energy, proxy) a compute or training option is ranked on, from its hours
    to finish (None: the job states no length), its price (USD/h, USD to finish; None without
    an offer), its GPUs in all and its kWh to finish: USD to finish (USD/h for a job of no
    length), hours, kWh (inf where unknown; 0.0 kWh, a vanishing job's energy, is the best
    value, not an unknown one) and GPU-hours (GPUs for a job of no length)."""
    money = total_usd if hours is not None else usd_per_hour
    proxy = gpus * (hours if hours is not None else 1.0)
    kwh = math.inf if energy_kwh is None else energy_kwh
    return money, math.inf if hours is None else hours, kwh, proxy


def _training_job_hours(workload: Workload, n: int, fitted: tuple[int, float] | None
                        ) -> _Hours | None:
    """``estimate._estimate_training``'s hours to finish (None inside: the job states no
    length) from the count's fitted (data-parallel degree, step time); None when its plan
    does not fit or leaves a data-parallel replica without a sample."""
    spec, model = workload.training, workload.model
    assert spec is not None and model is not None
    if fitted is None or splits.idle_replicas(workload, fitted[0]):
        return None
    seq = (spec.seq_len or 1) if isinstance(model, TransformerModel) else 1
    samples_s = sustained_samples_s(workload, n, spec.batch_size / fitted[1], seq)
    return (training_job_hours(workload, n, samples_s, seq),)
