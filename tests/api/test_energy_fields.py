"""Energy in the API: ``energy_kwh_total`` (training/compute, kWh to finish) and
``energy_kwh_per_hour`` (inference, kWh per hour of serving) beside the deprecated
``energy_kwh``, which keeps the value it had: whichever of the two the kind sets."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gpu_advisor_client.models import Candidate, Estimate
from service.workloads.results import RecommendationResult
from tests.conftest import REPO_ROOT

H100 = "nvidia-h100-sxm5-80gb"
NEW = ("energy_kwh_total", "energy_kwh_per_hour")
JOBS: dict[str, dict[str, Any]] = {
    "training": {"kind": "training", "model": {"preset": "gpt-2"}, "precision": "bf16",
                 "training": {"batch_size": 512, "seq_len": 1024, "tokens": 1e10}},
    "compute": {"kind": "compute", "precision": "fp64",
                "compute": {"total_tflop": 1e6, "memory_gb": 10}},
}
SERVING: dict[str, Any] = {
    "kind": "inference", "model": {"preset": "llama-2-7b"}, "precision": "fp16",
    "inference": {"prompt_tokens": 512, "output_tokens": 128, "target_requests_per_s": 200}}


def _estimate(client: TestClient, workload: dict[str, Any], count: int) -> dict[str, Any]:
    resp = client.post("/v1/estimates",
                       json={"workload": workload, "gpu_slug": H100, "gpu_count": count})
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def _candidates(client: TestClient, workload: dict[str, Any]) -> list[dict[str, Any]]:
    resp = client.post("/v1/recommendations?view=compact",
                       json={**workload, "objective": "energy"})
    assert resp.status_code == 200, resp.text
    cands: list[dict[str, Any]] = resp.json()["recommendations"]
    assert cands
    return cands


@pytest.mark.parametrize("kind", list(JOBS))
def test_a_job_reports_kwh_to_finish(client: TestClient, kind: str) -> None:
    est = _estimate(client, JOBS[kind], 8)
    power_w, hours = est["power_w"], est["time_to_complete_hours"]
    assert est["energy_kwh_total"] == pytest.approx(power_w * hours / 1000, rel=1e-5)
    assert est["energy_kwh_per_hour"] is None
    assert est["energy_kwh"] == est["energy_kwh_total"]  # the deprecated field, as before
    for cand in _candidates(client, JOBS[kind]):
        cost, e = cand["cost"], cand["estimate"]
        assert cost["energy_kwh_total"] == e["energy_kwh_total"] == cost["energy_kwh"]
        assert cost["energy_kwh_per_hour"] is None and e["energy_kwh_per_hour"] is None
        assert e["energy_kwh_total"] == pytest.approx(
            e["power_w"] * e["time_to_complete_hours"] / 1000, rel=1e-5)


def test_serving_reports_kwh_per_hour(client: TestClient) -> None:
    est = _estimate(client, SERVING, 1)
    one_hour = 1.0
    assert est["energy_kwh_per_hour"] == pytest.approx(est["power_w"] * one_hour / 1000,
                                                       rel=1e-5)
    assert est["energy_kwh_total"] is None
    assert est["energy_kwh"] == est["energy_kwh_per_hour"]  # the deprecated field, as before
    for cand in _candidates(client, SERVING):
        cost, e = cand["cost"], cand["estimate"]
        assert e["energy_kwh_per_hour"] == e["energy_kwh"]
        assert cost["energy_kwh_per_hour"] == cost["energy_kwh"]
        assert cost["energy_kwh_per_hour"] == pytest.approx(
            e["energy_kwh_per_hour"] * cost["replicas"], rel=1e-5)
        assert cost["energy_kwh_total"] is None and e["energy_kwh_total"] is None


def test_training_without_an_amount_has_neither(client: TestClient) -> None:
    training = {k: v for k, v in JOBS["training"]["training"].items() if k != "tokens"}
    est = _estimate(client, {**JOBS["training"], "training": training}, 8)
    assert est["energy_kwh"] is None and est["energy_kwh_total"] is None
    assert est["energy_kwh_per_hour"] is None


def test_the_openapi_document_marks_energy_kwh_deprecated() -> None:
    schemas = json.loads((REPO_ROOT / "openapi" / "openapi.json").read_text())[
        "components"]["schemas"]
    for name in ("EstimateOut", "CostOut"):
        props = schemas[name]["properties"]
        assert props["energy_kwh"].get("deprecated") is True, name
        assert all(not props[f].get("deprecated") for f in NEW), name
        assert "energy_kwh" in schemas[name]["required"], name  # still always sent


def test_a_run_stored_before_the_split_reads_back_with_its_energy(client: TestClient) -> None:
    """A stored answer without the two fields validates: ``energy_kwh`` as stored, the new
    fields null."""
    answer = client.post("/v1/recommendations?view=compact",
                         json={**SERVING, "limit": 2}).json()
    for cand in answer["recommendations"]:
        for part in ("estimate", "cost"):
            for field in NEW:
                del cand[part][field]
    read = RecommendationResult.model_validate(answer).model_dump(mode="json")
    for old, new in zip(answer["recommendations"], read["recommendations"], strict=True):
        for part in ("estimate", "cost"):
            assert new[part]["energy_kwh"] == old[part]["energy_kwh"] is not None
            assert all(new[part][field] is None for field in NEW)


def test_the_typed_client_reads_the_new_fields_and_warns_on_the_old(client: TestClient) -> None:
    est = Estimate.model_validate(_estimate(client, JOBS["training"], 8))
    assert est.energy_kwh_total is not None and est.energy_kwh_per_hour is None
    cand = Candidate.model_validate(_candidates(client, SERVING)[0])
    assert cand.cost.energy_kwh_per_hour is not None and cand.cost.energy_kwh_total is None
    with pytest.warns(DeprecationWarning, match="energy_kwh_total or energy_kwh_per_hour"):
        assert cand.cost.energy_kwh == cand.cost.energy_kwh_per_hour
