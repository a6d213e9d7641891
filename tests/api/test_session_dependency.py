"""The request session (service.core.db.get_session) and the access dependencies, unmocked.

Most API tests replace ``get_session`` with a session inside a rolled-back transaction; these
run the real one on a database of their own (SQLite, or PostgreSQL under TEST_DATABASE_URL):
what a request adds is committed even when nothing flushed it, and a request that never
touches the database -- an anonymous read's access check included -- makes no trip to the
thread pool (each trip is a GIL hand-over between the event loop and a worker, a cost the
floor bench in bench/results/http.json measures).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from service.app.factory import create_app
from service.core.config import Settings
from service.core.db import SessionDep, make_engine
from service.core.migrate import upgrade
from service.core.security import ApiKey, ReaderDep, SubmitterDep, create_key, hash_key
from tests.conftest import PG_URL, create_pg_database, drop_pg_database


@pytest.fixture(scope="module")
def own_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    url = create_pg_database(PG_URL, "gpu_advisor_session") if PG_URL else (
        f"sqlite:///{Path(tmp_path_factory.mktemp('session')) / 'session.db'}")
    upgrade(url)
    engine = make_engine(url)
    yield engine
    engine.dispose()
    if PG_URL:
        drop_pg_database(PG_URL, url)


@pytest.fixture
def checkouts(own_engine: Engine) -> Iterator[list[int]]:
    """Connections taken from the pool while the test runs (one entry per checkout)."""
    taken: list[int] = []

    def on_checkout(*_: object) -> None:
        taken.append(1)

    event.listen(own_engine, "checkout", on_checkout)
    yield taken
    event.remove(own_engine, "checkout", on_checkout)


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the request ran in the thread pool (FastAPI's sync dependencies and routes and
    get_session's commit all go through ``anyio.to_thread.run_sync``), by function name."""
    names: list[str] = []
    real = anyio.to_thread.run_sync

    async def counting(func: Any, *args: Any, **kwargs: Any) -> Any:
        names.append(getattr(func, "__name__", repr(func)))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    return names


@pytest.fixture
def own_client(own_engine: Engine) -> Iterator[TestClient]:
    app: FastAPI = create_app(Settings(database_url=str(own_engine.url), log_json=True),
                              engine=own_engine)

    @app.post("/test/add-unflushed")
    def add_unflushed(session: SessionDep, name: str) -> dict[str, str]:
        session.add(ApiKey(name=name, role="reader", prefix=name[:16],
                           key_hash=hash_key(name)))
        return {"added": name}

    @app.post("/test/rename")
    def rename(session: SessionDep, name: str, to: str) -> dict[str, str]:
        row = session.exec(select(ApiKey).where(ApiKey.name == name)).one()
        row.name = to  # no add, no flush: the commit after the route must carry it
        return {"renamed": to}

    @app.get("/test/read-only-access")
    async def read_only_access(_: ReaderDep) -> dict[str, bool]:
        return {"ok": True}

    @app.get("/test/submitter-access")
    async def submitter_access(caller: SubmitterDep) -> dict[str, str]:
        return {"name": caller.name}

    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def test_an_unflushed_add_is_committed(own_client: TestClient, own_engine: Engine) -> None:
    r = own_client.post("/test/add-unflushed", params={"name": "unflushed-row"})
    assert r.status_code == 200, r.text
    with Session(own_engine) as session:
        row = session.exec(select(ApiKey).where(ApiKey.name == "unflushed-row")).one()
    assert row.role == "reader"


def test_an_attribute_change_is_committed(own_client: TestClient, own_engine: Engine) -> None:
    assert own_client.post("/test/add-unflushed", params={"name": "before-rename"}
                           ).status_code == 200
    r = own_client.post("/test/rename", params={"name": "before-rename", "to": "after-rename"})
    assert r.status_code == 200, r.text
    with Session(own_engine) as session:
        names = set(session.exec(select(ApiKey.name)).all())
    assert "after-rename" in names and "before-rename" not in names


def test_a_refused_request_makes_no_trip(own_client: TestClient, trips: list[str]) -> None:
    r = own_client.get("/test/submitter-access")
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert trips == []


def test_an_anonymous_read_makes_no_trip_to_the_thread_pool(
        own_client: TestClient, checkouts: list[int], trips: list[str]) -> None:
    r = own_client.get("/test/read-only-access")
    assert r.status_code == 200, r.text
    assert trips == []
    assert checkouts == []


def test_a_key_is_still_looked_up(own_client: TestClient, own_engine: Engine,
                                  checkouts: list[int], trips: list[str]) -> None:
    with Session(own_engine) as session:
        _, key = create_key(session, name="session-dep-submitter", role="submitter")
        _, reader = create_key(session, name="session-dep-reader", role="reader")
        session.commit()
    checkouts.clear()
    ok = own_client.get("/test/submitter-access", headers={"Authorization": f"Bearer {key}"})
    assert ok.status_code == 200 and ok.json() == {"name": "session-dep-submitter"}
    assert len(checkouts) == 1
    assert len(trips) == 2  # the key's lookup, then the commit of the session that read it
    # a reader key on a submitter route, an unknown key on a public read, no key at all
    forbidden = own_client.get("/test/submitter-access",
                               headers={"Authorization": f"Bearer {reader}"})
    assert forbidden.status_code == 403
    assert forbidden.headers["content-type"] == "application/problem+json"
    unknown = own_client.get("/test/read-only-access",
                             headers={"Authorization": "Bearer gpa_nope_nope"})
    assert unknown.status_code == 401
    assert unknown.headers["content-type"] == "application/problem+json"
    assert own_client.get("/test/submitter-access").status_code == 401


def test_a_recommendation_reads_two_revisions_in_one_statement_and_makes_one_trip(
        own_client: TestClient, own_engine: Engine, checkouts: list[int],
        trips: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """POST /v1/recommendations checks the catalog and the quotes with one statement on one
    pooled connection, without its session (which then never touches the database: no
    BEGIN, no COMMIT), and is answered without FastAPI validating the answer in the pool:
    the route is its only trip."""
    import service.workloads.service as ws

    body = {"kind": "compute", "precision": "fp64",
            "compute": {"total_tflop": 1000, "total_gb_moved": 100, "memory_gb": 10}}
    assert own_client.post("/v1/recommendations", json=body).status_code == 200  # snapshots
    statements: list[str] = []
    reads: list[tuple[str, ...]] = []
    real = ws.revisions_read

    def on_execute(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    def read(engine: Engine, *names: str) -> Any:
        reads.append(names)
        got = real(engine, *names)
        assert got is not None and all(kind == "revision" for kind, _ in got), got
        return got

    monkeypatch.setattr(ws, "revisions_read", read)
    event.listen(own_engine, "before_cursor_execute", on_execute)
    checkouts.clear()
    trips.clear()
    try:
        r = own_client.post("/v1/recommendations", json=body)
    finally:
        event.remove(own_engine, "before_cursor_execute", on_execute)
    assert r.status_code == 200, r.text
    assert reads == [("gpus", "quotes")]
    assert statements == []  # the session made none
    assert len(checkouts) == 1
    assert len(trips) == 1, trips
