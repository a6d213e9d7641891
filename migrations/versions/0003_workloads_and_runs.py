"""workloads and recommendation runs

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 09:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workloads",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("objective", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workloads")),
    )
    with op.batch_alter_table("workloads", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_workloads_idempotency_key"), ["idempotency_key"],
                              unique=True)
        batch_op.create_index(batch_op.f("ix_workloads_created_at"), ["created_at"],
                              unique=False)

    op.create_table(
        "recommendation_runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workload_id", sa.String(length=36), nullable=False),
        sa.Column("objective", sa.String(length=16), nullable=False),
        sa.Column("result_limit", sa.Integer(), nullable=False),
        sa.Column("catalog_revision", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["workload_id"], ["workloads.id"],
                                name=op.f("fk_recommendation_runs_workload_id_workloads"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recommendation_runs")),
    )
    with op.batch_alter_table("recommendation_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_recommendation_runs_workload_id"), ["workload_id"],
                              unique=False)
        batch_op.create_index(batch_op.f("ix_recommendation_runs_created_at"), ["created_at"],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table("recommendation_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_recommendation_runs_created_at"))
        batch_op.drop_index(batch_op.f("ix_recommendation_runs_workload_id"))
    op.drop_table("recommendation_runs")
    with op.batch_alter_table("workloads", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workloads_created_at"))
        batch_op.drop_index(batch_op.f("ix_workloads_idempotency_key"))
    op.drop_table("workloads")
