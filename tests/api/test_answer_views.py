"""Recommendation views: the default answer lists the engine constants once; `full`
also repeats them in every candidate's estimate; nothing else differs. Both databases."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from tests.helpers import LLAMA_8B_CHAT, assert_problem


def _without_time(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "generated_at"}


def test_compact_is_full_with_the_constants_listed_once(client: TestClient) -> None:
    compact_resp = client.post("/v1/recommendations", json=LLAMA_8B_CHAT)
    full_resp = client.post("/v1/recommendations?view=full", json=LLAMA_8B_CHAT)
    assert compact_resp.status_code == full_resp.status_code == 200
    compact, full = compact_resp.json(), full_resp.json()
    assert len(compact["recommendations"]) == 10
    names = [a["name"] for a in compact["assumptions"]]
    assert len(names) == len(set(names)) > 10
    assert all(a["source"] and a["unit"] is not None for a in compact["assumptions"])
    listed = []
    for cand in full["recommendations"]:
        own = cand["estimate"]["assumptions"]
        assert own, cand["gpu"]["slug"]
        listed += [a for a in own if a not in listed]
    assert listed == compact["assumptions"] == full["assumptions"]
    for cand, whole in zip(compact["recommendations"], full["recommendations"], strict=True):
        assert cand["estimate"]["assumptions"] is None
        cand["estimate"]["assumptions"] = whole["estimate"]["assumptions"]
    assert _without_time(compact) == _without_time(full)  # nothing else differs
    # what the view is for: the constants were most of the answer
    assert len(compact_resp.content) < 0.5 * len(full_resp.content)


def test_stored_workload_views_and_runs(client: TestClient,
                                        admin_headers: dict[str, str]) -> None:
    wid = client.post("/v1/workloads", json=LLAMA_8B_CHAT, headers=admin_headers).json()["id"]
    got = client.get(f"/v1/workloads/{wid}/recommendations", headers=admin_headers).json()
    assert got["assumptions"] and all(c["estimate"]["assumptions"] is None
                                      for c in got["recommendations"])
    full = client.get(f"/v1/workloads/{wid}/recommendations?view=full",
                      headers=admin_headers).json()
    assert all(c["estimate"]["assumptions"] for c in full["recommendations"])
    # a stored run keeps the full answer
    run = client.post(f"/v1/workloads/{wid}/runs", json={}, headers=admin_headers)
    assert run.status_code == 201, run.text
    result = run.json()["result"]
    assert result["assumptions"] == full["assumptions"]
    assert all(c["estimate"]["assumptions"] for c in result["recommendations"])


def test_unknown_view_is_a_422_naming_it(client: TestClient) -> None:
    resp = client.post("/v1/recommendations?view=tiny", data=json.dumps(LLAMA_8B_CHAT),
                       headers={"Content-Type": "application/json"})
    assert_problem(resp, 422, "query.view")
