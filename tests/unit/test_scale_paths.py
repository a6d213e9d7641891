"""The large-catalog shortcuts give the answers of the plain computations they replace.

Each shortcut (compute jobs' smallest count, the offer index's usable subsets and cheapest
GPU-hour, the per-(node size, cap) count list, the one-pass rejection list) exists for the
5,000-GPU figures; these tests pin that none of them changes a result, and the server
start-up's contract (warm_up_and_freeze: snapshots built, the heap frozen once, nothing frozen
when the database cannot be read).
"""

from __future__ import annotations

import dataclasses
import gc
import random

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from service.app.serving import GC_GENERATION2_THRESHOLD, warm_up_and_freeze
from service.core.config import Settings
from service.engine.cache import EngineCache, Memo
from service.engine.choice import cost as co
from service.engine.physics import estimate as es
from service.engine.recommend_types import Constraints, CostSettings
from service.engine.types import ComputeSpec, Workload
from service.workloads.caches import AppCaches
from tests.unit.catalog_data import load_gpus, load_offers


def _compute(memory_gb: float) -> Workload:
    return Workload(kind="compute", precision="fp64",
                    compute=ComputeSpec(total_tflop=1e4, total_gb_moved=1e3, memory_gb=memory_gb))


def test_compute_smallest_count_equals_the_bisection() -> None:
    rng = random.Random(7)
    gpus = load_gpus()
    sizes = [rng.uniform(0.1, 3e5) for _ in range(150)] + [1.0, 79.0, 80.0, 160.0, 1e6]
    checked = 0
    for gpu in gpus:
        for gb in sizes:
            w = _compute(gb)
            direct = es._min_gpus(w, gpu, Memo())
            assert es.min_gpus_to_fit(w, gpu, Memo()) == direct, (gpu.slug, gb)
            checked += direct is not None and direct > 1
    assert checked > 500  # the multi-GPU branch, not only "fits on one"


def test_compute_smallest_count_at_exact_boundaries() -> None:
    """Memory sized so that a searched count fits with no slack: the rounding edge."""
    for gpu in load_gpus():
        room = es.mem.usable_memory_bytes(gpu) / es.c.GB - es.c.FRAMEWORK_OVERHEAD_GB
        for n in es.gpu_count_candidates(gpu)[:6]:
            for gb in (room * n, room * n * (1 + 1e-12), room * n * (1 - 1e-12)):
                w = _compute(gb)
                assert es.min_gpus_to_fit(w, gpu) == es._min_gpus(w, gpu, Memo()), (gpu.slug, n)


def _random_constraints(rng: random.Random) -> Constraints:
    providers = sorted({o.provider for o in load_offers()})
    regions = sorted({o.region for o in load_offers()})
    return Constraints(
        providers=tuple(rng.sample(providers, 2)) if rng.random() < 0.4 else None,
        regions=tuple(rng.sample(regions, 3)) if rng.random() < 0.3 else None,
        deployment=rng.choice([None, "cloud", "on_prem", "edge"]),
        pricing=tuple(rng.sample(["on_demand", "spot", "reserved_1y", "reserved_3y"],
                                 rng.randint(1, 4))),  # type: ignore[arg-type]
    )


def test_offer_index_answers_as_the_plain_functions() -> None:
    rng = random.Random(11)
    offers = load_offers()
    index = co.OfferIndex(offers)
    grouped = co.group_offers(offers)
    settings = CostSettings()
    nonempty = 0
    for _ in range(40):
        c = _random_constraints(rng)
        for gpu in load_gpus():
            usable = co.usable_offers(grouped.get(gpu.slug, ()), c)
            assert index.usable(gpu.slug, c) == usable
            nonempty += bool(usable)
            for smallest, cap in ((1, 64), (2, 1024), (16, 64)):
                want = co.cheapest_gpu_hour(gpu, usable, smallest, cap, settings)
                # asked twice: the remembered answer is the computed one
                assert index.cheapest_gpu_hour(gpu, c, smallest, cap, settings) == want
                assert index.cheapest_gpu_hour(gpu, c, smallest, cap, settings) == want
    assert nonempty > 100


def test_offer_index_is_reused_only_for_the_same_list() -> None:
    cache = EngineCache()
    offers = load_offers()
    first = co.offer_index(offers, Memo(cache))
    assert co.offer_index(offers, Memo(cache)) is first
    other = list(offers)  # equal contents, another list: its own index
    assert co.offer_index(other, Memo(cache)) is not first
    # a generator is consumed once: a fresh index, nothing cached under it
    assert co.offer_index(iter(offers), Memo(cache)).groups == first.groups
    assert cache.sizes()["offer_index"] <= 2  # TABLE_LIMITS: whole offer lists are large


def test_offer_index_changes_with_the_prices() -> None:
    offers = load_offers()
    cheaper = [dataclasses.replace(o, price_usd_per_hour=o.price_usd_per_hour / 2)
               if o.price_usd_per_hour is not None else o for o in offers]
    cache = EngineCache()
    gpu = next(g for g in load_gpus() if co.group_offers(offers).get(g.slug))
    a = co.offer_index(offers, Memo(cache)).cheapest_gpu_hour(gpu, Constraints(), 1, 64,
                                                              CostSettings())
    b = co.offer_index(cheaper, Memo(cache)).cheapest_gpu_hour(gpu, Constraints(), 1, 64,
                                                               CostSettings())
    assert a is not None and b is not None and b == pytest.approx(a / 2)


def test_count_candidates_memoized_equal_plain() -> None:
    memo = Memo(EngineCache())
    for gpu in load_gpus():
        for cap in (1, 8, 64, 1024, 4096):
            assert es.gpu_count_candidates(gpu, cap, memo) == es.gpu_count_candidates(gpu, cap)


def test_warm_up_builds_the_snapshots_and_freezes_once(engine: Engine, settings: Settings) -> None:
    before, thresholds = gc.get_freeze_count(), gc.get_threshold()
    try:
        assert warm_up_and_freeze(engine, settings, AppCaches()) is True
        assert gc.get_freeze_count() > before
        assert gc.get_threshold()[2] == GC_GENERATION2_THRESHOLD
    finally:
        gc.unfreeze()  # this test process keeps collecting as before
        gc.set_threshold(*thresholds)


def test_warm_up_without_a_database_freezes_nothing() -> None:
    broken = create_engine("sqlite:////nonexistent-dir/x/y.db")
    before, thresholds = gc.get_freeze_count(), gc.get_threshold()
    try:
        url = "sqlite:////nonexistent-dir/x/y.db"
        assert warm_up_and_freeze(broken, Settings(database_url=url), AppCaches()) is False
        assert gc.get_freeze_count() == before
    finally:
        gc.set_threshold(*thresholds)
