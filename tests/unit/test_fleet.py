"""The mixed-fleet optimiser against brute force on small instances (<= 3 GPU types, <= 4
buckets, counts <= 8), its properties (never above the best single type; another GPU type
never raises the optimum; capacities, hence every bucket's SLO, respected), and the engine's
capacity tables on the seeded catalog."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from service.engine.cache import EngineCache, Memo
from service.engine.choice import fleet_milp as fm
from service.engine.choice.fleet import (
    BucketLoad,
    bucket_workload,
    plan_fleet,
    pool_options,
    routing,
)
from service.engine.physics.estimate import estimate
from service.engine.recommend_types import Constraints, CostSettings
from service.engine.types import InferenceSpec, TrafficBucket, Workload
from service.engine.validate import validate_workload
from service.presets.catalog import PRESETS
from service.presets.traffic import TRAFFIC_PRESETS
from tests.unit.catalog_data import load_gpus, load_offers

MAX_COUNT = 8


def carries(counts: Sequence[int], rates: Sequence[float],
            caps: Sequence[Sequence[float]]) -> bool:
    """Whether ``counts`` copies of the options can carry every bucket (an LP: split each
    bucket over the options that serve it, within their capacities)."""
    n_b, n_p = len(rates), len(counts)
    var = [(b, p) for b in range(n_b) for p in range(n_p) if caps[b][p] > 0 and counts[p] > 0]
    if {b for b, _ in var} != set(range(n_b)):
        return False
    a_eq = [[1.0 if vb == b else 0.0 for vb, _ in var] for b in range(n_b)]
    a_ub = [[rates[vb] / caps[vb][vp] if vp == p else 0.0 for vb, vp in var]
            for p in range(n_p)]
    res = linprog([0.0] * len(var), A_ub=a_ub, b_ub=[c * (1 + 1e-9) for c in counts],
                  A_eq=a_eq, b_eq=[1.0] * n_b, bounds=(0, None), method="highs")
    return bool(res.status == 0)


def brute_force(rates: Sequence[float], costs: Sequence[float],
                caps: Sequence[Sequence[float]], types: Sequence[int],
                max_types: int | None = None) -> float | None:
    """The least cost over every count vector in 0..MAX_COUNT, checked cheapest first."""
    combos = []
    for counts in itertools.product(range(MAX_COUNT + 1), repeat=len(costs)):
        used = {types[p] for p, y in enumerate(counts) if y}
        if max_types is not None and len(used) > max_types:
            continue
        combos.append((sum(c * y for c, y in zip(costs, counts, strict=True)), counts))
    for usd, counts in sorted(combos):
        if carries(counts, rates, caps):
            return usd
    return None


def milp_cost(rates: Sequence[float], costs: Sequence[float], caps: Sequence[Sequence[float]],
              types: Sequence[int], max_types: int | None = None) -> float | None:
    sol = fm.solve(rates, costs, caps, types, max_types=max_types, max_count=MAX_COUNT)
    if sol is None:
        return None
    assert fm.within_capacity(sol, rates, caps)
    assert all(0 <= y <= MAX_COUNT for y in sol.counts)
    if max_types is not None:
        assert len(sol.types_used(types)) <= max_types
    assert sol.status == "optimal" and sol.mip_gap is not None and sol.mip_gap <= 1e-6
    return sol.usd_per_hour


# two short-prompt buckets and a long one; a cheap small GPU that only serves short prompts,
# a mid GPU, and a costly big one that serves everything
RATES = [12.0, 6.0, 3.0]
COSTS = [0.8, 2.0, 4.5]
CAPS = [[5.0, 9.0, 30.0],
        [3.0, 7.0, 20.0],
        [0.0, 1.5, 8.0]]
TYPES = [0, 1, 2]


def test_hand_instance_equals_brute_force_and_mixes() -> None:
    best = brute_force(RATES, COSTS, CAPS, TYPES)
    assert best is not None
    assert milp_cost(RATES, COSTS, CAPS, TYPES) == pytest.approx(best, rel=1e-9)
    single = brute_force(RATES, COSTS, CAPS, TYPES, max_types=1)
    assert single is not None and best < single  # a mix is strictly cheaper here
    assert milp_cost(RATES, COSTS, CAPS, TYPES, max_types=1) == pytest.approx(single)
    two = brute_force(RATES, COSTS, CAPS, TYPES, max_types=2)
    assert milp_cost(RATES, COSTS, CAPS, TYPES, max_types=2) == pytest.approx(two)


def test_tiny_loads_still_rent_a_copy() -> None:
    """At 1e-6 requests/s the capacity rows are below the solver's tolerance; the fleet still
    pays for a copy of whatever serves."""
    rates = [r * 1e-7 for r in RATES]
    sol = fm.solve(rates, COSTS, CAPS, TYPES)
    assert sol is not None and fm.within_capacity(sol, rates, CAPS)
    assert sol.usd_per_hour == pytest.approx(min(COSTS[p] for p in range(3)
                                                 if all(row[p] > 0 for row in CAPS)))


def test_unservable_bucket_has_no_fleet() -> None:
    caps = [row[:] for row in CAPS]
    caps[2] = [0.0, 0.0, 0.0]
    assert fm.solve(RATES, COSTS, caps, TYPES) is None
    assert fm.greedy_single(RATES, COSTS, caps) is None


def test_greedy_single_is_feasible_and_never_below_the_optimum() -> None:
    greedy = fm.greedy_single(RATES, COSTS, CAPS)
    assert greedy is not None and fm.within_capacity(greedy, RATES, CAPS)
    single = fm.solve(RATES, COSTS, CAPS, TYPES, max_types=1)
    assert single is not None and greedy.usd_per_hour >= single.usd_per_hour - 1e-9


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[float], list[float], list[list[float]], list[int]]:
    n_types = draw(st.integers(1, 3))
    per_type = [draw(st.integers(1, 2 if n_types <= 1 else 1)) for _ in range(n_types)]
    types = [t for t, k in enumerate(per_type) for _ in range(k)]
    n_b = draw(st.integers(1, 4))
    rates = [draw(st.floats(0.5, 12.0)) for _ in range(n_b)]
    costs = [draw(st.floats(0.5, 10.0)) for _ in types]
    caps = [[draw(st.one_of(st.just(0.0), st.floats(1.0, 30.0))) for _ in types]
            for _ in range(n_b)]
    return rates, costs, caps, types


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_milp_equals_brute_force(inst: tuple[list[float], list[float], list[list[float]],
                                             list[int]]) -> None:
    rates, costs, caps, types = inst
    best = brute_force(rates, costs, caps, types)
    got = milp_cost(rates, costs, caps, types)
    if best is None:
        assert got is None
    else:
        assert got == pytest.approx(best, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(instances())
def test_fleet_never_costs_more_than_the_best_single_type(
        inst: tuple[list[float], list[float], list[list[float]], list[int]]) -> None:
    rates, costs, caps, types = inst
    mixed = fm.solve(rates, costs, caps, types)
    single = fm.solve(rates, costs, caps, types, max_types=1)
    if single is not None:
        assert mixed is not None and mixed.usd_per_hour <= single.usd_per_hour * (1 + 1e-7)
        assert len(single.types_used(types)) == 1
    for sol in (mixed, single):
        assert sol is None or fm.within_capacity(sol, rates, caps)


@settings(max_examples=40, deadline=None)
@given(instances(), st.data())
def test_another_gpu_type_never_raises_the_optimum(
        inst: tuple[list[float], list[float], list[list[float]], list[int]],
        data: st.DataObject) -> None:
    rates, costs, caps, types = inst
    drop = data.draw(st.sampled_from(sorted(set(types))))
    keep = [p for p, t in enumerate(types) if t != drop]
    full = fm.solve(rates, costs, caps, types)
    if not keep:
        return
    fewer = fm.solve(rates, [costs[p] for p in keep], [[row[p] for p in keep] for row in caps],
                     [types[p] for p in keep])
    if fewer is not None:
        assert full is not None and full.usd_per_hour <= fewer.usd_per_hour * (1 + 1e-7)


# -- the engine's capacity tables on the seeded catalog ------------------------------------

SMALL = ("nvidia-l4", "nvidia-a10g", "nvidia-h100-sxm5-80gb")


def chat_workload(rate: float, traffic: tuple[TrafficBucket, ...] | None = None) -> Workload:
    buckets = traffic or TRAFFIC_PRESETS["azure-conversation-2023"].buckets
    return Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                    inference=InferenceSpec(prompt_tokens=1000, output_tokens=200,
                                            max_ttft_ms=1000, max_tpot_ms=50,
                                            target_requests_per_s=rate, traffic=buckets))


def test_traffic_validation_names_fields() -> None:
    w = chat_workload(5, (TrafficBucket(100, 10, 0.5), TrafficBucket(0, 10, 0.4)))
    fields = {f for f, _ in validate_workload(w)}
    assert {"inference.traffic", "inference.traffic.1.prompt_tokens"} <= fields
    assert not validate_workload(chat_workload(5))


def test_seeded_small_instance_equals_brute_force() -> None:
    """<= 3 GPU types and 4 buckets: the optimiser's cost on the engine's own capacities is
    the exhaustive optimum over counts <= 8."""
    buckets = (TrafficBucket(200, 150, 0.4), TrafficBucket(1200, 300, 0.3),
               TrafficBucket(3400, 80, 0.2), TrafficBucket(6000, 60, 0.1))
    w = chat_workload(6.0, buckets)
    c = Constraints(gpu_slugs=SMALL, max_gpus=1)
    opts = pool_options(w, load_gpus(), load_offers(), c, CostSettings(), Memo(EngineCache()))
    assert 2 <= len({o.gpu.slug for o in opts}) <= 3 and len(opts) <= 3
    rates = [b.share * 6.0 for b in buckets]
    caps = [[o.capacity[b] for o in opts] for b in range(len(buckets))]
    costs = [o.usd_per_hour for o in opts]
    types = list(range(len(opts)))
    best = brute_force(rates, costs, caps, types)
    assert best is not None
    assert milp_cost(rates, costs, caps, types) == pytest.approx(best, rel=1e-6)


def test_seeded_chat_fleet_respects_every_bucket_slo() -> None:
    w = chat_workload(10.0)
    fleet = plan_fleet(w, load_gpus(), load_offers(), cache=EngineCache())
    spec = w.inference
    assert spec is not None and spec.traffic is not None
    assert fleet.status == "optimal" and fleet.pools and fleet.usd_per_hour is not None
    assert fleet.single_usd_per_hour is not None
    assert fleet.usd_per_hour <= fleet.single_usd_per_hour + 1e-9
    served = [0.0] * len(spec.traffic)
    for pool in fleet.pools:
        used = 0.0
        for bl in pool.buckets:
            served[bl.bucket] += bl.fraction
            # the bucket at its own size on this pool's GPU, count and layout meets the SLOs
            b = spec.traffic[bl.bucket]
            load = bucket_workload(w, b)
            assert load.inference is not None
            pinned = replace(load, inference=replace(
                load.inference, tensor_parallel=pool.tensor_parallel,
                pipeline_parallel=pool.pipeline_parallel,
                target_requests_per_s=bl.requests_per_s / pool.copies))
            gpus = {g.slug: g for g in load_gpus()}
            est = estimate(pinned, gpus[pool.gpu_slug], pool.gpu_count // pool.copies)
            assert est.latency_ok is True, (pool.name, b, est.ttft_ms, est.tpot_ms)
            assert est.requests_per_s is not None
            used += bl.requests_per_s / (est.requests_per_s * pool.copies)
        assert used <= 1 + 1e-6
    assert all(s == pytest.approx(1.0, abs=1e-6) for s in served)
    assert fleet.usd_per_million_tokens is not None and fleet.usd_per_million_tokens > 0
    tokens = sum(b.share * 10.0 * b.output_tokens for b in spec.traffic) * 3600
    assert fleet.usd_per_million_tokens == pytest.approx(fleet.usd_per_hour / tokens * 1e6)


def test_one_gpu_type_fleet_has_no_saving() -> None:
    w = chat_workload(10.0)
    fleet = plan_fleet(w, load_gpus(), load_offers(), max_gpu_types=1, cache=EngineCache())
    assert len({p.gpu_slug for p in fleet.pools}) == 1
    assert fleet.saving_usd_per_hour == 0 and fleet.usd_per_hour == fleet.single_usd_per_hour


def test_presets_are_normalised_histograms() -> None:
    for preset in TRAFFIC_PRESETS.values():
        assert math.isclose(sum(b.share for b in preset.buckets), 1.0, abs_tol=1e-12)
        assert 1 <= len(preset.buckets) <= 64 and preset.source


@settings(max_examples=40, deadline=None)
@given(instances(), st.floats(1.0, 1.5))
def test_pruning_by_a_known_fleet_and_per_type_search_keep_the_optimum(
        inst: tuple[list[float], list[float], list[list[float]], list[int]],
        slack: float) -> None:
    """Leaving out options that cannot be in a fleet as cheap as a known one (reduced-cost
    fixing) and searching single types by LP bound give the full programs' optima."""
    rates, costs, caps, types = inst
    full = fm.solve(rates, costs, caps, types)
    single = fm.solve(rates, costs, caps, types, max_types=1)
    by_type = fm.best_single_type(rates, costs, caps, types)
    assert (single is None) == (by_type is None)
    if single is None or by_type is None or full is None:
        return
    assert by_type.usd_per_hour == pytest.approx(single.usd_per_hour, rel=1e-7)
    assert fm.within_capacity(by_type, rates, caps) and len(by_type.types_used(types)) == 1
    pruned = fm.solve(rates, costs, caps, types,
                      upper_usd_per_hour=single.usd_per_hour * slack)
    assert pruned is not None and fm.within_capacity(pruned, rates, caps)
    assert pruned.usd_per_hour == pytest.approx(full.usd_per_hour, rel=1e-7)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.integers(1, 2))
def test_type_limit_equals_brute_force(
        inst: tuple[list[float], list[float], list[list[float]], list[int]],
        max_types: int) -> None:
    rates, costs, caps, types = inst
    best = brute_force(rates, costs, caps, types, max_types=max_types)
    got = milp_cost(rates, costs, caps, types, max_types=max_types)
    if best is None:
        assert got is None
    else:
        assert got == pytest.approx(best, rel=1e-6)


# -- percentile SLOs: a share of the requests may be served outside the latency limits ------

def carries_pct(counts: Sequence[int], rates: Sequence[float],
                caps: Sequence[Sequence[float]], caps_any: Sequence[Sequence[float]],
                max_outside: float) -> bool:
    """Whether ``counts`` copies carry every bucket when at most ``max_outside`` of all
    requests may be served outside the limits, at the capacity without them (an LP over the
    within part x and the outside part v of each (bucket, option))."""
    n_b, n_p = len(rates), len(counts)
    var = [(b, p, mode) for b in range(n_b) for p in range(n_p) if counts[p] > 0
           for mode, cap in (("in", caps[b][p]), ("out", max(caps[b][p], caps_any[b][p])))
           if cap > 0]
    if {b for b, _, _ in var} != set(range(n_b)):
        return False

    def cap_of(b: int, p: int, mode: str) -> float:
        return caps[b][p] if mode == "in" else max(caps[b][p], caps_any[b][p])

    a_eq = [[1.0 if vb == b else 0.0 for vb, _, _ in var] for b in range(n_b)]
    a_ub = [[rates[vb] / cap_of(vb, vp, m) if vp == p else 0.0 for vb, vp, m in var]
            for p in range(n_p)]
    a_ub.append([rates[vb] if m == "out" else 0.0 for vb, _, m in var])
    b_ub = [c * (1 + 1e-9) for c in counts] + [max_outside * sum(rates) * (1 + 1e-9)]
    res = linprog([0.0] * len(var), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0] * n_b,
                  bounds=(0, None), method="highs")
    return bool(res.status == 0)


def brute_force_pct(rates: Sequence[float], costs: Sequence[float],
                    caps: Sequence[Sequence[float]], caps_any: Sequence[Sequence[float]],
                    max_outside: float, types: Sequence[int],
                    max_types: int | None = None) -> float | None:
    combos = []
    for counts in itertools.product(range(MAX_COUNT + 1), repeat=len(costs)):
        if max_types is not None and len({types[p] for p, y in enumerate(counts) if y}) \
                > max_types:
            continue
        combos.append((sum(c * y for c, y in zip(costs, counts, strict=True)), counts))
    for usd, counts in sorted(combos):
        if carries_pct(counts, rates, caps, caps_any, max_outside):
            return usd
    return None


@st.composite
def pct_instances(draw: st.DrawFn) -> tuple[list[float], list[float], list[list[float]],
                                            list[list[float]], list[int]]:
    rates, costs, caps, types = draw(instances())
    # without the limits a copy serves more (a larger batch), or serves where it could not
    caps_any = [[draw(st.one_of(st.just(0.0), st.floats(1.0, 40.0))) if c == 0
                 else c * draw(st.floats(1.0, 3.0)) for c in row] for row in caps]
    return rates, costs, caps, caps_any, types


PctInstance = tuple[list[float], list[float], list[list[float]], list[list[float]], list[int]]


def test_hand_instance_percentile_equals_brute_force() -> None:
    """At 95% the 100% fleet stays the cheapest, and only as many requests as its copies need
    are served outside the limits (none here); at 85% the big GPU alone serves the long
    bucket (1/7 of the requests) outside its limits, and the fleet gets cheaper."""
    caps_any = [[7.0, 12.0, 40.0], [5.0, 9.0, 26.0], [1.0, 2.5, 10.0]]
    costs = {}
    for pct in (100.0, 95.0, 85.0, 50.0):
        best = brute_force_pct(RATES, COSTS, CAPS, caps_any, 1 - pct / 100, TYPES)
        sol = fm.solve(RATES, COSTS, CAPS, TYPES, max_count=MAX_COUNT, caps_any=caps_any,
                       max_outside=1 - pct / 100)
        assert sol is not None and best is not None
        assert fm.within_capacity(sol, RATES, CAPS, caps_any, 1 - pct / 100)
        assert sol.usd_per_hour == pytest.approx(best, rel=1e-9)
        costs[pct] = sol.usd_per_hour
        if pct == 95.0:
            assert sol.outside is not None and not any(v > 1e-9 for r in sol.outside for v in r)
    assert costs[100.0] == brute_force(RATES, COSTS, CAPS, TYPES)
    assert costs[50.0] <= costs[85.0] <= costs[95.0] <= costs[100.0]
    assert costs[50.0] < costs[100.0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pct_instances(), st.sampled_from([0.0, 0.05, 0.2, 0.5]), st.sampled_from([None, 1]))
def test_percentile_milp_equals_brute_force(inst: PctInstance, max_outside: float,
                                            max_types: int | None) -> None:
    rates, costs, caps, caps_any, types = inst
    best = brute_force_pct(rates, costs, caps, caps_any, max_outside, types, max_types)
    sol = fm.solve(rates, costs, caps, types, max_count=MAX_COUNT, max_types=max_types,
                   caps_any=caps_any, max_outside=max_outside)
    if best is None:
        assert sol is None
        return
    assert sol is not None and sol.status == "optimal"
    assert fm.within_capacity(sol, rates, caps, caps_any, max_outside)
    assert sol.usd_per_hour == pytest.approx(best, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(pct_instances(), st.floats(0.0, 0.5), st.floats(0.0, 0.5))
def test_a_lower_percentile_never_raises_the_optimum(inst: PctInstance, a: float,
                                                     b: float) -> None:
    """More requests allowed outside the limits never costs more; at 100% (none outside) the
    answer is the program without percentiles; the exact reductions (single type by LP
    bound, reduced-cost fixing) keep the optimum."""
    rates, costs, caps, caps_any, types = inst
    lo, hi = sorted((a, b))
    strict = fm.solve(rates, costs, caps, types, caps_any=caps_any, max_outside=lo)
    loose = fm.solve(rates, costs, caps, types, caps_any=caps_any, max_outside=hi)
    if strict is not None:
        assert loose is not None and loose.usd_per_hour <= strict.usd_per_hour * (1 + 1e-7)
    at100 = fm.solve(rates, costs, caps, types, caps_any=caps_any, max_outside=0.0)
    plain = fm.solve(rates, costs, caps, types)
    assert (at100 is None) == (plain is None)
    if at100 is not None and plain is not None:
        assert at100.usd_per_hour == plain.usd_per_hour and at100.outside is None
    single = fm.solve(rates, costs, caps, types, max_types=1, caps_any=caps_any,
                      max_outside=hi)
    by_type = fm.best_single_type(rates, costs, caps, types, caps_any=caps_any,
                                  max_outside=hi)
    assert (single is None) == (by_type is None)
    if single is None or by_type is None or loose is None:
        return
    assert by_type.usd_per_hour == pytest.approx(single.usd_per_hour, rel=1e-7)
    assert fm.within_capacity(by_type, rates, caps, caps_any, hi)
    pruned = fm.solve(rates, costs, caps, types, caps_any=caps_any, max_outside=hi,
                      upper_usd_per_hour=single.usd_per_hour)
    assert pruned is not None and fm.within_capacity(pruned, rates, caps, caps_any, hi)
    assert pruned.usd_per_hour == pytest.approx(loose.usd_per_hour, rel=1e-7)


def test_seeded_percentile_fleet_is_cheaper_and_keeps_the_share() -> None:
    """Four GPU types, TTFT <= 300 ms, TPOT <= 25 ms: at 90% the fleet may serve up to 10% of
    the requests outside the limits and is cheaper; it reports which and how much."""
    c = Constraints(gpu_slugs=("nvidia-l4", "nvidia-a10g", "nvidia-l40s",
                               "nvidia-a100-sxm4-80gb"))
    cache = EngineCache()

    def at(pct: float) -> Workload:
        w = chat_workload(10.0)
        assert w.inference is not None
        return replace(w, inference=replace(w.inference, slo_percentile=pct, max_ttft_ms=300,
                                            max_tpot_ms=25))

    full = plan_fleet(at(100.0), load_gpus(), load_offers(), constraints=c, cache=cache)
    loose = plan_fleet(at(90.0), load_gpus(), load_offers(), constraints=c, cache=cache)
    assert full.status == loose.status == "optimal"
    assert full.within_slo_fraction == 1.0 and loose.within_slo_fraction is not None
    assert full.usd_per_hour is not None and loose.usd_per_hour is not None
    assert loose.usd_per_hour < full.usd_per_hour
    assert 0.9 - 1e-7 <= loose.within_slo_fraction < 1.0
    spec = at(90.0).inference
    assert spec is not None and spec.traffic is not None
    outside = sum(bl.outside_fraction * spec.traffic[bl.bucket].share
                  for p in loose.pools for bl in p.buckets)
    assert outside == pytest.approx(1.0 - loose.within_slo_fraction, abs=1e-6)
    assert all(p.utilization <= 1 + 1e-6 for p in loose.pools)
    # every part served within the limits meets them; the rest fits without them
    gpus = {g.slug: g for g in load_gpus()}
    for pool in loose.pools:
        for bl in pool.buckets:
            load = bucket_workload(at(90.0), spec.traffic[bl.bucket])
            assert load.inference is not None
            pinned = replace(load, inference=replace(
                load.inference, tensor_parallel=pool.tensor_parallel,
                pipeline_parallel=pool.pipeline_parallel))
            est = estimate(pinned, gpus[pool.gpu_slug], pool.gpu_count // pool.copies)
            if bl.fraction - bl.outside_fraction > 1e-6:
                assert est.latency_ok is True
            assert est.fits
    # at 100% no option is given a capacity without the limits: the mixed-fleet program
    assert all(o.capacity_any is None for o in pool_options(
        at(100.0), load_gpus(), load_offers(), c, CostSettings(), Memo(cache)))


def test_slo_percentile_validation_names_the_field() -> None:
    w = chat_workload(5)
    assert w.inference is not None
    for bad in (49.9, 100.5):
        bad_w = replace(w, inference=replace(w.inference, slo_percentile=bad))
        assert "inference.slo_percentile" in {f for f, _ in validate_workload(bad_w)}
    single = replace(w, inference=replace(w.inference, traffic=None, slo_percentile=95.0))
    assert "inference.slo_percentile" in {f for f, _ in validate_workload(single)}
    assert not validate_workload(replace(w, inference=replace(w.inference,
                                                              slo_percentile=95.0)))


# -- the time objective: least mean latency under a budget ---------------------------------

def least_latency(counts: Sequence[int], rates: Sequence[float],
                  caps: Sequence[Sequence[float]], lats: Sequence[Sequence[float]],
                  owner: Sequence[int]) -> float | None:
    """The least request-weighted mean latency ``counts`` copies reach (an LP over the split
    of each bucket over the modes of rented options), None when they cannot carry it."""
    n_b, n_m = len(rates), len(owner)
    var = [(b, m) for b in range(n_b) for m in range(n_m)
           if caps[b][m] > 0 and counts[owner[m]] > 0]
    if {b for b, _ in var} != set(range(n_b)):
        return None
    total = sum(rates)
    a_eq = [[1.0 if vb == b else 0.0 for vb, _ in var] for b in range(n_b)]
    a_ub = [[rates[vb] / caps[vb][vm] if owner[vm] == p else 0.0 for vb, vm in var]
            for p in range(len(counts))]
    res = linprog([rates[vb] / total * lats[vb][vm] for vb, vm in var], A_ub=a_ub,
                  b_ub=[c * (1 + 1e-9) for c in counts], A_eq=a_eq, b_eq=[1.0] * n_b,
                  bounds=(0, None), method="highs")
    return float(res.fun) if res.status == 0 else None


def brute_force_time(rates: Sequence[float], costs: Sequence[float],
                     caps: Sequence[Sequence[float]], lats: Sequence[Sequence[float]],
                     owner: Sequence[int], budget: float) -> float | None:
    best: float | None = None
    for counts in itertools.product(range(MAX_COUNT + 1), repeat=len(costs)):
        if sum(c * y for c, y in zip(costs, counts, strict=True)) > budget * (1 + 1e-12):
            continue
        got = least_latency(counts, rates, caps, lats, owner)
        if got is not None and (best is None or got < best):
            best = got
    return best


TimeInstance = tuple[list[float], list[float], list[list[float]], list[list[float]],
                     list[int], float]


@st.composite
def time_instances(draw: st.DrawFn) -> TimeInstance:
    """Options with 1-2 operating points each: a small batch (low latency, low capacity) and
    a large one (more capacity, more latency)."""
    n_p = draw(st.integers(1, 3))
    n_b = draw(st.integers(1, 3))
    rates = [draw(st.floats(0.5, 10.0)) for _ in range(n_b)]
    costs = [draw(st.floats(0.5, 5.0)) for _ in range(n_p)]
    owner = [p for p in range(n_p) for _ in range(draw(st.integers(1, 2)))]
    caps, lats = [], []
    for _ in range(n_b):
        crow, lrow = [], []
        for _ in owner:
            serves = draw(st.booleans()) or len(crow) == 0
            crow.append(draw(st.floats(1.0, 20.0)) if serves else 0.0)
            lrow.append(draw(st.floats(50.0, 5000.0)))
        caps.append(crow)
        lats.append(lrow)
    budget = draw(st.floats(1.0, 20.0))
    return rates, costs, caps, lats, owner, budget


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(time_instances())
def test_time_milp_equals_brute_force(inst: TimeInstance) -> None:
    rates, costs, caps, lats, owner, budget = inst
    best = brute_force_time(rates, costs, caps, lats, owner, budget)
    sol = fm.solve_time(rates, costs, caps, lats, owner, list(range(len(costs))), budget,
                        max_count=MAX_COUNT)
    if best is None:
        assert sol is None
        return
    assert sol is not None and sol.status == "optimal"
    assert fm.within_capacity_modes(sol, rates, caps, owner)
    assert sol.usd_per_hour <= budget * (1 + 1e-9)
    assert sol.mean_latency_ms == pytest.approx(best, rel=1e-6)


@settings(max_examples=30, deadline=None)
@given(time_instances(), st.floats(1.0, 2.0))
def test_a_larger_budget_never_raises_the_latency(inst: TimeInstance, more: float) -> None:
    rates, costs, caps, lats, owner, budget = inst
    types = list(range(len(costs)))
    tight = fm.solve_time(rates, costs, caps, lats, owner, types, budget)
    loose = fm.solve_time(rates, costs, caps, lats, owner, types, budget * more)
    if tight is not None:
        assert loose is not None
        assert loose.mean_latency_ms <= tight.mean_latency_ms * (1 + 1e-6) + 1e-9


def test_seeded_time_fleet_within_the_budget() -> None:
    """Objective time: the least mean latency within the SLOs under the budget; a larger
    budget never raises it; without a budget, the cheapest fleet and a warning; a budget
    below every fleet: infeasible, named."""
    c = ("nvidia-l4", "nvidia-a10g", "nvidia-l40s", "nvidia-a100-sxm4-80gb")
    cache = EngineCache()
    w = chat_workload(10.0)
    last = math.inf
    for budget in (3.0, 6.0, 12.0):
        f = plan_fleet(w, load_gpus(), load_offers(), cache=cache, objective="time",
                       constraints=Constraints(gpu_slugs=c, max_usd_per_hour=budget))
        assert f.status == "optimal" and f.objective == "time"
        assert f.usd_per_hour is not None and f.usd_per_hour <= budget + 1e-9
        assert f.mean_latency_ms is not None and f.single_mean_latency_ms is not None
        assert f.mean_latency_ms <= f.single_mean_latency_ms * (1 + 1e-6)
        assert f.mean_latency_ms <= last * (1 + 1e-6)
        last = f.mean_latency_ms
        assert all(p.utilization <= 1 + 1e-6 for p in f.pools)
    cheap = plan_fleet(w, load_gpus(), load_offers(), cache=cache, objective="time",
                       constraints=Constraints(gpu_slugs=c))
    assert cheap.objective == "cost" and any("max_usd_per_hour" in x for x in cheap.warnings)
    none = plan_fleet(w, load_gpus(), load_offers(), cache=cache, objective="time",
                      constraints=Constraints(gpu_slugs=c, max_usd_per_hour=0.5))
    assert none.status == "infeasible" and any("max_usd_per_hour" in x for x in none.warnings)


# -- routing ------------------------------------------------------------------------------------

class _Pool:
    """The two fields of a FleetPool that routing reads."""

    def __init__(self, name: str, loads: Sequence[BucketLoad]) -> None:
        self.name, self.buckets = name, tuple(loads)


def test_routing_splits_one_prompt_size_by_max_tokens() -> None:
    # Buckets of one prompt size that differ in output go to different pools: a rule on the
    # prompt alone cannot say so (it once printed overlapping prompt ranges for them).
    buckets = (TrafficBucket(200, 60, 0.25), TrafficBucket(200, 1000, 0.25),
               TrafficBucket(3000, 60, 0.25), TrafficBucket(3000, 1000, 0.25))
    a = _Pool("pool-a", [BucketLoad(0, 200, 60, 1.0, 1.0), BucketLoad(2, 3000, 60, 1.0, 1.0)])
    b = _Pool("pool-b", [BucketLoad(1, 200, 1000, 1.0, 1.0),
                         BucketLoad(3, 3000, 1000, 0.6, 1.0)])
    c = _Pool("pool-c", [BucketLoad(3, 3000, 1000, 0.4, 1.0)])
    head, *rules = routing((a, b, c), buckets)  # type: ignore[arg-type]
    assert "max_tokens" in head
    assert rules == [
        "prompts 0-774 tokens, max_tokens 0-244 (bucket 0: 200 in / 60 out) -> pool-a 100%",
        "prompts 0-774 tokens, max_tokens 245+ (bucket 1: 200 in / 1000 out) -> pool-b 100%",
        "prompts 775+ tokens, max_tokens 0-244 (bucket 2: 3000 in / 60 out) -> pool-a 100%",
        "prompts 775+ tokens, max_tokens 245+ (bucket 3: 3000 in / 1000 out) -> "
        "pool-b 60%, pool-c 40%",
    ]


def test_routing_pools_buckets_of_one_size_by_their_shares() -> None:
    buckets = (TrafficBucket(100, 50, 0.5), TrafficBucket(800, 50, 0.3),
               TrafficBucket(800, 50, 0.2))
    a = _Pool("pool-a", [BucketLoad(0, 100, 50, 1.0, 1.0), BucketLoad(1, 800, 50, 0.5, 1.0)])
    b = _Pool("pool-b", [BucketLoad(1, 800, 50, 0.5, 1.0), BucketLoad(2, 800, 50, 1.0, 1.0)])
    head, *rules = routing((a, b), buckets)  # type: ignore[arg-type]
    assert "max_tokens" not in head
    # bucket 1 (0.3) half to each, bucket 2 (0.2) all to b: b takes 0.35 / 0.5 of the cell
    assert rules == ["prompts 0-282 tokens (bucket 0: 100 in / 50 out) -> pool-a 100%",
                     "prompts 283+ tokens (buckets 1, 2: 800 in / 50 out) -> "
                     "pool-b 70%, pool-a 30%"]
