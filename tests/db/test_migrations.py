"""The schema comes only from Alembic: up, down and up again on an empty database, on SQLite
and (with TEST_DATABASE_URL) on PostgreSQL, and the result matches the models."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import ModuleType

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from service.app.schema import metadata
from service.app.seeding import seed_gpus
from service.core.migrate import downgrade, upgrade
from tests.helpers import OLD_GPU_ROW, migration_module, table_revisions


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
    return migration_module("0004_gpu_sm_clocks_l2_tensor_gen.py")


def test_0004_frozen_figures_match_the_seed_file() -> None:
    """The figures 0004 writes into already-seeded databases are the seed file's."""
    seeded = {
        g.slug: (g.sm_count, g.boost_clock_mhz, g.base_clock_mhz, g.l2_cache_mb,
                 g.tensor_core_generation)
        for g in seed_gpus()
    }
    assert _migration_0004()._SEED_FIGURES == seeded


def test_0004_fills_seeded_rows_of_an_existing_database(empty_url: str) -> None:
    """A catalog seeded before 0004 gets the figures for seed slugs (version bumped), nothing
    for its own GPUs; downgrade drops the columns and keeps the rows."""
    upgrade(empty_url, "0003")
    engine = create_engine(empty_url)
    now = datetime(2026, 11, 1, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            for slug in ("nvidia-h100-sxm5-80gb", "my-own-gpu"):
                conn.execute(text(OLD_GPU_ROW), {"slug": slug, "now": now})
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


_OLD_QUOTE = """
INSERT INTO quotes (id, gpu_slug, provider, region, instance_type, gpu_count, pricing,
  price_usd_per_hour, source, captured_at, version, created_at, updated_at)
VALUES (:id, :slug, 'lambda', 'us-east-1', :itype, 1, 'on_demand', 2.0, 'test', :now, 2, :now, :now)
"""
_OLD_HISTORY = """
INSERT INTO quote_price_history (quote_id, changed_at, changed_by, old_price_usd_per_hour,
  new_price_usd_per_hour) VALUES (:qid, :now, 'import', 1.5, 2.0)
"""
_OLD_WORKLOAD = """
INSERT INTO workloads (id, name, objective, kind, spec, idempotency_key, request_hash, created_at)
VALUES (:id, 'w', 'cost', 'inference', '{}', :key, 'h', :now)
"""


def test_0005_keeps_history_and_owners(empty_url: str) -> None:
    """0005 on a database with data: history rows get their quote's identity, survive the
    quote's deletion, and workloads stored before owners stay (owner null). Downgrade drops
    only the history of deleted quotes; up again works."""
    upgrade(empty_url, "0004")
    engine = create_engine(empty_url)
    now = datetime(2026, 11, 1, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            conn.execute(text(OLD_GPU_ROW), {"slug": "old-gpu", "now": now})
            for qid in (1, 2):
                conn.execute(text(_OLD_QUOTE), {"id": qid, "slug": "old-gpu",
                                                "itype": f"i{qid}", "now": now})
                conn.execute(text(_OLD_HISTORY), {"qid": qid, "now": now})
            conn.execute(text(_OLD_WORKLOAD), {"id": "w-old", "key": "k", "now": now})
        upgrade(empty_url)
        with engine.begin() as conn:
            rows = conn.execute(text(
                "SELECT quote_id, event, gpu_slug, provider, instance_type, pricing "
                "FROM quote_price_history ORDER BY quote_id")).all()
            assert [tuple(r) for r in rows] == [
                (1, "price_change", "old-gpu", "lambda", "i1", "on_demand"),
                (2, "price_change", "old-gpu", "lambda", "i2", "on_demand")]
            assert conn.execute(text("SELECT owner_key_id FROM workloads")).scalar() is None
            conn.execute(text("DELETE FROM quotes WHERE id = 2"))  # no cascade any more
            assert conn.execute(text(
                "SELECT count(*) FROM quote_price_history")).scalar_one() == 2
            # The same Idempotency-Key under another owner is another workload.
            conn.execute(text("INSERT INTO api_keys (name, role, prefix, key_hash, created_at) "
                              "VALUES ('s', 'submitter', 'p1', 'h', :now)"), {"now": now})
            conn.execute(text(_OLD_WORKLOAD.replace("created_at)", "created_at, owner_key_id)")
                              .replace(":now)", ":now, 1)")),
                         {"id": "w-new", "key": "k", "now": now + timedelta(days=1)})
        downgrade(empty_url, "0004")
        with engine.connect() as conn:
            assert conn.execute(text(
                "SELECT quote_id FROM quote_price_history")).scalars().all() == [1]
            keys = conn.execute(text("SELECT id, idempotency_key FROM workloads ORDER BY id"))
            assert [tuple(r) for r in keys] == [("w-new", None), ("w-old", "k")]  # oldest kept
        upgrade(empty_url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM quotes")).scalar_one() == 1
    finally:
        engine.dispose()


def test_table_revisions_move_with_every_write(empty_url: str) -> None:
    """Migration 0007's triggers: every INSERT, UPDATE and DELETE of gpus or quotes gives that
    table's counter a new value in the same transaction (a rolled-back write leaves it, and
    the next write does not reach the rolled-back value again), and the snapshot fingerprint
    is that counter."""
    from sqlmodel import Session

    from service.app.seeding import seed
    from service.core.snapshots import table_fingerprint
    from service.quotes.models import Quote

    upgrade(empty_url)
    engine = create_engine(empty_url)
    try:
        assert table_revisions(engine) == {"gpus": 0, "quotes": 0}
        seed(engine)
        seeded = table_revisions(engine)
        assert seeded["gpus"] != 0 and seeded["quotes"] != 0
        with Session(engine) as session:
            assert table_fingerprint(session, Quote) == ("revision", seeded["quotes"])
        bump = "UPDATE {0} SET version = version + 1 WHERE id = (SELECT min(id) FROM {0})"
        steps = [
            ("quotes", bump.format("quotes")),
            ("quotes", "DELETE FROM quotes WHERE id = (SELECT max(id) FROM quotes)"),
            ("gpus", bump.format("gpus")),
        ]
        for table, sql in steps:
            before = table_revisions(engine)
            with engine.begin() as conn:
                conn.execute(text(sql))
            after = table_revisions(engine)
            assert after[table] != before[table], sql
            other = "gpus" if table == "quotes" else "quotes"
            assert after[other] == before[other], sql
        before = table_revisions(engine)
        with engine.connect() as conn:
            trans = conn.begin()
            conn.execute(text("DELETE FROM quotes"))
            inside = conn.execute(text(
                "SELECT revision FROM table_revisions WHERE table_name = 'quotes'")).scalar()
            trans.rollback()
        assert table_revisions(engine) == before != {**before, "quotes": inside}
        with engine.begin() as conn:
            conn.execute(text(steps[0][1]))
        assert table_revisions(engine)["quotes"] not in {before["quotes"], inside}
        with engine.begin() as conn:  # a counter row deleted by hand: the aggregate fallback
            conn.execute(text("DELETE FROM table_revisions WHERE table_name = 'quotes'"))
        with Session(engine) as session:
            fallback = table_fingerprint(session, Quote)
        count = fallback[0]  # (count, max id, sum of versions, latest update)
        assert isinstance(count, int) and count > 0
        with engine.begin() as conn:
            conn.execute(text(steps[0][1]))
        with Session(engine) as session:
            assert table_fingerprint(session, Quote) != fallback
        downgrade(empty_url, "0006")
        assert "table_revisions" not in _tables(empty_url)
        with engine.begin() as conn:  # no trigger left behind that writes a missing table
            conn.execute(text("UPDATE quotes SET version = version + 1"))
    finally:
        engine.dispose()
