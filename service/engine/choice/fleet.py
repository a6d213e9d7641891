"""Mixed GPU fleets for a traffic histogram: the cheapest set of pools (GPU type, offer,
layout, copies) that serves every request-size bucket within the SLOs.

1. Pool options (:func:`pool_options`): for every GPU type the constraints allow and that has
   a usable price, the GPU counts from the least that holds the smallest bucket up to a node
   (or the least that holds the largest bucket, when more than a node), each on its cheapest
   usable offer (:func:`cost.cheapest_offers`, whole instances), each with every model split
   (TP x PP) the engine picks for some bucket at that count. A copy of an option is that group
   of GPUs; its capacity for bucket b is what the engine's serving model gives for a
   workload of that bucket's single size under the SLOs, with the split pinned
   (:func:`estimate`, ``requests_per_s`` at the capacity batch; 0 when it misses an SLO or
   does not fit). Counts past a node are whole-node copies of an in-node split, which two
   smaller copies match, so they are not offered unless the model needs more than a node.
   An option whose copies are matched by k copies of another option of the same type (k x
   the GPUs, at most k x the capacity of every bucket, at least k x the price) is dropped:
   replacing it never costs more, so the optimum is unchanged.
2. The integer program (:mod:`service.engine.choice.fleet_milp`): copies per option and the
   share of each bucket each option serves, least USD per hour; at most ``max_gpu_types``
   types. The best single type is the same program with one type.
3. The answer (:class:`Fleet`): the pools, which buckets each serves, cost per hour and per
   million output tokens, the best single type beside it and the saving, the optimality gap,
   provisioning per pool (one SkyServe service / Kubernetes Deployment each,
   :func:`provision.provision`) and how to route requests by prompt length.

Percentile SLOs (``inference.slo_percentile`` p < 100): each option also gets a capacity per
bucket with the latency limits removed (the engine's throughput-best batch that fits, the
same split pinned), and the program may serve up to (100 - p)% of all requests (weighted by
bucket share) at that capacity (:mod:`fleet_milp`); the pools report which buckets they serve
outside the limits and the fleet the share of requests within them.

Capacity sharing is linear: a copy serving several buckets is within capacity when their
fractions of its per-bucket capacities sum to at most 1 (each bucket is judged at its own
size; a mixed batch's latency between those of its sizes is not modelled).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from service.engine.cache import EngineCache, Memo
from service.engine.choice import cost as co
from service.engine.choice import explain as ex
from service.engine.choice import fleet_milp as fm
from service.engine.choice.provision import provision
from service.engine.choice.ranking import CAP_INFERENCE_GPUS
from service.engine.physics.estimate import estimate, gpu_count_candidates, min_gpus_to_fit
from service.engine.physics.performance import peak_rate
from service.engine.recommend_types import Constraints, CostSettings, Offer, Provision
from service.engine.types import Estimate, GpuSpec, TrafficBucket, TransformerModel, Workload

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6
MIN_SHARE = 1e-9
"""A bucket share below this on an option is solver noise, not an assignment."""
K8S_NAME_MAX = 52
"""Pool names carry into Kubernetes names (see :data:`provision.K8S_NAME_MAX`)."""


@dataclass(frozen=True)
class PoolOption:
    """One column of the program: a group of GPUs of one type on one offer, one layout."""

    gpu: GpuSpec
    offer: Offer
    instances: int
    """Instances of the offer one copy rents."""
    gpu_count: int
    """GPUs one copy rents."""
    tensor_parallel: int
    pipeline_parallel: int
    usd_per_hour: float
    """One copy [USD/h]."""
    capacity: tuple[float, ...]
    """Per bucket: requests/s one copy serves at that bucket's size within the SLOs (0 =
    cannot)."""
    estimates: tuple[Estimate | None, ...]
    """Per bucket: the estimate behind the capacity (None where it cannot serve)."""
    capacity_any: tuple[float, ...] | None = None
    """Per bucket: requests/s one copy serves with the latency limits removed (percentile
    SLOs); None = not computed (every request within the limits)."""


@dataclass(frozen=True)
class BucketLoad:
    bucket: int
    """Index into the traffic histogram."""
    prompt_tokens: int
    output_tokens: int
    fraction: float
    """Fraction of this bucket's requests the pool serves."""
    requests_per_s: float
    outside_fraction: float = 0.0
    """Part of ``fraction`` served outside the latency limits (percentile SLOs)."""


@dataclass(frozen=True)
class FleetPool:
    name: str
    gpu_slug: str
    gpu_name: str
    gpu_count: int
    """GPUs of the pool in total (copies x GPUs per copy)."""
    copies: int
    """Copies of the rented group (each ``gpu_count / copies`` GPUs on ``instances /
    copies`` instances)."""
    replicas: int
    """Model replicas in the pool."""
    tensor_parallel: int
    pipeline_parallel: int
    offer: Offer
    instances: int
    usd_per_hour: float
    utilization: float
    """Share of the pool's capacity its load takes [fraction]."""
    buckets: tuple[BucketLoad, ...]
    provision: Provision


@dataclass(frozen=True)
class Fleet:
    status: str
    """``optimal``; ``time_limit`` (the best found within the time limit, ``mip_gap`` says how
    far from proven); ``fallback_single_type`` (the mixed program found nothing in time: the
    best single type); ``infeasible`` (no fleet serves every bucket: see ``warnings``)."""
    pools: tuple[FleetPool, ...]
    usd_per_hour: float | None
    usd_per_million_tokens: float | None
    mip_gap: float | None
    max_gpu_types: int | None
    best_single_type: tuple[FleetPool, ...]
    single_usd_per_hour: float | None
    saving_usd_per_hour: float | None
    saving_fraction: float | None
    routing: tuple[str, ...]
    warnings: tuple[str, ...]
    options: int
    """Pool options the program chose among."""
    slo_percentile: float = 100.0
    """The share of requests that must meet the latency limits [percent]."""
    within_slo_fraction: float | None = None
    """Share of all requests the fleet serves within the latency limits [fraction]."""
    single_within_slo_fraction: float | None = None
    """The same for the best single type."""
    objective: str = "cost"
    """``cost`` (least USD/h within the SLOs) or ``time`` (least mean latency within the
    SLOs under ``constraints.max_usd_per_hour``)."""
    mean_latency_ms: float | None = None
    """Time objective: the fleet's request-weighted mean end-to-end latency [ms]."""
    single_mean_latency_ms: float | None = None
    """Time objective: the same for the best single type under the budget [ms]."""


def bucket_workload(workload: Workload, bucket: TrafficBucket) -> Workload:
    """``workload`` serving only ``bucket``'s size, with no target (capacities are per copy)."""
    spec = workload.inference
    assert spec is not None
    return replace(workload, inference=replace(
        spec, prompt_tokens=bucket.prompt_tokens, output_tokens=bucket.output_tokens,
        traffic=None, target_requests_per_s=None))


def unlimited(w: Workload) -> Workload:
    """``w`` with the latency limits removed: served at the throughput-best batch that fits."""
    spec = w.inference
    assert spec is not None
    return replace(w, inference=replace(spec, max_ttft_ms=None, max_tpot_ms=None,
                                        max_latency_ms=None))


def _serves(est: Estimate) -> bool:
    group = est.parallelism.tensor_parallel * est.parallelism.pipeline_parallel
    return (est.fits and est.latency_ok is not False and (est.requests_per_s or 0.0) > 0
            and est.gpu_count % group == 0)


def _split(est: Estimate) -> tuple[int, int]:
    return est.parallelism.tensor_parallel, est.parallelism.pipeline_parallel


def _pinned(w: Workload, split: tuple[int, int]) -> Workload:
    spec = w.inference
    assert spec is not None
    return replace(w, inference=replace(spec, tensor_parallel=split[0],
                                        pipeline_parallel=split[1]))


def _gpu_options(gpu: GpuSpec, usable: tuple[Offer, ...], loads: list[Workload],
                 c: Constraints, settings: CostSettings, memo: Memo,
                 free: list[Workload] | None = None, prune: bool = True) -> list[PoolOption]:
    """``free``: the loads without latency limits (percentile SLOs), else None. ``prune``:
    drop options that copies of another match for cost (not for latency: a TP-2 replica is
    faster than two TP-1 ones)."""
    firsts = [min_gpus_to_fit(w, gpu, memo) for w in loads]
    fit = [f for f in firsts if f is not None]
    if not fit:
        return []
    cap = c.max_gpus or CAP_INFERENCE_GPUS
    per_node = max(1, gpu.max_gpus_per_node)
    top = max(per_node, max(fit))
    counts = [n for n in gpu_count_candidates(gpu, cap, memo) if min(fit) <= n <= top]
    plan = co.cheapest_offers(gpu, usable, counts, cap)
    out: list[PoolOption] = []
    in_node = [n for n in plan if n <= per_node]
    replica_caps = _replica_capacities(gpu, loads, firsts, in_node, memo)
    free_caps = (None if free is None
                 else _replica_capacities(gpu, free, firsts, in_node, memo))
    for n, (offer, instances) in plan.items():
        if n > top:
            continue
        if n <= per_node:
            # one node: copies of one TP replica each; its capacity scales with the replicas
            for tp, (caps, ests) in replica_caps.items():
                caps_any, ests_any = (None, ()) if free_caps is None else free_caps[tp]
                if n % tp or not (any(caps) or any(caps_any or ())):
                    continue
                price = _price(loads[0], ests + ests_any, offer, instances, settings)
                if price is not None:
                    out.append(PoolOption(
                        gpu, offer, instances, n, tp, 1, price,
                        tuple(x * (n // tp) for x in caps), ests,
                        None if caps_any is None else tuple(x * (n // tp) for x in caps_any)))
            continue
        out += _multi_node_options(gpu, n, offer, instances, loads, firsts, settings, memo,
                                   free)
    return _undominated(out) if prune else out


def _price(load: Workload, ests: tuple[Estimate | None, ...], offer: Offer, instances: int,
           settings: CostSettings) -> float | None:
    first = next((e for e in ests if e is not None), None)
    if first is None:
        return None
    price = co.cost_breakdown(load, first, offer, instances, settings).usd_per_hour
    return price if price is not None and price > 0 else None


def _replica_capacities(gpu: GpuSpec, loads: list[Workload], firsts: list[int | None],
                        counts: list[int], memo: Memo
                        ) -> dict[int, tuple[tuple[float, ...], tuple[Estimate | None, ...]]]:
    """For each TP degree a single-node count can hold (a power of 2 dividing the model's
    attention heads): one replica's capacity per bucket at that degree, pinned, and its
    estimates. The engine's own split at a count is one of these (TP inside a node; the PP
    splits it also weighs on PCIe nodes are left to the multi-node path)."""
    model = loads[0].model
    heads = model.attention_heads if isinstance(model, TransformerModel) else 1
    largest = max(counts, default=0)
    out: dict[int, tuple[tuple[float, ...], tuple[Estimate | None, ...]]] = {}
    tp = 1
    while tp <= largest:
        if heads % tp == 0:
            caps: list[float] = []
            ests: list[Estimate | None] = []
            for w, f in zip(loads, firsts, strict=True):
                e = (estimate(_pinned(w, (tp, 1)), gpu, tp, memo=memo)
                     if f is not None and tp >= f else None)
                ok = e is not None and _split(e) == (tp, 1) and _serves(e)
                caps.append((e.requests_per_s or 0.0) if ok and e is not None else 0.0)
                ests.append(e if ok else None)
            out[tp] = (tuple(caps), tuple(ests))
        tp *= 2
    return out


def _multi_node_options(gpu: GpuSpec, n: int, offer: Offer, instances: int,
                        loads: list[Workload], firsts: list[int | None],
                        settings: CostSettings, memo: Memo,
                        free: list[Workload] | None = None) -> list[PoolOption]:
    """Options of ``n`` GPUs spanning nodes (a model one node cannot hold): the engine's own
    split per bucket at that count (with and without the limits, for percentile SLOs), each
    split pinned for every bucket."""
    net = co.network_gpu(gpu, offer, n, memo)

    def own(ws: list[Workload]) -> list[Estimate | None]:
        return [estimate(w, net, n, memo=memo) if f is not None and n >= f else None
                for w, f in zip(ws, firsts, strict=True)]

    ests = own(loads)
    free_ests = own(free) if free is not None else []
    out = []
    for split in sorted({_split(e) for e in ests + free_ests if e is not None and _serves(e)}):
        caps, used = _pinned_caps(loads, ests, split, net, n, memo)
        caps_any: tuple[float, ...] | None = None
        used_any: tuple[Estimate | None, ...] = ()
        if free is not None:
            caps_any, used_any = _pinned_caps(free, free_ests, split, net, n, memo)
        if not (any(caps) or any(caps_any or ())):
            continue
        price = _price(loads[0], used + used_any, offer, instances, settings)
        if price is not None:
            out.append(PoolOption(gpu, offer, instances, n, split[0], split[1], price,
                                  caps, used, caps_any))
    return out


def _pinned_caps(loads: list[Workload], ests: list[Estimate | None], split: tuple[int, int],
                 net: GpuSpec, n: int, memo: Memo
                 ) -> tuple[tuple[float, ...], tuple[Estimate | None, ...]]:
    """Per bucket: the capacity at ``split`` on ``n`` GPUs and its estimate (0 / None where
    the split does not serve it)."""
    caps: list[float] = []
    used: list[Estimate | None] = []
    for w, e in zip(loads, ests, strict=True):
        if e is not None and _split(e) != split:
            e = estimate(_pinned(w, split), net, n, memo=memo)
        ok = e is not None and _split(e) == split and _serves(e)
        caps.append((e.requests_per_s or 0.0) if ok and e is not None else 0.0)
        used.append(e if ok else None)
    return tuple(caps), tuple(used)


def _undominated(opts: list[PoolOption]) -> list[PoolOption]:
    """Drop options that k copies of another option of the same type match or beat."""
    keep = []
    for a in opts:
        beaten = False
        for b in opts:
            if b is a or a.gpu_count % b.gpu_count:
                continue
            k = a.gpu_count // b.gpu_count
            if a.usd_per_hour >= k * b.usd_per_hour and all(
                    ca <= k * cb for ca, cb in zip(a.capacity, b.capacity, strict=True)) and all(
                    ca <= k * cb for ca, cb in zip(_wide(a), _wide(b), strict=True)):
                # equal options: keep the first (the one that is not beaten by an earlier)
                if k == 1 and a.usd_per_hour == b.usd_per_hour and a.capacity == b.capacity \
                        and opts.index(b) > opts.index(a):
                    continue
                beaten = True
                break
        if not beaten:
            keep.append(a)
    return keep


def _wide(o: PoolOption) -> tuple[float, ...]:
    """Per bucket: the capacity within or outside the limits, whichever is larger."""
    if o.capacity_any is None:
        return o.capacity
    return tuple(max(a, b) for a, b in zip(o.capacity, o.capacity_any, strict=True))


def pool_options(workload: Workload, gpus: Iterable[GpuSpec], offers: Iterable[Offer],
                 constraints: Constraints, settings: CostSettings,
                 memo: Memo, prune: bool = True) -> list[PoolOption]:
    """Every pool option with its capacity per bucket (see the module docstring, step 1)."""
    spec = workload.inference
    assert spec is not None and spec.traffic
    loads = [bucket_workload(workload, b) for b in spec.traffic]
    free = [unlimited(w) for w in loads] if spec.slo_percentile < 100.0 else None
    index = co.offer_index(list(offers), memo)
    out: list[PoolOption] = []
    for gpu in co.by_slug(gpus).values():
        if ex.constraint_failure(gpu, constraints) is not None:
            continue
        if peak_rate(gpu, workload.precision) is None:
            continue
        usable = index.usable(gpu.slug, constraints)
        if usable:
            out += _gpu_options(gpu, usable, loads, constraints, settings, memo, free, prune)
    return out


def solve_options(rates: list[float], opts: list[PoolOption], max_types: int | None,
                  time_limit_s: float, max_outside: float = 0.0
                  ) -> tuple[fm.Solution | None, fm.Solution | None]:
    """(mixed, best single type) for the options; either None when none exists.
    ``max_outside``: the share of requests that may be served outside the latency limits."""
    if not opts:
        return None, None
    caps = [[o.capacity[b] for o in opts] for b in range(len(rates))]
    caps_any = (None if max_outside <= 0.0 else
                [[(o.capacity_any or o.capacity)[b] for o in opts] for b in range(len(rates))])
    costs = [o.usd_per_hour for o in opts]
    slugs = sorted({o.gpu.slug for o in opts})
    types = [slugs.index(o.gpu.slug) for o in opts]

    def checked(sol: fm.Solution | None) -> fm.Solution | None:
        # HiGHS has been seen to call an infeasible point optimal (scipy issue 24141): an
        # answer that breaks a capacity is not used
        return (sol if sol is not None
                and fm.within_capacity(sol, rates, caps, caps_any, max_outside) else None)

    single = checked(fm.best_single_type(rates, costs, caps, types,
                                         time_limit_s=time_limit_s, caps_any=caps_any,
                                         max_outside=max_outside)) \
        or checked(fm.greedy_single(rates, costs, caps))
    if max_types == 1:
        return single, single
    upper = None if single is None else single.usd_per_hour
    mixed = checked(fm.solve(rates, costs, caps, types, max_types=max_types,
                             time_limit_s=time_limit_s, upper_usd_per_hour=upper,
                             caps_any=caps_any, max_outside=max_outside))
    if mixed is None or (single is not None and single.usd_per_hour < mixed.usd_per_hour):
        if single is not None:
            mixed = replace(single, status="fallback_single_type")
    return mixed, single


BATCH_LEVELS = 12
"""Time objective: operating points per (bucket, option) are batches 1, 2, 4, ... 2^11 per
replica, capped at the capacity batch (which is always one of them): a doubling grid, as
serving runtimes' CUDA-graph batch sizes are (vLLM captures 1, 2, 4, 8, then steps of 8)."""


def operating_points(opts: list[PoolOption], loads: list[Workload], memo: Memo
                     ) -> tuple[list[list[float]], list[list[float]], list[int]]:
    """(caps[b][m], lats[b][m], owner[m]): for each option, modes m = batch levels; a mode's
    capacity per copy and end-to-end latency for bucket b at that batch per replica, from the
    engine with the option's split pinned and the batch fixed (0 capacity where the level is
    past the bucket's capacity batch, duplicates it, or misses the SLOs)."""
    n_b = len(loads)
    caps: list[list[float]] = [[] for _ in range(n_b)]
    lats: list[list[float]] = [[] for _ in range(n_b)]
    owner: list[int] = []
    for p, o in enumerate(opts):
        in_node = o.gpu_count <= max(1, o.gpu.max_gpus_per_node) and o.pipeline_parallel == 1
        gpu = o.gpu if in_node else co.network_gpu(o.gpu, o.offer, o.gpu_count, memo)
        per_copy = o.gpu_count // o.tensor_parallel if in_node else 1
        count = o.tensor_parallel if in_node else o.gpu_count
        for level in range(BATCH_LEVELS):
            owner.append(p)
            for b in range(n_b):
                e0 = o.estimates[b]
                top = None if e0 is None else e0.capacity_batch_size
                batch = 2 ** level
                cap = lat = 0.0
                if top is not None and (batch < top or batch // 2 < top):
                    batch = min(batch, top)
                    load = _pinned(loads[b], (o.tensor_parallel, o.pipeline_parallel))
                    spec = load.inference
                    assert spec is not None
                    e = estimate(replace(load, inference=replace(spec, batch_size=batch)),
                                 gpu, count, memo=memo)
                    if _serves(e) and e.latency_ms is not None:
                        cap = (e.requests_per_s or 0.0) * per_copy
                        lat = e.latency_ms
                caps[b].append(cap)
                lats[b].append(lat)
    return caps, lats, owner


def solve_time_options(rates: list[float], opts: list[PoolOption], loads: list[Workload],
                       budget: float, max_types: int | None, time_limit_s: float, memo: Memo
                       ) -> tuple[tuple[fm.Solution, float] | None,
                                  tuple[fm.Solution, float] | None]:
    """(mixed, best single type) of least mean latency under ``budget`` [USD/h], each as a
    per-option :class:`fm.Solution` and its mean latency [ms]; None when none fits."""
    if not opts:
        return None, None
    caps, lats, owner = operating_points(opts, loads, memo)
    costs = [o.usd_per_hour for o in opts]
    slugs = sorted({o.gpu.slug for o in opts})
    types = [slugs.index(o.gpu.slug) for o in opts]

    def per_option(sol: fm.TimeSolution | None) -> tuple[fm.Solution, float] | None:
        if sol is None or not fm.within_capacity_modes(sol, rates, caps, owner):
            return None
        shares = tuple(tuple(sum(row[m] for m in range(len(owner)) if owner[m] == p)
                             for p in range(len(opts))) for row in sol.shares)
        return (fm.Solution(sol.counts, shares, sol.usd_per_hour, sol.status, sol.mip_gap),
                sol.mean_latency_ms)

    single = per_option(fm.solve_time(rates, costs, caps, lats, owner, types, budget,
                                      max_types=1, time_limit_s=time_limit_s))
    if max_types == 1:
        return single, single
    mixed = per_option(fm.solve_time(rates, costs, caps, lats, owner, types, budget,
                                     max_types=max_types, time_limit_s=time_limit_s))
    if mixed is None or (single is not None and single[1] < mixed[1]):
        mixed = single
    return mixed, single


def _pool_name(i: int, opt: PoolOption) -> str:
    base = re.sub(r"[^a-z0-9-]", "-", opt.gpu.slug.lower()).strip("-")
    return f"pool{i}-{base}"[:K8S_NAME_MAX].rstrip("-")


def _renamed(value: Any, old: str, new: str) -> Any:
    """Kubernetes manifests with the GPU's workload name ``old`` changed to ``new`` (one
    Deployment + Service per pool: two pools of one GPU type need distinct names)."""
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    if isinstance(value, str) and value.startswith(old):
        return new + value[len(old):]
    return value


def _pools(sol: fm.Solution, opts: list[PoolOption], loads: list[Workload], rates: list[float],
           skypilot_names: Mapping[str, str] | None, node_labels: Mapping[str, str] | None,
           memo: Memo) -> tuple[FleetPool, ...]:
    out = []
    chosen = [p for p, y in enumerate(sol.counts) if y > 0]
    for i, p in enumerate(chosen, start=1):
        o, y = opts[p], sol.counts[p]
        served = [b for b in range(len(rates)) if sol.shares[b][p] > MIN_SHARE]
        load = [rates[b] * sol.shares[b][p] for b in served]
        outside = [0.0 if sol.outside is None else min(sol.outside[b][p], sol.shares[b][p])
                   for b in served]
        wide = _wide(o)
        used = sum((rates[b] * (sol.shares[b][p] - v) / o.capacity[b]
                    if o.capacity[b] > 0 else 0.0)
                   + (rates[b] * v / wide[b] if v > 0 else 0.0)
                   for b, v in zip(served, outside, strict=True))
        inside = [b for b, v in zip(served, outside, strict=True)
                  if sol.shares[b][p] - v > MIN_SHARE]
        main = max(inside or served, key=lambda b: rates[b] * sol.shares[b][p])
        # the copy as the engine lays it out (its count, the pool's split): what the
        # provisioning specs describe (without the limits when it serves its buckets only
        # outside them)
        pinned = _pinned(loads[main] if inside else unlimited(loads[main]),
                         (o.tensor_parallel, o.pipeline_parallel))
        est = estimate(pinned, co.network_gpu(o.gpu, o.offer, o.gpu_count, memo), o.gpu_count,
                       memo=memo)
        prov = provision(pinned, o.gpu,
                         est, o.offer, instances_per_replica=o.instances, replicas=y,
                         skypilot_names=skypilot_names, node_labels=node_labels, memo=memo)
        name = _pool_name(i, o)
        old = re.sub(r"[^a-z0-9-]", "-", o.gpu.slug.lower()).strip("-")[:K8S_NAME_MAX]
        sky = prov.skypilot_yaml
        if sky is not None:
            sky = sky.replace(f"name: {old}\n", f"name: {name}\n", 1)
        prov = replace(prov, skypilot_yaml=sky,
                       kubernetes=tuple(_renamed(m, old, name) for m in prov.kubernetes))
        spec = loads[main].inference
        assert spec is not None
        out.append(FleetPool(
            name=name, gpu_slug=o.gpu.slug, gpu_name=o.gpu.name, gpu_count=o.gpu_count * y,
            copies=y, replicas=(est.replicas or 1) * y, tensor_parallel=o.tensor_parallel,
            pipeline_parallel=o.pipeline_parallel, offer=o.offer, instances=o.instances * y,
            usd_per_hour=o.usd_per_hour * y, utilization=used / y,
            buckets=tuple(BucketLoad(b, _tokens(loads[b])[0], _tokens(loads[b])[1],
                                     sol.shares[b][p], x, v)
                          for b, x, v in zip(served, load, outside, strict=True)),
            provision=prov))
    return tuple(out)


def _tokens(w: Workload) -> tuple[int, int]:
    spec = w.inference
    assert spec is not None
    return spec.prompt_tokens, spec.output_tokens


def _ranges(sizes: list[int]) -> list[tuple[int, int | None]]:
    """(low, high) token ranges around sorted distinct ``sizes``: thresholds at the geometric
    middle between neighbours, the first from 0, the last open (high None)."""
    out: list[tuple[int, int | None]] = []
    for k, size in enumerate(sizes):
        lo = 0 if k == 0 else math.isqrt(sizes[k - 1] * size) + 1
        hi = math.isqrt(size * sizes[k + 1]) if k + 1 < len(sizes) else None
        out.append((lo, hi))
    return out


def _span(what: str, lo: int, hi: int | None) -> str:
    return f"{what} {lo}-{hi}" if hi is not None else f"{what} {lo}+"


def routing(pools: tuple[FleetPool, ...], buckets: tuple[TrafficBucket, ...]) -> tuple[str, ...]:
    """How a router sends requests to the pools: by prompt length, then, where buckets of one
    prompt size differ in output, by the request's ``max_tokens`` (the output bound a client
    declares; a router cannot see the output length before it is generated). Each rule lists
    the pools serving that cell and the share of its requests each takes (buckets of the same
    size are pooled, weighted by their shares)."""
    if len(pools) <= 1:
        return ("one pool: every request goes to it",)
    served: dict[int, dict[str, float]] = {}
    for pool in pools:
        for load in pool.buckets:
            to = served.setdefault(load.bucket, {})
            to[pool.name] = to.get(pool.name, 0.0) + load.fraction
    prompts = sorted({b.prompt_tokens for b in buckets})
    by_output = any(len({b.output_tokens for b in buckets if b.prompt_tokens == p}) > 1
                    for p in prompts)
    lines = []
    for prompt, (lo, hi) in zip(prompts, _ranges(prompts), strict=True):
        outputs = sorted({b.output_tokens for b in buckets if b.prompt_tokens == prompt})
        for output, (olo, ohi) in zip(outputs, _ranges(outputs), strict=True):
            cell = [i for i, b in enumerate(buckets)
                    if b.prompt_tokens == prompt and b.output_tokens == output]
            total = sum(buckets[i].share for i in cell) or 1.0
            shares: dict[str, float] = {}
            for i in cell:
                for name, fraction in served.get(i, {}).items():
                    shares[name] = shares.get(name, 0.0) + fraction * buckets[i].share / total
            rule = _span("prompts", lo, hi) + " tokens"
            if len(outputs) > 1:
                rule += ", " + _span("max_tokens", olo, ohi)
            names = ", ".join(str(i) for i in cell)
            rule += (f" (bucket{'s' if len(cell) > 1 else ''} {names}: {prompt} in / "
                     f"{output} out)")
            lines.append(f"{rule} -> " + ", ".join(
                f"{name} {share:.0%}"
                for name, share in sorted(shares.items(), key=lambda t: -t[1])))
    head = ("route by prompt length" + (" and the request's max_tokens" if by_output else "")
            + " (thresholds at the geometric middle between bucket sizes; where a rule lists "
            "several pools, split its requests by those shares, e.g. weighted round-robin):")
    return (head, *lines)


def plan_fleet(
    workload: Workload,
    gpus: Iterable[GpuSpec],
    offers: Iterable[Offer],
    *,
    constraints: Constraints | None = None,
    settings: CostSettings | None = None,
    max_gpu_types: int | None = None,
    skypilot_names: Mapping[str, str] | None = None,
    node_labels: Mapping[str, str] | None = None,
    cache: EngineCache | None = None,
    time_limit_s: float = fm.TIME_LIMIT_S,
    objective: str = "cost",
) -> Fleet:
    """The cheapest fleet serving ``workload.inference.traffic`` at its
    ``target_requests_per_s`` within its SLOs (see the module docstring). The workload is
    assumed valid (:func:`validate_workload`)."""
    spec = workload.inference
    assert spec is not None and spec.traffic and spec.target_requests_per_s
    memo = Memo(cache)
    c = constraints or Constraints()
    cost_settings = settings or CostSettings()
    buckets = spec.traffic
    rates = [b.share * spec.target_requests_per_s for b in buckets]
    timed = objective == "time" and c.max_usd_per_hour is not None
    opts = pool_options(workload, gpus, offers, c, cost_settings, memo, prune=not timed)
    loads = [bucket_workload(workload, b) for b in buckets]
    max_outside = 1.0 - spec.slo_percentile / 100.0
    notes: list[str] = []
    latency: tuple[float | None, float | None] = (None, None)
    if objective == "time" and not timed:
        notes.append("objective time for a fleet needs constraints.max_usd_per_hour (the "
                     "budget): this is the cheapest fleet")
    if timed and max_outside > 0:
        notes.append("objective time serves every request within the latency limits: "
                     "slo_percentile is not applied")
    if timed:
        assert c.max_usd_per_hour is not None
        t_mixed, t_single = solve_time_options(rates, opts, loads, c.max_usd_per_hour,
                                               max_gpu_types, time_limit_s, memo)
        mixed = None if t_mixed is None else t_mixed[0]
        single = None if t_single is None else t_single[0]
        if t_single is not None and t_mixed is t_single:
            single = mixed
        latency = (None if t_mixed is None else t_mixed[1],
                   None if t_single is None else t_single[1])
    else:
        mixed, single = solve_options(rates, opts, max_gpu_types, time_limit_s, max_outside)
    if mixed is None:
        missing = [b for b in range(len(buckets)) if not any(o.capacity[b] > 0 for o in opts)]
        if max_outside > 0:
            missing = [b for b in range(len(buckets)) if not any(_wide(o)[b] > 0 for o in opts)]
        why = ([f"no priced GPU option serves bucket {b} ({buckets[b].prompt_tokens} prompt, "
                f"{buckets[b].output_tokens} output tokens) within the SLOs and constraints"
                for b in missing] or
               ([f"fewer than {spec.slo_percentile:g}% of the requests can be served within "
                 "the latency limits"] if max_outside > 0 else [])
               + ["no fleet found within the time limit"])
        if timed and not missing:
            why = [f"no fleet within the SLOs costs at most max_usd_per_hour "
                   f"${c.max_usd_per_hour:,.2f}/h"]
        return Fleet("infeasible", (), None, None, None, max_gpu_types, (), None, None, None,
                     (), tuple(notes + why), len(opts), spec.slo_percentile,
                     objective="time" if timed else "cost")
    pools = _pools(mixed, opts, loads, rates, skypilot_names, node_labels, memo)
    single_pools = (pools if single is mixed or single is None else
                    _pools(single, opts, loads, rates, skypilot_names, node_labels, memo))
    tokens_h = sum(r * b.output_tokens for r, b in zip(rates, buckets, strict=True)) \
        * SECONDS_PER_HOUR
    single_usd = single.usd_per_hour if single is not None else None
    saving = None if single_usd is None else single_usd - mixed.usd_per_hour
    warnings: list[str] = list(notes)
    if mixed.status == "time_limit":
        warnings.append(f"the solver stopped at its time limit ({time_limit_s:g} s): the fleet "
                        "is the best found, within mip_gap of the optimum")
    if not timed and c.max_usd_per_hour is not None \
            and mixed.usd_per_hour > c.max_usd_per_hour:
        warnings.append(f"the cheapest fleet costs ${mixed.usd_per_hour:,.2f}/h, over "
                        f"max_usd_per_hour ${c.max_usd_per_hour:,.2f}/h")
    return Fleet(
        status=mixed.status, pools=pools, usd_per_hour=mixed.usd_per_hour,
        usd_per_million_tokens=mixed.usd_per_hour / tokens_h * TOKENS_PER_MILLION,
        mip_gap=mixed.mip_gap, max_gpu_types=max_gpu_types, best_single_type=single_pools,
        single_usd_per_hour=single_usd, saving_usd_per_hour=saving,
        saving_fraction=None if saving is None or not single_usd else saving / single_usd,
        routing=routing(pools, buckets), warnings=tuple(warnings), options=len(opts),
        slo_percentile=spec.slo_percentile, within_slo_fraction=_within(mixed, rates),
        single_within_slo_fraction=None if single is None else _within(single, rates),
        objective="time" if timed else "cost", mean_latency_ms=latency[0],
        single_mean_latency_ms=latency[1])


def _within(sol: fm.Solution, rates: list[float]) -> float:
    """Share of all requests ``sol`` serves within the latency limits [fraction]."""
    if sol.outside is None:
        return 1.0
    out = sum(r * sum(row) for r, row in zip(rates, sol.outside, strict=True))
    return max(0.0, min(1.0, 1.0 - out / sum(rates)))
