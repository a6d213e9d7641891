"""Recommend GPUs for a workload: constraints, count and offer choice, objective, Pareto front.

For every GPU type the constraints allow, GPU counts 1, 2, 4, 8, then whole nodes (up to
``max_gpus``, else :data:`CAP_TRAINING_GPUS` / :data:`CAP_INFERENCE_GPUS`) are tried from the
smallest count that fits memory; each count is rounded up to whole instances of the cheapest
usable offer (see :mod:`service.engine.choice.cost`) and estimated once (compute and training
jobs: ranked on their figures alone, :mod:`service.engine.choice.figures`, and estimated in
full only when listed or when they fail a limit). Options failing a limit
(latency, max_gpus, deadline, budget, max_usd_per_hour) are dropped; the best remaining option
per GPU becomes its candidate, else the GPU is rejected with the limit it came closest to.

Networks: a count that spans several instances (nodes) is only planned on an offer whose
quote says clusters of it are offered over a known fabric (:meth:`Offer.clusters`), and is
estimated at that offer's network rate (:func:`cost.network_gpu`); a GPU with no such offer
gets single-node plans only, and is rejected (code ``network``) when one node cannot hold it.
The search state of one call (its fixed inputs, the rejected GPUs, the evaluated options and
the balanced probes) is one :class:`Search` object.

Objectives and ``score`` (the value ranked on, lower is better):

* ``cost``: training/compute: ``total_usd`` to finish; inference: USD per million output
  tokens (LLMs) or per 1000 requests (others).
* ``time``: training/compute: ``time_to_complete_hours``; inference: end-to-end latency
  ``latency_ms`` at the latency-optimal operating point: without a user-fixed ``batch_size``
  each count is estimated at batch 1 on the model split with the lowest latency (latency grows
  with the batch, so batch 1 is optimal; replicas cover ``target_requests_per_s``), so GPUs
  rank by the latency a request really sees, not by the limit that the throughput-optimal
  batch of the other objectives runs up to. When those replicas break a limit (max_gpus,
  max_usd_per_hour) the count falls back to the throughput-optimal batch.
* ``energy``: training/compute: ``energy_kwh_total`` to finish; inference: kWh per million output
  tokens / per 1000 requests.
* ``balanced``: ``score = 0.5 x cost / min_cost + 0.5 x time / min_time``, the minima taken over
  every feasible priced option of every GPU (1.0 = best on both).

GPUs with no usable quote are estimated too (``cost.known`` False). Under cost and balanced
they rank after every priced GPU, ordered by GPU-hours (training/compute) or GPU-hours per unit
of work (inference) in place of money; under time and energy they rank among the others.
Under cost and energy, inference with a target skips a count whose lower bound (the unit rate
with a single replica, known from the offer price or the GPUs' power before estimating) is
already worse than the GPU's best option so far: the skipped option could not have won, so
results are the same as estimating every count (see :func:`cost.unit_rate_lower_bound`).
Ties: the score rounded to 1e-9 relative, then usd_per_hour, gpu_count, gpu_slug, quote_id.
``pareto_optimal``: no other evaluated priced candidate is at least as good on (cost, time,
energy) and better on one; unpriced candidates are never marked.

Branch and bound: cheap per-GPU checks (constraints, precision, memory: ``min_gpus_to_fit``
vs the count cap, a usable quote) reject GPUs first, exactly as a full evaluation would. Each
remaining GPU gets a lower bound on its best score (:mod:`service.engine.choice.bounds`); GPUs are
evaluated in full in ascending bound order (ties by slug) and the search stops once the next
bound is worse than the ``limit``-th best real score by more than :data:`PRUNE_MARGIN`
(balanced: see :func:`search.search`). The top ``limit`` are then exactly those of the
exhaustive search (``exhaustive=True``): a skipped GPU scores worse than every returned one.
Skipped GPUs are listed in ``rejected`` with code ``outranked`` and the bound that proves it
(they might also have failed a limit, which is not checked); a warning counts them. GPUs
evaluated in full whose best option ranks below the top ``limit`` are ``outranked`` too, with
their rank among those evaluated, count and score: every GPU type of the catalog is either
listed or rejected. They
cannot change ``pareto_optimal`` of a returned candidate either: a GPU that
dominated it would score no worse than it under every objective (balanced included), yet the
skipped GPU scores strictly worse than the ``limit``-th.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import get_args

import numpy as np
from numpy.typing import NDArray

from service.engine.cache import EngineCache, Memo
from service.engine.choice import bounds as bd
from service.engine.choice import cost as co
from service.engine.choice import explain as ex
from service.engine.choice import figures as fg
from service.engine.choice import load_floors
from service.engine.choice import screen as sc
from service.engine.choice import search as se
from service.engine.choice.explain import Failure, LightOption, Ranked
from service.engine.choice.explain import Option as _Option
from service.engine.physics.estimate import (
    estimate,
    gpu_count_candidates,
    known_padded_point,
    min_gpus_to_fit,
    more_replicas_than_needed,
    with_efficiency,
    workload_rate,
)
from service.engine.physics.memory_only import memory_estimate
from service.engine.physics.performance import peak_rate
from service.engine.recommend_types import (
    Constraints,
    CostBreakdown,
    CostSettings,
    Notice,
    Objective,
    Offer,
    Recommendation,
    Rejection,
)
from service.engine.types import Estimate, Fix, GpuSpec, Workload
from service.engine.validate import validate_workload

CAP_TRAINING_GPUS = 1024
"""Largest count searched for training/compute without max_gpus (128 nodes of 8)."""
CAP_INFERENCE_GPUS = 64
"""Largest GPU group per inference replica searched; more throughput comes from replicas."""
BALANCED_COST_WEIGHT = bd.BALANCED_WEIGHT
"""Weight of normalized cost in the balanced score; time gets the rest (one definition, in
:mod:`bounds`, so scores and their bounds agree)."""
OBJECTIVES: tuple[Objective, ...] = get_args(Objective)
PRUNED_OBJECTIVES: tuple[Objective, ...] = ("cost", "energy")
"""Objectives whose per-GPU best depends on that GPU's options alone (balanced needs every
option's cost and time for its minima; time has no cheap bound), so counts whose lower bound
(:func:`cost.unit_rate_lower_bound`) is already worse than the best option found can be skipped."""
PRUNE_MARGIN = bd.PRUNE_MARGIN
TIME_TOLERANCE = 0.05
"""Objective ``time``: answers within 5% of the fastest are as fast as it, and the cheapest of
them wins (the request's ``constraints.time_tolerance``; this is its default). The engine's
own median error on published measurements is ~18% and its LLM-serving error ~6%
(``make validate``, tests/validation/): a gap under 5% is inside what it can tell apart, so
paying more for it buys nothing known."""
COST_TIE = 0.005
"""Objective ``cost``: answers within 0.5% of the cheapest cost the same (less than the
rounding of a provider's price list), and the fastest of them wins."""
COST_GUARD_RATIO = 10.0
COST_GUARD_TIME = 0.10
"""Objective ``time``: no answer spends :data:`COST_GUARD_RATIO` times more than another for
under :data:`COST_GUARD_TIME` less time: after the tolerance pick, an answer
within 10% of its time at a tenth of its cost or less replaces it."""
INF = math.inf
_Evaluated = tuple[GpuSpec, list[Ranked], list[Notice]]


def _round_rel(x: float) -> float:
    """``x`` rounded to 1e-9 relative before tie-breaking, so float noise never reorders
    results."""
    if not math.isfinite(x) or x == 0:
        return x
    return round(x, -int(math.floor(math.log10(abs(x)))) + 9)


Rounder = Callable[[float], float]


def rounder() -> Rounder:
    """:func:`_round_rel` with a memo of one call's values: a ranking by cost or time picks
    from what is left again and again (:func:`order`), rounding the same options' figures
    each time."""
    seen: dict[float, float] = {}

    def rounded(x: float) -> float:
        got = seen.get(x)
        if got is None:
            got = seen[x] = _round_rel(x)
        return got

    return rounded


def _metrics(
    workload: Workload, est: Estimate, cost: CostBreakdown
) -> tuple[float | None, float, float, float]:
    """(money, time, energy, proxy) for an option, as the module docstring defines them."""
    if workload.kind != "inference":
        return fg.job_metrics(est.time_to_complete_hours, cost.usd_per_hour, cost.total_usd,
                              cost.gpus, est.energy_kwh_total)
    per_mtok, per_1k, energy = co.unit_rates(workload, est, cost.replicas, cost.usd_per_hour)
    # the same rate with "GPUs" in place of USD/h: GPU-hours per unit of work
    g_mtok, g_1k, _ = co.unit_rates(workload, est, cost.replicas, float(cost.gpus))
    unit_proxy = g_mtok if g_mtok is not None else g_1k
    unit_money = per_mtok if per_mtok is not None else per_1k
    return (
        unit_money if cost.known else None,
        est.latency_ms if est.latency_ms is not None else INF,
        energy if energy is not None else INF,
        unit_proxy if unit_proxy is not None else INF,
    )


@dataclass(frozen=True)
class Request:
    """The fixed inputs of one :func:`recommend` call."""

    workload: Workload
    constraints: Constraints
    settings: CostSettings
    objective: Objective
    memo: Memo
    needs_price: bool
    """A money limit or a place filter was given: a GPU without a usable quote is rejected."""
    offers: co.OfferIndex
    """The offers, indexed (:func:`cost.offer_index`)."""


def _screen(req: Request, gpu: GpuSpec, index: co.OfferIndex) -> bd.Pending | Failure:
    """The cheap checks (no estimate unless memory rules the GPU out), then its bounds."""
    workload, c, settings, memo = req.workload, req.constraints, req.settings, req.memo
    failure = ex.constraint_failure(gpu, c)
    if failure is not None:
        return failure
    if peak_rate(gpu, workload.precision) is None:
        return ex.precision_failure(workload.precision)
    usable = index.usable(gpu.slug, c)
    if not usable and req.needs_price:
        return ex.no_quote_failure()
    default_cap = CAP_INFERENCE_GPUS if workload.kind == "inference" else CAP_TRAINING_GPUS
    cap = c.max_gpus or default_cap
    counts = gpu_count_candidates(gpu, cap, memo) or (1,)
    first = min_gpus_to_fit(workload, gpu, memo)
    if first is None or first > counts[-1]:
        # the rejection reads only the memory figures: no layout/speed search
        est = memory_estimate(workload, gpu, counts[-1], memo)
        return ex.memory_failure(gpu, est, first, cap)
    fitting = counts[bisect.bisect_left(counts, first):]
    rate = index.cheapest_gpu_hour(gpu, c, fitting[0], cap, settings)
    if rate is None and req.needs_price:
        return ex.no_quote_failure(first)
    if rate is None and first > max(1, gpu.max_gpus_per_node):
        return _network_failure(gpu, first)
    # bounds hold for every offer: at the fastest network any of them has; a job's time
    # floor at the most GPUs its offers can hold (a replica's count cap for serving)
    reach = cap if workload.kind == "inference" else co.count_reach(gpu, usable, cap)
    floor = bd.floors(workload, index.fastest_network_gpu(gpu, c), first, reach,
                      req.objective == "balanced", memo)
    lb_cost = bd.cost_floor(floor, rate)
    # the time objective's unit: latency [ms] for inference, hours to finish otherwise
    lb_time = floor.latency_ms if workload.kind == "inference" else floor.time_hours
    bound = {"cost": lb_cost, "time": lb_time, "energy": bd.energy_floor(floor, gpu)}
    tier = 1 if rate is None and req.objective in ("cost", "balanced") else 0
    if tier and req.objective == "balanced":
        lb_cost = 0.0  # unpriced GPUs are scored among themselves: never pruned within tier 1
    rent = (co.rental_usd_per_gpu_hour(index.groups.get(gpu.slug, ()), c) if co.owns(c)
            else None)
    return bd.Pending(gpu, usable, rent, first, fitting, cap, tier, lb_cost, lb_time,
                      bound.get(req.objective, 0.0), floor, rate)


_network_failure = sc.network_failure


def _plan(req: Request, p: bd.Pending
          ) -> tuple[Mapping[int, tuple[Offer | None, int]], str | None, bool]:
    """Counts to estimate (ascending), each with its offer and instances; a warning when the
    offers cover none; whether the plan is the offers' (:meth:`cost.OfferIndex.cheapest_offers`,
    read only). Without an offer only single-node counts are planned (no network known)."""
    plan: Mapping[int, tuple[Offer | None, int]] = req.offers.cheapest_offers(
        p.gpu, req.constraints, p.counts, p.cap)
    if plan:
        return plan, None, True
    per_node = max(1, p.gpu.max_gpus_per_node)
    single = [n for n in p.counts if n <= per_node]
    warning = None
    if p.usable:
        warning = f"no usable quote holds {p.first}+ GPUs in whole nodes; cost unknown"
    return dict.fromkeys(single, (None, 1)), warning, False


def _walk_counts(
    req: Request, p: bd.Pending, plan: Mapping[int, tuple[Offer | None, int]],
    counts: list[int], light: list[fg.Figures | fg.Slower | fg.Missed | None],
    latency_mode: bool, defer: bool,
) -> tuple[list[Ranked], Failure | None, bool, bool]:
    """:func:`_evaluate_gpu`'s walk over ``counts``: (feasible options, the nearest failure,
    whether a count was skipped for idle GPUs, whether a count was deferred: known to miss a
    limit, or past the smallest and known padded). ``defer``: defer such counts (a missing
    one's full estimate serves only the failure; a padded one is passed over)."""
    workload, objective = req.workload, req.objective
    job = workload.kind in fg.LIGHT_KINDS
    serving = workload.inference is not None
    if not defer and serving and not latency_mode:
        # a serving count's light figures (memoized): a Missed one's failure is known
        light = [_serving_figures(req, p, n, *plan[n]) for n in counts]
    if not defer and (job or (serving and not latency_mode)):
        nearest = _nearest_missed(counts, light)
        if nearest is not None:
            # every count misses a limit: only the one whose failure is reported is
            # built (the nearest, as ex.closest picks it over all of them); a serving
            # count's latency miss is stated from its light figures (the estimate's floats,
            # timed at the request's fixed batch where it sets one)
            missed = light[counts.index(nearest)]
            if isinstance(missed, fg.Missed) and missed.latencies is not None:
                spec = workload.inference
                assert spec is not None
                return [], ex.latency_failure(workload, *missed.latencies,
                                              spec.batch_size), False, False
            offer, instances = plan[nearest]
            _, miss = _full_option(req, p, nearest, offer, instances, latency_mode)
            if miss is not None:
                return [], miss, False, False
            # a feasible option there would mean the light figures were wrong (tests hold
            # them to the full option's): the walk below then decides, as without this
    options: list[Ranked] = []
    failure: Failure | None = None
    best = INF
    smallest = min(plan)
    skipped_idle = deferred = False
    for n, fig in zip(counts, light, strict=True):
        if isinstance(fig, fg.Slower):
            continue  # runs, but too slow to be chosen (figures_of's time_cut)
        offer, instances = plan[n]
        if options and best < INF:
            bound = co.unit_rate_lower_bound(workload, objective, p.gpu, n, offer, instances,
                                             p.floor.replicas_at(n))
            slack = 1.0 + COST_TIE if objective == "cost" else 1.0  # see choose()
            if bound is not None and bound > best * slack * (1.0 + PRUNE_MARGIN):
                continue
        if defer and serving and not latency_mode and n > smallest and _known_padded(
                req, p, n, offer):
            # padded past the smallest count: passed over below whatever its figures (or
            # deferred, missing a limit); its idle GPUs would only matter, as a deferred
            # count does, where no count is feasible: so it counts as deferred, and a GPU
            # left with no feasible count is walked again with every count estimated
            deferred = True
            continue
        known = fig if isinstance(fig, fg.Figures) else None
        if defer and ((job and known is None) or (serving and _misses(req, p, n, offer,
                                                                      instances, latency_mode))):
            deferred = True
            continue
        opt, miss = _option(req, p, n, offer, instances, latency_mode=latency_mode, fig=known)
        if latency_mode and miss is not None:
            # the latency-optimal split needs replicas the limits (max_gpus, $/h) do not
            # allow: fall back to the throughput-optimal one, the lowest latency they leave
            opt, miss = _option(req, p, n, offer, instances, latency_mode=False)
        if serving and _idle(workload, opt):
            skipped_idle = True
            continue
        if serving and n > smallest and _padded(workload, opt):
            continue
        if miss is None:
            options.append(opt)
            if objective in PRUNED_OBJECTIVES:
                best = min(best, _value(opt, objective, bd.NO_MINIMA))
        else:
            failure = ex.closest(failure, miss)
    return options, failure, skipped_idle, deferred


def _nearest_missed(counts: list[int],
                    light: list[fg.Figures | fg.Slower | fg.Missed | None]) -> int | None:
    """The count whose failure :func:`explain.closest` keeps when every count of a GPU type
    misses a limit (:class:`figures.Missed`: its stage and overage, the full option's floats:
    a job's cost limits, a serving option's latency and cost limits); None when some count
    does not (it is feasible, too slow to be chosen, or its failure is not known without
    building it: memory, idle replicas, no rate), or where the walk would pass a count over
    without its failure (a serving count with idle GPUs, or padded past the smallest count:
    ``counts`` in order, the first the smallest)."""
    nearest: tuple[int, float] | None = None
    pick = None
    for n, fig in zip(counts, light, strict=True):
        if not isinstance(fig, fg.Missed) or fig.idle_gpus or (fig.padded and n > counts[0]):
            return None
        if nearest is None or (fig.stage, -fig.overage) > (nearest[0], -nearest[1]):
            nearest, pick = (fig.stage, fig.overage), n
    return pick


def _misses(req: Request, p: bd.Pending, n: int, offer: Offer | None, instances: int,
            latency_mode: bool) -> bool:
    """Whether a serving count is known to miss a limit (:class:`figures.Missed`), in
    ``latency_mode`` and in the throughput mode the walk falls back to: its full option then
    serves only its failure."""
    if not isinstance(_serving_figures(req, p, n, offer, instances, latency_mode), fg.Missed):
        return False
    return not latency_mode or isinstance(
        _serving_figures(req, p, n, offer, instances), fg.Missed)


def _time_cut(constraints: Constraints) -> float:
    """Objective ``time``: how many times the fastest option's time an option of the same GPU
    type may take and still be chosen (:func:`choose`: within the tolerance of the fastest,
    then under :data:`COST_GUARD_TIME` slower than that pick), above the float margin."""
    return (1.0 + constraints.time_tolerance) * (1.0 + COST_GUARD_TIME) * (1.0 + PRUNE_MARGIN)


def _evaluate_gpu(
    req: Request, p: bd.Pending
) -> tuple[list[Ranked], Failure | None, Notice | None]:
    """Every feasible option for one GPU type, else the nearest failure; plus a warning."""
    workload, objective = req.workload, req.objective
    plan, warning, offered = _plan(req, p)
    if not plan:
        return [], _network_failure(p.gpu, p.first), None
    spec = workload.inference
    latency_mode = objective == "time" and spec is not None and spec.batch_size is None
    counts = sorted(plan)
    # a compute job's counts and their networks as arrays, kept with the offers' plan
    networks = (req.offers.plan_networks(p.gpu, req.constraints, p.counts, p.cap)
                if workload.kind == "compute" and offered else None)
    # compute and training jobs: every count's ranked figures at once (None for inference)
    light = fg.figures_of(workload, p.gpu, [(n, *plan[n]) for n in counts], req.settings,
                          req.constraints, req.memo,
                          time_cut=_time_cut(req.constraints) if objective == "time" else None,
                          networks=networks)
    if objective == "time" and workload.kind in fg.LIGHT_KINDS:
        # counts too slow to be chosen are not walked (a GPU type with one has a count with
        # figures, so the walk's every-count-misses shortcut does not apply either)
        walked = [k for k, fig in enumerate(light) if fig is not fg.SLOWER]
        if len(walked) < len(counts):
            counts, light = [counts[k] for k in walked], [light[k] for k in walked]
    # a count known to miss a limit (a job's without light figures, figures_of's contract;
    # a serving count's fg.Missed) needs its full estimate only for its failure: skipped
    # unless no count is feasible, and then every count is walked again in order (the
    # failure kept on a tie is the first)
    options, failure, skipped_idle, deferred = _walk_counts(req, p, plan, counts, light,
                                                            latency_mode, defer=True)
    if deferred and not options:
        options, failure, skipped_idle, _ = _walk_counts(req, p, plan, counts, light,
                                                         latency_mode, defer=False)
    if not options and failure is None and skipped_idle:
        failure = Failure(
            0, "constraint",
            f"every count the offers allow leaves {p.gpu.name} GPUs that no model replica "
            "uses (the count is not a multiple of the replica's TP x PP)",
            Fix("constraint", None, "add a quote for an instance whose GPUs divide into "
                "whole replicas, or allow more GPUs (max_gpus)", "quotes"))
    notice = Notice("partial_quote_coverage", warning) if warning else None
    return options, failure, notice


def idle_gpus(workload: Workload, est: Estimate) -> bool:
    """A serving option whose GPU count is not a whole number of replicas (24 GPUs of TP8 x
    PP2 replicas): some GPUs would hold no replica, and the answer's total could not be
    ``replicas x gpus_per_replica``."""
    group = est.parallelism.tensor_parallel * est.parallelism.pipeline_parallel
    return workload.inference is not None and est.gpu_count % group != 0


def padded(workload: Workload, est: Estimate) -> bool:
    """Whether a serving option holds more model replicas than its target load needs, or more
    pipeline stages than the model and the load need: the extras would idle or only shave the
    batch (a few percent of latency on a memory-bound decode), so the same GPU type at a
    smaller count serves the load for less. Such counts are not offered (23 replicas of TP8 at
    batch 1 would serve 40 requests/s a few percent faster than one), except at the smallest
    count the offers allow (a whole instance is paid for anyway). GPUs that no replica uses
    are :func:`idle_gpus`, never offered."""
    spec = workload.inference
    if est.pipeline_deeper_than_needed:
        return True  # 64 H100s in 8 stages where 2 stages carry the load
    if spec is None:
        return False
    return more_replicas_than_needed(spec.target_requests_per_s, est.requests_per_s or 0.0,
                                     est.replicas or 0)


def _idle(workload: Workload, opt: Ranked) -> bool:
    """:func:`idle_gpus` of an option, read off its light figures when it has no estimate."""
    return opt.idle_gpus if isinstance(opt, LightOption) else idle_gpus(workload, opt.est)


def _padded(workload: Workload, opt: Ranked) -> bool:
    """:func:`padded` of an option, read off its light figures when it has no estimate."""
    return opt.padded if isinstance(opt, LightOption) else padded(workload, opt.est)


def _probe(
    req: Request, p: bd.Pending, c_min: float, t_min: float, cut: float = INF
) -> tuple[list[Ranked], list[tuple[float, float]]]:
    """Balanced (see :class:`search.BalancedSearch`): the feasible priced options of the
    counts of ``p`` whose (cost, time) floors are below (``c_min``, ``t_min``), updated as
    options are found, or whose balanced floor at them is at most ``cut``, and the floors of
    the other counts."""
    plan, floors = _planned_floors(req, p)
    opts: list[Ranked] = []
    rest: list[tuple[float, float]] = []
    counts = sorted(plan)
    reach = [_reaches(pairs, c_min, t_min, cut) for pairs in floors]
    # the figures of every count below the minima as given, at once (the minima only fall
    # below, so the counts the loop estimates are among them)
    asked = [n for n, pairs, r in zip(counts, floors, reach, strict=True)
             if r or not _above(pairs, c_min, t_min)]
    light = dict(zip(asked, fg.figures_of(req.workload, p.gpu, [(n, *plan[n]) for n in asked],
                                          req.settings, req.constraints, req.memo),
                     strict=True))
    serving = req.workload.inference is not None
    smallest = counts[0] if counts else 0
    for n, pairs, r in zip(counts, floors, reach, strict=True):
        offer, instances = plan[n]
        if not r and _above(pairs, c_min, t_min):
            rest.extend(pairs)
            continue
        if serving and n > smallest and _known_padded(req, p, n, offer):
            # padded past the smallest count: dropped below whatever its figures, so not
            # estimated (its figures and failure, if asked later, are the same)
            continue
        fig = light[n]
        assert not isinstance(fig, fg.Slower)  # no time_cut asked
        opt, miss = _option(req, p, n, offer, instances, latency_mode=False,
                            fig=fig if isinstance(fig, fg.Figures) else None)
        if miss is None and opt.money is not None and not (serving and (
                _idle(req.workload, opt) or (n > smallest and _padded(req.workload, opt)))):
            opts.append(opt)
            c_min, t_min = min(c_min, opt.money), min(t_min, opt.time)
    return opts, rest


def _reaches(pairs: list[tuple[float, float]], c_min: float, t_min: float, cut: float) -> bool:
    """Whether an option a count's floor ``pairs`` bound might score at most ``cut`` at the
    minima (``search.BalancedSearch``'s bound of one count)."""
    if cut == INF or not (c_min > 0 and t_min > 0):
        return False
    return any(bd.balanced_floor(lbc, lbt, c_min, t_min) <= cut for lbc, lbt in pairs)


def _above(pairs: list[tuple[float, float]], c_min: float, t_min: float) -> bool:
    """Whether no option a count's floor ``pairs`` bound can lower the cost or time minimum."""
    return all(lbc >= c_min and lbt >= t_min for lbc, lbt in pairs)


def _count_floors(req: Request, p: bd.Pending, plan: Mapping[int, tuple[Offer | None, int]],
                  counts: list[int]) -> list[list[tuple[float, float]]]:
    """The (cost, time) floors of each of ``counts`` at its offer in ``plan``: one pair,
    :func:`bounds.count_floors` (serving: with the count's own latency floor, at the fastest
    network any offer has, as the GPU's floors are taken), or for serving with a target a few
    pairs (:func:`bounds.count_pairs`: the latency at the load each number of copies leaves a
    replica) of which every option of the count is at or above one."""
    workload = req.workload
    kind = workload.kind
    fast = (req.offers.fastest_network_gpu(p.gpu, req.constraints)
            if kind in ("inference", "compute") else None)
    job = (bd.compute_count_hours(workload, fast, counts, req.memo)
           if kind == "compute" and fast is not None else [0.0] * len(counts))
    table = (load_floors.load_table(workload, fast, bd.floor_table(workload, req.memo, p.cap),
                                    req.memo)
             if kind == "inference" and fast is not None else None)
    latencies = (bd.count_latency_floors(workload, fast, counts, req.memo)
                 if kind == "inference" and fast is not None else None)
    ranges = (table.ranges_of(counts, [p.floor.replicas_at(n) for n in counts])
              if table is not None else None)
    out = []
    for k, (n, hours) in enumerate(zip(counts, job, strict=True)):
        offer = plan[n][0]
        usd = co.usd_per_gpu_hour(offer, p.gpu, req.settings) if offer is not None else None
        if latencies is None:
            out.append([bd.count_floors(kind, p, n, usd, 0.0, hours)])
            continue
        out.append(bd.count_pairs(p, n, usd, latencies[k],
                                  ranges[k] if ranges is not None else None))
    return out


def _planned_floors(req: Request, p: bd.Pending) -> tuple[
        Mapping[int, tuple[Offer | None, int]], list[list[tuple[float, float]]]]:
    """The counts of ``p`` the offers plan (each count's cheapest offer) and their
    :func:`_count_floors` in count order, once per request (the balanced search's bound of
    a GPU and its probe both ask)."""
    def build() -> tuple[Mapping[int, tuple[Offer | None, int]],
                         list[list[tuple[float, float]]]]:
        plan = req.offers.cheapest_offers(p.gpu, req.constraints, p.counts, p.cap)
        return plan, _count_floors(req, p, plan, sorted(plan))

    return req.memo.scratch("planned_count_floors", _planned_key(req, p), build)


def _planned_key(req: Request, p: bd.Pending) -> Hashable:
    """The memo key :func:`_planned_floors` keeps a GPU's plan and floors under (and
    :func:`planned_floors_many` puts them under)."""
    return (req.workload, p.gpu, req.constraints, p.counts, p.cap)


def planned_floors_many(req: Request, pending: list[bd.Pending]) -> None:
    """:func:`_planned_floors` of each of ``pending`` not taken yet, kept where it reads them,
    taken together where they come from an :class:`load_floors.AllTables` (serving with a
    target, no pinned split: :func:`load_floors.count_pairs_many`, one compiled call for
    every count of every GPU here, the same floats as :func:`_count_floors`); a GPU that
    needs another table, or has no rate, is left to :func:`_planned_floors` alone."""
    workload, memo, offers = req.workload, req.memo, req.offers
    spec = workload.inference
    if spec is None or spec.tensor_parallel or spec.pipeline_parallel \
            or not load_floors.supported(workload):
        return
    batches: dict[tuple[int, int], _CountBatch] = {}
    for p in pending:
        key = _planned_key(req, p)
        if memo.peek("planned_count_floors", key) is not None:
            continue
        plan = offers.cheapest_offers(p.gpu, req.constraints, p.counts, p.cap)
        counts = sorted(plan)
        fast = offers.fastest_network_gpu(p.gpu, req.constraints)
        table = bd.floor_table(workload, memo, p.cap)
        tables = load_floors.all_tables(workload, table, memo) if table is not None else None
        lat_table = bd.floor_table(workload, memo, counts[-1]) if counts else None
        if tables is None or lat_table is None or workload_rate(workload, fast) is None:
            continue
        g, col = tables.index.get(fast.slug), lat_table.index.get(fast.slug)
        if g is None or col is None:
            continue
        usd = [co.usd_per_gpu_hour(plan[n][0], p.gpu, req.settings) for n in counts]
        if any(math.isnan(u) for u in usd):
            continue  # a price that is NaN itself (NaN is the kernel's none): one at a time
        batch = batches.get((id(tables), id(lat_table)))
        if batch is None:
            batch = batches[id(tables), id(lat_table)] = _CountBatch(
                tables, lat_table.running_least_ms, np.array(lat_table.tps, np.int64))
        f = p.floor
        batch.gpus.append((key, plan))
        batch.figures.append((g, col, f.gpu_hours, f.paid_per_gpu, f.gpus_needed, p.lb_time))
        batch.counts.extend(counts)
        batch.usd.extend(usd)
    for batch in batches.values():
        pairs = iter(batch.pairs())
        for kept, planned in batch.gpus:
            memo.put("planned_count_floors", kept,
                     (planned, [next(pairs) for _ in range(len(planned))]))


@dataclass
class _CountBatch:
    """The GPUs of a :func:`planned_floors_many` call that read the same load floors
    (``tables``) and batch-1 latency floors (``least``,
    :attr:`inference_floors.Table.running_least_ms` of the table of degrees ``tps``), their
    counts and the counts' prices laid end to end."""

    tables: load_floors.AllTables
    least: NDArray[np.float64]
    tps: NDArray[np.int64]
    gpus: list[tuple[Hashable, Mapping[int, tuple[Offer, int]]]] = field(default_factory=list)
    """Each GPU's memo key and plan (its counts: the plan's, ascending)."""
    figures: list[tuple[int, int, float, float, float, float]] = field(default_factory=list)
    """Each GPU's row of ``tables`` and column of ``least``, then its floors' GPU-hours, paid
    GPU-hours per GPU, GPUs needed and time floor."""
    counts: list[int] = field(default_factory=list)
    usd: list[float] = field(default_factory=list)
    """Each count's USD per GPU-hour at its offer."""

    def pairs(self) -> list[list[tuple[float, float]]]:
        """Each count's :func:`bounds.count_pairs`, in order: their latency floors
        (:func:`bounds.count_latency_floors`) and least copies (:meth:`bounds.Floors.replicas_at`)
        as arrays, the pairs in one compiled call."""
        per_gpu = np.array(self.figures)
        at = np.repeat(np.arange(len(self.gpus)), [len(plan) for _, plan in self.gpus])
        rows = per_gpu[at]
        n = np.array(self.counts, np.int64)
        needed = rows[:, 4]
        k0 = np.where(needed > 0, np.maximum(1.0, np.ceil(needed / n)), 1.0).astype(np.int64)
        held = np.searchsorted(self.tps, n, side="right")
        low = 1 - bd.BOUND_SLACK
        latency = np.where(held > 0, self.least[np.maximum(held - 1, 0),
                                                rows[:, 1].astype(np.intp)] * low, math.inf)
        items = np.stack((rows[:, 0].astype(np.int64), n, k0), axis=1)
        figures = np.stack((np.array(self.usd), rows[:, 2], rows[:, 3], latency, rows[:, 5]),
                           axis=1)
        return load_floors.count_pairs_many(self.tables, items, figures, low)


def type_floor_arrays(req: Request, pending: list[bd.Pending], cap: int | None = None
                      ) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
    """:func:`bounds.type_pairs` of the GPUs of ``pending`` from their load floors
    (:func:`load_floors.all_tables`, at the fastest network any offer has, as its count
    floors take them; the GPUs asked tabulated together): whether each GPU has them (none
    where they do not apply), and the costs and times [GPU that has them, pair]. ``cap``: the
    floor table's (default: the largest of ``pending``'s; a search asking for its GPUs a few
    at a time gives every GPU's largest, so all read one table)."""
    workload = req.workload
    none = (np.zeros(len(pending), dtype=np.bool_), np.empty((0, 0)), np.empty((0, 0)))
    if not load_floors.supported(workload) or not pending:
        return none
    table = bd.floor_table(workload, req.memo, max(p.cap for p in pending) if cap is None
                           else cap)
    tables = load_floors.all_tables(workload, table, req.memo) if table is not None else None
    if tables is None:
        return none
    rows = [tables.index.get(req.offers.fastest_network_gpu(p.gpu, req.constraints).slug)
            for p in pending]
    found = np.array([r is not None for r in rows], dtype=np.bool_)
    have = [p for p, r in zip(pending, rows, strict=True) if r is not None]
    at = np.array([r for r in rows if r is not None], dtype=np.intp)
    if not have:
        return none
    tables.ensure(at)
    costs, times, valid = bd.type_pairs(have, tables.tps, tables.per_node[at],
                                        tables.latency_ms[at])
    found[found] = valid
    return found, costs[valid], times[valid]


def balanced_floors(req: Request, p: bd.Pending) -> list[tuple[float, float]]:
    """The (cost, time) floors of every count of ``p`` the offers plan (the balanced
    search's bound of a GPU not yet evaluated: :class:`search.BalancedSearch`)."""
    return [pair for pairs in _planned_floors(req, p)[1] for pair in pairs]


def _option(
    req: Request,
    p: bd.Pending,
    n: int,
    offer: Offer | None,
    instances: int,
    *,
    latency_mode: bool,
    fig: fg.Figures | None = None,
) -> tuple[Ranked, Failure | None]:
    """The option of ``n`` GPUs of ``p.gpu`` on ``instances`` of ``offer`` (estimated at the
    offer's network when they span nodes), and the first limit it misses. An option that
    misses no limit is a :class:`LightOption` where its figures are known without the
    estimate (compute and training jobs: ``fig``, :func:`figures.figures_of`; None: it needs
    building; serving: :func:`figures.serving_figures`, in either mode); the estimate and
    cost are built if it is listed."""
    if req.workload.kind == "inference":
        got = _serving_figures(req, p, n, offer, instances, latency_mode)
        fig = None if isinstance(got, fg.Missed) else got
    if fig is not None:
        return LightOption(
            p.gpu, offer, instances, fig.gpu_count, fig.usd_per_hour, fig.money, fig.time,
            fig.energy, fig.proxy, p.first,
            lambda: _full_option(req, p, n, offer, instances, latency_mode)[0],
            fig.idle_gpus, fig.padded), None
    return _full_option(req, p, n, offer, instances, latency_mode)


def _serving_figures(req: Request, p: bd.Pending, n: int, offer: Offer | None, instances: int,
                     latency_mode: bool = False) -> fg.Figures | fg.Missed | None:
    """:func:`figures.serving_figures` of a count, memoized (a GPU probed and then evaluated
    in full asks twice, a count walked again asks again)."""
    key = (req.workload, p.gpu, n, offer, instances, req.settings, req.constraints,
           latency_mode)
    return req.memo.get("serving_figures", key, lambda: fg.serving_figures(
        req.workload, co.network_gpu(p.gpu, offer, n, req.memo), n, offer, instances,
        req.settings, req.constraints, req.memo, latency_mode))


def _known_padded(req: Request, p: bd.Pending, n: int, offer: Offer | None) -> bool:
    """Whether a serving count's throughput-mode figures (:func:`_serving_figures`, on the GPU
    as the count runs it) are known padded before they are taken
    (:func:`estimate.known_padded_point`)."""
    return known_padded_point(req.workload, co.network_gpu(p.gpu, offer, n, req.memo), n,
                              req.memo)


def _full_option(req: Request, p: bd.Pending, n: int, offer: Offer | None, instances: int,
                 latency_mode: bool) -> tuple[_Option, Failure | None]:
    """:func:`_option` built in full: estimate and cost. Both are immutable and depend on
    nothing else, so they are memoized for the call."""
    key = (req.workload, p.gpu, n, offer, instances, latency_mode, req.settings, p.rent,
           p.first, req.constraints)
    return req.memo.get("option", key,
                        lambda: _new_option(req, p, n, offer, instances, latency_mode))


def _new_option(req: Request, p: bd.Pending, n: int, offer: Offer | None, instances: int,
                latency_mode: bool) -> tuple[_Option, Failure | None]:
    workload = req.workload
    est = estimate(workload, co.network_gpu(p.gpu, offer, n, req.memo), n,
                   latency_mode=latency_mode, memo=req.memo, efficiency=False)
    cost = co.cost_breakdown(workload, est, offer, instances, req.settings, p.rent)
    money, time, energy, proxy = _metrics(workload, est, cost)
    opt = _Option(p.gpu, est, offer, instances, cost, money, time, energy, proxy, p.first)
    return opt, ex.limit_failure(workload, p.gpu, est, cost, req.constraints)


MAX_GPUS_RECHECKS = 4
"""Re-evaluations of a GPU rejected for max_gpus before its fix is given up as unverified."""


def _checked_max_gpus(req: Request, p: bd.Pending, failure: Failure) -> Failure:
    """A max_gpus failure's fix, re-checked: the GPU is evaluated again with max_gpus raised
    to the fix's value (a larger cap brings larger counts and instances, which can need more
    GPUs in total), raising it again while that still fails on max_gpus. The value offered is
    one at which the GPU passes max_gpus (it may then fail a later check); None if not found."""
    fix = failure.fix
    if failure.code != "constraint" or fix.kind != "max_gpus" or not isinstance(fix.value, int):
        return failure
    value = fix.value
    for _ in range(MAX_GPUS_RECHECKS):
        c = replace(req.constraints, max_gpus=value)
        counts = gpu_count_candidates(p.gpu, value, req.memo)
        raised = replace(p, counts=counts[bisect.bisect_left(counts, p.first):], cap=value)
        options, again, _ = _evaluate_gpu(replace(req, constraints=c), raised)
        if options or again is None or again.code != "constraint" or \
                again.fix.kind != "max_gpus" or not isinstance(again.fix.value, int) or \
                again.fix.value <= value:
            break
        value = again.fix.value
    else:
        return replace(failure, fix=Fix("max_gpus", None, f"{fix.detail}; no max_gpus found "
                                        "that holds it (more GPUs bring more replicas)",
                                        fix.field))
    if value == fix.value:
        return failure
    return replace(failure, fix=Fix("max_gpus", value, f"over max_gpus "
                                    f"{req.constraints.max_gpus} at every count; raise max_gpus "
                                    f"to {value} (re-checked: larger counts need more)",
                                    fix.field))


@dataclass
class Search:
    """What one :func:`recommend` call has found so far; its methods are the callbacks the
    branch and bound (:func:`search.search`) drives."""

    req: Request
    rejected: dict[str, Rejection] = field(default_factory=dict)
    """GPU slug -> why it is not a candidate."""
    evaluated: list[_Evaluated] = field(default_factory=list)
    """GPUs evaluated in full: their feasible options and warnings."""
    probed: list[Ranked] = field(default_factory=list)
    """Balanced: priced options of probed GPUs (they count in the minima)."""

    def reject(self, gpu: GpuSpec, failure: Failure) -> None:
        self.rejected[gpu.slug] = failure.rejection(gpu)

    def evaluate(self, p: bd.Pending) -> list[Ranked] | None:
        options, failure, warning = _evaluate_gpu(self.req, p)
        if not options:
            assert failure is not None
            self.reject(p.gpu, _checked_max_gpus(self.req, p, failure))
            return None
        self.evaluated.append((p.gpu, options, [warning] if warning else []))
        return options

    def value(self, o: Ranked, mins: bd.Minima) -> float:
        return _value(o, self.req.objective, mins)

    def probe(self, p: bd.Pending, c_min: float, t_min: float, cut: float) -> tuple[
            list[Ranked], list[tuple[float, float]]]:
        opts, rest = _probe(self.req, p, c_min, t_min, cut)
        self.probed.extend(opts)
        return opts, rest

    def floors(self, p: bd.Pending) -> list[tuple[float, float]]:
        return balanced_floors(self.req, p)

    def type_floors(self, pending: list[bd.Pending], cap: int) -> tuple[
            NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
        return type_floor_arrays(self.req, pending, cap)

    def floors_many(self, pending: list[bd.Pending]) -> None:
        planned_floors_many(self.req, pending)

    def minima(self) -> bd.Minima:
        return _minima([o for _, opts, _ in self.evaluated for o in opts] + self.probed)


def _past_deadline(state: Search, pending: list[bd.Pending], skipped: list[se.Skipped]
                   ) -> list[se.Skipped]:
    """The GPUs of ``skipped`` left as skipped: a job's GPU whose time floor is already past
    the deadline is evaluated instead (no option of it can meet the deadline, so it is rejected
    with the time it needs at best and the deadline that would hold it, as the exhaustive
    search says; "ask for more results" would not help it)."""
    deadline = state.req.constraints.deadline_hours
    if not skipped or deadline is None or state.req.workload.kind == "inference":
        return skipped
    by_slug = {p.gpu.slug: p for p in pending}
    kept = []
    for s in skipped:
        p = by_slug[s.gpu.slug]
        if p.lb_time > deadline:
            # rejected: the floor bounds every option's time (were a floor ever above a real
            # option, that option would join the ranking here, as the exhaustive search has it)
            state.evaluate(p)
        else:
            kept.append(s)
    return kept


def _value(opt: Ranked, objective: Objective, mins: bd.Minima) -> float:
    priced = opt.money is not None
    if objective == "time":
        return opt.time
    if objective == "energy":
        return opt.energy
    money = opt.money if opt.money is not None else opt.proxy
    if objective == "cost":
        return money
    least_money, least_time = (mins.money, mins.time) if priced else (
        mins.proxy, mins.time_unpriced)
    return BALANCED_COST_WEIGHT * bd.ratio_to_min(money, least_money) + (
        1 - BALANCED_COST_WEIGHT) * bd.ratio_to_min(opt.time, least_time)


def _minima(options: Iterable[Ranked]) -> bd.Minima:
    opts = list(options)
    priced = [o for o in opts if o.money is not None]
    unpriced = [o for o in opts if o.money is None]
    return bd.Minima(
        money=min((o.money for o in priced if o.money is not None), default=INF),
        time=min((o.time for o in priced), default=INF),
        proxy=min((o.proxy for o in unpriced), default=INF),
        time_unpriced=min((o.time for o in unpriced), default=INF),
    )


def _key(opt: Ranked, value: float, objective: Objective,
         rnd: Rounder = _round_rel) -> tuple[object, ...]:
    tier = 1 if opt.money is None and objective in ("cost", "balanced") else 0
    return (
        tier,
        rnd(value),
        opt.usd_per_hour if opt.usd_per_hour is not None else INF,
        opt.gpu_count,
        opt.gpu.slug,
        opt.offer.quote_id if opt.offer is not None else -1,
    )


def _cheapness(opt: Ranked) -> tuple[int, float]:
    """Priced before unpriced, then money (GPU-hours per unit of work without a price)."""
    return (0, opt.money) if opt.money is not None else (1, opt.proxy)


def ranking_slack(objective: Objective, constraints: Constraints) -> float:
    """How far above the ``limit``-th best value (time or cost) a GPU's bound must be before
    the search may skip it: :func:`choose` may pick an option up to one tolerance (and, for
    time, the cost guard's 10%) above the best, and the order does it once more per rank."""
    if objective == "time":
        return ((1 + constraints.time_tolerance) * (1 + COST_GUARD_TIME)) ** 2
    if objective == "cost":
        return (1 + COST_TIE) ** 2
    return 1.0


def choose(opts: list[Ranked], objective: Objective, mins: bd.Minima,
           constraints: Constraints, rnd: Rounder = _round_rel) -> Ranked:
    """The option an expert takes from ``opts`` under ``objective``.

    * ``time``: the fastest; among the options within ``time_tolerance`` of it, the cheapest
      (priced first), then the fastest; then the cost guard: if another option is under
      :data:`COST_GUARD_TIME` slower at a :data:`COST_GUARD_RATIO`-th of that cost or less,
      the cheapest such option.
    * ``cost``: the cheapest (priced first); among options within :data:`COST_TIE` of it, the
      fastest.
    * ``balanced``, ``energy``: the least score.
    Ties end on the same key as the order (:func:`_key`): deterministic. ``rnd``:
    :func:`_round_rel`, or a :func:`rounder` shared by one call's choices."""
    def key(o: Ranked) -> tuple[object, ...]:
        return _key(o, _value(o, objective, mins), objective, rnd)

    if objective == "time":
        fastest = min(o.time for o in opts)
        edge = rnd(fastest * (1 + constraints.time_tolerance))
        window = [o for o in opts if rnd(o.time) <= edge]
        pick = _least_then_key(window, _cheap_fast, key)
        if pick.money is not None:
            cheaper = [o for o in opts if o.money is not None
                       and o.time < pick.time * (1 + COST_GUARD_TIME)
                       and o.money * COST_GUARD_RATIO <= pick.money]
            if cheaper:
                pick = _least_then_key(cheaper, _cheap_fast, key)
        return pick
    if objective == "cost":
        tier, least = min(_cheapness(o) for o in opts)
        edge = rnd(least * (1 + COST_TIE))
        window = [o for o in opts if _cheapness(o)[0] == tier
                  and rnd(_cheapness(o)[1]) <= edge]
        return _least_then_key(window, lambda o: (o.time,), key)
    unpriced_tier = 1 if objective == "balanced" else 0
    # the key's own head: the tier and the rounded score (the whole key repeats them)
    return _least_then_key(opts, lambda o: (unpriced_tier if o.money is None else 0,
                                            rnd(_value(o, objective, mins))), key)


def _cheap_fast(o: Ranked) -> tuple[float, ...]:
    """Objective time's order within its window: :func:`_cheapness`, then the time."""
    tier, money = _cheapness(o)
    return tier, money, o.time


def _least_then_key(opts: list[Ranked], head: Callable[[Ranked], tuple[float, ...]],
                    key: Callable[[Ranked], tuple[object, ...]]) -> Ranked:
    """``min(opts, key=lambda o: (*head(o), *key(o)))``, taking the whole key (:func:`_key`,
    a score and a rounding each) only of the options tied on the least head: the same option
    (``min`` compares heads first and keeps the first of equal keys, in ``opts``' order, as
    this does). Where a head holds a NaN, ``min`` itself (its comparisons are not an order)."""
    if len(opts) == 1:
        return opts[0]
    heads = [head(o) for o in opts]
    if any(v != v for h in heads for v in h):
        return min(opts, key=lambda o: (head(o), key(o)))
    least = min(heads)
    tied = [o for o, h in zip(opts, heads, strict=True) if h == least]
    if len(tied) == 1:
        return tied[0]
    return min(tied, key=key)


def order(chosen: list[tuple[Ranked, float, list[Notice]]], objective: Objective,
          mins: bd.Minima, constraints: Constraints, rnd: Rounder = _round_rel
          ) -> list[tuple[Ranked, float, list[Notice]]]:
    """Rank the GPUs' chosen options: balanced and energy by score; cost and time by
    :func:`choose` applied again and again to what is left (rank 1 is the option an expert
    takes from all of them, rank 2 from the rest, ...)."""
    if objective not in ("cost", "time"):
        return sorted(chosen, key=lambda t: _key(t[0], t[1], objective, rnd))
    rest = sorted(chosen, key=lambda t: _key(t[0], t[1], objective, rnd))
    out = []
    while rest:
        pick = choose([t[0] for t in rest], objective, mins, constraints, rnd)
        i = next(i for i, t in enumerate(rest) if t[0] is pick)
        out.append(rest.pop(i))
    return out


def _pareto(chosen: list[Ranked], top: int) -> set[int]:
    """Indices, among the first ``top``, of priced options not dominated on (money, time,
    energy) by any priced option of ``chosen`` (O(top x len(chosen)), not quadratic)."""
    pts = [
        (i, (_round_rel(o.money), _round_rel(o.time), _round_rel(o.energy)))
        for i, o in enumerate(chosen)
        if o.money is not None
    ]
    front: set[int] = set()
    for i, p in pts:
        if i >= top:
            break
        p0, p1, p2 = p
        dominated = any(
            q[0] <= p0 and q[1] <= p1 and q[2] <= p2 and q != p for _, q in pts
        )
        if not dominated:
            front.add(i)
    return front




def _listed(req: Request, o: _Option) -> _Option:
    """A listed option with its ``parallel_efficiency`` (:func:`with_efficiency`)."""
    gpu = co.network_gpu(o.gpu, o.offer, o.est.gpu_count, req.memo)
    return replace(o, est=with_efficiency(req.workload, gpu, o.est, req.memo))


def recommend(
    workload: Workload,
    gpus: Iterable[GpuSpec],
    offers: Iterable[Offer],
    *,
    objective: Objective = "balanced",
    constraints: Constraints | None = None,
    settings: CostSettings | None = None,
    limit: int = 10,
    skypilot_names: Mapping[str, str] | None = None,
    node_labels: Mapping[str, str] | None = None,
    exhaustive: bool = False,
    cache: EngineCache | None = None,
    validated: bool = False,
    explained: bool = True,
) -> Recommendation:
    """Rank GPU types (with count and offer) for ``workload``; see the module docstring.

    Deterministic: the input order of ``gpus`` and ``offers`` does not matter. Raises
    ValueError for an invalid workload or objective. ``exhaustive``: evaluate every GPU in
    full (no branch and bound; the same top ``limit``, and every limit failure in rejected).
    ``cache``: the caller's shared :class:`~service.engine.cache.EngineCache` (None: memo
    tables live for this call only). ``validated``: the caller has just checked ``workload``
    with :func:`validate_workload` (amounts required) and got no errors, so it is not checked
    again (the service converts and checks each request's workload once, to name the bad
    fields in its 422). ``explained`` False: for a ranked summary, the listed candidates
    without what it does not show (reasons, provisioning specs, a training estimate's
    parallel efficiency, an outranked GPU's reason, a memory failure's reason and fixes;
    :attr:`Recommendation.explained`): the same ranking and figures.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; one of {', '.join(OBJECTIVES)}")
    errors = [] if validated else validate_workload(workload)
    if errors:
        raise ValueError("; ".join(f"{f}: {m}" for f, m in errors))
    memo = Memo(cache)
    # One object per distinct workload, constraints and settings across requests: every memo
    # key holds them, and a key equal to a stored one but not the same object is compared
    # field by field (nested dataclasses) on each of the thousands of lookups of a request.
    workload = memo.get("intern", workload, lambda: workload)
    given = constraints or Constraints()
    c = memo.get("intern", given, lambda: given)
    cost_settings = settings or CostSettings()
    cost_settings = memo.get("intern", cost_settings, lambda: cost_settings)
    needs_price = any(
        x is not None for x in (c.budget_usd, c.max_usd_per_hour, c.providers, c.regions)
    )
    index = co.offer_index(offers, memo)
    req = Request(workload, c, cost_settings, objective, memo, needs_price, index)
    state = Search(req)
    # every GPU type's _screen at once, over the catalog's columns (screen.py)
    default_cap = CAP_INFERENCE_GPUS if workload.kind == "inference" else CAP_TRAINING_GPUS
    pending, failed = sc.screen(workload, gpus if isinstance(gpus, tuple) else list(gpus),
                                index, c, cost_settings, objective, needs_price,
                                c.max_gpus or default_cap, memo, explained)
    for gpu, failure in failed:
        state.reject(gpu, failure)

    skipped = se.search(pending, objective, 0 if exhaustive else limit, state.evaluate,
                        state.value, state.probe, slack=ranking_slack(objective, c),
                        # serving's counts differ in GPUs paid and latency, a compute job's
                        # in their time with exchanges; a training job's only in the time
                        # floor H / n, which pruned nothing more (5,000 types)
                        floors=state.floors if workload.kind != "training" else None,
                        type_floors=state.type_floors if workload.kind == "inference" else None,
                        floors_many=state.floors_many if workload.kind == "inference" else None)
    skipped = _past_deadline(state, pending, skipped)
    mins = state.minima()
    rnd = rounder()
    chosen: list[tuple[Ranked, float, list[Notice]]] = []
    for _, opts, warns in state.evaluated:
        best = choose(opts, objective, mins, c, rnd)
        chosen.append((best, _value(best, objective, mins), warns))
    chosen = order(chosen, objective, mins, c, rnd)

    front = _pareto([o for o, _, _ in chosen], limit)
    # the listed options are built in full (a LightOption's estimate and cost), with the
    # figure the search never reads (estimate(efficiency=False))
    listed = [(_listed(req, o.full()) if explained else o.full(), score, warns)
              for o, score, warns in chosen[:limit]]
    candidates = [
        ex.candidate(workload, rank, opt, score, pareto=rank - 1 in front, extra_warnings=warns,
                     objective=objective, mins=mins, settings=req.settings, constraints=c,
                     skypilot_names=skypilot_names, node_labels=node_labels, memo=req.memo,
                     explained=explained)
        for rank, (opt, score, warns) in enumerate(listed, start=1)
    ]
    warnings: list[str] = []
    if not candidates:
        warnings.append("no GPU meets the workload and constraints; see rejected for fixes")
    if skipped:
        warnings.append(
            f"{len(skipped)} GPU types not evaluated in full: their best case cannot reach the "
            f"top {limit} under {objective} (listed in rejected with code 'outranked')"
        )
    rejected = state.rejected
    fix = se.outranked_fix(limit)
    for s in skipped:
        rejected[s.gpu.slug] = (se.outranked(s, limit, objective, fix) if explained
                                else se.outranked_unexplained(s.gpu, fix))
    if limit >= 1 and len(chosen) > limit:
        # evaluated in full, ranked below the listed ones: said so with their figures, so a
        # client asking "why not X?" finds every GPU type of the catalog in one list or the other
        for rank, (o, score, _) in enumerate(chosen[limit:], start=limit + 1):
            rejected[o.gpu.slug] = (
                se.ranked_below(o.gpu, rank, o.gpu_count, score, limit, objective, fix)
                if explained else se.outranked_unexplained(o.gpu, fix))
    rejections = tuple(rejected[slug] for slug in sorted(rejected))
    return Recommendation(objective, tuple(candidates), rejections, tuple(warnings),
                          explained)
