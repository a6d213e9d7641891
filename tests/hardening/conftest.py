"""Fixtures for the hardening tests: a fresh, migrated and seeded database per module.

These tests commit for real (concurrency, faults, fuzzing), so they never share the session-wide
rolled-back database of tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from service.app.seeding import seed
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.core.security import create_key
from tests.conftest import PG_URL, create_pg_database, drop_pg_database


def fresh_database(tmp_dir: Path) -> tuple[str, bool]:
    """A new empty database URL (PostgreSQL when TEST_DATABASE_URL is set); (url, is_pg)."""
    if PG_URL:
        return create_pg_database(PG_URL, prefix="gpu_advisor_hard"), True
    return f"sqlite:///{tmp_dir / 'hardening.db'}", False


@pytest.fixture(scope="module")
def fresh_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh database, migrated and seeded, for this module only."""
    url, is_pg = fresh_database(tmp_path_factory.mktemp("hard"))
    upgrade(url)
    eng = make_engine(url)
    seed(eng)
    eng.dispose()
    yield url
    if is_pg:
        assert PG_URL
        drop_pg_database(PG_URL, url)


@pytest.fixture(scope="module")
def fresh_engine(fresh_url: str) -> Iterator[Engine]:
    eng = make_engine(fresh_url)
    yield eng
    eng.dispose()


def new_key(engine: Engine, role: str = "admin", name: str = "hardening") -> str:
    with Session(engine) as session:
        _, key = create_key(session, name=name, role=role)  # type: ignore[arg-type]
        session.commit()
    return key
