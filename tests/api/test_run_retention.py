"""Stored runs and their retention: a run just stored is never pruned by its own retention, and
GPU_ADVISOR_RUN_RETENTION_DAYS is bounded so that the cutoff date always exists. Runs on SQLite
and (with TEST_DATABASE_URL) PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlmodel import Session

from service.core.config import Settings
from service.core.times import utcnow
from service.workloads.models import RecommendationRun
from tests.helpers import api_key, submit_workload


def test_a_stored_run_is_never_pruned_by_its_own_retention(
        app: FastAPI, client: TestClient, session: Session, settings: Settings) -> None:
    """A run that exists with a later created_at (a replica whose clock runs ahead, or a
    request that began ranking later and committed first) must not make the run just stored
    prune itself: 201 + a Location that is 404 at once."""
    app.state.settings = settings.model_copy(update={"max_runs_per_workload": 1})
    headers, _ = api_key(session, "submitter")
    wid = submit_workload(client, headers)
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


@pytest.mark.parametrize("days", ["1e6", "inf", "1e400"])
def test_run_retention_days_beyond_a_date_is_refused_at_start(days: str,
                                                               database_url: str) -> None:
    """A retention so long ("keep for ever": 1000000 days) that the cutoff date overflows would
    make every POST .../runs a 500: it is refused when the settings are read, naming the
    variable."""
    with pytest.raises(ValidationError, match="run_retention_days"):
        Settings(database_url=database_url, run_retention_days=days)  # type: ignore[arg-type]


def test_the_longest_run_retention_accepted_stores_runs(
        app: FastAPI, client: TestClient, session: Session, settings: Settings) -> None:
    """The settings' upper bound itself still gives a cutoff date: runs are stored and read."""
    longest = Settings.model_fields["run_retention_days"].metadata
    days = next(m.le for m in longest if hasattr(m, "le"))
    app.state.settings = Settings(database_url=settings.database_url, run_retention_days=days)
    headers, _ = api_key(session, "submitter")
    wid = submit_workload(client, headers)
    resp = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 1}, headers=headers)
    assert resp.status_code == 201, resp.text
    assert client.get(resp.headers["location"], headers=headers).status_code == 200
