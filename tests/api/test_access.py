"""Access and HTTP semantics: GETs are safe and runs are created by POST and capped by
retention; roles and owners; strict ETags (If-Match, If-None-Match, 304); price history kept
after deletes; paged /v1/models with did-you-mean; estimates without an amount of training.
Every test runs on SQLite and (with TEST_DATABASE_URL) PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func
from sqlmodel import Session, select

from service.app.factory import create_app
from service.core.config import Settings
from service.core.migrate import upgrade
from service.core.security import ApiKey
from service.core.times import utcnow
from service.workloads.models import RecommendationRun, StoredWorkload
from tests.conftest import REPO_ROOT
from tests.helpers import (
    H100,
    LLAMA_8B_CHAT,
    api_key,
    assert_problem,
    new_gpu,
    new_quote,
    submit_workload,
)


@pytest.fixture
def submitter(session: Session) -> tuple[dict[str, str], int]:
    return api_key(session, "submitter")


@pytest.fixture
def other_submitter(session: Session) -> tuple[dict[str, str], int]:
    return api_key(session, "submitter")


def _runs(session: Session) -> int:
    session.expire_all()
    return int(session.exec(select(func.count()).select_from(RecommendationRun)).one())


# -- 1. GETs are safe; runs are created by POST and capped by retention -----------------------

def test_get_recommendations_stores_nothing(client: TestClient, session: Session,
                                            submitter: tuple[dict[str, str], int]) -> None:
    headers, _ = submitter
    wid = submit_workload(client, headers)
    for _ in range(3):
        resp = client.get(f"/v1/workloads/{wid}/recommendations", params={"limit": 2},
                          headers=headers)
        assert resp.status_code == 200, resp.text
        assert len(resp.json()["recommendations"]) <= 2 and "location" not in resp.headers
    assert _runs(session) == 0
    assert client.get(f"/v1/workloads/{wid}/runs", headers=headers).json()["total"] == 0


def test_post_run_is_201_with_location_and_constraints_override(
        client: TestClient, submitter: tuple[dict[str, str], int]) -> None:
    headers, key_id = submitter
    wid = submit_workload(client, headers)
    resp = client.post(f"/v1/workloads/{wid}/runs", headers=headers,
                       json={"objective": "time", "limit": 3,
                             "constraints": {"gpu_slugs": ["nvidia-l4"], "max_gpus": 16}})
    assert resp.status_code == 201, resp.text
    run = resp.json()
    assert resp.headers["location"] == f"/v1/workloads/{wid}/runs/{run['id']}"
    assert run["objective"] == "time" and run["limit"] == 3
    assert run["created_by_key_id"] == key_id
    assert {r["gpu"]["slug"] for r in run["result"]["recommendations"]} == {"nvidia-l4"}
    assert client.get(resp.headers["location"], headers=headers).json() == run
    no_body = client.post(f"/v1/workloads/{wid}/runs", headers=headers)
    assert no_body.status_code == 201 and no_body.json()["objective"] == "cost"
    assert_problem(client.post(f"/v1/workloads/{wid}/runs", json={"limit": 0},
                               headers=headers), 422, "body.limit")
    assert_problem(client.post(f"/v1/workloads/{wid}/runs", json={"constraints": {
        "max_gpus": -1}}, headers=headers), 422, "body.constraints.max_gpus")


def test_runs_are_capped_per_workload_oldest_pruned(
        app: FastAPI, client: TestClient, session: Session, settings: Settings,
        submitter: tuple[dict[str, str], int]) -> None:
    app.state.settings = settings.model_copy(update={"max_runs_per_workload": 3})
    headers, _ = submitter
    wid = submit_workload(client, headers)
    other = submit_workload(client, headers, name="other")
    ids = []
    for _ in range(5):
        resp = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 1}, headers=headers)
        assert resp.status_code == 201, resp.text
        ids.append(resp.json()["id"])
    client.post(f"/v1/workloads/{other}/runs", json={"limit": 1}, headers=headers)
    listed = client.get(f"/v1/workloads/{wid}/runs", headers=headers).json()
    assert listed["total"] == 3
    assert [r["id"] for r in listed["data"]] == ids[:-4:-1]  # the newest three, newest first
    assert_problem(client.get(f"/v1/workloads/{wid}/runs/{ids[0]}", headers=headers), 404)
    assert client.get(f"/v1/workloads/{other}/runs", headers=headers).json()["total"] == 1


def test_runs_older_than_retention_days_are_pruned(
        app: FastAPI, client: TestClient, session: Session, settings: Settings,
        submitter: tuple[dict[str, str], int]) -> None:
    app.state.settings = settings.model_copy(update={"run_retention_days": 7})
    headers, _ = submitter
    wid = submit_workload(client, headers)
    fresh = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 1}, headers=headers).json()
    old = session.get(RecommendationRun, fresh["id"])
    assert old is not None
    session.add(RecommendationRun(
        id=str(uuid.uuid4()), workload_id=wid, objective="cost", result_limit=1,
        catalog_revision=old.catalog_revision, result=old.result,
        created_at=utcnow() - timedelta(days=8)))
    session.commit()
    assert client.get(f"/v1/workloads/{wid}/runs", headers=headers).json()["total"] == 2
    client.post(f"/v1/workloads/{wid}/runs", json={"limit": 1}, headers=headers)
    listed = client.get(f"/v1/workloads/{wid}/runs", headers=headers).json()
    assert listed["total"] == 2 and fresh["id"] in {r["id"] for r in listed["data"]}


# -- 2. Roles and owners --------------------------------------------------------------------

def test_roles_on_workloads(client: TestClient, reader_headers: dict[str, str],
                            submitter: tuple[dict[str, str], int]) -> None:
    headers, _ = submitter
    assert_problem(client.post("/v1/workloads", json=LLAMA_8B_CHAT), 401)
    assert_problem(client.post("/v1/workloads", json=LLAMA_8B_CHAT, headers=reader_headers), 403)
    assert_problem(client.get("/v1/workloads"), 401)
    assert_problem(client.get("/v1/workloads", headers=reader_headers), 403)
    wid = submit_workload(client, headers)
    assert_problem(client.get(f"/v1/workloads/{wid}/recommendations"), 401)
    assert_problem(client.post(f"/v1/workloads/{wid}/runs", headers=reader_headers), 403)
    # A submitter reads like a reader and may not touch the catalog.
    assert client.get("/v1/gpus", headers=headers).status_code == 200
    assert client.post("/v1/recommendations", json=LLAMA_8B_CHAT,
                       headers=headers).status_code == 200
    assert_problem(client.delete(f"/v1/gpus/{H100}", headers=headers), 403)
    assert_problem(client.post("/v1/quotes", json=new_quote(), headers=headers), 403)
    # Readers (and anonymous callers, with public reads) keep the stateless routes.
    assert client.post("/v1/recommendations", json=LLAMA_8B_CHAT).status_code == 200
    spec = {k: v for k, v in LLAMA_8B_CHAT.items() if k not in ("name", "objective",
                                                                  "constraints")}
    assert client.post("/v1/estimates", json={"workload": spec, "gpu_slug": H100}).status_code \
        == 200


def test_submitters_see_only_their_own_admins_see_all(
        client: TestClient, admin_headers: dict[str, str],
        submitter: tuple[dict[str, str], int],
        other_submitter: tuple[dict[str, str], int]) -> None:
    mine, my_id = submitter
    theirs, their_id = other_submitter
    a = submit_workload(client, mine, name="mine")
    b = submit_workload(client, theirs, name="theirs")
    run = client.post(f"/v1/workloads/{a}/runs", json={"limit": 1}, headers=mine).json()
    assert [w["id"] for w in client.get("/v1/workloads", headers=mine).json()["data"]] == [a]
    assert client.get(f"/v1/workloads/{a}", headers=mine).json()["owner_key_id"] == my_id
    for method, path in [("GET", f"/v1/workloads/{a}"), ("DELETE", f"/v1/workloads/{a}"),
                         ("GET", f"/v1/workloads/{a}/runs"),
                         ("GET", f"/v1/workloads/{a}/runs/{run['id']}"),
                         ("GET", f"/v1/workloads/{a}/recommendations"),
                         ("POST", f"/v1/workloads/{a}/runs")]:
        assert_problem(client.request(method, path, headers=theirs), 404)
    everything = client.get("/v1/workloads", headers=admin_headers).json()
    assert {w["id"] for w in everything["data"]} == {a, b} and everything["total"] == 2
    assert client.get(f"/v1/workloads/{b}", headers=admin_headers).json()["owner_key_id"] == \
        their_id
    assert client.get(f"/v1/workloads/{a}/runs", headers=admin_headers).json()["total"] == 1
    assert client.delete(f"/v1/workloads/{b}", headers=admin_headers).status_code == 204
    assert client.delete(f"/v1/workloads/{a}", headers=mine).status_code == 204
    assert client.get("/v1/workloads", headers=admin_headers).json()["total"] == 0


def test_admin_only_reads_do_not_say_writes(client: TestClient, session: Session) -> None:
    """GET /v1/quotes/history is admin only: refusing a read names the admin key it needs, not
    a write it is not."""
    anonymous = assert_problem(client.get("/v1/quotes/history"), 401)
    headers, _ = api_key(session, "submitter")
    submitter = assert_problem(client.get("/v1/quotes/history", headers=headers), 403)
    for body in (anonymous, submitter):
        assert "write" not in body["detail"].lower() and "admin" in body["detail"]


def test_idempotency_keys_are_per_api_key(client: TestClient,
                                          submitter: tuple[dict[str, str], int],
                                          other_submitter: tuple[dict[str, str], int]) -> None:
    mine, _ = submitter
    theirs, _ = other_submitter
    first = client.post("/v1/workloads", json=LLAMA_8B_CHAT,
                        headers={**mine, "Idempotency-Key": "same"})
    other = client.post("/v1/workloads", json=LLAMA_8B_CHAT,
                        headers={**theirs, "Idempotency-Key": "same"})
    assert first.status_code == 201 and other.status_code == 201
    assert first.json()["id"] != other.json()["id"]  # never another key's workload
    again = client.post("/v1/workloads", json=LLAMA_8B_CHAT,
                        headers={**mine, "Idempotency-Key": "same"})
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]


def test_keys_create_submitter(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    upgrade(url)
    key = subprocess.run(
        [sys.executable, "-m", "service.cli", "--database-url", url, "keys", "create",
         "--name", "portal", "--role", "submitter"],
        capture_output=True, text=True, check=True, cwd=REPO_ROOT,
    ).stdout.strip()
    app = create_app(Settings(database_url=url))
    with TestClient(app, raise_server_exceptions=False) as c:
        headers = {"Authorization": f"Bearer {key}"}
        assert c.post("/v1/workloads", json=LLAMA_8B_CHAT, headers=headers).status_code == 201
        assert_problem(c.post("/v1/gpus", json=new_gpu(), headers=headers), 403)
    with Session(app.state.engine) as s:
        owner = s.exec(select(StoredWorkload.owner_key_id)).one()
        assert s.get(ApiKey, owner).role == "submitter"  # type: ignore[union-attr]
    app.state.engine.dispose()


# -- 3. ETags: strong If-Match, lists, echo; If-None-Match 304 -------------------------------

@pytest.mark.parametrize("tag", ['"0"', "0", 'W/"0"', '"000000000"', '"00"', '""'])
def test_if_match_values_other_than_the_tag_are_412(client: TestClient,
                                                    admin_headers: dict[str, str],
                                                    tag: str) -> None:
    current = client.get(f"/v1/gpus/{H100}").headers["etag"]
    h = {**admin_headers, "If-Match": tag}
    assert_problem(client.patch(f"/v1/gpus/{H100}", json={"notes": "x"}, headers=h), 412)
    quote = client.post("/v1/quotes", json=new_quote(), headers=admin_headers).json()
    assert_problem(client.patch(f"/v1/quotes/{quote['id']}", json={"region": "r2"},
                                headers=h), 412)
    assert_problem(client.delete(f"/v1/quotes/{quote['id']}", headers=h), 412)
    assert_problem(client.delete(f"/v1/gpus/{H100}", headers=h), 412)
    assert client.get(f"/v1/gpus/{H100}").headers["etag"] == current


def test_if_match_strong_comparison_and_lists(client: TestClient,
                                              admin_headers: dict[str, str]) -> None:
    etag = client.get(f"/v1/gpus/{H100}").headers["etag"]
    version = etag.strip('"')
    weak = client.patch(f"/v1/gpus/{H100}", json={"notes": "w"},
                        headers={**admin_headers, "If-Match": f"W/{etag}"})
    assert_problem(weak, 412)  # weak tags never match If-Match
    sent = '"12", "999"'
    problem = assert_problem(client.patch(f"/v1/gpus/{H100}", json={"notes": "l"},
                                          headers={**admin_headers, "If-Match": sent}), 412)
    assert sent in problem["detail"] and etag in problem["detail"]
    listed = client.patch(f"/v1/gpus/{H100}", json={"notes": "l"},
                          headers={**admin_headers, "If-Match": f'"999", {etag}'})
    assert listed.status_code == 200 and listed.headers["etag"] == f'"{int(version) + 1}"'
    star = client.patch(f"/v1/gpus/{H100}", json={"notes": "s"},
                        headers={**admin_headers, "If-Match": "*"})
    assert star.status_code == 200


def test_if_match_and_if_none_match_sent_as_several_field_lines_are_one_list(
        client: TestClient, admin_headers: dict[str, str]) -> None:
    """RFC 9110 5.3: several field lines of one name are one comma-separated list, so
    `If-Match: *` + `If-Match: "999"` is no wildcard (the combined value is not `*`), a stale
    tag on the first line does not hide a matching one on a later line, and the 412 echoes
    every line sent."""
    slug = client.post("/v1/gpus", json=new_gpu(slug="if-match-lines-gpu"),
                       headers=admin_headers).json()["slug"]
    etag = client.get(f"/v1/gpus/{slug}").headers["etag"]
    auth = list(admin_headers.items())

    star_then_stale = client.patch(f"/v1/gpus/{slug}", json={"notes": "a"}, headers=[
        *auth, ("If-Match", "*"), ("If-Match", '"999"')])
    body = assert_problem(star_then_stale, 412)
    assert '*, "999"' in body["detail"]
    assert client.get(f"/v1/gpus/{slug}").headers["etag"] == etag  # nothing written

    stale_then_current = client.patch(f"/v1/gpus/{slug}", json={"notes": "b"}, headers=[
        *auth, ("If-Match", '"999"'), ("If-Match", etag)])
    assert stale_then_current.status_code == 200, stale_then_current.text
    assert stale_then_current.json()["notes"] == "b"

    etag = client.get(f"/v1/gpus/{slug}").headers["etag"]
    cached = client.get(f"/v1/gpus/{slug}", headers=[
        ("If-None-Match", '"999"'), ("If-None-Match", etag)])
    assert cached.status_code == 304 and cached.content == b""


def test_if_none_match_gives_304(client: TestClient, admin_headers: dict[str, str],
                                 submitter: tuple[dict[str, str], int]) -> None:
    first = client.get(f"/v1/gpus/{H100}")
    etag = first.headers["etag"]
    for sent in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
        cached = client.get(f"/v1/gpus/{H100}", headers={"If-None-Match": sent})
        assert cached.status_code == 304 and cached.content == b"", sent
        assert cached.headers["etag"] == etag
    assert client.get(f"/v1/gpus/{H100}", headers={"If-None-Match": '"nope"'}).status_code == 200
    client.patch(f"/v1/gpus/{H100}", json={"notes": "changed"},
                 headers={**admin_headers, "If-Match": etag})
    changed = client.get(f"/v1/gpus/{H100}", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    quote = client.get("/v1/quotes/1")
    assert client.get("/v1/quotes/1", headers={
        "If-None-Match": quote.headers["etag"]}).status_code == 304
    headers, _ = submitter
    wid = submit_workload(client, headers)
    got = client.get(f"/v1/workloads/{wid}", headers=headers)
    assert client.get(f"/v1/workloads/{wid}", headers={
        **headers, "If-None-Match": got.headers["etag"]}).status_code == 304
    run = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 1}, headers=headers)
    path = run.headers["location"]
    tag = client.get(path, headers=headers).headers["etag"]
    assert client.get(path, headers={**headers, "If-None-Match": tag}).status_code == 304


# -- 4. Price history survives deleting the quote and the GPU --------------------------------

def test_price_history_survives_quote_and_gpu_deletion(
        client: TestClient, admin_headers: dict[str, str], reader_headers: dict[str, str]) -> None:
    h = admin_headers
    assert client.post("/v1/gpus", json=new_gpu(), headers=h).status_code == 201
    quote = client.post("/v1/quotes", json=new_quote(gpu_slug="test-gpu-1",
                                                     price_usd_per_hour=10.0), headers=h).json()
    qid = quote["id"]
    patched = client.patch(f"/v1/quotes/{qid}", json={"price_usd_per_hour": 12.0},
                           headers={**h, "If-Match": f'"{quote["version"]}"'})
    assert patched.status_code == 200
    assert client.delete(f"/v1/quotes/{qid}", headers=h).status_code == 204
    assert client.delete("/v1/gpus/test-gpu-1", headers=h).status_code == 204
    history = client.get("/v1/quotes/history", params={"gpu": "test-gpu-1"}, headers=h).json()
    assert history["total"] == 2
    change, deleted = history["data"]
    assert (change["event"], change["old_price_usd_per_hour"],
            change["new_price_usd_per_hour"]) == ("price_change", 10.0, 12.0)
    assert (deleted["event"], deleted["old_price_usd_per_hour"],
            deleted["new_price_usd_per_hour"]) == ("deleted", 12.0, None)
    assert deleted["quote_id"] == qid and deleted["gpu_slug"] == "test-gpu-1"
    assert deleted["provider"] == "testcloud" and deleted["instance_type"] == "t.8xh100"
    per_quote = client.get(f"/v1/quotes/{qid}/history", headers=h).json()
    assert [e["event"] for e in per_quote["data"]] == ["price_change", "deleted"]
    assert_problem(client.get(f"/v1/quotes/{qid}/history", headers=reader_headers), 404)
    assert_problem(client.get("/v1/quotes/history", headers=reader_headers), 403)
    assert_problem(client.get("/v1/quotes/history"), 401)
    # A new quote never takes the deleted one's id (and so never its history).
    again = client.post("/v1/quotes", json=new_quote(), headers=h).json()
    assert again["id"] > qid
    assert client.get(f"/v1/quotes/{again['id']}/history").json()["total"] == 0


# -- 5. /v1/models paged like every list; did-you-mean ---------------------------------------

def test_models_are_paged(client: TestClient) -> None:
    everything = client.get("/v1/models").json()
    assert set(everything) == {"data", "total", "limit", "offset"}
    total = everything["total"]
    first = client.get("/v1/models", params={"limit": 5}).json()
    rest = client.get("/v1/models", params={"limit": 500, "offset": 5}).json()
    assert [m["id"] for m in first["data"] + rest["data"]] == \
        [m["id"] for m in everything["data"]]
    assert len(first["data"]) == 5 and rest["total"] == total
    llama = client.get("/v1/models", params={"family": "llama"}).json()
    assert llama["total"] >= 5 and all(m["family"] == "llama" for m in llama["data"])
    assert_problem(client.get("/v1/models", params={"limit": 0}), 422, "query.limit")


def test_unknown_preset_suggests_the_closest(client: TestClient) -> None:
    body = {**LLAMA_8B_CHAT, "model": {"preset": "llama-3-70b"}}
    problem = assert_problem(client.post("/v1/recommendations", json=body), 422,
                             "body.model.preset")
    assert "did you mean llama-3.1-70b" in problem["errors"][0]["message"]
    estimate = {"workload": body, "gpu_slug": H100}
    problem = assert_problem(client.post("/v1/estimates", json={
        **estimate, "workload": {k: v for k, v in body.items()
                                 if k not in ("name", "objective", "constraints")}}),
        422, "body.workload.model.preset")
    assert "llama-3.1-70b" in problem["errors"][0]["message"]
    assert "llama-3.1-70b" in assert_problem(client.get("/v1/models/llama-3-70b"),
                                             404)["detail"]


# -- 6. Estimates without an amount of training ---------------------------------------------

def test_training_estimate_without_amount(client: TestClient) -> None:
    workload = {"kind": "training", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
                "training": {"batch_size": 64, "seq_len": 4096}}
    resp = client.post("/v1/estimates", json={"workload": workload, "gpu_slug": H100,
                                              "gpu_count": 8})
    assert resp.status_code == 200, resp.text
    est = resp.json()
    assert est["time_to_complete_hours"] is None and est["energy_kwh_total"] is None
    assert est["memory"]["per_gpu_gb"] > 0 and est["throughput"]["tokens_per_s"] > 0
    assert est["step_time_ms"] > 0 and est["parallelism"]["gpu_count"] == 8
    assert any("no amount of training" in w for w in est["warnings"])
    with_amount = client.post("/v1/estimates", json={
        "workload": {**workload, "training": {**workload["training"], "tokens": 1e10}},
        "gpu_slug": H100, "gpu_count": 8}).json()
    assert with_amount["memory"] == est["memory"]
    assert with_amount["throughput"] == est["throughput"]
    assert with_amount["time_to_complete_hours"] > 0
    assert not any("no amount of training" in w for w in with_amount["warnings"])
    # Ranking on cost or time to finish still needs the amount.
    assert_problem(client.post("/v1/recommendations", json={**workload, "objective": "cost"}),
                   422, "body.training.tokens")
