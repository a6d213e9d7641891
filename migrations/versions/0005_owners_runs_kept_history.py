"""workload and run owners, idempotency keys per owner, price history kept after deletes

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 18:40:00

- workloads.owner_key_id, recommendation_runs.created_by_key_id: the API key that stored them
  (null for rows stored before; only admins see those).
- workloads: Idempotency-Key unique per owner, not globally (one key's retry never replays
  another key's workload).
- quote_price_history: no foreign key to quotes (deleting a quote or its GPU keeps the
  history); each row carries the quote's identity and an event (price_change / deleted).
- quotes (SQLite): AUTOINCREMENT, so a deleted quote's id (and its history) is never reused.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_IDENTITY = ("gpu_slug", "provider", "region", "instance_type", "pricing")


def upgrade() -> None:
    with op.batch_alter_table("workloads", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner_key_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f("fk_workloads_owner_key_id_api_keys"),
                                    "api_keys", ["owner_key_id"], ["id"])
        batch_op.create_index(batch_op.f("ix_workloads_owner_key_id"), ["owner_key_id"],
                              unique=False)
        batch_op.drop_index(batch_op.f("ix_workloads_idempotency_key"))
        batch_op.create_unique_constraint(
            batch_op.f("uq_workloads_owner_key_id_idempotency_key"),
            ["owner_key_id", "idempotency_key"])

    with op.batch_alter_table("recommendation_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("created_by_key_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f("fk_recommendation_runs_created_by_key_id_api_keys"),
                                    "api_keys", ["created_by_key_id"], ["id"])
        batch_op.create_index(batch_op.f("ix_recommendation_runs_created_by_key_id"),
                              ["created_by_key_id"], unique=False)

    with op.batch_alter_table("quote_price_history", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_quote_price_history_quote_id_quotes"),
                                 type_="foreignkey")
        batch_op.add_column(sa.Column("event", sa.String(length=16), nullable=False,
                                      server_default="price_change"))
        batch_op.add_column(sa.Column("gpu_slug", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("provider", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("region", sa.String(length=60), nullable=True))
        batch_op.add_column(sa.Column("instance_type", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("pricing", sa.String(length=16), nullable=True))
        batch_op.create_index(batch_op.f("ix_quote_price_history_gpu_slug"), ["gpu_slug"],
                              unique=False)
    for column in _IDENTITY:
        op.execute(
            f"UPDATE quote_price_history SET {column} = "  # noqa: S608 (fixed column names)
            f"(SELECT quotes.{column} FROM quotes WHERE quotes.id = quote_price_history.quote_id)"
        )

    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("quotes", schema=None, recreate="always",
                                  table_kwargs={"sqlite_autoincrement": True}):
            pass


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("quotes", schema=None, recreate="always"):
            pass
    # History of deleted quotes cannot be kept under the old foreign key.
    op.execute("DELETE FROM quote_price_history WHERE quote_id NOT IN (SELECT id FROM quotes)")
    with op.batch_alter_table("quote_price_history", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_quote_price_history_gpu_slug"))
        for column in ("pricing", "instance_type", "region", "provider", "gpu_slug", "event"):
            batch_op.drop_column(column)
        batch_op.create_foreign_key(batch_op.f("fk_quote_price_history_quote_id_quotes"),
                                    "quotes", ["quote_id"], ["id"], ondelete="CASCADE")

    with op.batch_alter_table("recommendation_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_recommendation_runs_created_by_key_id"))
        batch_op.drop_constraint(
            batch_op.f("fk_recommendation_runs_created_by_key_id_api_keys"), type_="foreignkey")
        batch_op.drop_column("created_by_key_id")

    # Keys were unique per owner; the old schema wants them unique: keep the oldest use.
    op.execute(
        "UPDATE workloads SET idempotency_key = NULL WHERE idempotency_key IS NOT NULL AND "
        "EXISTS (SELECT 1 FROM workloads AS w WHERE w.idempotency_key = "
        "workloads.idempotency_key AND (w.created_at < workloads.created_at OR "
        "(w.created_at = workloads.created_at AND w.id < workloads.id)))"
    )
    with op.batch_alter_table("workloads", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_workloads_owner_key_id_idempotency_key"),
                                 type_="unique")
        batch_op.create_index(batch_op.f("ix_workloads_idempotency_key"), ["idempotency_key"],
                              unique=True)
        batch_op.drop_index(batch_op.f("ix_workloads_owner_key_id"))
        batch_op.drop_constraint(batch_op.f("fk_workloads_owner_key_id_api_keys"),
                                 type_="foreignkey")
        batch_op.drop_column("owner_key_id")
