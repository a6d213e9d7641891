"""The schema comes only from Alembic: up, down and up again on an empty database, on SQLite
and (with TEST_DATABASE_URL) on PostgreSQL, and the result matches the models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from service.migrate import downgrade, upgrade
from service.models_registry import metadata
from tests.conftest import PG_URL, create_pg_database, drop_pg_database


@pytest.fixture
def empty_url(tmp_path: Path) -> Iterator[str]:
    if PG_URL:
        url = create_pg_database(PG_URL, prefix="gpu_advisor_mig")
        yield url
        drop_pg_database(PG_URL, url)
    else:
        yield f"sqlite:///{tmp_path / 'empty.db'}"


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_up_down_up(empty_url: str) -> None:
    assert _tables(empty_url) == set()
    upgrade(empty_url)
    first = _tables(empty_url)
    assert {"gpus", "quotes", "api_keys"} <= first
    downgrade(empty_url, "base")
    assert _tables(empty_url) == set()
    upgrade(empty_url)
    assert _tables(empty_url) == first


def test_migrations_match_models(empty_url: str) -> None:
    """No drift: autogenerate against the migrated database finds nothing to do."""
    upgrade(empty_url)
    engine = create_engine(empty_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        engine.dispose()
    assert diff == []
