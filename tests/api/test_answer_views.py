"""Recommendation views. The default, `summary`, is the ranked list a portal shows (<= 12 KB
for 10 candidates on every named example) and every field of it is the full answer's field of
the same path; `compact` is the whole answer with the engine constants listed once; `full`
also repeats them in every candidate's estimate. The answer is written without validating it
again (service/workloads/answers.py), so the bytes are checked against what the response
models write for it. Both databases."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel

from bench.cpu_per_request import KINDS, bodies
from service.workloads import examples
from service.workloads.answers import RecommendationSummary
from service.workloads.results import RecommendationResult
from tests.api.test_fleet_api import body as fleet_body
from tests.helpers import LLAMA_8B_CHAT, assert_problem

SUMMARY_MAX_BYTES = 12_000
"""The compact default answer's bound: <= 12 KB for 10 results."""


def _without_time(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "generated_at"}


def _projection_errors(part: Any, whole: Any, path: str = "") -> list[str]:
    """Where ``part`` is not ``whole`` with fields left out (same paths, same values)."""
    if isinstance(part, dict):
        if not isinstance(whole, dict):
            return [f"{path}: an object, not {type(whole).__name__}"]
        errors = [f"{path}.{k}: not in the full answer" for k in part if k not in whole]
        for k in part.keys() & whole.keys():
            errors += _projection_errors(part[k], whole[k], f"{path}.{k}")
        return errors
    if isinstance(part, list):
        if not isinstance(whole, list) or len(part) != len(whole):
            return [f"{path}: lists differ in length"]
        return [e for i, (p, w) in enumerate(zip(part, whole, strict=True))
                for e in _projection_errors(p, w, f"{path}[{i}]")]
    if part != whole or type(part) is not type(whole):
        return [f"{path}: {part!r} != {whole!r}"]
    return []


def _model_bytes(model: type[BaseModel], content: bytes) -> bytes:
    """What the response model writes for the same answer: FastAPI's path before answers were
    written without a second validation (validate, then ``model_dump_json``)."""
    return model.model_validate_json(content).model_dump_json().encode()


def test_compact_is_full_with_the_constants_listed_once(client: TestClient) -> None:
    compact_resp = client.post("/v1/recommendations?view=compact", json=LLAMA_8B_CHAT)
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


@pytest.mark.parametrize("name", list(examples.EXAMPLES))
def test_the_default_summary_is_small_and_the_full_answer_with_fields_left_out(
        client: TestClient, name: str) -> None:
    body = examples.submission_body(name, limit=10)
    default = client.post("/v1/recommendations", json=body)
    full = client.post("/v1/recommendations?view=full", json=body)
    assert default.status_code == full.status_code == 200, default.text
    assert default.headers["content-type"] == "application/json"
    summary, whole = default.json(), full.json()
    assert set(summary) == {"objective", "catalog_revision", "generated_at",
                            "recommendations", "rejected", "warnings", "fleet"}
    assert summary["fleet"] is None
    assert summary["recommendations"] or summary["rejected"]
    # the figures a portal shows, per candidate
    for c in summary["recommendations"]:
        assert {"rank", "gpu", "gpu_count", "quote", "cost", "estimate", "warnings"} <= set(c)
        assert {"bound", "batch_size", "time_to_complete_hours", "latency_ms"} <= set(
            c["estimate"])
    # a rejected GPU's slug and code; why in words, its rank and its fix are compact's
    assert all(set(r) == {"gpu", "code"} for r in summary["rejected"])
    summary["generated_at"] = whole["generated_at"]  # two requests, two clocks
    assert _projection_errors(summary, whole) == []
    assert len(default.content) <= SUMMARY_MAX_BYTES, (name, len(default.content))
    assert len(default.content) < 0.1 * len(full.content)


@pytest.mark.parametrize("kind", KINDS)
def test_varied_summaries_stay_small(client: TestClient, kind: str) -> None:
    """Not only the named examples: varied bodies of each kind the benchmarks send (LLM
    serving, training, FP64; up to 10 candidates) answer in <= 12 KB, rejected GPUs included (a
    training answer rules out ~20 GPU types; with each one's reason in words, as before,
    most varied training summaries were 12-13 KB)."""
    sizes = []
    for text in bodies(kind, seed=1, n=12):
        resp = client.post("/v1/recommendations", content=text,
                           headers={"Content-Type": "application/json"})
        assert resp.status_code == 200, resp.text
        answer = resp.json()
        assert 1 <= len(answer["recommendations"]) <= 10 and answer["rejected"], text
        sizes.append(len(resp.content))
    assert max(sizes) <= SUMMARY_MAX_BYTES, (kind, sorted(sizes))


def test_a_traffic_mix_summary_carries_the_fleet_in_short(client: TestClient) -> None:
    body = fleet_body()
    default = client.post("/v1/recommendations", json=body)
    full = client.post("/v1/recommendations?view=full", json=body)
    assert default.status_code == full.status_code == 200, default.text
    summary, whole = default.json(), full.json()
    assert summary["fleet"]["pools"] and whole["fleet"]["pools"][0]["provision"]
    assert "provision" not in summary["fleet"]["pools"][0]
    summary["generated_at"] = whole["generated_at"]
    assert _projection_errors(summary, whole) == []
    for view, model in (("summary", RecommendationSummary), ("full", RecommendationResult)):
        resp = default if view == "summary" else full
        assert resp.content == _model_bytes(model, resp.content), view


@pytest.mark.parametrize("view", ["summary", "compact", "full"])
def test_the_bytes_are_what_the_response_model_writes(client: TestClient, view: str) -> None:
    """A fixed body in each view: the answer written without validation is byte for byte the
    one the response model (FastAPI's validating path, before) writes for it."""
    model = RecommendationSummary if view == "summary" else RecommendationResult
    for name in examples.EXAMPLES:
        resp = client.post(f"/v1/recommendations?view={view}",
                           json=examples.submission_body(name, limit=10))
        assert resp.status_code == 200, resp.text
        assert resp.content == _model_bytes(model, resp.content), (name, view)


def test_stored_workload_views_and_runs(client: TestClient,
                                        admin_headers: dict[str, str]) -> None:
    wid = client.post("/v1/workloads", json=LLAMA_8B_CHAT, headers=admin_headers).json()["id"]
    url = f"/v1/workloads/{wid}/recommendations"
    summary = client.get(url, headers=admin_headers).json()
    assert "assumptions" not in summary and summary["recommendations"]
    assert all("provision" not in c for c in summary["recommendations"])
    got = client.get(f"{url}?view=compact", headers=admin_headers).json()
    assert got["assumptions"] and all(c["estimate"]["assumptions"] is None
                                      for c in got["recommendations"])
    full_resp = client.get(f"{url}?view=full", headers=admin_headers)
    full = full_resp.json()
    assert all(c["estimate"]["assumptions"] for c in full["recommendations"])
    assert full_resp.content == _model_bytes(RecommendationResult, full_resp.content)
    summary["generated_at"] = full["generated_at"]
    assert _projection_errors(summary, full) == []
    # a stored run keeps the full answer
    run = client.post(f"/v1/workloads/{wid}/runs", json={}, headers=admin_headers)
    assert run.status_code == 201, run.text
    result = run.json()["result"]
    assert _without_time(result) == _without_time(full)


def test_unknown_view_is_a_422_naming_it(client: TestClient) -> None:
    resp = client.post("/v1/recommendations?view=tiny", data=json.dumps(LLAMA_8B_CHAT),
                       headers={"Content-Type": "application/json"})
    assert_problem(resp, 422, "query.view")


@pytest.mark.parametrize("name", list(examples.EXAMPLES))
@pytest.mark.parametrize("limit", [1, 3, 10])
def test_every_catalog_gpu_is_listed_or_rejected(client: TestClient, name: str,
                                                 limit: int) -> None:
    # a client asking "why not X?" finds every GPU type in one list or the other: those
    # evaluated in full and ranked below the top `limit` are outranked with their rank
    body = examples.submission_body(name, limit=limit)
    answer = client.post("/v1/recommendations?view=compact", json=body).json()
    listed = [c["gpu"]["slug"] for c in answer["recommendations"]]
    rejected = [r["gpu"]["slug"] for r in answer["rejected"]]
    gpus = {g["slug"] for g in client.get("/v1/gpus", params={"limit": 500}).json()["data"]}
    assert len(listed) <= limit
    assert not set(listed) & set(rejected)
    assert set(listed) | set(rejected) == gpus
    below = [r for r in answer["rejected"] if r["reason"].startswith("ranked #")]
    # ranks continue after the listed ones, without gaps or repeats
    ranks = sorted(int(r["reason"][len("ranked #"):].split(" ")[0]) for r in below)
    assert ranks == list(range(limit + 1, limit + 1 + len(ranks)))
    for r in below:
        assert r["code"] == "outranked"
        assert f", below the top {limit}: score " in r["reason"]


def test_gpus_evaluated_below_the_top_say_their_rank(client: TestClient) -> None:
    # the LLM training example at limit 10 evaluates GPUs it does not list (the search's
    # bounds cannot skip them): each is outranked with its rank after the 10th
    answer = client.post("/v1/recommendations?view=compact",
                         json=examples.submission_body("llm-training", limit=10)).json()
    assert len(answer["recommendations"]) == 10
    below = [r["reason"] for r in answer["rejected"] if r["reason"].startswith("ranked #11 ")]
    assert len(below) == 1 and "under balanced, below the top 10: score " in below[0]
