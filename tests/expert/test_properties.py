"""Properties an expert checks on any answer, over generated workloads.

Each property is asserted on ``GPU_ADVISOR_PROPERTY_CASES`` workloads (default 60 per family,
seeded: the same draws every run) through the engine on the real seed catalog and quotes:

* more load never needs less money per hour, nor fewer GPUs of the same type;
* a tighter SLO never gets cheaper;
* objective ``time`` is never slower than objective ``cost`` (beyond its stated tolerance);
* every answer's total adds up: ``gpu_count == cost.gpus == replicas x gpus_per_replica``;
* a serving answer runs at its offered load: batch at most the capacity batch, latency at
  most the capacity latency, and the replicas carry the target.

``GPU_ADVISOR_PROPERTY_CASES=400 pytest tests/expert/test_properties.py`` runs a longer
search (minutes)."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import replace

import pytest

from service.engine.choice.ranking import COST_GUARD_TIME, COST_TIE, recommend
from service.engine.recommend_types import Candidate, Constraints, Objective, Recommendation
from service.engine.types import ComputeSpec, InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import load_gpus, load_offers

CASES = int(os.environ.get("GPU_ADVISOR_PROPERTY_CASES", "60"))
SEED = 20
LLMS = ("llama-3.1-8b", "llama-2-7b", "mistral-7b", "llama-2-13b", "mixtral-8x7b",
        "llama-3.1-70b")
OTHERS = ("resnet-50", "bert-large", "yolov8-l")
EPS = 1e-9


def _rec(workload: Workload, objective: Objective, **kw: object) -> Recommendation:
    return recommend(workload, load_gpus(), load_offers(), objective=objective,
                     constraints=Constraints(**kw), limit=3)  # type: ignore[arg-type]


def _serving(rng: random.Random) -> Workload:
    model = rng.choice(LLMS)
    prompt = rng.choice((128, 512, 1024, 2048, 4096))
    out = rng.choice((32, 128, 256, 512))
    slo = rng.random()
    return Workload(
        kind="inference", precision=rng.choice(("bf16", "bf16", "fp8")),
        model=PRESETS[model].model,
        inference=InferenceSpec(
            prompt_tokens=prompt, output_tokens=out,
            max_tpot_ms=rng.choice((40.0, 60.0, 100.0)) if slo < 0.6 else None,
            max_ttft_ms=rng.choice((1000.0, 3000.0)) if slo < 0.3 else None,
            target_requests_per_s=round(rng.uniform(0.2, 40.0), 2)))


def _other_inference(rng: random.Random) -> Workload:
    name = rng.choice(OTHERS)
    prompt = 384 if name == "bert-large" else 0
    return Workload(
        kind="inference", precision=rng.choice(("int8", "fp16")), model=PRESETS[name].model,
        inference=InferenceSpec(prompt_tokens=prompt,
                                max_latency_ms=rng.choice((None, 20.0, 100.0)),
                                target_requests_per_s=round(rng.uniform(10, 3000), 1)))


def _job(rng: random.Random) -> Workload:
    if rng.random() < 0.5:
        return Workload(kind="compute", precision="fp64", compute=ComputeSpec(
            total_tflop=10 ** rng.uniform(2, 6), total_gb_moved=10 ** rng.uniform(2, 5),
            memory_gb=rng.choice((5.0, 20.0, 60.0, 200.0)),
            fp64_units=rng.choice(("vector", "matrix"))))
    model = rng.choice(("gpt-2", "llama-2-7b", "resnet-50", "bert-large"))
    seq = {"resnet-50": None, "bert-large": 512}.get(model, 2048)
    return Workload(kind="training", precision="bf16", model=PRESETS[model].model,
                    training=TrainingSpec(batch_size=rng.choice((64, 256, 1024)), seq_len=seq,
                                          samples=10 ** rng.uniform(5, 7),
                                          activation_checkpointing=rng.random() < 0.5))


def _draws(make: object, salt: int) -> Iterator[Workload]:
    rng = random.Random(SEED * 1000 + salt)
    for _ in range(CASES):
        yield make(rng)  # type: ignore[operator]


def _usd_h(c: Candidate) -> float:
    assert c.cost.usd_per_hour is not None
    return c.cost.usd_per_hour


def _priced_top(rec: Recommendation) -> Candidate | None:
    return next((c for c in rec.recommendations if c.cost.known), None)


def test_totals_add_up_and_serving_runs_at_its_load() -> None:
    """gpu_count is the total paid for; serving answers carry their target at or below the
    capacity batch and latency."""
    checked = 0
    for salt, make in enumerate((_serving, _other_inference, _job)):
        for w in _draws(make, salt):
            for objective in ("cost", "time"):
                for c in _rec(w, objective).recommendations:  # type: ignore[arg-type]
                    checked += 1
                    assert c.gpu_count == c.cost.gpus == c.replicas * c.gpus_per_replica, (
                        w, objective, c.gpu_slug, c.gpu_count, c.replicas, c.gpus_per_replica)
                    est, spec = c.estimate, w.inference
                    if spec is None or spec.target_requests_per_s is None:
                        continue
                    assert est.batch_size and est.capacity_batch_size
                    assert est.batch_size <= est.capacity_batch_size
                    capacity = (est.requests_per_s or 0.0) * c.cost.replicas
                    assert capacity >= spec.target_requests_per_s * (1 - 1e-6), (w, c.gpu_slug)
                    # one copy fewer would not carry it
                    per_copy = est.requests_per_s or 0.0
                    assert capacity - per_copy < spec.target_requests_per_s * (1 + 1e-6)
    assert checked > CASES * 6


@pytest.mark.parametrize("make,salt", [(_serving, 10), (_other_inference, 11)])
def test_more_load_never_costs_less(make: object, salt: int) -> None:
    """Doubling the target never lowers the cheapest answer's $/h (over all GPUs and for each
    GPU type alone), nor the GPUs one type needs."""
    for w in _draws(make, salt):
        spec = w.inference
        assert spec is not None and spec.target_requests_per_s is not None
        more = replace(w, inference=replace(spec,
                                            target_requests_per_s=spec.target_requests_per_s * 2))
        lo, hi = _priced_top(_rec(w, "cost")), _priced_top(_rec(more, "cost"))
        if lo is None:
            continue
        assert hi is not None, w
        assert _usd_h(hi) >= _usd_h(lo) * (1 - COST_TIE) - EPS, (w, lo.gpu_slug, hi.gpu_slug)
        slug = lo.gpu_slug
        lo1 = _priced_top(_rec(w, "cost", gpu_slugs=(slug,)))
        hi1 = _priced_top(_rec(more, "cost", gpu_slugs=(slug,)))
        assert lo1 is not None and hi1 is not None
        assert _usd_h(hi1) >= _usd_h(lo1) * (1 - COST_TIE) - EPS, (w, slug)
        assert hi1.gpu_count >= lo1.gpu_count or _usd_h(hi1) > _usd_h(lo1), (w, slug)


def test_a_tighter_slo_never_gets_cheaper() -> None:
    for w in _draws(_serving, 12):
        spec = w.inference
        assert spec is not None
        loose = replace(w, inference=replace(spec, max_tpot_ms=100.0))
        tight = replace(w, inference=replace(spec, max_tpot_ms=40.0))
        a, b = _priced_top(_rec(loose, "cost")), _priced_top(_rec(tight, "cost"))
        if a is None or b is None:
            assert b is None or a is not None, w  # tight feasible implies loose feasible
            continue
        assert _usd_h(b) >= _usd_h(a) * (1 - COST_TIE) - EPS, (w, a.gpu_slug, b.gpu_slug)


@pytest.mark.parametrize("make,salt", [(_serving, 13), (_job, 14)])
def test_time_is_never_slower_than_cost(make: object, salt: int) -> None:
    """``time``'s answer is within its tolerance (and the cost guard) of the fastest, so never
    slower than ``cost``'s beyond them; ``cost``'s is never dearer than ``time``'s."""
    for w in _draws(make, salt):
        fast, cheap = _rec(w, "time"), _rec(w, "cost")
        if not fast.recommendations or not cheap.recommendations:
            continue
        t, c = fast.recommendations[0], cheap.recommendations[0]
        slack = (1 + Constraints().time_tolerance) * (1 + COST_GUARD_TIME)

        def seconds(x: Candidate) -> float:
            e = x.estimate
            return (e.time_to_complete_hours * 3600 if e.time_to_complete_hours is not None
                    else (e.latency_ms or 0.0) / 1e3)

        assert seconds(t) <= seconds(c) * slack + EPS, (w, t.gpu_slug, c.gpu_slug)
        if t.cost.known and c.cost.known and w.kind == "inference":
            # per unit of work the cost answer is the cheapest
            money = (c.cost.usd_per_million_output_tokens or c.cost.usd_per_1k_requests or 0)
            other = (t.cost.usd_per_million_output_tokens or t.cost.usd_per_1k_requests or 0)
            assert money <= other * (1 + COST_TIE) + EPS, (w, t.gpu_slug, c.gpu_slug)


def test_time_never_pays_ten_times_for_under_ten_percent() -> None:
    """Among an answer's top candidates under ``time``, #1 never costs 10x another that is
    less than 10% slower."""
    for w in _draws(_serving, 15):
        recs = [c for c in _rec(w, "time").recommendations if c.cost.known]
        if len(recs) < 2:
            continue
        top = recs[0]
        for other in recs[1:]:
            slower = (other.estimate.latency_ms or 0) < (top.estimate.latency_ms or 0) * 1.1
            assert not (slower and _usd_h(top) >= 10 * _usd_h(other)), (
                w, top.gpu_slug, other.gpu_slug)
