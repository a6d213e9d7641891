"""/v1/workloads and /v1/recommendations through the ASGI app."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.helpers import LLAMA_8B_CHAT, assert_problem


def test_submit_get_list_delete(client: TestClient, admin_headers: dict[str, str]) -> None:
    created = client.post("/v1/workloads", json=LLAMA_8B_CHAT, headers=admin_headers)
    assert created.status_code == 201, created.text
    wid = created.json()["id"]
    assert created.headers["location"] == f"/v1/workloads/{wid}"
    got = client.get(f"/v1/workloads/{wid}", headers=admin_headers).json()
    assert got["name"] == "chat-8b" and got["workload"]["model"] == {"preset": "llama-3.1-8b"}
    second = client.post("/v1/workloads", json={**LLAMA_8B_CHAT, "name": "b"},
                         headers=admin_headers).json()
    listed = client.get("/v1/workloads", headers=admin_headers).json()
    assert [w["id"] for w in listed["data"][:2]] == [second["id"], wid]  # newest first
    assert client.delete(f"/v1/workloads/{wid}", headers=admin_headers).status_code == 204
    assert_problem(client.get(f"/v1/workloads/{wid}", headers=admin_headers), 404)


def test_idempotency_key(client: TestClient, admin_headers: dict[str, str]) -> None:
    headers = {**admin_headers, "Idempotency-Key": "bot-run-42"}
    first = client.post("/v1/workloads", json=LLAMA_8B_CHAT, headers=headers)
    again = client.post("/v1/workloads", json=LLAMA_8B_CHAT, headers=headers)
    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["idempotent-replayed"] == "true"
    other = client.post("/v1/workloads", json={**LLAMA_8B_CHAT, "name": "other"},
                        headers=headers)
    assert_problem(other, 409)
    assert client.get("/v1/workloads", headers=admin_headers).json()["total"] == 1


def test_submit_needs_admin_and_valid_body(client: TestClient,
                                           admin_headers: dict[str, str]) -> None:
    assert_problem(client.post("/v1/workloads", json=LLAMA_8B_CHAT), 401)
    bad = {**LLAMA_8B_CHAT, "model": {"preset": "nope"}}
    assert_problem(client.post("/v1/workloads", json=bad, headers=admin_headers), 422,
                   "body.model.preset")
    bad = {**LLAMA_8B_CHAT, "constraints": {"max_gpus": -1}}
    assert_problem(client.post("/v1/workloads", json=bad, headers=admin_headers), 422,
                   "body.constraints.max_gpus")
    # nothing half-written
    assert client.get("/v1/workloads", headers=admin_headers).json()["total"] == 0


def test_runs_are_stored_and_fetched_unchanged(client: TestClient,
                                               admin_headers: dict[str, str]) -> None:
    h = admin_headers
    wid = client.post("/v1/workloads", json=LLAMA_8B_CHAT, headers=h).json()["id"]
    run = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 5}, headers=h)
    assert run.status_code == 201, run.text
    body = run.json()
    assert run.headers["location"] == f"/v1/workloads/{wid}/runs/{body['id']}"
    result = body["result"]
    assert result["objective"] == "cost" and len(result["recommendations"]) <= 5
    assert result["catalog_revision"] == body["catalog_revision"]
    again = client.get(f"/v1/workloads/{wid}/runs/{body['id']}", headers=h).json()
    assert again == body
    timed = client.post(f"/v1/workloads/{wid}/runs", json={"objective": "time"}, headers=h)
    assert timed.status_code == 201 and timed.json()["objective"] == "time"
    runs = client.get(f"/v1/workloads/{wid}/runs", headers=h).json()
    assert runs["total"] == 2 and runs["data"][0]["objective"] == "time"
    assert runs["data"][1]["top_gpu_slug"] == result["recommendations"][0]["gpu"]["slug"]
    assert_problem(client.get(f"/v1/workloads/{wid}/runs/nope", headers=h), 404)


def test_one_shot_recommendation_is_explained_and_deterministic(
        client: TestClient, admin_headers: dict[str, str]) -> None:
    first = client.post("/v1/recommendations?view=compact", json=LLAMA_8B_CHAT)
    assert first.status_code == 200, first.text
    result = first.json()
    recs = result["recommendations"]
    assert recs and [r["rank"] for r in recs] == list(range(1, len(recs) + 1))
    top = recs[0]
    assert top["reasons"] and top["quote"] is not None and top["cost"]["known"]
    assert top["cost"]["usd_per_million_output_tokens"] > 0
    assert top["estimate"]["latency_ok"] is True
    assert "resources:" in top["provision"]["skypilot_yaml"]
    assert top["provision"]["kubernetes"]
    assert all(r["reason"] and r["fix"] for r in result["rejected"])
    second = client.post("/v1/recommendations?view=compact", json=LLAMA_8B_CHAT).json()
    strip = lambda r: {k: v for k, v in r.items() if k != "generated_at"}  # noqa: E731
    assert strip(second) == strip(result)
    assert client.get("/v1/workloads", headers=admin_headers).json()["total"] == 0


def test_recommendation_metrics_are_exported(client: TestClient) -> None:
    client.post("/v1/recommendations", json=LLAMA_8B_CHAT)
    text = client.get("/metrics").text
    assert "gpu_advisor_recommendation_compute_seconds_count 1.0" in text
    assert 'gpu_advisor_http_requests_total{method="POST",route="/v1/recommendations"' in text
    # one process, no multiprocess directory: the scrape says it covers this process only
    assert "\ngpu_advisor_metrics_workers_merged 0.0\n" in text


def test_recommendation_follows_catalog_changes(client: TestClient,
                                                admin_headers: dict[str, str]) -> None:
    """The per-process catalog and offer snapshots are rebuilt when a quote or GPU changes."""
    first = client.post("/v1/recommendations", json=LLAMA_8B_CHAT).json()
    top = first["recommendations"][0]
    quote = top["quote"]
    price = quote["price_usd_per_hour"]
    resp = client.patch(f"/v1/quotes/{quote['id']}", json={"price_usd_per_hour": price * 50},
                        headers={**admin_headers, "If-Match": "*"})
    assert resp.status_code == 200
    second = client.post("/v1/recommendations", json=LLAMA_8B_CHAT).json()
    assert second["catalog_revision"] != first["catalog_revision"]
    assert second["recommendations"][0]["quote"]["id"] != quote["id"]
    gpu = client.get(f"/v1/gpus/{top['gpu']['slug']}")
    shrunk = client.patch(f"/v1/gpus/{top['gpu']['slug']}", json={"memory_gb": 1},
                          headers={**admin_headers, "If-Match": gpu.headers["etag"]})
    assert shrunk.status_code == 200
    third = client.post("/v1/recommendations", json=LLAMA_8B_CHAT).json()
    assert top["gpu"]["slug"] not in {r["gpu"]["slug"] for r in third["recommendations"]}


def test_expired_quote_is_not_used(client: TestClient, admin_headers: dict[str, str]) -> None:
    body = {**LLAMA_8B_CHAT, "constraints": {"providers": ["testcloud"], "max_gpus": 8}}
    base = {"provider": "testcloud", "region": "x", "gpu_count": 1, "pricing": "on_demand",
            "source": "test", "captured_at": "2026-11-01T00:00:00Z"}
    expired = {**base, "gpu_slug": "nvidia-h100-sxm5-80gb", "instance_type": "h100.1",
               "price_usd_per_hour": 0.01, "valid_until": "2020-01-01T00:00:00Z"}
    live = {**base, "gpu_slug": "nvidia-a40", "instance_type": "a40.1",
            "price_usd_per_hour": 5.0}
    for quote in (expired, live):
        assert client.post("/v1/quotes", json=quote, headers=admin_headers).status_code == 201
    result = client.post("/v1/recommendations", json=body).json()
    assert [r["quote"]["instance_type"] for r in result["recommendations"]] == ["a40.1"]
    rejected = {r["gpu"]["slug"]: r for r in result["rejected"]}
    assert rejected["nvidia-h100-sxm5-80gb"]["code"] == "no_quote"
