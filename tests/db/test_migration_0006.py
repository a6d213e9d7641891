"""0006: quote network fields filled from the frozen defaults for existing rows; stored runs
rewritten to typed fixes / coded warnings / manifest lists and back on downgrade."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from sqlalchemy import create_engine, inspect, text

from service.core.migrate import downgrade, upgrade
from service.quotes import networks
from service.workloads.results import RecommendationResult
from tests.helpers import (
    OLD_GPU_ROW,
    STORED_RUN_ROW,
    STORED_WORKLOAD_ROW,
    migration_module,
    stored_candidate_before_0006,
)

_QUOTE = """
INSERT INTO quotes (gpu_slug, provider, region, instance_type, gpu_count, pricing,
  price_usd_per_hour, source, captured_at, version, created_at, updated_at)
VALUES ('nvidia-h100-sxm5-80gb', :provider, 'us-east-1', :itype, 8, 'on_demand', 98.0, 'test',
  :now, 1, :now, :now)
"""
OLD_FIX = "fits with int8 weights; or needs 2 GPUs (over the limit of 1)"


def _module() -> ModuleType:
    return migration_module("0006_quote_network_typed_fixes.py")


def test_0006_frozen_rules_match_the_default_table() -> None:
    frozen = [(p, pat, g, f, m) for p, pat, g, f, m, _ in _module()._RULES]
    live = [(r.provider, r.pattern.pattern, r.gbps, r.fabric, r.multi_node)
            for r in networks.RULES]
    assert frozen == live


def _old_result(candidate: dict[str, Any]) -> dict[str, Any]:
    return {
        "objective": "cost", "constraints": {}, "catalog_revision": "rev",
        "generated_at": "2026-11-01T00:00:00Z", "warnings": ["w"],
        "recommendations": [candidate],
        "rejected": [
            {"gpu": {"slug": "a", "name": "A"}, "code": "memory", "reason": "r", "fix": OLD_FIX},
            {"gpu": {"slug": "b", "name": "B"}, "code": "budget", "reason": "r",
             "fix": "over budget by 12% (budget $10)"},
        ],
    }


def test_0006_fills_quotes_and_rewrites_stored_runs(empty_url: str) -> None:  # noqa: F811
    upgrade(empty_url, "0005")
    engine = create_engine(empty_url)
    now = datetime(2026, 11, 1, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            conn.execute(text(OLD_GPU_ROW), {"slug": "nvidia-h100-sxm5-80gb", "now": now})
            for provider, itype in (("aws", "p5.48xlarge"), ("lambda", "gpu_8x_h100_sxm5")):
                conn.execute(text(_QUOTE), {"provider": provider, "itype": itype, "now": now})
            conn.execute(text(STORED_WORKLOAD_ROW), {"now": now})
            # a candidate as stored before 0006: the shape the API returned then
            client_run = stored_candidate_before_0006()
            conn.execute(text(STORED_RUN_ROW),
                         {"now": now, "result": json.dumps(_old_result(client_run))})
        upgrade(empty_url)
        with engine.connect() as conn:
            rows = {r.instance_type: r for r in conn.execute(text(
                "SELECT instance_type, network_gbps, network_fabric, multi_node, network_source,"
                " version FROM quotes"))}
            result = conn.execute(text("SELECT result FROM recommendation_runs")).scalar_one()
        p5 = rows["p5.48xlarge"]
        # version: +1 for the filled network (0006), +1 for observed_at (0009, every row)
        assert (p5.network_gbps, p5.network_fabric, bool(p5.multi_node), p5.version) == (
            3200, "efa", True, 3)
        assert "AWS EC2" in p5.network_source
        lam = rows["gpu_8x_h100_sxm5"]
        assert (lam.network_fabric, bool(lam.multi_node), lam.version) == (None, False, 2)
        result = result if isinstance(result, dict) else json.loads(result)
        parsed = RecommendationResult.model_validate(result)  # the new shape reads back
        mem, budget = parsed.rejected
        assert (mem.fix.kind, mem.fix.value) == ("weight_precision", "int8")
        assert [(f.kind, f.value) for f in mem.other_fixes] == [("max_gpus", 2)]
        assert budget.fix.kind == "budget" and budget.fix.detail.startswith("over budget")
        (cand,) = parsed.recommendations
        assert [w.code for w in cand.warnings] == ["stale_quote", "estimate"]
        assert cand.provision.kubernetes == [] and cand.provision.kubernetes_note
        downgrade(empty_url, "0005")
        columns = {c["name"] for c in inspect(engine).get_columns("quotes")}
        assert not columns & {"network_gbps", "network_fabric", "multi_node", "network_source"}
        with engine.connect() as conn:
            back = conn.execute(text("SELECT result FROM recommendation_runs")).scalar_one()
        back = back if isinstance(back, dict) else json.loads(back)
        assert back["rejected"][0]["fix"] == OLD_FIX
        assert back["recommendations"][0]["warnings"] == stored_candidate_before_0006()["warnings"]
    finally:
        engine.dispose()
