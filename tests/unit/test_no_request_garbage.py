"""A ranking leaves no reference cycles behind: everything it builds for one request (its memo,
the serving contexts, the training jobs, the options and their estimates) is freed by reference
counting when the answer is dropped, so only the engine's bounded shared tables outlive it and
the collector never has a request's objects to walk (its pauses are the server's latency)."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator

import pytest

from service.engine.cache import EngineCache
from service.engine.choice.ranking import recommend
from service.engine.recommend_types import Objective
from service.engine.types import ComputeSpec, InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import load_gpus, load_offers

GPUS = load_gpus()
OFFERS = load_offers()


def _workloads(step: int) -> list[Workload]:
    """Workloads of every kind; ``step`` varies their amounts, so no answer repeats."""
    return [
        Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                 inference=InferenceSpec(prompt_tokens=700 + step, output_tokens=150 + step,
                                         max_ttft_ms=800, max_tpot_ms=60,
                                         target_requests_per_s=5.0 + step)),
        Workload(kind="inference", precision="int8", model=PRESETS["resnet-50"].model,
                 inference=InferenceSpec(target_requests_per_s=900.0 + step,
                                         max_latency_ms=20)),
        Workload(kind="training", precision="bf16", model=PRESETS["mistral-7b"].model,
                 training=TrainingSpec(batch_size=256 + step, seq_len=2048, tokens=1e10)),
        Workload(kind="compute", precision="fp64", compute=ComputeSpec(
            total_tflop=1e6 * (1 + step), total_gb_moved=1e5, memory_gb=300.0)),
    ]


@pytest.fixture
def saving_garbage() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


@pytest.mark.parametrize("objective", ["cost", "balanced"])
def test_a_ranking_leaves_no_reference_cycles(objective: Objective,
                                              saving_garbage: None) -> None:
    cache = EngineCache()
    for workload in _workloads(0):  # fills the shared tables
        recommend(workload, GPUS, OFFERS, objective=objective, cache=cache)
    # what the warm-up left is freed for good (not saved: a saved cycle cleared from
    # gc.garbage would be found again below), e.g. numba's once-per-process loading of the
    # compiled serving loops
    gc.set_debug(0)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    for step in (1, 2):
        for workload in _workloads(step):
            rec = recommend(workload, GPUS, OFFERS, objective=objective, cache=cache)
            assert rec.recommendations
            del rec
    found = gc.collect()
    kinds = Counter(type(o).__name__ for o in gc.garbage)
    assert found == 0, f"{found} objects freed only by the collector: {kinds.most_common(8)}"
