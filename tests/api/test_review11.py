"""Review of issue 11 (roles, runs and retention, strict ETags, the light client): each test here
failed before the fix committed with it. Runs on SQLite and (with TEST_DATABASE_URL) PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlmodel import Session

from service.common import utcnow
from service.config import Settings
from service.workloads.models import RecommendationRun
from tests.api.test_access import _key, _workload


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
