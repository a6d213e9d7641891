"""The schema comes only from Alembic: up, down and up again on an empty database, on SQLite
and (with TEST_DATABASE_URL) on PostgreSQL, and the result matches the models."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from service.migrate import downgrade, upgrade
from service.models_registry import metadata
from service.seeding import seed_gpus
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


def _migration_0004() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "migrations" / "versions"
    spec = importlib.util.spec_from_file_location(
        "migration_0004", path / "0004_gpu_sm_clocks_l2_tensor_gen.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_0004_frozen_figures_match_the_seed_file() -> None:
    """The figures 0004 writes into already-seeded databases are the seed file's."""
    seeded = {
        g.slug: (g.sm_count, g.boost_clock_mhz, g.base_clock_mhz, g.l2_cache_mb,
                 g.tensor_core_generation)
        for g in seed_gpus()
    }
    assert _migration_0004()._SEED_FIGURES == seeded


_OLD_ROW = """
INSERT INTO gpus (slug, name, vendor, architecture, form_factor, memory_gb, memory_type,
  memory_bandwidth_gb_s, tdp_w, interconnect, max_gpus_per_node, mig_instances, aliases,
  source, notes, version, created_at, updated_at)
VALUES (:slug, 'x', 'NVIDIA', '', 'sxm', 80, '', 3350, 700, 'nvlink', 8, 7, '[]', 'test', '',
  3, :now, :now)
"""


def test_0004_fills_seeded_rows_of_an_existing_database(empty_url: str) -> None:
    """A catalog seeded before 0004 gets the figures for seed slugs (version bumped), nothing
    for its own GPUs; downgrade drops the columns and keeps the rows."""
    upgrade(empty_url, "0003")
    engine = create_engine(empty_url)
    now = datetime(2026, 11, 1, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            for slug in ("nvidia-h100-sxm5-80gb", "my-own-gpu"):
                conn.execute(text(_OLD_ROW), {"slug": slug, "now": now})
        upgrade(empty_url)
        with engine.connect() as conn:
            rows = {
                r.slug: r for r in conn.execute(text(
                    "SELECT slug, sm_count, boost_clock_mhz, base_clock_mhz, l2_cache_mb,"
                    " tensor_core_generation, version FROM gpus"
                ))
            }
        h100 = rows["nvidia-h100-sxm5-80gb"]
        assert (h100.sm_count, h100.boost_clock_mhz, h100.base_clock_mhz, h100.l2_cache_mb,
                h100.tensor_core_generation, h100.version) == (132, 1980, 1590, 50, 4, 4)
        own = rows["my-own-gpu"]
        assert (own.sm_count, own.boost_clock_mhz, own.version) == (None, None, 3)
        downgrade(empty_url, "0003")
        columns = {c["name"] for c in inspect(engine).get_columns("gpus")}
        assert "sm_count" not in columns and "tensor_core_generation" not in columns
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM gpus")).scalar_one() == 2
    finally:
        engine.dispose()
