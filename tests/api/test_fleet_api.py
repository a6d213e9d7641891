"""Traffic histograms through the API: the 422s naming the field, the traffic presets, and a
mixed fleet on the seeded catalog that a portal can provision."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.helpers import assert_problem


def body(**inference: Any) -> dict[str, Any]:
    inf: dict[str, Any] = {"max_ttft_ms": 1000, "max_tpot_ms": 50, "target_requests_per_s": 10,
                           "traffic_preset": "azure-conversation-2023"}
    inf.update(inference)
    return {"kind": "inference", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
            "objective": "cost", "limit": 3, "inference": {k: v for k, v in inf.items()
                                                           if v is not None}}


TWO = [{"prompt_tokens": 200, "output_tokens": 100, "share": 0.5},
       {"prompt_tokens": 3000, "output_tokens": 80, "share": 0.5}]


@pytest.mark.parametrize(("inference", "field"), [
    ({"traffic_preset": None, "traffic": [{"prompt_tokens": 100, "output_tokens": 10,
                                           "share": 0.5}]}, "body.inference.traffic"),
    ({"traffic_preset": None, "traffic": []}, "body.inference.traffic"),
    ({"traffic_preset": None, "traffic": [TWO[0]] * 65}, "body.inference.traffic"),
    ({"traffic_preset": None, "traffic": [{**TWO[0], "share": 0}, TWO[1]]},
     "body.inference.traffic.0.share"),
    ({"traffic_preset": None, "traffic": [{**TWO[0], "output_tokens": 0}, TWO[1]]},
     "body.inference.traffic.0.output_tokens"),
    ({"traffic_preset": None, "traffic": [{**TWO[0], "prompt_tokens": -1}, TWO[1]]},
     "body.inference.traffic.0.prompt_tokens"),
    ({"traffic": TWO}, "body.inference.traffic_preset"),
    ({"traffic_preset": "no-such-mix"}, "body.inference.traffic_preset"),
    ({"target_requests_per_s": None}, "body.inference.target_requests_per_s"),
    ({"batch_size": 8}, "body.inference.batch_size"),
])
def test_bad_traffic_is_a_422_naming_the_field(client: TestClient, inference: dict[str, Any],
                                               field: str) -> None:
    resp = client.post("/v1/recommendations?view=compact", json=body(**inference))
    assert_problem(resp, 422, field)


def test_an_unknown_preset_is_the_one_error(client: TestClient) -> None:
    resp = client.post("/v1/recommendations?view=compact",
                       json=body(traffic_preset="no-such-mix"))
    fields = [e.get("field") or e.get("loc") for e in resp.json()["errors"]]
    assert resp.status_code == 422 and len(fields) == 1, resp.json()


def test_traffic_on_an_encoder_is_a_422(client: TestClient) -> None:
    b = body()
    b["model"] = {"preset": "bert-large"}
    assert_problem(client.post("/v1/recommendations?view=compact", json=b), 422,
                   "body.inference.traffic")


def test_shares_within_tolerance_are_accepted(client: TestClient) -> None:
    traffic = [{**TWO[0], "share": 0.3333333}, {**TWO[1], "share": 0.6666666}]
    resp = client.post("/v1/recommendations?view=compact",
                       json=body(traffic_preset=None, traffic=traffic))
    assert resp.status_code == 200, resp.text
    assert resp.json()["fleet"] is not None


def test_traffic_presets_are_listed_with_sources(client: TestClient) -> None:
    presets = client.get("/v1/traffic-presets").json()
    ids = {p["id"] for p in presets}
    assert {"azure-conversation-2023", "azure-code-2023"} <= ids
    for p in presets:
        # as listed, the buckets are a valid histogram (shares within 1e-6 of 1)
        assert abs(sum(b["share"] for b in p["buckets"]) - 1) <= 1e-6
        assert "Splitwise" in p["source"] and "AzurePublicDataset" in p["source"]


def test_listed_preset_buckets_post_back_as_traffic(client: TestClient) -> None:
    preset = client.get("/v1/traffic-presets").json()[0]
    resp = client.post("/v1/recommendations?view=compact",
                       json=body(traffic_preset=None, traffic=preset["buckets"]))
    assert resp.status_code == 200, resp.text
    assert resp.json()["fleet"]["pools"]


def test_chat_preset_gets_a_provisionable_fleet(client: TestClient) -> None:
    resp = client.post("/v1/recommendations?view=compact", json=body())
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    fleet = answer["fleet"]
    assert answer["recommendations"], "the single-shape candidates are still there"
    assert fleet["status"] == "optimal" and fleet["mip_gap"] is not None
    assert fleet["pools"] and fleet["options"] > 1
    total = sum(p["usd_per_hour"] for p in fleet["pools"])
    assert fleet["usd_per_hour"] == pytest.approx(total, rel=1e-5)
    single = fleet["best_single_type"]
    assert single["usd_per_hour"] >= fleet["usd_per_hour"] - 1e-9
    assert fleet["saving_usd_per_hour"] == pytest.approx(
        single["usd_per_hour"] - fleet["usd_per_hour"], abs=1e-4)
    served: dict[int, float] = {}
    for pool in fleet["pools"]:
        assert pool["gpu_count"] >= 1 and 0 < pool["utilization"] <= 1 + 1e-6
        assert pool["offer"]["quote_id"] and pool["layout"]["tensor_parallel"] >= 1
        assert pool["provision"]["kubernetes"], pool["provision"]
        names = {m["metadata"]["name"] for m in pool["provision"]["kubernetes"]}
        assert names == {pool["name"]}
        for b in pool["buckets"]:
            served[b["bucket"]] = served.get(b["bucket"], 0.0) + b["share"]
    presets = {p["id"]: p for p in client.get("/v1/traffic-presets").json()}
    n = len(presets["azure-conversation-2023"]["buckets"])
    assert sorted(served) == list(range(n))
    assert all(v == pytest.approx(1.0, abs=1e-5) for v in served.values())
    assert fleet["routing"]


def test_mix_false_gives_the_best_single_type(client: TestClient) -> None:
    b = body()
    b["constraints"] = {"mix": False}
    fleet = client.post("/v1/recommendations?view=compact", json=b).json()["fleet"]
    assert len({p["gpu"]["slug"] for p in fleet["pools"]}) == 1
    assert fleet["usd_per_hour"] == fleet["best_single_type"]["usd_per_hour"]
    assert fleet["saving_usd_per_hour"] == 0
    b["constraints"] = {"max_gpu_types": 1}
    again = client.post("/v1/recommendations?view=compact", json=b).json()["fleet"]
    assert again["usd_per_hour"] == fleet["usd_per_hour"]
    # every type bounded out or solved exactly: proven the cheapest single type
    assert fleet["status"] == again["status"] == "optimal"
    assert fleet["mip_gap"] == again["mip_gap"] == 0
    b["constraints"] = {"mix": False, "max_gpu_types": 3}
    clash = client.post("/v1/recommendations?view=compact", json=b)
    assert clash.status_code == 422
    assert "max_gpu_types" in clash.text and "mix" in clash.text


def test_no_traffic_no_fleet(client: TestClient) -> None:
    b = body(traffic_preset=None, prompt_tokens=512, output_tokens=128)
    answer = client.post("/v1/recommendations?view=compact", json=b).json()
    assert answer["fleet"] is None


def test_an_slo_no_gpu_meets_is_an_infeasible_fleet(client: TestClient) -> None:
    resp = client.post("/v1/recommendations?view=compact", json=body(max_ttft_ms=0.01))
    assert resp.status_code == 200, resp.text
    fleet = resp.json()["fleet"]
    assert fleet["status"] == "infeasible" and not fleet["pools"]
    assert any("bucket" in w for w in fleet["warnings"])


def test_fleet_pools_pass_the_real_validators(client: TestClient) -> None:
    """Each pool's Kubernetes manifests and SkyServe task as kubernetes-validate and SkyPilot
    check them (the mixed fleet and the single type's, 70B at a rate that mixes types)."""
    from tests.provisioning.validators import validate_kubernetes, validate_skypilot

    b = body(target_requests_per_s=24)  # a load the cheapest fleet serves with two types
    b["model"] = {"preset": "llama-2-70b"}
    fleet = client.post("/v1/recommendations?view=compact", json=b).json()["fleet"]
    pools = fleet["pools"] + fleet["best_single_type"]["pools"]
    assert len({p["gpu"]["slug"] for p in fleet["pools"]}) >= 2, fleet["pools"]
    tasks = []
    for pool in pools:
        validate_kubernetes(pool["provision"]["kubernetes"])
        sky = pool["provision"]["skypilot_yaml"]
        if sky is not None:
            assert f"name: {pool['name']}" in sky
            tasks.append((sky, True))
    assert tasks
    assert validate_skypilot(tasks) == [None] * len(tasks)


def test_stored_workload_runs_carry_the_fleet(client: TestClient,
                                              admin_headers: dict[str, str]) -> None:
    b = body()
    b.pop("limit")
    created = client.post("/v1/workloads", json={**b, "name": "chat-mix"},
                          headers=admin_headers)
    assert created.status_code == 201, created.text
    wid = created.json()["id"]
    run = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 2}, headers=admin_headers)
    assert run.status_code == 201, run.text
    fleet = run.json()["result"]["fleet"]
    assert fleet["pools"] and fleet["usd_per_hour"] > 0
    again = client.get(f"/v1/workloads/{wid}/runs/{run.json()['id']}", headers=admin_headers)
    assert again.json()["result"]["fleet"] == fleet


@pytest.mark.parametrize("value", [49, 100.01, "x"])
def test_bad_slo_percentile_is_a_422_naming_the_field(client: TestClient, value: Any) -> None:
    resp = client.post("/v1/recommendations", json=body(slo_percentile=value))
    assert_problem(resp, 422, "body.inference.slo_percentile")


def test_slo_percentile_without_traffic_is_a_422(client: TestClient) -> None:
    b = body(traffic_preset=None, prompt_tokens=500, output_tokens=100, slo_percentile=95)
    assert_problem(client.post("/v1/recommendations", json=b), 422,
                   "body.inference.slo_percentile")


def test_percentile_fleet_reports_what_is_served_outside_the_limits(
        client: TestClient) -> None:
    constraints = {"gpu_slugs": ["nvidia-l4", "nvidia-a10g", "nvidia-l40s",
                                 "nvidia-a100-sxm4-80gb"]}
    answers = {}
    for pct in (100, 90):
        b = body(slo_percentile=pct, max_ttft_ms=300, max_tpot_ms=25)
        b["constraints"] = constraints
        resp = client.post("/v1/recommendations?view=compact", json=b)
        assert resp.status_code == 200, resp.text
        answers[pct] = resp.json()["fleet"]
        summary = client.post("/v1/recommendations", json=b).json()["fleet"]
        assert summary["slo_percentile"] == pct
        assert summary["within_slo_fraction"] == answers[pct]["within_slo_fraction"]
    full, loose = answers[100], answers[90]
    assert full["slo_percentile"] == 100 and full["within_slo_fraction"] == 1
    assert all(not p["buckets_outside_slo"] for p in full["pools"])
    assert loose["usd_per_hour"] < full["usd_per_hour"]
    assert 0.9 - 1e-6 <= loose["within_slo_fraction"] < 1
    outside = {bl["bucket"] for p in loose["pools"] for bl in p["buckets"]
               if bl["share_outside_slo"] > 0}
    assert outside and outside == {i for p in loose["pools"] for i in p["buckets_outside_slo"]}
    assert loose["best_single_type"]["within_slo_fraction"] >= 0.9 - 1e-6


def test_time_objective_fleet_under_a_budget(client: TestClient) -> None:
    b = body()
    b["objective"] = "time"
    b["constraints"] = {"max_usd_per_hour": 6, "gpu_slugs": ["nvidia-l4", "nvidia-l40s",
                                                             "nvidia-a100-sxm4-80gb"]}
    resp = client.post("/v1/recommendations?view=compact", json=b)
    assert resp.status_code == 200, resp.text
    fleet = resp.json()["fleet"]
    assert fleet["objective"] == "time" and fleet["status"] == "optimal"
    summary = client.post("/v1/recommendations", json=b).json()["fleet"]
    assert summary["objective"] == "time"
    assert summary["mean_latency_ms"] == fleet["mean_latency_ms"]
    assert fleet["usd_per_hour"] <= 6 and fleet["mean_latency_ms"] > 0
    assert fleet["mean_latency_ms"] <= fleet["best_single_type"]["mean_latency_ms"] * 1.000001
