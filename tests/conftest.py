"""Test fixtures: a database built by the real migrations, one rolled-back transaction per test.

SQLite always; PostgreSQL when TEST_DATABASE_URL is set (a fresh database is created on that
server for the run and dropped afterwards).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlmodel import Session

from service.app.factory import create_app
from service.app.seeding import seed
from service.core.config import Settings
from service.core.db import get_session, make_engine
from service.core.migrate import upgrade
from tests.helpers import api_key

PG_URL = os.environ.get("TEST_DATABASE_URL")


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if PG_URL:
        url = create_pg_database(PG_URL)
        yield url
        drop_pg_database(PG_URL, url)
    else:
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"


def create_pg_database(server_url: str, prefix: str = "gpu_advisor_test") -> str:
    """A new, empty database on the server behind ``server_url``; returns its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(server_url: str, url: str) -> None:
    name = make_url(url).database
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[Engine]:
    upgrade(database_url)
    eng = make_engine(database_url)
    seed(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, log_json=True)


@pytest.fixture
def connection(engine: Engine) -> Iterator[Connection]:
    """An outer transaction rolled back after the test: each test sees the seeded catalog."""
    conn = engine.connect()
    outer = conn.begin()
    yield conn
    outer.rollback()
    conn.close()


@pytest.fixture
def session(connection: Connection) -> Iterator[Session]:
    with Session(bind=connection, join_transaction_mode="create_savepoint") as s:
        yield s


@pytest.fixture
def app(settings: Settings, engine: Engine, connection: Connection) -> FastAPI:
    application = create_app(settings, engine=engine)

    def _session() -> Iterator[Session]:
        with Session(bind=connection, join_transaction_mode="create_savepoint",
                      expire_on_commit=False) as s:
            try:
                yield s
                s.commit()
            except BaseException:
                s.rollback()
                raise

    application.dependency_overrides[get_session] = _session
    return application


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def admin_headers(session: Session) -> dict[str, str]:
    return api_key(session, "admin")[0]


@pytest.fixture
def reader_headers(session: Session) -> dict[str, str]:
    return api_key(session, "reader")[0]


REPO_ROOT = Path(__file__).resolve().parent.parent


def browser_skip_notice(reports: list[pytest.TestReport]) -> list[str]:
    """The loud lines for skipped browser tests (none when every browser test ran)."""
    skipped = [r for r in reports if r.nodeid.startswith("tests/browser/")]
    if not skipped:
        return []
    reasons = sorted({str(r.longrepr[2]).removeprefix("Skipped: ")
                      if isinstance(r.longrepr, tuple) else str(r.longrepr) for r in skipped})
    return [f"{len(skipped)} BROWSER TESTS SKIPPED: {'; '.join(reasons)}",
            "The pages (/docs, /redoc, /ui) were NOT tested. Install Debian's chromium and "
            "chromium-driver (apt-get install chromium chromium-driver); .ci/run does, and fails "
            "when it cannot."]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """A missing Chromium skips the browser tests: say so at the end, where nobody misses it,
    instead of one more 's' in the progress line (the xdist controller sees every report)."""
    lines = browser_skip_notice(terminalreporter.stats.get("skipped", []))
    if lines:
        terminalreporter.write_sep("!", red=True, bold=True)
        for line in lines:
            terminalreporter.write_line(line, red=True, bold=True)
        terminalreporter.write_sep("!", red=True, bold=True)
