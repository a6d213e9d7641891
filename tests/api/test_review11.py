"""Review of issue 11 (roles, runs and retention, strict ETags, the light client): each test here
failed before the fix committed with it. Runs on SQLite and (with TEST_DATABASE_URL) PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlmodel import Session

from gpu_advisor_client import AdvisorClient, Retry
from service.common import utcnow
from service.config import Settings
from service.workloads.models import RecommendationRun
from tests.api.test_access import _key, _workload
from tests.api.test_client_models import GPU, _busy, _Server
from tests.api.test_gpus import assert_problem, new_gpu


def test_a_stored_run_is_never_pruned_by_its_own_retention(
        app: FastAPI, client: TestClient, session: Session, settings: Settings) -> None:
    """A run that exists with a later created_at (a replica whose clock runs ahead, or a
    request that began ranking later and committed first) must not make the run just stored
    prune itself: 201 + a Location that is 404 at once."""
    app.state.settings = settings.model_copy(update={"max_runs_per_workload": 1})
    headers, _ = _key(session, "submitter")
    wid = _workload(client, headers)
    first = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 1}, headers=headers)
    assert first.status_code == 201, first.text
    row = session.get(RecommendationRun, first.json()["id"])
    assert row is not None
    row.created_at = utcnow() + timedelta(minutes=5)
    session.add(row)
    session.commit()

    second = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 2}, headers=headers)
    assert second.status_code == 201, second.text
    got = client.get(second.headers["location"], headers=headers)
    assert got.status_code == 200, got.text
    assert got.json() == second.json()
    listed = client.get(f"/v1/workloads/{wid}/runs", headers=headers).json()
    assert listed["total"] == 1
    assert [r["id"] for r in listed["data"]] == [second.json()["id"]]


def test_client_survives_a_retry_after_too_large_for_a_float() -> None:
    """A proxy's (or hostile server's) `Retry-After: 999...9` (400 digits) parses as an int too
    large for a float: the client must wait its capped maximum and retry, not raise
    OverflowError out of an idempotent GET."""
    server = _Server(_busy("9" * 400), httpx.Response(200, json=GPU))
    waits: list[float] = []
    with AdvisorClient("http://x", transport=httpx.MockTransport(server), sleep=waits.append,
                       retry=Retry(attempts=2, max_wait_s=7)) as api:
        assert api.get_gpu("g").version == 3
    assert waits == [7] and len(server.requests) == 2


def test_if_match_and_if_none_match_sent_as_several_field_lines_are_one_list(
        client: TestClient, admin_headers: dict[str, str]) -> None:
    """RFC 9110 5.3: several field lines of one name are one comma-separated list. Reading
    only the first line made `If-Match: *` + `If-Match: "999"` a wildcard (the combined value
    is no `*`), a stale tag first a 412 although a later line matched, and echoed only part of
    what was sent."""
    slug = client.post("/v1/gpus", json=new_gpu(slug="review-11-gpu"),
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


@pytest.mark.parametrize("days", ["1e6", "inf", "1e400"])
def test_run_retention_days_beyond_a_date_is_refused_at_start(days: str,
                                                               database_url: str) -> None:
    """GPU_ADVISOR_RUN_RETENTION_DAYS=1000000 ("keep for ever") was accepted, and then every
    POST .../runs was a 500 (the cutoff date overflowed). It is refused when the settings are
    read, naming the variable."""
    with pytest.raises(ValidationError, match="run_retention_days"):
        Settings(database_url=database_url, run_retention_days=days)  # type: ignore[arg-type]


def test_the_longest_run_retention_accepted_stores_runs(
        app: FastAPI, client: TestClient, session: Session, settings: Settings) -> None:
    longest = Settings.model_fields["run_retention_days"].metadata
    days = next(m.le for m in longest if hasattr(m, "le"))
    app.state.settings = Settings(database_url=settings.database_url, run_retention_days=days)
    headers, _ = _key(session, "submitter")
    wid = _workload(client, headers)
    resp = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 1}, headers=headers)
    assert resp.status_code == 201, resp.text
    assert client.get(resp.headers["location"], headers=headers).status_code == 200


def test_admin_only_reads_do_not_say_writes(client: TestClient, session: Session) -> None:
    """GET /v1/quotes/history (admin only since issue 11) answered 'Writes need an admin API
    key' to a read: the error named the wrong reason."""
    anonymous = assert_problem(client.get("/v1/quotes/history"), 401)
    headers, _ = _key(session, "submitter")
    submitter = assert_problem(client.get("/v1/quotes/history", headers=headers), 403)
    for body in (anonymous, submitter):
        assert "write" not in body["detail"].lower() and "admin" in body["detail"]
