"""Fixtures of the migration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PG_URL, create_pg_database, drop_pg_database


@pytest.fixture
def empty_url(tmp_path: Path) -> Iterator[str]:
    """A new, empty database (PostgreSQL when TEST_DATABASE_URL is set), dropped after the test."""
    if PG_URL:
        url = create_pg_database(PG_URL, prefix="gpu_advisor_mig")
        yield url
        drop_pg_database(PG_URL, url)
    else:
        yield f"sqlite:///{tmp_path / 'empty.db'}"
