"""table_revisions: a counter per snapshot table, kept by triggers

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 22:45:00

Every recommendation checks that its process's catalog and quote snapshots are current. It
aggregated both tables (count, max id, version sum, latest update) on every request: ~40 ms at
200,000 quotes. Now triggers give ``table_revisions.revision`` of ``gpus`` / ``quotes`` a new
value in the transaction of every write to their rows, and the check reads two rows. The value
is new, not the old one plus 1: a transaction that wrote and rolled back must not leave a
value that the next writer reaches again, or a snapshot built inside the rolled-back
transaction (the test suite runs each test that way) would be taken for the new state.
PostgreSQL draws it from a sequence (never handed out twice, rollbacks included), SQLite from
``random()`` (64 bits).

SQLite: AFTER INSERT / UPDATE / DELETE triggers per row. PostgreSQL: one function and an
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE trigger per statement (a 20,000-row import bumps
once). A later migration that rebuilds ``gpus`` or ``quotes`` on SQLite (batch_alter_table
copies the table) drops their triggers: it must call :func:`create_triggers` again
(tests/db/test_migrations.py checks, at head, that a write to either table moves its counter).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("gpus", "quotes")
_EVENTS = ("insert", "update", "delete")


def create_triggers() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE SEQUENCE IF NOT EXISTS table_revision_seq AS BIGINT")
        op.execute(
            "CREATE OR REPLACE FUNCTION bump_table_revision() RETURNS trigger AS $$ BEGIN "
            "UPDATE table_revisions SET revision = nextval('table_revision_seq') "
            "WHERE table_name = TG_TABLE_NAME; RETURN NULL; END $$ LANGUAGE plpgsql")
        for table in TABLES:
            op.execute(
                f"CREATE TRIGGER trg_{table}_revision AFTER INSERT OR UPDATE OR DELETE "
                f"OR TRUNCATE ON {table} FOR EACH STATEMENT "
                "EXECUTE FUNCTION bump_table_revision()")
        return
    for table in TABLES:
        for event in _EVENTS:
            op.execute(
                f"CREATE TRIGGER trg_{table}_revision_{event} AFTER {event.upper()} ON {table} "
                f"BEGIN UPDATE table_revisions SET revision = random() "
                f"WHERE table_name = '{table}'; END")


def drop_triggers() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_revision ON {table}")
        op.execute("DROP FUNCTION IF EXISTS bump_table_revision()")
        op.execute("DROP SEQUENCE IF EXISTS table_revision_seq")
        return
    for table in TABLES:
        for event in _EVENTS:
            op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_revision_{event}")


def upgrade() -> None:
    revisions = op.create_table(
        "table_revisions",
        sa.Column("table_name", sa.String(length=64), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("table_name", name=op.f("pk_table_revisions")),
    )
    op.bulk_insert(revisions, [{"table_name": t, "revision": 0} for t in TABLES])
    create_triggers()


def downgrade() -> None:
    drop_triggers()
    op.drop_table("table_revisions")
