"""The column screen (service/engine/choice/screen.py) against the scalar one it replaces in
recommend() (ranking._screen, one GPU type at a time): the same GPU types pass, with equal
Pending fields (bounds compared bit for bit: the ranking's order and stop tests read them),
and the same failures, for every kind of workload, objective and the constraint fields the
screen reads; on the seeded catalog and on ~300 perturbed clones of it. The table kept per
offer list is checked too: asked again, and asked with other constraints in between."""

from __future__ import annotations

import dataclasses

import pytest

from service.engine.cache import TABLE_LIMITS, EngineCache, Memo
from service.engine.choice import ranking as rk
from service.engine.choice import screen as sc
from service.engine.choice.bounds import Pending
from service.engine.choice.cost import OfferIndex, by_slug
from service.engine.choice.explain import Failure
from service.engine.recommend_types import Constraints, CostSettings, Objective
from service.engine.types import ComputeSpec, GpuSpec, InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import load_gpus, load_offers
from tests.unit.test_ranking_pruning import OBJECTIVES, WORKLOADS, synthetic

MORE = {
    "cnn-train-no-length": Workload(
        kind="training", precision="fp16", model=PRESETS["resnet-50"].model,
        training=TrainingSpec(batch_size=256)),
    "llama-8b-epochs": Workload(
        kind="training", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
        training=TrainingSpec(batch_size=64, seq_len=2048, epochs=3, dataset_samples=1e6)),
    "fp64-matrix-weak": Workload(
        kind="compute", precision="fp64",
        compute=ComputeSpec(total_tflop=2e5, total_gb_moved=1e3, memory_gb=0,
                            fp64_units="matrix", serial_fraction=0.02)),
    "llama-405b-serve": Workload(
        kind="inference", precision="bf16", model=PRESETS["llama-3.1-405b"].model,
        inference=InferenceSpec(prompt_tokens=2048, output_tokens=256, max_ttft_ms=3000,
                                target_requests_per_s=2)),
    # the CNN floor columns at a fixed batch (split-K and L2 residency move with it) and a
    # host/input ceiling; a detector without a layer table keeps the per-GPU floors
    "resnet-50-batch-64-input": Workload(
        kind="inference", precision="int8", model=PRESETS["resnet-50"].model,
        inference=InferenceSpec(batch_size=64, max_latency_ms=50, target_requests_per_s=2000,
                                input_samples_per_s_per_gpu=20000)),
    "resnet-50-fp16-batch-7": Workload(
        kind="inference", precision="fp16", model=PRESETS["resnet-50"].model,
        inference=InferenceSpec(batch_size=7, target_requests_per_s=300)),
    "yolov8-l-serve": Workload(
        kind="inference", precision="int8", model=PRESETS["yolov8-l"].model,
        inference=InferenceSpec(batch_size=8, max_latency_ms=30, target_requests_per_s=500)),
    "fp32-compute-large": Workload(
        kind="compute", precision="fp32",
        compute=ComputeSpec(total_tflop=1e6, total_gb_moved=5e5, memory_gb=900)),
}
CONSTRAINTS = {
    "default": Constraints(),
    "max_gpus": Constraints(max_gpus=16),
    "providers": Constraints(providers=("aws", "gcp")),
    "budget": Constraints(budget_usd=5e5, deadline_hours=400.0),
    "on_prem": Constraints(deployment="on_prem"),
    "vendors_power": Constraints(vendors=("nvidia",), max_power_w=450.0),
    "fast_link": Constraints(require_fast_interconnect=True,
                             exclude_gpu_slugs=("nvidia-h100-sxm5-80gb",)),
}


def _needs_price(c: Constraints) -> bool:
    return any(x is not None for x in (c.budget_usd, c.max_usd_per_hour, c.providers,
                                       c.regions))


def _scalar(workload: Workload, gpus: tuple[GpuSpec, ...], index: OfferIndex,
            c: Constraints, objective: Objective) -> tuple[dict[str, Pending],
                                                           dict[str, Failure]]:
    req = rk.Request(workload, c, CostSettings(), objective, Memo(), _needs_price(c), index)
    passed: dict[str, Pending] = {}
    failed: dict[str, Failure] = {}
    for gpu in by_slug(gpus).values():
        got = rk._screen(req, gpu, index)
        if isinstance(got, Failure):
            failed[gpu.slug] = got
        else:
            passed[gpu.slug] = got
    return passed, failed


def _columns(workload: Workload, gpus: tuple[GpuSpec, ...], index: OfferIndex,
             c: Constraints, objective: Objective, memo: Memo
             ) -> tuple[dict[str, Pending], dict[str, Failure]]:
    cap = c.max_gpus or (rk.CAP_INFERENCE_GPUS if workload.kind == "inference"
                         else rk.CAP_TRAINING_GPUS)
    pending, failed = sc.screen(workload, gpus, index, c, CostSettings(), objective,
                                _needs_price(c), cap, memo)
    return {p.gpu.slug: p for p in pending}, {g.slug: f for g, f in failed}


def _same(a: tuple[dict[str, Pending], dict[str, Failure]],
          b: tuple[dict[str, Pending], dict[str, Failure]]) -> None:
    assert sorted(a[0]) == sorted(b[0])
    assert a[1] == b[1]
    for slug, p in a[0].items():
        q = b[0][slug]
        for f in dataclasses.fields(Pending):
            assert getattr(p, f.name) == getattr(q, f.name), (slug, f.name)


def _catalogs() -> dict[str, tuple[tuple[GpuSpec, ...], OfferIndex]]:
    gpus, offers = synthetic()
    return {"seeded": (tuple(load_gpus()), OfferIndex(load_offers())),
            "perturbed": (gpus, OfferIndex(offers))}


@pytest.mark.parametrize("catalog", ["seeded", "perturbed"])
@pytest.mark.parametrize("name", sorted({**WORKLOADS, **MORE}))
def test_column_screen_equals_scalar_screen(catalog: str, name: str) -> None:
    workload = {**WORKLOADS, **MORE}[name]
    gpus, index = _catalogs()[catalog]
    shared = EngineCache()
    passed = 0
    for c in CONSTRAINTS.values():
        for objective in OBJECTIVES:
            want = _scalar(workload, gpus, index, c, objective)
            # a fresh request's memo each time; the offer index keeps the tables, so every
            # call after the first of a (constraints, cap) reads a kept table
            _same(want, _columns(workload, gpus, index, c, objective, Memo(shared)))
            passed += len(want[0])
    assert passed > 0  # some GPU type passed the screen for this workload


def test_tables_are_kept_per_offer_list_and_read_fields() -> None:
    gpus, index = tuple(load_gpus()), OfferIndex(load_offers())
    workload = WORKLOADS["llama-2-70b-pretrain"]
    memo = Memo(EngineCache())
    first = sc.table(gpus, index, workload, Constraints(), CostSettings(), 1024, False, memo)
    # a budget or deadline is not read by the table: the same one serves
    again = sc.table(gpus, index, workload, Constraints(budget_usd=1e6, deadline_hours=9.0),
                     CostSettings(), 1024, False, memo)
    assert again is first
    # a place filter is: another table
    other = sc.table(gpus, index, workload, Constraints(providers=("aws",)), CostSettings(),
                     1024, True, memo)
    assert other is not first
    # a list (not the caller's kept tuple) is never kept: it could change between calls
    assert sc.table(list(gpus), index, workload, Constraints(), CostSettings(), 1024, False,
                    memo) is not first
    # bounded per index, oldest dropped
    for cap in range(2, 2 + OfferIndex.MAX_SCREENS + 3):
        sc.table(gpus, index, workload, Constraints(), CostSettings(), cap, False, memo)
    assert len(index.screens) == OfferIndex.MAX_SCREENS


def test_cnn_columns_are_kept_per_catalog_and_model_and_bounded() -> None:
    """The CNN layer-table columns: one per (catalog, precision, model, runtime, weight
    precision) in the shared cache, shared by the screen tables of one catalog (other
    constraints, caps, offer lists), at most ``TABLE_LIMITS["cnn_columns"]`` of them however
    many models requests name (a request may bring its own); a model without a layer table
    keeps the scalar floors (None)."""
    gpus = tuple(load_gpus())
    base = MORE["resnet-50-batch-64-input"]
    cache = EngineCache()
    memo = Memo(cache)
    table = sc.table(gpus, OfferIndex(load_offers()), base, Constraints(), CostSettings(), 64,
                     False, memo)
    first = table.cnn_columns(base, memo)
    assert first is not None and table.cnn_columns(base, Memo(cache)) is first
    assert len(first.request_s) == len(gpus)  # every seeded GPU has an INT8 or fallback rate
    other = sc.table(gpus, OfferIndex(load_offers()), base, Constraints(vendors=("nvidia",)),
                     CostSettings(), 8, False, Memo(cache))
    assert other is not table and other.cnn_columns(base, Memo(cache)) is first
    limit = TABLE_LIMITS["cnn_columns"]
    for i in range(limit + 3):
        model = dataclasses.replace(PRESETS["resnet-50"].model, name=f"resnet-50-v{i}",
                                    params=25.6e6 + i)
        got = table.cnn_columns(dataclasses.replace(base, model=model), Memo(cache))
        assert got is not None and got is not first
        assert cache.sizes()["cnn_columns"] <= limit
    assert table.cnn_columns(MORE["yolov8-l-serve"], memo) is None  # no layer table
