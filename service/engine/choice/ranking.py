"""Recommend GPUs for a workload: constraints, count and offer choice, objective, Pareto front.

For every GPU type the constraints allow, GPU counts 1, 2, 4, 8, then whole nodes (up to
``max_gpus``, else :data:`CAP_TRAINING_GPUS` / :data:`CAP_INFERENCE_GPUS`) are tried from the
smallest count that fits memory; each count is rounded up to whole instances of the cheapest
usable offer (see :mod:`service.engine.choice.cost`) and estimated once. Options failing a limit
(latency, max_gpus, deadline, budget, max_usd_per_hour) are dropped; the best remaining option
per GPU becomes its candidate, else the GPU is rejected with the limit it came closest to.

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
* ``energy``: training/compute: ``energy_kwh`` to finish; inference: kWh per million output
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
Skipped GPUs are not listed in ``rejected`` (they might also have failed a limit); a warning
counts them. They cannot change ``pareto_optimal`` of a returned candidate either: a GPU that
dominated it would score no worse than it under every objective (balanced included), yet the
skipped GPU scores strictly worse than the ``limit``-th.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping

from service.engine.cache import EngineCache, Memo
from service.engine.choice import bounds as bd
from service.engine.choice import cost as co
from service.engine.choice import explain as ex
from service.engine.choice import search as se
from service.engine.choice.explain import Failure
from service.engine.choice.explain import Option as _Option
from service.engine.physics.estimate import estimate, gpu_count_candidates, min_gpus_to_fit
from service.engine.physics.memory_only import memory_estimate
from service.engine.physics.performance import peak_rate
from service.engine.recommend_types import (
    Constraints,
    CostBreakdown,
    CostSettings,
    Objective,
    Offer,
    Recommendation,
    Rejection,
)
from service.engine.types import Estimate, GpuSpec, Workload
from service.engine.validate import validate_workload

CAP_TRAINING_GPUS = 1024
"""Largest count searched for training/compute without max_gpus (128 nodes of 8)."""
CAP_INFERENCE_GPUS = 64
"""Largest GPU group per inference replica searched; more throughput comes from replicas."""
BALANCED_COST_WEIGHT = 0.5
"""Weight of normalized cost in the balanced score; time gets the rest."""
REL_TIE = 1e-9
"""Relative rounding of scores before tie-breaking, so float noise never reorders results."""
OBJECTIVES: tuple[Objective, ...] = ("cost", "time", "balanced", "energy")
PRUNED_OBJECTIVES: tuple[Objective, ...] = ("cost", "energy")
"""Objectives whose per-GPU best depends on that GPU's options alone (balanced needs every
option's cost and time for its minima; time has no cheap bound), so counts whose lower bound
(:func:`cost.unit_rate_lower_bound`) is already worse than the best option found can be skipped."""
PRUNE_MARGIN = bd.PRUNE_MARGIN
INF = math.inf


def _round_rel(x: float) -> float:
    if not math.isfinite(x) or x == 0:
        return x
    return round(x, -int(math.floor(math.log10(abs(x)))) + 9)


def _metrics(
    workload: Workload, est: Estimate, cost: CostBreakdown
) -> tuple[float | None, float, float, float]:
    """(money, time, energy, proxy) for an option, as the module docstring defines them."""
    if workload.kind != "inference":
        hours = est.time_to_complete_hours
        money = cost.total_usd if hours is not None else cost.usd_per_hour
        proxy = cost.gpus * (hours if hours is not None else 1.0)
        return money, INF if hours is None else hours, est.energy_kwh or INF, proxy
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


def _screen(
    workload: Workload,
    gpu: GpuSpec,
    index: co.OfferIndex,
    c: Constraints,
    settings: CostSettings,
    needs_price: bool,
    objective: Objective,
    memo: Memo,
) -> bd.Pending | Failure:
    """The cheap checks (no estimate unless memory rules the GPU out), then its bounds."""
    failure = ex.constraint_failure(gpu, c)
    if failure is not None:
        return failure
    if peak_rate(gpu, workload.precision) is None:
        return ex.precision_failure(workload.precision)
    usable = index.usable(gpu.slug, c)
    if not usable and needs_price:
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
    if rate is None and needs_price:
        return ex.no_quote_failure(first)
    floor = bd.floors(workload, gpu, first, cap, objective == "balanced", memo)
    lb_cost = bd.cost_floor(floor, rate)
    bound = {"cost": lb_cost, "time": floor.time, "energy": bd.energy_floor(floor, gpu)}
    tier = 1 if rate is None and objective in ("cost", "balanced") else 0
    if tier and objective == "balanced":
        lb_cost = 0.0  # unpriced GPUs are scored among themselves: never pruned within tier 1
    rent = (co.rental_usd_per_gpu_hour(index.groups.get(gpu.slug, ()), c) if co.owns(c)
            else None)
    return bd.Pending(gpu, usable, rent, first, fitting, cap, tier, lb_cost, floor.time,
                      bound.get(objective, 0.0), floor)


def _evaluate_gpu(
    workload: Workload,
    p: bd.Pending,
    c: Constraints,
    settings: CostSettings,
    objective: Objective,
    memo: Memo,
) -> tuple[list[_Option], Failure | None, str | None]:
    """Every feasible option for one GPU type, else the nearest failure; plus a warning."""
    gpu, offers, first = p.gpu, p.usable, p.first
    plan: dict[int, tuple[Offer | None, int]] = dict(
        co.cheapest_offers(gpu, offers, p.counts, p.cap)
    )
    warning = None
    if not plan:  # needs_price with no plan was rejected by _screen
        if offers:
            warning = f"no usable quote holds {first}+ GPUs in whole nodes; cost unknown"
        plan = dict.fromkeys(p.counts, (None, 1))
    options: list[_Option] = []
    failure: Failure | None = None
    spec = workload.inference
    latency_mode = objective == "time" and spec is not None and spec.batch_size is None
    best = INF
    for n in sorted(plan):
        offer, instances = plan[n]
        if options and best < INF:
            bound = co.unit_rate_lower_bound(workload, objective, gpu, n, offer, instances)
            if bound is not None and bound > best * (1.0 + PRUNE_MARGIN):
                continue
        args = (workload, gpu, n, offer, instances, c, settings, p.rent, first, memo)
        opt, miss = _option(*args, latency_mode)
        if latency_mode and miss is not None:
            # batch 1 needs replicas the limits (max_gpus, $/h) do not allow: fall back to
            # the throughput-optimal batch, the lowest latency those limits leave
            opt, miss = _option(*args, False)
        if miss is None:
            options.append(opt)
            if objective in PRUNED_OBJECTIVES:
                best = min(best, _value(opt, objective, {}))
        else:
            failure = ex.closest(failure, miss)
    return options, failure, warning


def _probe(
    workload: Workload,
    p: bd.Pending,
    c: Constraints,
    settings: CostSettings,
    c_min: float,
    t_min: float,
    memo: Memo,
) -> tuple[list[_Option], list[tuple[float, float]]]:
    """Balanced (see :func:`search._search_balanced`): the feasible priced options of the
    counts of ``p`` whose (cost, time) floors are below (``c_min``, ``t_min``), updated as
    options are found, and the floors of the other counts."""
    plan = co.cheapest_offers(p.gpu, p.usable, p.counts, p.cap)
    opts: list[_Option] = []
    rest: list[tuple[float, float]] = []
    for n in sorted(plan):
        offer, instances = plan[n]
        lbc, lbt = bd.count_floors(workload.kind, p, n, co.usd_per_gpu_hour(
            offer, p.gpu, settings) if offer is not None else None)
        if lbc >= c_min and lbt >= t_min:
            rest.append((lbc, lbt))
            continue
        opt, miss = _option(workload, p.gpu, n, offer, instances, c, settings, p.rent, p.first,
                            memo, False)
        if miss is None and opt.money is not None:
            opts.append(opt)
            c_min, t_min = min(c_min, opt.money), min(t_min, opt.time)
    return opts, rest


def _option(
    workload: Workload,
    gpu: GpuSpec,
    n: int,
    offer: Offer | None,
    instances: int,
    c: Constraints,
    settings: CostSettings,
    rent_rate: float | None,
    first: int,
    memo: Memo,
    latency_mode: bool,
) -> tuple[_Option, Failure | None]:
    """The option of ``n`` GPUs on ``instances`` of ``offer``, and the first limit it misses."""
    est = estimate(workload, gpu, n, latency_mode=latency_mode, memo=memo)
    cost = co.cost_breakdown(workload, est, offer, instances, settings, rent_rate)
    money, time, energy, proxy = _metrics(workload, est, cost)
    opt = _Option(gpu, est, offer, instances, cost, money, time, energy, proxy, first)
    return opt, ex.limit_failure(workload, est, cost, c)


def _value(opt: _Option, objective: Objective, mins: Mapping[str, float]) -> float:
    priced = opt.money is not None
    if objective == "time":
        return opt.time
    if objective == "energy":
        return opt.energy
    money = opt.money if opt.money is not None else opt.proxy
    if objective == "cost":
        return money
    key = "money" if priced else "proxy"
    time_key = "time" if priced else "time_unpriced"
    return BALANCED_COST_WEIGHT * _ratio(money, mins[key]) + (1 - BALANCED_COST_WEIGHT) * _ratio(
        opt.time, mins[time_key]
    )


def _ratio(x: float, lo: float) -> float:
    if not math.isfinite(x) or not math.isfinite(lo):
        return INF if not math.isfinite(x) else 1.0
    return x / lo if lo > 0 else 1.0


def _minima(options: Iterable[_Option]) -> dict[str, float]:
    opts = list(options)
    priced = [o for o in opts if o.money is not None]
    unpriced = [o for o in opts if o.money is None]
    return {
        "money": min((o.money for o in priced if o.money is not None), default=INF),
        "time": min((o.time for o in priced), default=INF),
        "proxy": min((o.proxy for o in unpriced), default=INF),
        "time_unpriced": min((o.time for o in unpriced), default=INF),
    }


def _key(opt: _Option, value: float, objective: Objective) -> tuple[object, ...]:
    tier = 1 if opt.money is None and objective in ("cost", "balanced") else 0
    return (
        tier,
        _round_rel(value),
        opt.cost.usd_per_hour if opt.cost.usd_per_hour is not None else INF,
        opt.est.gpu_count,
        opt.gpu.slug,
        opt.offer.quote_id if opt.offer is not None else -1,
    )


def _pareto(chosen: list[_Option], top: int) -> set[int]:
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


_Evaluated = tuple[GpuSpec, list[_Option], list[str]]


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
) -> Recommendation:
    """Rank GPU types (with count and offer) for ``workload``; see the module docstring.

    Deterministic: the input order of ``gpus`` and ``offers`` does not matter. Raises
    ValueError for an invalid workload or objective. ``exhaustive``: evaluate every GPU in
    full (no branch and bound; the same top ``limit``, and every limit failure in rejected).
    ``cache``: the caller's shared :class:`~service.engine.cache.EngineCache` (None: memo
    tables live for this call only).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; one of {', '.join(OBJECTIVES)}")
    errors = validate_workload(workload)
    if errors:
        raise ValueError("; ".join(f"{f}: {m}" for f, m in errors))
    c = constraints or Constraints()
    settings = settings or CostSettings()
    memo = Memo(cache)
    index = co.offer_index(offers, memo)
    needs_price = any(
        x is not None for x in (c.budget_usd, c.max_usd_per_hour, c.providers, c.regions)
    )
    rejected: dict[str, Rejection] = {}
    pending: list[bd.Pending] = []
    for gpu in co.by_slug(gpus).values():
        got = _screen(workload, gpu, index, c, settings, needs_price, objective, memo)
        if isinstance(got, Failure):
            rejected[gpu.slug] = Rejection(gpu.slug, gpu.name, got.reason, got.fix, got.code)
        else:
            pending.append(got)

    per_gpu: list[_Evaluated] = []

    def evaluate(p: bd.Pending) -> list[_Option] | None:
        options, failure, warning = _evaluate_gpu(workload, p, c, settings, objective, memo)
        if not options:
            assert failure is not None
            f, gpu = failure, p.gpu
            rejected[gpu.slug] = Rejection(gpu.slug, gpu.name, f.reason, f.fix, f.code)
            return None
        per_gpu.append((p.gpu, options, [warning] if warning else []))
        return options

    def value(o: _Option, mins: Mapping[str, float]) -> float:
        return _value(o, objective, mins)

    probed: list[_Option] = []  # priced options of probed GPUs: they count in the minima

    def probe(p: bd.Pending, c_min: float, t_min: float) -> tuple[
            list[_Option], list[tuple[float, float]]]:
        opts, rest = _probe(workload, p, c, settings, c_min, t_min, memo)
        probed.extend(opts)
        return opts, rest

    skipped = se.search(pending, objective, 0 if exhaustive else limit, evaluate, value, probe)
    mins = _minima([o for _, opts, _ in per_gpu for o in opts] + probed)
    chosen: list[tuple[_Option, float, list[str]]] = []
    for _, opts, warns in per_gpu:
        best = min(opts, key=lambda o: _key(o, _value(o, objective, mins), objective))
        chosen.append((best, _value(best, objective, mins), warns))
    chosen.sort(key=lambda t: _key(t[0], t[1], objective))
    front = _pareto([o for o, _, _ in chosen], limit)
    candidates = [
        ex.candidate(workload, rank, opt, score, rank - 1 in front, warns, objective, mins,
                     settings, skypilot_names, node_labels, memo)
        for rank, (opt, score, warns) in enumerate(chosen[:limit], start=1)
    ]
    warnings: list[str] = []
    if not candidates:
        warnings.append("no GPU meets the workload and constraints; see rejected for fixes")
    if skipped:
        warnings.append(
            f"{len(skipped)} GPU types not evaluated in full: their best case cannot reach the "
            f"top {limit} under {objective} (listed in rejected with code 'outranked')"
        )
    for s in skipped:
        rejected[s.gpu.slug] = se.outranked(s, limit, objective)
    rejections = tuple(rejected[slug] for slug in sorted(rejected))
    return Recommendation(objective, tuple(candidates), rejections, tuple(warnings))
