"""The array form of the serving model (service/engine/physics/batched.py) against the scalar
reference (ServingModel, batch by batch): random LLM and encoder workloads of the differential
generator, every catalog GPU, every TP/PP split the engine builds, random batches. Each phase
figure agrees within 1e-12 relative, and so do requests/s and the capacity and operating
batches the searches pick from them.

``GPU_ADVISOR_BATCHED_CASES`` sets how many workloads (default 60; CI's longer run: more)."""

from __future__ import annotations

import math
import os
import random

import numpy as np
import pytest

from service.engine.cache import EngineCache, Memo
from service.engine.physics import batched
from service.engine.physics import serving as inf
from service.engine.physics.estimate import operating_batch
from service.engine.physics.performance import peak_rate
from service.engine.types import GenericModel, Workload
from service.workloads.schemas import WorkloadSpec
from tests.differential_bodies import _encoder_inference, _llm_inference
from tests.unit.catalog_data import load_gpus

CASES = int(os.environ.get("GPU_ADVISOR_BATCHED_CASES", "60"))
REL = 1e-12


def _workloads(n: int, seed: int = 25) -> list[Workload]:
    r = random.Random(seed)
    out: list[Workload] = []
    while len(out) < n:
        body = _llm_inference(r) if r.random() < 0.8 else _encoder_inference(r)
        try:
            out.append(WorkloadSpec.model_validate(body).to_engine(require_amount=False))
        except Exception:  # noqa: BLE001 - an inconsistent draw: the generator's, not ours
            continue
    return out


def _close(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=REL, abs_tol=1e-300)


def _phase_pairs(roof: inf.ServingModel, batches: list[int]) -> list[tuple[str, float, float]]:
    arr = np.array(batches, dtype=np.float64)
    if roof.decoder:
        named = {"prefill": batched.prefill(roof, arr), "decode": batched.decode(roof, arr),
                 "tpot": batched.tpot(roof, arr)}
    else:
        named = {"prefill": batched.encode(roof, arr)}
    pairs = []
    for i, b in enumerate(batches):
        pre, dec, per_token = roof.phases(b)
        scalar = {"prefill": pre, "decode": dec, "tpot": per_token}
        for name, phase in named.items():
            ref = scalar[name]
            assert ref is not None
            for part in range(4):
                pairs.append((f"{name}[{part}] b={b}", float(phase[part][i]), ref[part]))
    return pairs


@pytest.mark.parametrize("index", range(CASES))
def test_array_model_matches_the_scalar_model(index: int) -> None:
    workload = _workloads(CASES)[index]
    if isinstance(workload.model, GenericModel):
        pytest.skip("CNNs have no array form")
    r = random.Random(index)
    gpus = load_gpus()
    cache = EngineCache()
    checked = 0
    for gpu in r.sample(gpus, 6):
        rate = peak_rate(gpu, workload.precision)
        if rate is None:
            continue
        ctx = inf.Context(workload, gpu, rate.precision_used, rate, Memo(cache))
        for tp, pp in ctx.splits(16):
            roof = ctx.model(tp, pp)
            batches = sorted({1, 2, *(r.randint(1, 1024) for _ in range(12))})
            for label, got, want in _phase_pairs(roof, batches):
                assert _close(got, want), (gpu.slug, tp, pp, label, got, want)
            spec = workload.inference
            assert spec is not None
            rates = ctx.requests_per_s_at(tp, pp, batches)
            for b, got in zip(batches, rates, strict=True):
                want = inf.requests_per_s(spec, roof.timing(b), pp, 1)
                assert _close(got, want), (gpu.slug, tp, pp, b, got, want)
            checked += 1
    assert checked > 0


def _reference_operating_batch(ctx: inf.Context, tp: int, pp: int, capacity: int,
                               load: float) -> int:
    """The batch-by-batch search operating_batch replaced (the scalar oracle)."""
    spec = ctx.workload.inference
    assert spec is not None

    def covers(b: int) -> bool:
        return inf.requests_per_s(spec, ctx.timing(tp, pp, b), pp, 1) >= load * (1 - 1e-9)

    if capacity <= 1 or covers(1):
        return 1
    below = 1
    for g in sorted(inf.batch_grid(capacity)):
        if g > 1 and covers(g):
            return next(b for b in range(below + 1, g + 1) if b == g or covers(b))
        below = g
    return capacity


def _reference_capacity(ctx: inf.Context, tp: int, pp: int) -> int | None:
    top = inf.clamp_batch(ctx.limit_batch(tp, pp), ctx.batch_cap(tp, pp))
    if top is None:
        return None
    spec = ctx.workload.inference
    assert spec is not None
    floor = max(1, math.ceil(top / inf.CAPACITY_GRID_STEP))
    grid = set(range(floor, top + 1)) | inf.batch_grid(floor)
    return max(sorted(grid), key=lambda b: inf.requests_per_s(spec, ctx.timing(tp, pp, b), pp, 1))


@pytest.mark.parametrize("index", range(0, CASES, 3))
def test_searches_pick_the_reference_batches(index: int) -> None:
    workload = _workloads(CASES)[index]
    if isinstance(workload.model, GenericModel) or workload.inference is None:
        pytest.skip("CNNs have no array form")
    r = random.Random(1000 + index)
    for gpu in r.sample(load_gpus(), 4):
        rate = peak_rate(gpu, workload.precision)
        if rate is None:
            continue
        ctx = inf.Context(workload, gpu, rate.precision_used, rate, None)
        for tp, pp in ctx.splits(8):
            if not ctx.fits(tp, pp, 1):
                continue
            capacity = ctx.capacity_batch(tp, pp)
            assert capacity == _reference_capacity(ctx, tp, pp), (gpu.slug, tp, pp)
            if capacity is None:
                continue
            top = inf.requests_per_s(workload.inference, ctx.timing(tp, pp, capacity), pp, 1)
            for share in (0.01, 0.3, 0.77, 1.0):
                load = top * share
                assert operating_batch(ctx, tp, pp, capacity, load) == (
                    _reference_operating_batch(ctx, tp, pp, capacity, load)), (gpu.slug, share)


@pytest.mark.parametrize("name", ["llm-serving", "llm-training", "cnn-edge", "fp64-simulation",
                                  "too-big"])
def test_a_recommendation_leaves_no_reference_cycles(name: str) -> None:
    """Every object a recommendation builds is freed by reference counting when it returns
    (no per-request cycles for the collector to find: its full passes were the pauses of a
    long soak). Fails if an inference context keeps the request's memo that keeps it."""
    import gc

    from service.engine.choice.ranking import recommend
    from service.workloads.examples import EXAMPLES
    from tests.unit.catalog_data import load_offers

    example = EXAMPLES[name]
    workload = WorkloadSpec.model_validate(example["workload"]).to_engine()
    gpus, offers, cache = load_gpus(), load_offers(), EngineCache()
    recommend(workload, gpus, offers, cache=cache)  # fills the shared tables first
    gc.collect()
    gc.disable()
    try:
        recommend(workload, gpus, offers, objective=example.get("objective", "balanced"),
                  cache=cache)
        assert gc.collect() == 0
    finally:
        gc.enable()
