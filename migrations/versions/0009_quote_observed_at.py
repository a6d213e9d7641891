"""quotes: observed_at, the day the source observed the price

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 18:00:00

A quote's age (``age_days``, ``stale``) counted from ``captured_at``, the time the price was
read into this service. A price read today from an old catalog then looked fresh: the seed's
AWS p5.48xlarge at $98.32/h (the on-demand price before AWS's June 2025 cut) reported an age
of ~1.6 days. ``observed_at`` is the day the source observed the price, and ages count from it.

Existing rows are filled as follows:

- every row: the UTC date of its ``captured_at``. For imported rows that is the import's time
  (or the ``captured_at`` the import was given); for rows added by ``POST /v1/quotes``, the
  ``captured_at`` sent.
- seeded rows whose source has an earlier known observation date: that date (frozen copy of
  service/data/quotes.csv's ``observed_at`` at this revision, matched on provider, pricing and
  the source text the seed wrote; see service/data/README.md "observed_at"). They are the AWS
  catalog rows (2025-05-31: prices before the June 2025 cut) and the six purchase prices
  (their announcement or listing dates). A row keeps the earlier of the two dates.

Each row gets a new field, so each row's ``version`` (its ETag) moves on. The downgrade drops
the column. On SQLite both directions rebuild ``quotes`` (batch_alter_table copies the table),
which drops migration 0007's revision triggers: they are created again (frozen copy below).
"""

from collections.abc import Sequence
from datetime import UTC, date, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_AWS_CATALOG = "%catalogs/v7/aws/vms.csv @001367d22a0033fac286a8c71aeac7109e431bcb%"
_SEEDED: tuple[tuple[str, str, str, str, date], ...] = (
    # (provider, pricing, instance_type or "%", source LIKE pattern, observed_at)
    ("aws", "on_demand", "%", _AWS_CATALOG, date(2025, 5, 31)),
    ("aws", "spot", "%", _AWS_CATALOG, date(2025, 5, 31)),
    ("nvidia-msrp", "purchase", "NVIDIA GeForce RTX 4090",
     "NVIDIA launch price $1,599 (on sale 2022-10-12)%", date(2022, 10, 12)),
    ("nvidia-msrp", "purchase", "NVIDIA GeForce RTX 3090",
     "NVIDIA launch price $1,499 (2020)%", date(2020, 12, 31)),
    ("nvidia-msrp", "purchase", "NVIDIA RTX 4000 Ada Generation",
     "NVIDIA announced price $1,250 (2023)%", date(2023, 12, 31)),
    ("nvidia-msrp", "purchase", "NVIDIA Quadro RTX 6000",
     "NVIDIA SIGGRAPH 2018 announced price $6,300%", date(2018, 8, 16)),
    ("nvidia-msrp", "purchase", "NVIDIA Quadro RTX 8000",
     "NVIDIA SIGGRAPH 2018 announced price $10,000%", date(2018, 8, 16)),
    ("retail-listing", "purchase", "NVIDIA RTX 6000 Ada Generation",
     "Early retail listing price $9,999 (late 2022)%", date(2022, 12, 31)),
)


def _quotes() -> sa.TableClause:
    return sa.table(
        "quotes",
        sa.column("id", sa.Integer()), sa.column("provider", sa.String()),
        sa.column("pricing", sa.String()), sa.column("instance_type", sa.String()),
        sa.column("source", sa.String()), sa.column("captured_at", sa.DateTime(timezone=True)),
        sa.column("observed_at", sa.Date()), sa.column("version", sa.Integer()),
        sa.column("updated_at", sa.DateTime(timezone=True)),
    )


def _sqlite_quote_triggers() -> None:
    """Migration 0007's SQLite triggers on quotes, lost when the table is rebuilt."""
    if op.get_bind().dialect.name != "sqlite":
        return
    for event in ("insert", "update", "delete"):
        op.execute(
            f"CREATE TRIGGER IF NOT EXISTS trg_quotes_revision_{event} AFTER {event.upper()} "
            "ON quotes BEGIN UPDATE table_revisions SET revision = random() "
            "WHERE table_name = 'quotes'; END")


def upgrade() -> None:
    with op.batch_alter_table("quotes", schema=None,
                              table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        batch_op.add_column(sa.Column("observed_at", sa.Date(), nullable=True))
    quotes = _quotes()
    bind = op.get_bind()
    # PostgreSQL's revision trigger fires per statement, even one that changes no row: an
    # empty table is left alone so a fresh database starts at revision 0
    has_rows = bind.execute(sa.select(quotes.c.id).limit(1)).first() is not None
    if has_rows:
        _fill(bind, quotes)
    with op.batch_alter_table("quotes", schema=None,
                              table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        batch_op.alter_column("observed_at", existing_type=sa.Date(), nullable=False)
    _sqlite_quote_triggers()


def _fill(bind: sa.Connection, quotes: sa.TableClause) -> None:
    if bind.dialect.name == "postgresql":
        captured_day: sa.ColumnElement[date] = sa.cast(
            sa.func.timezone("UTC", quotes.c.captured_at), sa.Date())
    else:  # SQLite keeps UTC times as text, 'YYYY-MM-DD HH:MM:SS.ffffff'
        captured_day = sa.func.date(quotes.c.captured_at)
    bind.execute(quotes.update().values(
        observed_at=captured_day, version=quotes.c.version + 1,
        updated_at=datetime.now(UTC)))
    for provider, pricing, instance_type, source, observed in _SEEDED:
        bind.execute(quotes.update().where(
            quotes.c.provider == provider, quotes.c.pricing == pricing,
            quotes.c.instance_type.like(instance_type), quotes.c.source.like(source),
            quotes.c.observed_at > observed,
        ).values(observed_at=observed))


def downgrade() -> None:
    with op.batch_alter_table("quotes", schema=None,
                              table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        batch_op.drop_column("observed_at")
    _sqlite_quote_triggers()
