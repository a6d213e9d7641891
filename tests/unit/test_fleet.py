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
from service.engine.choice.fleet import bucket_workload, plan_fleet, pool_options
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
