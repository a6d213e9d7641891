"""/v1/estimates and /v1/models through the ASGI app."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.helpers import assert_problem

PRESET_IDS = [
    "resnet-50", "ssd300", "yolov8-l", "bert-base", "bert-large", "gpt-2", "gpt-j-6b",
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b",
    "llama-3.1-405b", "mistral-7b", "mixtral-8x7b", "gpt-3-175b",
]
TRANSFORMERS = set(PRESET_IDS) - {"resnet-50", "ssd300", "yolov8-l"}


def test_models_lists_every_preset_with_source(client: TestClient) -> None:
    page = client.get("/v1/models").json()
    models = page["data"]
    assert {m["id"] for m in models} == set(PRESET_IDS) and page["total"] == len(PRESET_IDS)
    assert all(m["source"] for m in models)
    mixtral = client.get("/v1/models/mixtral-8x7b").json()
    assert mixtral["model"]["experts"] == 8 and mixtral["model"]["experts_per_token"] == 2
    assert_problem(client.get("/v1/models/nope"), 404)


def _inference(preset: str) -> dict[str, Any]:
    if preset in TRANSFORMERS and preset not in {"bert-base", "bert-large"}:
        return {"prompt_tokens": 512, "output_tokens": 128}
    return {"prompt_tokens": 128, "output_tokens": 0}


def _training(preset: str) -> dict[str, Any]:
    if preset in TRANSFORMERS:
        return {"batch_size": 64, "seq_len": 2048, "tokens": 1e9}
    return {"batch_size": 256, "epochs": 1, "dataset_samples": 1_281_167}


def test_every_seeded_gpu_and_preset_answers_without_error(client: TestClient) -> None:
    """Every seeded GPU x every preset answers, no 500 (inference and training)."""
    gpus = [g["slug"] for g in client.get("/v1/gpus", params={"limit": 500}).json()["data"]]
    failures = []
    for preset in PRESET_IDS:
        for kind in ("inference", "training"):
            workload: dict[str, Any] = {"kind": kind, "model": {"preset": preset},
                                        "precision": "bf16"}
            workload[kind] = _inference(preset) if kind == "inference" else _training(preset)
            for slug in gpus:
                resp = client.post("/v1/estimates",
                                   json={"workload": workload, "gpu_slug": slug, "gpu_count": 8})
                if resp.status_code != 200:
                    failures.append((preset, kind, slug, resp.status_code, resp.text[:200]))
    assert failures == []


def test_estimate_shape_for_llm_inference(client: TestClient) -> None:
    body = {
        "workload": {"kind": "inference", "model": {"preset": "llama-2-7b"}, "precision": "fp16",
                     "inference": {"prompt_tokens": 512, "output_tokens": 128, "batch_size": 1}},
        "gpu_slug": "nvidia-h100-sxm5-80gb",
        "gpu_count": 1,
    }
    est = client.post("/v1/estimates", json=body).json()
    assert est["fits"] is True
    # Llama-2-7B fp16 weights: 6.74e9 params x 2 B = 13.5 GB (Touvron et al. 2023, Table 1).
    assert est["memory"]["breakdown_gb"]["weights"] == pytest.approx(13.5, rel=0.02)
    assert est["bound"] == "memory_bandwidth"  # batch-1 decode reads every weight per token
    # Decode cannot beat weights / peak bandwidth: 13.5 GB / 3350 GB/s = 4.0 ms per token.
    assert est["tpot_ms"] >= 13.47 / 3350 * 1000
    assert est["ttft_ms"] > 0 and est["latency_ms"] > est["ttft_ms"]
    assert est["throughput"]["tokens_per_s"] > 0
    assert est["training"] if "training" in est else True
    assert est["step_time_ms"] is None and est["time_to_complete_hours"] is None
    names = {a["name"] for a in est["assumptions"]}
    assert names and all(a["source"] for a in est["assumptions"])


def test_training_70b_on_one_gpu_does_not_fit_and_says_how_many(client: TestClient) -> None:
    body = {
        "workload": {"kind": "training", "model": {"preset": "llama-2-70b"}, "precision": "bf16",
                     "training": {"batch_size": 512, "seq_len": 4096, "tokens": 1e10}},
        "gpu_slug": "nvidia-h100-sxm5-80gb",
        "gpu_count": 1,
    }
    est = client.post("/v1/estimates", json=body).json()
    assert est["fits"] is False and est["infeasible_reasons"]
    assert est["min_gpus_to_fit"] and est["min_gpus_to_fit"] > 1
    assert est["fixes"]


def test_unknown_preset_and_gpu_are_422_naming_the_field(client: TestClient) -> None:
    body = {"workload": {"kind": "inference", "model": {"preset": "gpt-9"},
                         "inference": {"prompt_tokens": 1, "output_tokens": 1}},
            "gpu_slug": "nvidia-l4"}
    assert_problem(client.post("/v1/estimates", json=body), 422, "body.workload.model.preset")
    body["workload"]["model"] = {"preset": "llama-2-7b"}  # type: ignore[index]
    body["gpu_slug"] = "nvidia-nope"
    assert_problem(client.post("/v1/estimates", json=body), 422, "body.gpu_slug")


def test_inconsistent_architecture_is_422(client: TestClient) -> None:
    model = {"params": 7e9, "layers": 32, "hidden_size": 4096, "attention_heads": 30,
             "kv_heads": 7, "vocab_size": 32000, "intermediate_size": 11008}
    body = {"workload": {"kind": "inference", "model": model,
                         "inference": {"prompt_tokens": 10, "output_tokens": 10}},
            "gpu_slug": "nvidia-l4"}
    problem = assert_problem(client.post("/v1/estimates", json=body), 422)
    assert any(e["field"].startswith("body.workload.model.") for e in problem["errors"])


def test_absurd_numbers_are_422(client: TestClient) -> None:
    body = {"workload": {"kind": "compute", "precision": "fp64",
                         "compute": {"total_tflop": 1e308}}, "gpu_slug": "nvidia-l4"}
    assert_problem(client.post("/v1/estimates", json=body), 422)
    body = {"workload": {"kind": "compute", "precision": "fp64",
                         "compute": {"total_tflop": 10}}, "gpu_slug": "nvidia-l4",
            "gpu_count": 0}
    assert_problem(client.post("/v1/estimates", json=body), 422, "body.gpu_count")


def test_405b_on_8_h100_is_estimated_on_its_best_split(client: TestClient) -> None:
    """No split fits, so the estimate shows the one needing the least memory per GPU
    (TP8, ~103 GB), not data parallel 8 (~818 GB)."""
    workload = {"kind": "inference", "model": {"preset": "llama-3.1-405b"}, "precision": "bf16",
                "inference": {"prompt_tokens": 2048, "output_tokens": 512, "max_tpot_ms": 100}}
    est = client.post("/v1/estimates", json={
        "workload": workload, "gpu_slug": "nvidia-h100-sxm5-80gb", "gpu_count": 8}).json()
    assert est["fits"] is False
    assert 95 <= est["memory"]["per_gpu_gb"] <= 115
    assert est["parallelism"]["tensor_parallel"] == 8
    assert est["parallelism"]["data_parallel"] == 1
    jetson = client.post("/v1/estimates", json={
        "workload": workload, "gpu_slug": "nvidia-jetson-agx-orin-64gb", "gpu_count": 8}).json()
    assert jetson["fits"] is False and "single-module" in jetson["infeasible_reasons"][0]
    assert all(f["kind"] != "gpu_count" or f["value"] == 1 for f in jetson["fixes"])
