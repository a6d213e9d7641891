"""Ranking: determinism, tiers, constraints and rejections, Pareto, balanced score, snippets."""

from __future__ import annotations

import math
import random
import re

import pytest
import yaml

from service.engine.choice.ranking import recommend
from service.engine.recommend_types import Constraints, Objective, Recommendation
from service.engine.types import ComputeSpec, InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import load_gpus, load_offers, skypilot_names

FP64 = Workload(
    kind="compute",
    precision="fp64",
    compute=ComputeSpec(total_tflop=5e6, total_gb_moved=2e6, memory_gb=60),
)
LLAMA_8B_SERVE = Workload(
    kind="inference",
    precision="bf16",
    model=PRESETS["llama-2-7b"].model,
    inference=InferenceSpec(
        prompt_tokens=1024,
        output_tokens=256,
        max_ttft_ms=1000,
        max_tpot_ms=60,
        target_requests_per_s=20,
    ),
)
GPT2_TRAIN = Workload(
    kind="training",
    precision="bf16",
    model=PRESETS["gpt-2"].model,
    training=TrainingSpec(batch_size=512, seq_len=1024, tokens=1e10),
)


def _rec(workload: Workload, objective: Objective = "cost", **kw: object) -> Recommendation:
    return recommend(
        workload,
        load_gpus(),
        load_offers(),
        objective=objective,
        constraints=Constraints(**kw),
        limit=100,  # type: ignore[arg-type]
        skypilot_names=skypilot_names(),
    )


@pytest.mark.parametrize("objective", ["cost", "time", "balanced", "energy"])
@pytest.mark.parametrize("workload", [FP64, LLAMA_8B_SERVE, GPT2_TRAIN])
def test_deterministic_and_input_order_independent(
    workload: Workload, objective: Objective
) -> None:
    first = _rec(workload, objective)
    assert first == _rec(workload, objective)
    gpus, offers = load_gpus(), load_offers()
    rng = random.Random(7)
    rng.shuffle(gpus)
    rng.shuffle(offers)
    shuffled = recommend(
        workload, gpus, offers, objective=objective, limit=100, skypilot_names=skypilot_names()
    )
    assert shuffled == first
    assert [c.rank for c in first.recommendations] == list(range(1, len(first.recommendations) + 1))


@pytest.mark.parametrize("objective", ["cost", "balanced"])
def test_unpriced_gpus_rank_after_priced_ones(objective: Objective) -> None:
    rec = _rec(FP64, objective)
    known = [c.cost.known for c in rec.recommendations]
    assert True in known and False in known
    assert known == sorted(known, reverse=True)
    unpriced = [c for c in rec.recommendations if not c.cost.known]
    assert all(any(w.code == "no_price" for w in c.warnings) for c in unpriced)
    assert all(c.cost.usd_per_hour is None and not c.pareto_optimal for c in unpriced)


def test_scores_are_sorted_within_the_priced_tier() -> None:
    """Balanced and energy rank by score; cost and time within their tolerance of the best
    left (a cheaper answer inside time's tolerance, a faster one inside cost's tie, may go
    first), never beyond it."""
    from service.engine.choice.ranking import COST_GUARD_TIME, COST_TIE, TIME_TOLERANCE
    slack = {"cost": 1 + COST_TIE, "time": (1 + TIME_TOLERANCE) * (1 + COST_GUARD_TIME),
             "energy": 1.0, "balanced": 1.0}
    for objective in ("cost", "time", "energy", "balanced"):
        rec = _rec(GPT2_TRAIN, objective)  # type: ignore[arg-type]
        scores = [c.score for c in rec.recommendations if c.cost.known]
        assert len(scores) >= 3
        for i, s in enumerate(scores):
            assert s <= min(scores[i:]) * slack[objective] * (1 + 1e-9), (objective, scores)
        if objective in ("energy", "balanced"):
            assert scores == sorted(scores)


def test_budget_rejection_gives_the_percentage() -> None:
    rec = _rec(FP64, "cost", budget_usd=10.0, max_gpus=8)
    assert not rec.recommendations and rec.warnings
    h100 = next(r for r in rec.rejected if r.gpu_slug == "nvidia-h100-sxm5-80gb")
    assert h100.code == "budget"
    assert h100.fix.kind == "budget" and h100.fix.field == "constraints.budget_usd"
    m = re.search(r"over budget by ([\d,]+)%", h100.fix.detail)
    assert m is not None
    best = _rec(FP64, "cost", max_gpus=8, gpu_slugs=("nvidia-h100-sxm5-80gb",))
    total = best.recommendations[0].cost.total_usd
    assert total is not None
    assert int(m.group(1).replace(",", "")) == round((total / 10.0 - 1) * 100)
    assert h100.fix.value == math.ceil(total)  # the budget that would be enough
    # no quote: a budget cannot be checked, so unpriced GPUs are rejected, not ranked
    assert any(r.code == "no_quote" for r in rec.rejected)


def test_deadline_rejection_and_more_gpus_to_meet_it() -> None:
    one = _rec(FP64, "cost", max_gpus=1, gpu_slugs=("nvidia-h100-sxm5-80gb",))
    hours = one.recommendations[0].estimate.time_to_complete_hours
    assert hours is not None
    rec = _rec(
        FP64, "cost", max_gpus=1, deadline_hours=hours / 2, gpu_slugs=("nvidia-h100-sxm5-80gb",)
    )
    (rej,) = [r for r in rec.rejected if r.gpu_slug == "nvidia-h100-sxm5-80gb"]
    assert rej.code == "deadline" and rej.fix.kind == "deadline"
    assert "over deadline" in rej.fix.detail and "100%" in rej.fix.detail
    assert rej.fix.value == pytest.approx(hours, abs=0.1)
    more = _rec(
        FP64, "cost", max_gpus=8, deadline_hours=hours / 2, gpu_slugs=("nvidia-h100-sxm5-80gb",)
    )
    top = more.recommendations[0]
    assert top.gpu_count >= 2 and (top.estimate.time_to_complete_hours or 0) <= hours / 2


def test_constraint_filters_and_codes() -> None:
    rec = _rec(GPT2_TRAIN, "cost", require_fast_interconnect=True, vendors=("NVIDIA",))
    slugs = {c.gpu_slug for c in rec.recommendations}
    assert "nvidia-l4" not in slugs and "amd-mi300x" not in slugs
    codes = {r.gpu_slug: r.code for r in rec.rejected}
    assert codes["amd-mi300x"] == "constraint"
    assert codes["nvidia-l4"] == "interconnect"
    rec = _rec(GPT2_TRAIN, "cost", providers=("lambda",))
    assert all(c.offer is not None and c.offer.provider == "lambda" for c in rec.recommendations)


def test_latency_rejection() -> None:
    rec = _rec(LLAMA_8B_SERVE, "cost")
    codes = {r.gpu_slug: r for r in rec.rejected}
    jetson = codes["nvidia-jetson-orin-nx-16gb"]
    # 7B in bf16 does not fit one 16 GB Orin NX, and a single-module device never gets a
    # multi-GPU plan or fix: a memory rejection with quantized weights (or a bigger module)
    assert jetson.code == "memory" and jetson.fix.kind == "weight_precision"
    kinds = {f.kind for f in (jetson.fix, *jetson.other_fixes)}
    assert not kinds & {"gpu_count", "max_gpus", "multi_node_offer"}
    assert any(r.code == "latency" and "ms > max" in r.reason for r in rec.rejected)
    for cand in rec.recommendations:
        assert cand.estimate.latency_ok is True
        rps = cand.estimate.requests_per_s or 0
        assert rps * cand.cost.replicas >= 20


def test_max_gpus_counts_all_replicas() -> None:
    rec = _rec(LLAMA_8B_SERVE, "cost", max_gpus=1)
    for cand in rec.recommendations:
        assert cand.cost.gpus <= 1


def test_pareto_front_is_non_dominated() -> None:
    rec = _rec(GPT2_TRAIN, "balanced")
    priced = [c for c in rec.recommendations if c.cost.known]
    front = [c for c in priced if c.pareto_optimal]
    assert front

    def point(c: object) -> tuple[float, float, float]:
        return (
            c.cost.total_usd,
            c.estimate.time_to_complete_hours,  # type: ignore[attr-defined]
            c.estimate.energy_kwh_total,
        )  # type: ignore[attr-defined]

    for c in front:
        p = point(c)
        assert not any(
            all(a <= b for a, b in zip(point(o), p, strict=True)) and point(o) != p for o in priced
        )


def test_balanced_score_formula() -> None:
    rec = _rec(GPT2_TRAIN, "balanced")
    priced = [c for c in rec.recommendations if c.cost.known]
    min_cost = min(c.cost.total_usd or 0 for c in priced)
    min_time = min(c.estimate.time_to_complete_hours or 0 for c in priced)
    top = priced[0]
    expected = (
        0.5 * (top.cost.total_usd or 0) / min_cost
        + 0.5 * (top.estimate.time_to_complete_hours or 0) / min_time
    )
    # minima are over every feasible option (all counts), so they can only be lower than the
    # shown candidates' minima, and the score only higher
    assert top.score >= max(1.0, expected - 1e-9)
    assert any("0.5 x cost/min cost" in r for r in top.reasons)


def test_reasons_carry_figures_and_provision_snippets() -> None:
    rec = _rec(GPT2_TRAIN, "cost", gpu_slugs=("nvidia-h100-sxm5-80gb",))
    top = rec.recommendations[0]
    text = "\n".join(top.reasons)
    assert "GB per GPU" in text and "bound" in text and "$" in text
    assert top.offer is not None and top.offer.provider in text
    sky = yaml.safe_load(top.provision.skypilot_yaml or "")
    assert sky["resources"]["accelerators"] == f"H100:{top.offer.gpu_count}"
    assert sky["resources"]["instance_type"] == top.offer.instance_type
    assert "service" not in sky  # training: a plain task
    (job,) = top.provision.kubernetes
    pod = job["spec"]["template"]["spec"]
    # the value GPU Feature Discovery publishes (NVML name), not the marketing name
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    res = pod["containers"][0]["resources"]
    assert res["limits"] == res["requests"] == {"nvidia.com/gpu": top.gpu_count}
    amd = _rec(GPT2_TRAIN, "cost", gpu_slugs=("amd-mi300x",)).recommendations[0]
    amd_pod = amd.provision.kubernetes[-1]["spec"]["template"]["spec"]
    assert "amd.com/gpu" in amd_pod["containers"][0]["resources"]["limits"]
    assert "nodeSelector" not in amd_pod and amd.provision.kubernetes_note


def test_invalid_objective_and_workload_raise() -> None:
    with pytest.raises(ValueError, match="unknown objective 'speed'"):
        recommend(FP64, load_gpus(), load_offers(), objective="speed")  # type: ignore[arg-type]
    bad = Workload(kind="training", precision="bf16")
    with pytest.raises(ValueError, match="needs a model"):
        recommend(bad, load_gpus(), load_offers())


def test_serving_is_reported_at_the_offered_load() -> None:
    """With a target, each replica runs the batch its share of the load keeps in flight
    (Little's law: batch = per-replica rate x output tokens x TPOT), not its capacity batch;
    the capacity (batch and requests/s) is reported beside it. "time" ranks by the latency
    at that load."""
    llama_31_8b = Workload(
        kind="inference",
        precision="bf16",
        model=PRESETS["llama-3.1-8b"].model,
        inference=InferenceSpec(
            prompt_tokens=1024,
            output_tokens=256,
            max_ttft_ms=2000,
            max_tpot_ms=100,  # loose enough for an L4 at batch 1 (67.5 ms)
            target_requests_per_s=10,
        ),
    )
    rec = _rec(llama_31_8b, "time")
    by_slug = {c.gpu_slug: c for c in rec.recommendations}
    h100, l4 = by_slug["nvidia-h100-sxm5-80gb"], by_slug["nvidia-l4"]
    assert h100.estimate.latency_ms is not None and l4.estimate.latency_ms is not None
    assert h100.estimate.latency_ms < l4.estimate.latency_ms
    assert h100.rank < l4.rank
    for c in _rec(llama_31_8b, "cost").recommendations + rec.recommendations:
        est = c.estimate
        assert est.batch_size and est.capacity_batch_size and est.tpot_ms and est.replicas
        assert est.batch_size <= est.capacity_batch_size
        copies = c.cost.replicas
        assert est.offered_requests_per_s == pytest.approx(10 / copies)
        per_replica = 10 / (copies * est.replicas)
        in_flight = per_replica * 256 * est.tpot_ms / 1e3 * est.parallelism.pipeline_parallel
        # the least batch whose throughput covers the load: at least the in-flight figure,
        # and the batch below it would not carry it
        assert in_flight <= est.batch_size * (1 + 1e-9) * est.parallelism.pipeline_parallel ** 2
        assert est.batch_size - 1 < in_flight + 1e-9 or est.batch_size == 1
    cost_h100 = {c.gpu_slug: c for c in _rec(llama_31_8b, "cost").recommendations}[
        "nvidia-h100-sxm5-80gb"].estimate
    # at 10 requests/s one H100 is far from its capacity: a fraction of its capacity batch
    assert cost_h100.batch_size is not None and cost_h100.capacity_batch_size is not None
    assert cost_h100.batch_size * 3 < cost_h100.capacity_batch_size
    assert (cost_h100.requests_per_s or 0) > 10


def test_a_balanced_explanation_shows_the_ratios_its_score_used() -> None:
    """The balanced explanation prints the same normalized cost and time the score was built
    from (bounds.ratio_to_min), including where a minimum underflowed to 0 or is not finite
    (each then reads 1.00, as the score counts it), with the score's own weights."""
    from service.engine.choice.bounds import BALANCED_WEIGHT, Minima, ratio_to_min
    from service.engine.choice.explain import score_reason

    workload = Workload(kind="compute", precision="fp64", compute=ComputeSpec(total_tflop=1e6))
    mins = Minima(money=2.0, time=0.0, proxy=math.inf, time_unpriced=4.0)
    priced = score_reason("balanced", 1.5, 3.0, 5.0, 0.0, 0.0, mins, workload)
    assert f"{BALANCED_WEIGHT:g} x cost/min cost (1.50)" in priced  # 3 / 2
    assert "time/min time (1.00)" in priced  # the minimum underflowed to 0
    unpriced = score_reason("balanced", 1.0, None, 6.0, 0.0, 7.0, mins, workload)
    assert "GPU-hours/min (1.00)" in unpriced  # no finite minimum
    assert "time/min (1.50)" in unpriced  # 6 / 4
    assert ratio_to_min(math.inf, 2.0) == math.inf and ratio_to_min(3.0, math.inf) == 1.0


def test_the_operating_batch_is_the_least_that_carries_the_load() -> None:
    """Throughput is not monotone in the batch (tile waves), so the operating batch is found
    on a grid and then batch by batch: never more than one grid step (25%) above the least
    batch that carries the load, where a bisection landed up to ~2x above it."""
    from service.engine.physics import serving as inf
    from service.engine.physics.estimate import estimate, workload_rate

    gpus = {g.slug: g for g in load_gpus()}
    cases = [("bert-large", "int8", "nvidia-a10", 1, 224.0, 384, 0),
             ("mixtral-8x7b", "bf16", "nvidia-a100-sxm4-80gb", 2, 8.0, 1024, 256),
             ("llama-3.1-70b", "fp8", "nvidia-h100-sxm5-80gb", 8, 15.5, 1024, 256)]
    for preset, prec, slug, n, rps, prompt, out in cases:
        w = Workload(kind="inference", precision=prec, model=PRESETS[preset].model,  # type: ignore[arg-type]
                     inference=InferenceSpec(prompt_tokens=prompt, output_tokens=out,
                                             target_requests_per_s=rps))
        gpu = gpus[slug]
        est = estimate(w, gpu, n)
        assert est.batch_size and est.offered_requests_per_s and est.replicas
        rate = workload_rate(w, gpu)
        assert rate is not None
        ctx = inf.context(w, gpu, rate.precision_used, rate)
        tp = est.parallelism.tensor_parallel
        pp = est.parallelism.pipeline_parallel
        load = est.offered_requests_per_s / est.replicas
        spec = w.inference
        assert spec is not None
        least = next(b for b in range(1, est.batch_size + 1)
                     if inf.requests_per_s(spec, ctx.timing(tp, pp, b), pp, 1) >= load * (1 - 1e-9))
        # the last grid batch that does not cover is at least least + 1 (a wiggle above the
        # least), and the answer is at most one grid step (25%) above it
        assert least <= est.batch_size <= 1.25 * (least + 1), (preset, least, est.batch_size)


def test_time_buys_no_pipeline_stages_the_load_does_not_need() -> None:
    """405B bf16 at 5 requests/s: two stages of TP8 carry it on H100s; eight stages (64 GPUs)
    would only shrink the batch, at 4x the price."""
    w = Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-405b"].model,
                 inference=InferenceSpec(prompt_tokens=1024, output_tokens=256,
                                         target_requests_per_s=5))
    rec = _rec(w, "time", max_gpus=128)
    assert rec.recommendations
    for c in rec.recommendations:
        assert not c.estimate.pipeline_deeper_than_needed, c.gpu_slug
        assert c.gpu_count == c.replicas * c.gpus_per_replica == c.cost.gpus
    h100 = next(c for c in rec.recommendations if c.gpu_slug == "nvidia-h100-sxm5-80gb")
    assert (h100.gpu_count, h100.estimate.parallelism.pipeline_parallel) == (16, 2)
