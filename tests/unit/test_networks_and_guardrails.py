"""Networks per offer (which multi-node plans exist and at what rate), guardrail warnings with
codes, and typed fixes the ranking acts on by kind."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.engine.choice import cost as co
from service.engine.choice.ranking import recommend
from service.engine.physics.estimate import estimate
from service.engine.recommend_types import Constraints, Offer
from service.engine.types import InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from service.quotes.networks import network_default
from tests.unit.catalog_data import gpus_by_slug, load_gpus, load_offers

H100 = "nvidia-h100-sxm5-80gb"
TRAIN_70B = Workload(
    kind="training", precision="bf16", model=PRESETS["llama-2-70b"].model,
    training=TrainingSpec(batch_size=1024, seq_len=4096, tokens=2e11,
                          activation_checkpointing=True),
)
SERVE_70B = Workload(
    kind="inference", precision="bf16", model=PRESETS["llama-2-70b"].model,
    inference=InferenceSpec(prompt_tokens=1024, output_tokens=256, target_requests_per_s=5),
)


def _offer(qid: int, count: int, price: float, **network: object) -> Offer:
    return Offer(quote_id=qid, gpu_slug=H100, provider="aws", region="us-east-1",
                 instance_type=f"x{count}-{qid}", gpu_count=count, pricing="on_demand",
                 price_usd_per_hour=price, **network)  # type: ignore[arg-type]


def _train(offers: list[Offer], **c: object) -> list:  # type: ignore[type-arg]
    rec = recommend(TRAIN_70B, [gpus_by_slug()[H100]], offers, objective="cost",
                    constraints=Constraints(gpu_slugs=(H100,), **c))  # type: ignore[arg-type]
    return [rec.recommendations, rec.rejected]


def test_seeded_defaults_are_sourced_and_cover_the_cluster_families() -> None:
    p5 = network_default("aws", "p5.48xlarge")
    assert p5 is not None and p5.network_fabric == "efa" and p5.network_gbps == 3200
    assert p5.multi_node and "docs.aws.amazon.com" in p5.network_source
    assert network_default("azure", "Standard_ND40rs_v2").network_fabric == "infiniband"  # type: ignore[union-attr]
    assert network_default("lambda", "gpu_8x_h100_sxm5") is None  # unknown: no cluster plans
    assert network_default("runpod", "8x_H100-SXM_SECURE") is None
    offers = load_offers()
    clusters = {o.instance_type for o in offers if o.clusters()}
    assert {"p5.48xlarge", "p4de.24xlarge", "gpu-h100-sxm_8gpu-128vcpu-1600gb",
            "a2-highgpu-8g"} <= clusters
    assert all(o.pricing != "purchase" for o in offers if o.clusters())


def test_a_job_spans_instances_only_over_an_offer_that_clusters() -> None:
    no_net = _offer(1, 8, 30.0)
    cands, rejected = _train([no_net], max_gpus=64)
    # 70B training needs more than one 8-GPU node: with no known network there is no plan
    assert not cands
    (rej,) = rejected
    assert rej.code == "network" and rej.fix.kind == "multi_node_offer"
    assert isinstance(rej.fix.value, int) and rej.fix.value > 8
    efa = _offer(2, 8, 98.32, network_gbps=3200.0, fabric="efa", multi_node=True)
    cands, _ = _train([no_net, efa], max_gpus=64)
    top = cands[0]
    assert top.offer.quote_id == 2 and top.estimate.parallelism.nodes > 1
    # 3200 Gb/s per 8-GPU instance = 50 GB/s per GPU: the offer's rate, not an assumption
    assert top.estimate.parallelism.link_bandwidth_gb_s == pytest.approx(50.0)
    assert any("efa network, 3200 Gb/s per instance" in r for r in top.reasons)
    assert "no_rdma_fabric" not in {w.code for w in top.warnings}


def test_a_slower_offer_network_makes_the_same_plan_slower() -> None:
    gpu = gpus_by_slug()[H100]
    fast = _offer(1, 8, 98.0, network_gbps=3200.0, fabric="efa", multi_node=True)
    slow = replace(fast, network_gbps=100.0, fabric="ethernet")
    est_fast = estimate(TRAIN_70B, co.network_gpu(gpu, fast, 64), 64)
    est_slow = estimate(TRAIN_70B, co.network_gpu(gpu, slow, 64), 64)
    assert est_slow.parallelism.link_bandwidth_gb_s == pytest.approx(100 / 8 / 8)
    assert (est_slow.step_time_ms or 0) > (est_fast.step_time_ms or 0)
    # within one instance the network is unused: the GPU (and its cache entry) is unchanged
    assert co.network_gpu(gpu, slow, 8) is gpu


def test_an_ethernet_cluster_is_allowed_with_a_coded_warning() -> None:
    eth = _offer(3, 8, 40.0, network_gbps=100.0, fabric="ethernet", multi_node=True)
    cands, _ = _train([eth], max_gpus=64)
    top = cands[0]
    assert top.estimate.parallelism.nodes > 1
    codes = [w.code for w in top.warnings]
    assert "no_rdma_fabric" in codes
    assert top.estimate.parallelism.link_bandwidth_gb_s == pytest.approx(100 / 8 / 8)


def test_one_gpu_vms_never_form_a_pipeline() -> None:
    """Eight 1-GPU on-demand VMs never form pipeline stages 'over 50 GB/s': separate VMs have
    no fabric between them."""
    rec = recommend(SERVE_70B, load_gpus(), load_offers(), objective="balanced", limit=20)
    for cand in rec.recommendations:
        if cand.offer is not None and cand.offer.gpu_count < cand.estimate.gpu_count:
            assert cand.offer.clusters(), cand.gpu_slug
        if cand.estimate.parallelism.nodes > 1:
            assert cand.offer is not None and cand.offer.clusters()


def test_tpot_slower_than_reading_warns_only_without_a_limit() -> None:
    rec = recommend(SERVE_70B, load_gpus(), load_offers(), objective="cost", limit=20)
    slow = [c for c in rec.recommendations if (c.estimate.tpot_ms or 0) > 100]
    fast = [c for c in rec.recommendations if (c.estimate.tpot_ms or 0) <= 100]
    assert slow and fast
    assert all("tpot_above_reading_speed" in {w.code for w in c.warnings} for c in slow)
    assert all("tpot_above_reading_speed" not in {w.code for w in c.warnings} for c in fast)
    limited = replace(SERVE_70B, inference=replace(SERVE_70B.inference, max_tpot_ms=250))
    rec = recommend(limited, load_gpus(), load_offers(), objective="cost", limit=20)
    assert not any(w.code == "tpot_above_reading_speed"
                   for c in rec.recommendations for w in c.warnings)


def test_a_pipeline_deeper_than_the_node_warns() -> None:
    from service.engine.choice import guardrails
    from service.engine.types import Estimate, MemoryBreakdown, Parallelism

    par = Parallelism(gpu_count=64, nodes=8, gpus_per_node=8, data_parallel=1,
                      pipeline_parallel=64, link="network", link_bandwidth_gb_s=0.4)
    est = Estimate(gpu_slug="nvidia-rtx-4090", gpu_count=64, fits=True, precision_used="bf16",
                   memory_per_gpu_gb=20, memory_available_gb=24, memory=MemoryBreakdown(),
                   parallelism=par, bound="interconnect")
    codes = [n.code for n in guardrails.notices(TRAIN_70B, est, None, Constraints())]
    assert codes == ["pipeline_deeper_than_node"]
    shallow = replace(est, parallelism=replace(par, pipeline_parallel=8, data_parallel=8))
    assert guardrails.notices(TRAIN_70B, shallow, None, Constraints()) == []


def test_edge_latency_far_above_interactive_warns() -> None:
    stream = Workload(kind="inference", precision="int8", model=PRESETS["yolov8-l"].model,
                      inference=InferenceSpec(batch_size=16, target_requests_per_s=30))
    rec = recommend(stream, load_gpus(), load_offers(), objective="cost",
                    constraints=Constraints(deployment="edge", max_power_w=60), limit=5)
    assert rec.recommendations
    for c in rec.recommendations:
        high = (c.estimate.latency_ms or 0) > 200
        assert high == ("edge_latency_high" in {w.code for w in c.warnings}), (
            c.gpu_slug, c.estimate.latency_ms)
    assert any((c.estimate.latency_ms or 0) > 200 for c in rec.recommendations)


def test_every_rejection_fix_is_typed_and_the_memory_fix_uses_the_kind() -> None:
    rec = recommend(TRAIN_70B, load_gpus(), load_offers(), objective="cost",
                    constraints=Constraints(max_gpus=16), limit=5, exhaustive=True)
    assert rec.rejected
    for r in rec.rejected:
        for f in (r.fix, *r.other_fixes):
            assert f.kind and f.detail
    memory = [r for r in rec.rejected if r.code == "memory"]
    assert memory
    for r in memory:
        # the count over the cap is a max_gpus fix (the request field to raise), never a
        # gpu_count fix copied from the estimate
        kinds = [f.kind for f in (r.fix, *r.other_fixes)]
        assert "gpu_count" not in kinds
        over = [f for f in (r.fix, *r.other_fixes) if f.kind == "max_gpus"]
        for f in over:
            assert f.field == "constraints.max_gpus" and isinstance(f.value, int)
            assert f.value > 16


def test_accelerator_names_and_node_labels_come_from_sourced_tables() -> None:
    from service.engine.choice.provision import accelerator_name, node_label

    gpus = gpus_by_slug()
    runpod = replace(_offer(9, 8, 20.0), provider="runpod", instance_type="8x_H100-SXM_SECURE")
    assert accelerator_name(gpus[H100], runpod, None) == "H100-SXM"  # RunPod's catalog name
    assert accelerator_name(gpus[H100], _offer(1, 8, 98.0), None) == "H100"
    assert accelerator_name(gpus["nvidia-a100-pcie-80gb"], None, None) == "A100-80GB"
    for jetson in ("nvidia-jetson-agx-orin-64gb", "nvidia-jetson-orin-nx-16gb"):
        assert accelerator_name(gpus[jetson], None, {jetson: "Jetson AGX Orin 64GB"}) is None
        assert node_label(gpus[jetson]) is None
    # GPU Feature Discovery's product value (the NVML name), not the catalog's marketing name
    assert node_label(gpus[H100]) == ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")
    assert node_label(gpus["nvidia-a10g"]) == ("nvidia.com/gpu.product", "NVIDIA-A10G")
    assert node_label(gpus["nvidia-t4"]) == ("nvidia.com/gpu.product", "Tesla-T4")


def test_a_jetson_answer_gets_no_cloud_task() -> None:
    stream = Workload(kind="inference", precision="int8", model=PRESETS["yolov8-l"].model,
                      inference=InferenceSpec(batch_size=1, max_latency_ms=100))
    for deployment in (None, "edge"):
        rec = recommend(stream, load_gpus(), load_offers(), objective="cost", limit=50,
                        constraints=Constraints(deployment=deployment))  # type: ignore[arg-type]
        jetsons = [c for c in rec.recommendations if "jetson" in c.gpu_slug]
        assert jetsons, deployment
        for c in jetsons:
            assert c.provision.skypilot_yaml is None
            why = "owned hardware" if deployment else "no SkyPilot accelerator name"
            assert why in (c.provision.skypilot_note or ""), c.provision.skypilot_note
