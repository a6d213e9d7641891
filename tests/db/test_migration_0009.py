"""0009: quotes get observed_at, filled from the seed's known dates or captured_at's UTC day;
the revision triggers survive the SQLite table rebuild both ways; downgrade drops the column.
SQLite always; PostgreSQL too with TEST_DATABASE_URL (the empty_url fixture)."""

from __future__ import annotations

import csv
from datetime import UTC, date, datetime
from types import ModuleType

from sqlalchemy import create_engine, inspect, text

from service.app.seeding import QUOTES_CSV
from service.core.migrate import downgrade, upgrade
from tests.helpers import OLD_GPU_ROW, migration_module, table_revisions

_QUOTE = """
INSERT INTO quotes (gpu_slug, provider, region, instance_type, gpu_count, pricing,
  price_usd_per_hour, purchase_price_usd, source, captured_at, version, created_at, updated_at,
  multi_node)
VALUES (:slug, :provider, :region, :itype, 1, :pricing, :hourly, :purchase, :source, :captured,
  1, :captured, :captured, false)
"""


def _module() -> ModuleType:
    return migration_module("0009_quote_observed_at.py")


def _seed_rows() -> list[dict[str, str]]:
    with QUOTES_CSV.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _frozen_date(row: dict[str, str]) -> date | None:
    """The date the migration's frozen table gives a seed row (None: captured_at's day)."""
    import fnmatch

    for provider, pricing, itype, source, observed in _module()._SEEDED:
        def like(value: str, pattern: str) -> bool:
            return fnmatch.fnmatchcase(value, pattern.replace("%", "*"))
        if (row["provider"], row["pricing"]) == (provider, pricing) and like(
                row["instance_type"], itype) and like(row["source"], source):
            return observed  # type: ignore[no-any-return]
    return None


def test_0009_frozen_dates_match_the_seed_file() -> None:
    """Every seed row whose observed_at differs from its captured_at day is in the frozen
    table with the same date, and no other row is."""
    for row in _seed_rows():
        observed = date.fromisoformat(row["observed_at"])
        captured = date.fromisoformat(row["captured_at"][:10])
        expected = _frozen_date(row)
        assert (expected or captured) == observed, row["instance_type"]
        assert (expected is None) == (observed == captured), row["instance_type"]


def test_0009_fills_observed_at_and_keeps_triggers(empty_url: str) -> None:  # noqa: F811
    upgrade(empty_url, "0008")
    engine = create_engine(empty_url)
    seeded = {r["instance_type"]: r for r in _seed_rows()}
    read_day = datetime(2026, 11, 30, tzinfo=UTC)
    rows = [
        # a seeded AWS catalog row: its source says which catalog, 2025-05-31 (pre-cut price)
        ("aws", "us-east-1", "p5.48xlarge", "on_demand", 98.32, None,
         seeded["p5.48xlarge"]["source"], read_day),
        # a seeded purchase price: its announcement day
        ("nvidia-msrp", "global", "NVIDIA GeForce RTX 4090", "purchase", None, 1599.0,
         seeded["NVIDIA GeForce RTX 4090"]["source"], read_day),
        # a seeded catalog row with no known observation day: the day it was read
        ("lambda", "us-east-1", "gpu_8x_h100_sxm5", "on_demand", 23.92, None,
         seeded["gpu_8x_h100_sxm5"]["source"], read_day),
        # an imported row late in the UTC day: that UTC day, whatever the server's zone
        ("testcloud", "t-1", "t.x", "on_demand", 1.0, None, "import",
         datetime(2026, 3, 4, 23, 30, tzinfo=UTC)),
        # an AWS row someone else imported, source not the seed's: its captured day
        ("aws", "us-west-2", "p5.48xlarge", "on_demand", 55.04, None, "import",
         datetime(2026, 10, 1, 8, 0, tzinfo=UTC)),
    ]
    try:
        with engine.begin() as conn:
            conn.execute(text(OLD_GPU_ROW), {"slug": "g", "now": read_day})
            for provider, region, itype, pricing, hourly, purchase, source, captured in rows:
                conn.execute(text(_QUOTE), {
                    "slug": "g", "provider": provider, "region": region, "itype": itype,
                    "pricing": pricing, "hourly": hourly, "purchase": purchase,
                    "source": source, "captured": captured})
        upgrade(empty_url)
        with engine.connect() as conn:
            got = {(r.provider, r.region, r.instance_type): (r.observed_at, r.version)
                   for r in conn.execute(text(
                       "SELECT provider, region, instance_type, observed_at, version "
                       "FROM quotes"))}
        day = {k: date.fromisoformat(str(v[0])[:10]) for k, v in got.items()}
        assert day == {
            ("aws", "us-east-1", "p5.48xlarge"): date(2025, 5, 31),
            ("nvidia-msrp", "global", "NVIDIA GeForce RTX 4090"): date(2022, 10, 12),
            ("lambda", "us-east-1", "gpu_8x_h100_sxm5"): date(2026, 11, 30),
            ("testcloud", "t-1", "t.x"): date(2026, 3, 4),
            ("aws", "us-west-2", "p5.48xlarge"): date(2026, 10, 1),
        }
        assert {v[1] for v in got.values()} == {2}  # a new field: every ETag moves on
        columns = {c["name"]: c for c in inspect(engine).get_columns("quotes")}
        assert columns["observed_at"]["nullable"] is False

        for sql in ("UPDATE quotes SET version = version + 1",
                    "DELETE FROM quotes WHERE provider = 'testcloud'"):
            before = table_revisions(engine)["quotes"]
            with engine.begin() as conn:
                conn.execute(text(sql))
            assert table_revisions(engine)["quotes"] != before, sql

        downgrade(empty_url, "0008")
        assert "observed_at" not in {c["name"] for c in inspect(engine).get_columns("quotes")}
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM quotes")).scalar_one() == 4
        before = table_revisions(engine)["quotes"]
        with engine.begin() as conn:
            conn.execute(text("UPDATE quotes SET version = version + 1"))
        assert table_revisions(engine)["quotes"] != before  # the triggers are back after 0009 down
        upgrade(empty_url)
        with engine.connect() as conn:
            p5 = conn.execute(text("SELECT observed_at FROM quotes WHERE region = 'us-east-1' "
                                   "AND provider = 'aws'")).scalar_one()
        assert date.fromisoformat(str(p5)[:10]) == date(2025, 5, 31)
    finally:
        engine.dispose()
