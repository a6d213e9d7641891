"""stored runs: a candidate's gpu_count is the total it pays for; replicas, gpus_per_replica,
capacity and parallel-efficiency fields

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 16:00:00

The answer's shape changed: a candidate's ``gpu_count`` is the total it runs and pays
for (it was one replica's group; ``cost.gpus`` was the total), with ``replicas`` and
``gpus_per_replica`` beside it; an estimate carries ``parallel_efficiency``,
``capacity_batch_size`` and ``offered_requests_per_s``. Stored runs are rewritten so reading an
old run back validates: ``gpu_count`` becomes ``cost.gpus``; the layout comes from the stored
estimate's parallelism (a compute job, whose estimate has neither a step time nor a latency,
is one job over every GPU); the new estimate figures were not computed then and are null. The
downgrade puts the group's count back and drops the new fields.
"""

import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NEW_ESTIMATE_FIELDS = ("parallel_efficiency", "capacity_batch_size", "offered_requests_per_s")


def _rewrite_runs(change: Callable[[dict[str, Any]], None]) -> None:
    runs = sa.table("recommendation_runs", sa.column("id", sa.String()),
                    sa.column("result", sa.JSON()))
    bind = op.get_bind()
    for row in bind.execute(sa.select(runs.c.id, runs.c.result)).all():
        result = row.result if isinstance(row.result, dict) else json.loads(row.result)
        for cand in result.get("recommendations") or ():
            change(cand)
        bind.execute(runs.update().where(runs.c.id == row.id).values(result=result))


def _to_totals(cand: dict[str, Any]) -> None:
    est = cand.get("estimate") or {}
    cost = cand.get("cost") or {}
    par = est.get("parallelism") or {}
    copies = int(cost.get("replicas") or 1)
    total = int(cost.get("gpus") or cand.get("gpu_count", 1) * copies)
    compute_job = est.get("step_time_ms") is None and est.get("latency_ms") is None
    if compute_job:
        replicas, per_replica = 1, total
    else:
        per_replica = max(1, int(par.get("tensor_parallel") or 1)
                          * int(par.get("pipeline_parallel") or 1))
        replicas = max(1, total // per_replica)
    cand["gpu_count"] = total
    cand["replicas"] = replicas
    cand["gpus_per_replica"] = per_replica
    for name in _NEW_ESTIMATE_FIELDS:
        est.setdefault(name, None)


def _to_groups(cand: dict[str, Any]) -> None:
    est = cand.get("estimate") or {}
    cand["gpu_count"] = int(est.get("gpu_count") or cand.get("gpu_count", 1))
    cand.pop("replicas", None)
    cand.pop("gpus_per_replica", None)
    for name in _NEW_ESTIMATE_FIELDS:
        est.pop(name, None)


def upgrade() -> None:
    _rewrite_runs(_to_totals)


def downgrade() -> None:
    _rewrite_runs(_to_groups)
