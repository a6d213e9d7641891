"""Every provisioning block the seeded scenarios produce, checked by the real validators
(SkyPilot task + SkyServe, kubernetes-validate), and the network rule on the same answers:
no answer spans instances over a fabric its offer does not have."""

from __future__ import annotations

from functools import cache

import pytest
import yaml

from service.engine.choice.ranking import recommend
from service.engine.recommend_types import Candidate, Constraints, Objective, Recommendation
from service.engine.types import ComputeSpec, InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.provisioning.validators import validate_kubernetes, validate_skypilot
from tests.unit.catalog_data import load_gpus, load_offers, skypilot_names


def _serve(preset: str, precision: str = "bf16", **spec: object) -> Workload:
    return Workload(kind="inference", precision=precision,  # type: ignore[arg-type]
                    model=PRESETS[preset].model,
                    inference=InferenceSpec(**spec))  # type: ignore[arg-type]


SCENARIOS: dict[str, tuple[Workload, Constraints]] = {
    "llama-2-70b-serve": (_serve("llama-2-70b", prompt_tokens=1024, output_tokens=256,
                                 target_requests_per_s=5), Constraints()),
    "llama-3.1-8b-chat": (_serve("llama-3.1-8b", prompt_tokens=1024, output_tokens=256,
                                 max_ttft_ms=500, max_tpot_ms=50, target_requests_per_s=20),
                          Constraints()),
    "llama-3.1-405b-serve": (_serve("llama-3.1-405b", "fp8", prompt_tokens=1024,
                                    output_tokens=256), Constraints()),
    "resnet-50-int8": (_serve("resnet-50", "int8", target_requests_per_s=2000,
                              max_latency_ms=10), Constraints()),
    "yolov8-edge": (_serve("yolov8-l", "int8", batch_size=1, max_latency_ms=100),
                    Constraints(deployment="edge", max_power_w=60)),
    "llama-2-70b-serve-on-prem": (_serve("llama-2-70b", prompt_tokens=1024, output_tokens=256),
                                  Constraints(deployment="on_prem")),
    "llama-2-70b-pretrain": (Workload(
        kind="training", precision="bf16", model=PRESETS["llama-2-70b"].model,
        training=TrainingSpec(batch_size=1024, seq_len=4096, tokens=2e11,
                              activation_checkpointing=True)), Constraints()),
    "gpt-2-train": (Workload(
        kind="training", precision="bf16", model=PRESETS["gpt-2"].model,
        training=TrainingSpec(batch_size=512, seq_len=1024, tokens=1e10)), Constraints()),
    "fp64-compute": (Workload(kind="compute", precision="fp64", compute=ComputeSpec(
        total_tflop=5e6, total_gb_moved=2e6, memory_gb=60)), Constraints(max_gpus=8)),
}
OBJECTIVES: tuple[Objective, ...] = ("balanced", "cost", "time")


@cache
def _rec(name: str, objective: Objective) -> Recommendation:
    workload, constraints = SCENARIOS[name]
    return recommend(workload, load_gpus(), load_offers(), objective=objective,
                     constraints=constraints, limit=10, skypilot_names=skypilot_names())


def _candidates() -> list[tuple[str, Candidate]]:
    return [(f"{name}/{objective}#{c.rank}", c) for name in SCENARIOS for objective in OBJECTIVES
            for c in _rec(name, objective).recommendations]


def test_every_seeded_kubernetes_manifest_validates() -> None:
    checked = 0
    for label, cand in _candidates():
        manifests = [dict(m) for m in cand.provision.kubernetes]
        validate_kubernetes(manifests)
        kinds = [m["kind"] for m in manifests]
        nodes = cand.estimate.parallelism.nodes
        serving = SCENARIOS[label.split("/")[0]][0].kind == "inference"
        if serving and nodes == 1:
            assert kinds == ["Deployment", "Service"], label
            assert manifests[0]["spec"]["replicas"] == cand.cost.replicas
        elif serving:
            # a StatefulSet (one pod per node, started together) per replica group
            assert kinds.count("StatefulSet") == cand.cost.replicas, label
            assert all(m["spec"]["replicas"] == nodes for m in manifests
                       if m["kind"] == "StatefulSet")
        else:
            job = manifests[-1]
            assert job["kind"] == "Job", label
            if nodes > 1:  # one indexed pod per node, with a headless Service for rendezvous
                assert job["spec"]["completionMode"] == "Indexed"
                assert job["spec"]["completions"] == job["spec"]["parallelism"] == nodes
                assert manifests[0]["kind"] == "Service"
        # every pod holds one node's share of the group; all pods hold the group's GPUs (the
        # candidate's gpu_count is the total: the group times the copies the answer runs)
        assert cand.gpu_count == cand.estimate.gpu_count * cand.cost.replicas, label
        for m in manifests:
            if m["kind"] in ("Deployment", "StatefulSet", "Job"):
                pod = m["spec"]["template"]["spec"]
                (container,) = pod["containers"]
                res = container["resources"]
                assert res["requests"] == res["limits"]
                assert sum(res["limits"].values()) * max(1, nodes) == cand.estimate.gpu_count, (
                    label)
                assert container["image"].startswith("registry.example.com/")
        checked += len(manifests)
    assert checked >= 100


def test_every_seeded_skypilot_task_validates() -> None:
    tasks: list[tuple[str, bool]] = []
    labels: list[str] = []
    owned_or_nameless = 0
    for label, cand in _candidates():
        workload, constraints = SCENARIOS[label.split("/")[0]]
        sky = cand.provision.skypilot_yaml
        if sky is None:
            assert cand.provision.skypilot_note
            # owned hardware or a GPU without a SkyPilot name: never a cloud task
            assert constraints.deployment in ("on_prem", "edge") or "SkyPilot" in (
                cand.provision.skypilot_note), label
            owned_or_nameless += 1
            continue
        assert constraints.deployment not in ("on_prem", "edge"), label
        config = yaml.safe_load(sky)
        serving = workload.kind == "inference"
        assert ("service" in config) == serving, label  # one replica or many
        if serving:
            assert config["service"]["replicas"] == cand.cost.replicas
        if cand.offer is not None:
            assert config["resources"]["instance_type"] == cand.offer.instance_type
            assert config["resources"]["accelerators"].endswith(f":{cand.offer.gpu_count}")
            assert config.get("num_nodes", 1) == cand.cost.instances // cand.cost.replicas
        tasks.append((sky, serving))
        labels.append(label)
    assert len(tasks) >= 60 and owned_or_nameless >= 10
    errors = validate_skypilot(tasks)
    failed = [(label, e) for label, e in zip(labels, errors, strict=True) if e]
    assert not failed, failed[:5]


def test_the_validators_reject_a_portless_service_a_bare_pod_and_a_wrong_accelerator() -> None:
    """The checks can fail: a service with no ports, a bare pod fragment and an accelerator
    the instance does not have are rejected by the same validators."""
    portless_serve = ("resources:\n  accelerators: H100:8\nservice:\n  readiness_probe: /\n"
                 "  replicas: 2\n")
    wrong_name = ("resources:\n  accelerators: 80GB:8\n  cloud: aws\n  region: us-east-1\n"
                  "  instance_type: p5.48xlarge\n")
    errors = validate_skypilot([(portless_serve, True), (wrong_name, False)])
    assert errors[0] is not None and "port" in errors[0]
    assert errors[1] is not None
    with pytest.raises(AssertionError, match="apiVersion"):  # a bare pod fragment
        validate_kubernetes([{"replicas": 8, "nodeSelector": {},
                              "containers": [{"name": "workload"}]}])


def test_no_answer_spans_instances_without_the_offers_fabric() -> None:
    spanning = 0
    for label, cand in _candidates():
        p = cand.estimate.parallelism
        if p.nodes <= 1:
            continue
        spanning += 1
        offer = cand.offer
        assert offer is not None, label  # no offer, no known network: single node only
        assert offer.clusters(), (label, offer)
        # the inter-node rate is the offer's, per GPU, never the form factor's assumption
        per_node = offer.gpu_count if offer.pricing != "purchase" else p.gpus_per_node
        assert p.link == "network"
        assert p.link_bandwidth_gb_s is not None
        assert p.link_bandwidth_gb_s <= (offer.network_gbps or 0) / 8 / per_node + 1e-9, label
        codes = {w.code for w in cand.warnings}
        assert ("no_rdma_fabric" in codes) == (offer.fabric == "ethernet"), label
    assert spanning >= 5
