"""The seed documents' sound advice, coming out of the engine on the real seeded catalog."""

from __future__ import annotations

import pytest

from service.engine.choice.ranking import recommend
from service.engine.recommend_types import Candidate, Constraints, Objective, Recommendation
from service.engine.types import ComputeSpec, InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import load_gpus, load_offers, skypilot_names

DATACENTER_FP64 = {
    "nvidia-h100-sxm5-80gb",
    "nvidia-h100-pcie-80gb",
    "nvidia-h100-nvl-94gb",
    "nvidia-h200-sxm-141gb",
    "nvidia-gh200-96gb",
    "nvidia-a100-sxm4-80gb",
    "nvidia-a100-sxm4-40gb",
    "nvidia-a100-pcie-80gb",
    "nvidia-a100-pcie-40gb",
    "nvidia-b200-hgx",
    "amd-mi300x",
    "amd-mi250x",
}
TRAINING_CLASS = DATACENTER_FP64 | {"nvidia-v100-sxm2", "nvidia-v100-sxm2-16gb"}


def _run(workload: Workload, objective: Objective, **constraints: object) -> Recommendation:
    return recommend(
        workload,
        load_gpus(),
        load_offers(),
        objective=objective,
        constraints=Constraints(**constraints),  # type: ignore[arg-type]
        limit=50,
        skypilot_names=skypilot_names(),
    )


def _order(rec: Recommendation) -> list[str]:
    return [c.gpu_slug for c in rec.recommendations]


FP64_SIM = Workload(
    kind="compute",
    precision="fp64",
    compute=ComputeSpec(total_tflop=5e6, total_gb_moved=2e6, memory_gb=60),
)


@pytest.mark.parametrize("objective", ["time", "cost", "balanced"])
def test_fp64_simulation_prefers_fp64_datacenter_gpus(objective: Objective) -> None:
    rec = _run(FP64_SIM, objective, max_gpus=8)
    order = _order(rec)
    assert set(order[:3]) <= DATACENTER_FP64, order[:3]
    scores = {c.gpu_slug: c.score for c in rec.recommendations}
    priced_dc = [c.gpu_slug for c in rec.recommendations if c.cost.known]
    priced_dc = [s for s in priced_dc if s in DATACENTER_FP64]
    for consumer in ("nvidia-l4", "nvidia-t4", "nvidia-rtx-4090"):
        # behind every priced FP64 datacenter GPU, and far behind the winner
        assert order.index(consumer) > max(order.index(s) for s in priced_dc), (consumer, order)
        assert scores[consumer] >= 3 * scores[order[0]]
    # no FP64 at all on the Jetsons: rejected with the precision code
    codes = {r.gpu_slug: r.code for r in rec.rejected}
    assert codes["nvidia-jetson-agx-orin-64gb"] == "precision"


def test_fp64_time_never_assumes_one_hour() -> None:
    top = _run(FP64_SIM, "cost", max_gpus=8).recommendations[0]
    hours = top.estimate.time_to_complete_hours
    assert hours is not None and hours > 1
    assert top.cost.total_usd == pytest.approx(top.cost.usd_per_hour * hours)


@pytest.mark.parametrize("preset", ["yolov8-l", "resnet-50"])
def test_edge_60w_picks_a_jetson(preset: str) -> None:
    workload = Workload(
        kind="inference",
        precision="int8",
        model=PRESETS[preset].model,
        inference=InferenceSpec(batch_size=1, max_latency_ms=100),
    )
    rec = _run(workload, "cost", deployment="edge", max_power_w=60)
    assert rec.recommendations, rec.rejected
    assert rec.recommendations[0].gpu_slug.startswith("nvidia-jetson")
    assert all(c.gpu_slug.startswith("nvidia-jetson") for c in rec.recommendations)
    h100 = next(r for r in rec.rejected if r.gpu_slug == "nvidia-h100-sxm5-80gb")
    assert h100.code == "power"
    assert h100.fix.kind == "max_power" and h100.fix.value == 700
    assert h100.fix.detail.startswith("exceeds max_power_w 60 W by 640 W")


def _pretrain_70b(checkpointing: bool) -> Workload:
    return Workload(
        kind="training",
        precision="bf16",
        model=PRESETS["llama-2-70b"].model,
        training=TrainingSpec(
            batch_size=1024, seq_len=4096, tokens=2e11, activation_checkpointing=checkpointing
        ),
    )


@pytest.mark.parametrize(
    ("objective", "checkpointing"),
    [
        ("cost", False),
        ("time", False),
        ("balanced", False),
        ("cost", True),
        ("time", True),
        ("balanced", True),
    ],
)
def test_pretraining_70b_picks_fast_interconnect_nodes(
    objective: Objective, checkpointing: bool
) -> None:
    rec = _run(_pretrain_70b(checkpointing), objective)
    gpus = {g.slug: g for g in load_gpus()}
    top = rec.recommendations[:3]
    assert len(top) == 3
    for cand in top:
        assert gpus[cand.gpu_slug].interconnect in ("nvlink", "infinity_fabric"), cand.gpu_slug
        assert cand.gpu_count >= 8
        assert cand.cost.total_usd is None or cand.cost.total_usd > 10_000
    order = _order(rec)
    pcie_only = [s for s in order if gpus[s].interconnect == "pcie"]
    fast = [s for s in order if gpus[s].interconnect != "pcie"]
    # PCIe-only cards are ruled out (memory) or come after every NVLink/IF datacenter GPU
    for slug in pcie_only:
        assert order.index(slug) > order.index(fast[2])
    if not checkpointing:
        rejected = {r.gpu_slug: r for r in rec.rejected}
        assert rejected["nvidia-l4"].code == "memory"
        l4 = rejected["nvidia-l4"]
        assert "activation_checkpointing" in {f.kind for f in (l4.fix, *l4.other_fixes)}


def test_high_qps_int8_small_model_is_cheapest_on_inference_cards() -> None:
    workload = Workload(
        kind="inference",
        precision="int8",
        model=PRESETS["resnet-50"].model,
        inference=InferenceSpec(target_requests_per_s=5000, max_latency_ms=10),
    )
    rec = _run(workload, "cost")
    order = _order(rec)
    priced = [c for c in rec.recommendations if c.cost.known]
    assert priced[0].gpu_slug not in TRAINING_CLASS
    assert all(c.gpu_slug not in TRAINING_CLASS for c in priced[:5])
    for inference_card in ("nvidia-t4", "nvidia-l4"):
        assert order.index(inference_card) < order.index("nvidia-h100-sxm5-80gb")
    t4 = next(c for c in rec.recommendations if c.gpu_slug == "nvidia-t4")
    assert t4.estimate.latency_ok is True
    assert (t4.estimate.requests_per_s or 0) * t4.cost.replicas >= 5000
    assert t4.cost.usd_per_1k_requests is not None


def test_model_too_big_for_one_gpu_gets_more_gpus_or_more_memory() -> None:
    workload = Workload(
        kind="inference",
        precision="fp16",
        model=PRESETS["llama-2-70b"].model,
        inference=InferenceSpec(
            prompt_tokens=1024, output_tokens=256, max_ttft_ms=2000, max_tpot_ms=100
        ),
    )
    rec = _run(workload, "cost")
    gpus = {g.slug: g for g in load_gpus()}
    assert rec.recommendations
    for cand in rec.recommendations:
        # 138 GB of fp16 weights: either >= 141 GB on one GPU or split over several
        assert cand.gpu_count > 1 or gpus[cand.gpu_slug].memory_gb >= 141, cand.gpu_slug
        text = " ".join(cand.reasons)
        assert "GB per GPU" in text
        # the per-GPU weights times the model split add up to the 138 GB of fp16 weights
        par = cand.estimate.parallelism
        split = par.tensor_parallel * par.pipeline_parallel
        assert cand.estimate.memory.weights * split == pytest.approx(137.96, rel=0.01)
        assert f"weights {cand.estimate.memory.weights:.1f}" in text
    h100 = next(c for c in rec.recommendations if c.gpu_slug == "nvidia-h100-sxm5-80gb")
    assert h100.gpu_count >= 2
    assert any("on one GPU it would need" in r and "> 85.9 GB (80 GiB)" in r for r in h100.reasons)
    assert any(r.startswith("needs ") and ("TP=" in r or "PP=" in r) for r in h100.reasons)


def test_a_tight_tpot_limit_moves_the_answer_to_faster_gpus() -> None:
    # A tight time-per-output-token limit shrinks the feasible batch most on slow-memory
    # GPUs: at 20 ms the cheapest way to serve is an HBM part; at 160 ms a GDDR card wins
    def top(tpot_ms: float) -> list[Candidate]:
        w = Workload(
            kind="inference",
            precision="bf16",
            model=PRESETS["llama-3.1-8b"].model,
            inference=InferenceSpec(prompt_tokens=512, output_tokens=256, max_tpot_ms=tpot_ms,
                                    target_requests_per_s=10),
        )
        return list(_run(w, "cost").recommendations[:3])

    gpus = {g.slug: g for g in load_gpus()}
    tight, loose = top(20), top(160)
    assert gpus[tight[0].gpu_slug].memory_bandwidth_gb_s >= 1500
    assert gpus[loose[0].gpu_slug].memory_bandwidth_gb_s < 1500
    assert tight[0].gpu_slug != loose[0].gpu_slug
    for cand in tight:
        assert cand.estimate.tpot_ms is not None and cand.estimate.tpot_ms <= 20
    # the same GPU runs a smaller batch under the tighter limit
    a100 = {c.gpu_slug: c for c in top(40)}.get("nvidia-a100-sxm4-40gb")
    a100_loose = {c.gpu_slug: c for c in top(160)}.get("nvidia-a100-sxm4-40gb")
    if a100 is not None and a100_loose is not None:
        assert (a100.estimate.batch_size or 0) < (a100_loose.estimate.batch_size or 0)
