"""The column floors of transformer serving (service/engine/choice/inference_floors.py): never
above what the estimate reaches, tight against the serving model's own batch-1 latency, and
the same floats whether a GPU is floored alone or among the whole catalog."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from service.engine.cache import EngineCache, Memo
from service.engine.choice import bounds as bd
from service.engine.choice import inference_floors as ifl
from service.engine.choice import ranking as rk
from service.engine.choice.cost import OfferIndex
from service.engine.physics import serving as inf
from service.engine.physics.estimate import estimate, workload_rate
from service.engine.recommend_types import Constraints, CostSettings, Offer
from service.engine.types import InferenceSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import gpus_by_slug, load_gpus


def _serve(model: str, precision: str = "bf16", **spec: object) -> Workload:
    base: dict[str, object] = {"prompt_tokens": 1024, "output_tokens": 256}
    base.update(spec)
    return Workload(kind="inference", precision=precision,  # type: ignore[arg-type]
                    model=PRESETS[model].model, inference=InferenceSpec(**base))  # type: ignore[arg-type]


WORKLOADS = {
    "llama-8b-chat": _serve("llama-3.1-8b", max_ttft_ms=500, max_tpot_ms=50,
                            target_requests_per_s=20),
    "llama-70b-fp8-batch16": _serve("llama-3.1-70b", "fp8", batch_size=16),
    "mixtral-long-prompt": _serve("mixtral-8x7b", prompt_tokens=12000, output_tokens=64),
    "bert-encoder": _serve("bert-large", prompt_tokens=384, output_tokens=0, batch_size=8),
    "llamacpp-8b": _serve("llama-3.1-8b", "fp16", runtime="llama.cpp", prompt_tokens=512,
                          output_tokens=128, batch_size=1),
    "pinned-tp2": _serve("llama-2-13b", tensor_parallel=2),
    "pinned-pp8": _serve("llama-3.1-8b", pipeline_parallel=8),
    "pinned-tp4-small": _serve("gpt-2", tensor_parallel=4),
}
COUNTS = (1, 2, 4, 8)


def _table(workload: Workload, gpus: list, memo: Memo, cap: int = 8) -> ifl.Table:
    spec = workload.inference
    assert spec is not None
    rated = [(g, workload_rate(workload, g)) for g in gpus]
    rated = [(g, r) for g, r in rated if r is not None]
    cols = ifl.columns([g for g, _ in rated], [r for _, r in rated], spec.runtime, memo)
    return ifl.table(workload, cols, cap, memo)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_floors_never_exceed_the_estimate_and_stay_tight(name: str) -> None:
    workload = WORKLOADS[name]
    shared = EngineCache()
    memo = Memo(shared)
    gpus = load_gpus()
    table = _table(workload, gpus, memo)
    ratios: list[float] = []
    for gpu in gpus:
        rate = workload_rate(workload, gpu)
        if rate is None:
            continue
        for n in COUNTS:
            floor = table.least_latency_ms(gpu.slug, n)
            assert floor is not None
            # the serving model's own least latency at the smallest batch over the count's
            # splits: the floor's argument holds split by split
            exact = inf.context(workload, gpu, rate.precision_used, rate, Memo(shared)
                                ).least_latency_ms(n, workload.inference.batch_size or 1)
            if math.isinf(exact):
                continue
            assert floor <= exact * (1 + 1e-12), (gpu.slug, n, floor, exact)
            ratios.append(floor / exact)
            est = estimate(workload, gpu, n, memo=Memo(shared))
            if est.fits and est.latency_ms is not None:
                assert floor <= est.latency_ms * (1 + 1e-12), (gpu.slug, n)
    assert len(ratios) >= 100
    # no tile or wave quantization: a little below the model, not a different figure (the
    # loosest are CUDA-core GPUs, whose tile-quantized single-row GEMMs the floor takes at
    # their FLOPs)
    assert statistics.median(ratios) >= 0.95, statistics.median(ratios)
    assert sum(r >= 0.9 for r in ratios) >= 0.9 * len(ratios)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_a_gpu_alone_gets_the_floats_it_gets_among_the_catalog(name: str) -> None:
    workload = WORKLOADS[name]
    memo = Memo(EngineCache())
    gpus = load_gpus()
    whole = _table(workload, gpus, memo)
    for gpu in gpus:
        if gpu.slug not in whole.index:
            continue
        alone = _table(workload, [gpu], memo)
        i = whole.index[gpu.slug]
        assert alone.request_s[0] == whole.request_s[i]
        for n in COUNTS:  # the degrees held by the GPU's node (the whole table has more)
            assert alone.least_latency_ms(gpu.slug, n) == whole.least_latency_ms(gpu.slug, n)


def test_the_request_floor_is_the_serving_models() -> None:
    """The GPU-seconds floor of a request is :meth:`ServingModel.request_floor_s`, float for
    float, on every catalog GPU."""
    for workload in WORKLOADS.values():
        memo = Memo(EngineCache())
        table = _table(workload, load_gpus(), memo)
        for gpu in load_gpus():
            rate = workload_rate(workload, gpu)
            if rate is None:
                continue
            roof = inf.ServingModel(workload, gpu, rate, 1, 1.0, memo=memo)
            assert table.request_s[table.index[gpu.slug]] == roof.request_floor_s()


def test_count_floors_read_the_screens_table() -> None:
    """Once the screen built a table, a count's latency floor is its least over the TP
    degrees the count holds (a small count cannot reach a large degree's latency)."""
    workload = WORKLOADS["llama-8b-chat"]
    memo = Memo(EngineCache())
    gpus = load_gpus()
    h100 = next(g for g in gpus if g.slug == "nvidia-h100-sxm5-80gb")
    table = bd.floor_table(workload, memo, 8, lambda: _table(workload, gpus, memo))
    assert table is not None
    one, eight = (bd.count_latency_floor(workload, h100, n, memo) for n in (1, 8))
    assert eight < one
    j1, j8 = table.tps.index(1), table.tps.index(8)
    i = table.index[h100.slug]
    assert one == pytest.approx(table.latency_ms[j1, i], rel=1e-8)
    assert eight == pytest.approx(table.latency_ms[:j8 + 1, i].min(), rel=1e-8)


@pytest.mark.parametrize("name", ["pinned-pp8", "pinned-tp4-small", "pinned-tp2", "llama-8b-chat"])
def test_a_types_floor_is_below_every_count_it_bounds(name: str) -> None:
    """The floor a GPU type is screened by bounds each of its counts: with a pinned split,
    the counts below the split's size run the other splits, which may be faster (8 pinned
    pipeline stages on H100: a count of 4 runs TP 4 at ~870 ms, where the pinned split's
    floor is ~1,830 ms; the type's floor must not be the pinned one's)."""
    workload = WORKLOADS[name]
    shared = EngineCache()
    memo = Memo(shared)
    gpus = load_gpus()
    table = _table(workload, gpus, memo)
    types = table.least_latency_column(8)
    checked = 0
    for gpu in gpus:
        if gpu.slug not in table.index:
            continue
        floor = float(types[table.index[gpu.slug]])
        for n in COUNTS:
            for latency_mode in (False, True):
                est = estimate(workload, gpu, n, memo=Memo(shared), latency_mode=latency_mode)
                if est.fits and est.latency_ms is not None:
                    assert floor <= est.latency_ms * (1 + 1e-12), (gpu.slug, n, latency_mode)
                    checked += 1
    assert checked >= 50


def test_cost_floors_pay_for_whole_gpus() -> None:
    """With a target, an option pays for whole GPUs, at least the smallest fitting count and
    at least the GPUs the target keeps busy at the request floor (2.25 GPUs of work: 3; 0.5
    with a smallest count of 2: 2), and a count's own floor for its replicas of that size."""
    w = Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                 inference=InferenceSpec(prompt_tokens=512, output_tokens=256,
                                         target_requests_per_s=10.0))
    got = bd.inference_floors(w, np.array([0.225, 0.05, 0.95]), np.zeros(3),
                              np.array([1.0, 2.0, 4.0]))
    paid = got[0].paid_per_gpu
    assert paid > 0
    assert [round(f.gpu_hours / paid, 6) for f in got] == [3.0, 2.0, 10.0]
    assert got[0].gpus_needed == pytest.approx(2.25)
    # a count's floor: its own replicas (2.25 GPUs of work on 2 per replica: 4 GPUs)
    pending = bd.Pending(load_gpus()[0], (), None, 1, (1, 2, 4), 8, 0, 0.0, 0.0, 0.0, got[0])
    assert bd.count_floors("inference", pending, 2, 1.0)[0] == pytest.approx(4 * paid)
    assert bd.count_floors("inference", pending, 4, 1.0)[0] == pytest.approx(4 * paid)
    assert bd.count_floors("inference", pending, 1, 1.0)[0] == pytest.approx(3 * paid)


def test_whole_gpu_floors_hold_for_instances_of_odd_sizes() -> None:
    """An option rents its offer's instances: a 3-GPU instance runs a count (3) that is not
    one of the searched ones (1, 2, 4, 8). A floor rounding the target's GPUs up to a
    multiple of a searched count (4 for 2.5 GPUs of work on counts 2, 4, 8) would sit above
    that option's cost and let branch and bound drop the cheapest GPU (a review found it:
    the pruned search named the L40S where the exhaustive one names the L40). Whole GPUs
    hold: the pruned answer is the exhaustive one."""
    by = gpus_by_slug()
    l40, l40s = by["nvidia-l40"], by["nvidia-l40s"]

    def workload(target: float) -> Workload:
        return Workload(kind="inference", precision="int8", model=PRESETS["llama-2-70b"].model,
                        inference=InferenceSpec(prompt_tokens=2048, output_tokens=16,
                                                target_requests_per_s=target,
                                                tensor_parallel=1, pipeline_parallel=3))

    offers = [Offer(quote_id=1, gpu_slug=l40.slug, provider="x", region="r",
                    instance_type="l40x3", gpu_count=3, pricing="on_demand",
                    price_usd_per_hour=3.0),
              Offer(quote_id=2, gpu_slug=l40s.slug, provider="x", region="r",
                    instance_type="l40sx3", gpu_count=3, pricing="on_demand",
                    price_usd_per_hour=3.5)]
    # the target that keeps 2.5 L40s busy at the request floor
    index = OfferIndex(offers[:1])
    req = rk.Request(workload(1.0), Constraints(), CostSettings(), "cost", Memo(), False, index)
    pending = rk._screen(req, l40, index)
    assert isinstance(pending, bd.Pending) and pending.counts[0] == 2 and 3 not in pending.counts
    target = 2.5 / pending.floor.gpus_needed
    pruned = rk.recommend(workload(target), [l40, l40s], offers, objective="cost", limit=1)
    full = rk.recommend(workload(target), [l40, l40s], offers, objective="cost", limit=1,
                        exhaustive=True)
    got = [(c.gpu_slug, c.gpu_count) for c in pruned.recommendations]
    assert got == [(c.gpu_slug, c.gpu_count) for c in full.recommendations]
    assert got == [(l40.slug, 3)]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_a_gpus_counts_read_at_once_are_each_counts_floor(name: str) -> None:
    """Table.least_latencies_ms (a GPU's counts at once, the balanced bound's, and each
    count's through least_latency_ms) is the least over the TP degrees each count holds, or
    the pinned degree's where the count and the node hold the pinned split."""
    workload = WORKLOADS[name]
    memo = Memo(EngineCache())
    table = _table(workload, load_gpus(), memo, cap=64)
    counts = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64]
    pinned = table.pinned
    for slug, i in table.index.items():
        column = [float(v) for v in table.latency_ms[:, i]]
        want = []
        for n in counts:
            if pinned is not None and pinned[0] * pinned[1] <= n \
                    and table.per_node[i] >= pinned[0]:
                want.append(column[table.tps.index(pinned[0])])
            else:
                want.append(min((v for t, v in zip(table.tps, column, strict=True) if t <= n),
                                default=math.inf))
        assert table.least_latencies_ms(slug, counts) == want, slug
        assert [table.least_latency_ms(slug, n) for n in counts] == want, slug
    assert table.least_latencies_ms("no-such-gpu", counts) is None
    assert table.least_latency_ms("no-such-gpu", 1) is None
