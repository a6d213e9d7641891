"""0008: stored runs get counts as totals (gpu_count = cost.gpus, replicas x gpus_per_replica)
and the new estimate fields (null), and get the group's count back on downgrade."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import create_engine, text

from service.core.migrate import downgrade, upgrade
from service.workloads.results import RecommendationResult
from tests.helpers import STORED_RUN_ROW, STORED_WORKLOAD_ROW, stored_candidate_before_0006


def _serving_candidate() -> dict[str, Any]:
    """A candidate as stored by 0007: one TP2 group of 2 GPUs, 3 copies paid for (6 GPUs)."""
    cand = copy.deepcopy(stored_candidate_before_0006())
    est = cand["estimate"]
    est["fixes"] = []
    est["warnings"] = []
    est["gpu_count"] = 2
    est["parallelism"].update(gpu_count=2, gpus_per_node=2, tensor_parallel=2)
    est["latency_ms"] = 900.0
    cand["warnings"] = []
    cand["gpu_count"] = 2
    cand["cost"].update(replicas=3, instances=3, gpus=6)
    cand["provision"] = {"skypilot_yaml": None, "skypilot_note": None, "kubernetes": [],
                         "kubernetes_note": None}
    return cand


def _result(cands: list[dict[str, Any]]) -> dict[str, Any]:
    return {"objective": "cost", "constraints": {}, "catalog_revision": "rev",
            "generated_at": "2026-11-30T00:00:00Z", "recommendations": cands, "rejected": [],
            "warnings": [], "assumptions": []}


def test_0008_counts_become_totals_and_back(empty_url: str) -> None:  # noqa: F811
    upgrade(empty_url, "0007")
    engine = create_engine(empty_url)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    serving = _serving_candidate()
    job = copy.deepcopy(serving)  # a compute job: no step time, no latency
    job["rank"] = 2
    job["estimate"]["latency_ms"] = None
    job["estimate"]["parallelism"].update(tensor_parallel=1, data_parallel=2)
    try:
        with engine.begin() as conn:
            conn.execute(text(STORED_WORKLOAD_ROW), {"now": now})
            conn.execute(text(STORED_RUN_ROW),
                         {"now": now, "result": json.dumps(_result([serving, job]))})
        upgrade(empty_url)
        with engine.connect() as conn:
            stored = conn.execute(text("SELECT result FROM recommendation_runs")).scalar_one()
        stored = stored if isinstance(stored, dict) else json.loads(stored)
        parsed = RecommendationResult.model_validate(stored)
        first, second = parsed.recommendations
        assert (first.gpu_count, first.replicas, first.gpus_per_replica) == (6, 3, 2)
        assert (second.gpu_count, second.replicas, second.gpus_per_replica) == (6, 1, 6)
        assert first.estimate.gpu_count == 2 and first.estimate.parallel_efficiency is None
        downgrade(empty_url, "0007")
        with engine.connect() as conn:
            back = conn.execute(text("SELECT result FROM recommendation_runs")).scalar_one()
        back = back if isinstance(back, dict) else json.loads(back)
        assert back["recommendations"] == [serving, job]
    finally:
        engine.dispose()
