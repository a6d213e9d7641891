"""0006: quote network fields filled from the frozen defaults for existing rows; stored runs
rewritten to typed fixes / coded warnings / manifest lists and back on downgrade."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlalchemy import create_engine, inspect, text

from service.migrate import downgrade, upgrade
from service.quotes import networks
from service.workloads.results import RecommendationResult
from tests.db.test_migrations import _OLD_ROW, empty_url  # noqa: F401 (fixture)

_QUOTE = """
INSERT INTO quotes (gpu_slug, provider, region, instance_type, gpu_count, pricing,
  price_usd_per_hour, source, captured_at, version, created_at, updated_at)
VALUES ('nvidia-h100-sxm5-80gb', :provider, 'us-east-1', :itype, 8, 'on_demand', 98.0, 'test',
  :now, 1, :now, :now)
"""
_WORKLOAD = """
INSERT INTO workloads (id, name, objective, kind, spec, request_hash, created_at)
VALUES ('w1', 'old', 'cost', 'training', '{}', 'h', :now)
"""
_RUN = """
INSERT INTO recommendation_runs (id, workload_id, objective, result_limit, catalog_revision,
  created_at, result)
VALUES ('r1', 'w1', 'cost', 5, 'rev', :now, :result)
"""
OLD_FIX = "fits with int8 weights; or needs 2 GPUs (over the limit of 1)"


def _module() -> ModuleType:
    path = (Path(__file__).resolve().parents[2] / "migrations" / "versions"
            / "0006_quote_network_typed_fixes.py")
    spec = importlib.util.spec_from_file_location("migration_0006", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
            conn.execute(text(_OLD_ROW), {"slug": "nvidia-h100-sxm5-80gb", "now": now})
            for provider, itype in (("aws", "p5.48xlarge"), ("lambda", "gpu_8x_h100_sxm5")):
                conn.execute(text(_QUOTE), {"provider": provider, "itype": itype, "now": now})
            conn.execute(text(_WORKLOAD), {"now": now})
            # a candidate as stored before 0006: the shape the API returned then
            client_run = _stored_candidate()
            conn.execute(text(_RUN), {"now": now, "result": json.dumps(_old_result(client_run))})
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
        assert back["recommendations"][0]["warnings"] == _stored_candidate()["warnings"]
    finally:
        engine.dispose()


def _stored_candidate() -> dict[str, Any]:
    """A pre-0006 candidate: fixes and warnings as text, a bare Kubernetes fragment."""
    est = {
        "gpu": {"slug": "g", "name": "G"}, "gpu_count": 1, "fits": True, "precision_used": "bf16",
        "warnings": [], "infeasible_reasons": [], "fixes": ["needs 2 GPUs"],
        "min_gpus_to_fit": 1,
        "memory": {"per_gpu_gb": 1.0, "available_gb": 80.0, "breakdown_gb": {
            "weights": 1.0, "gradients": 0.0, "optimizer_states": 0.0, "activations": 0.0,
            "kv_cache": 0.0, "overhead": 0.0}},
        "parallelism": {"gpu_count": 1, "nodes": 1, "gpus_per_node": 1, "data_parallel": 1,
                        "tensor_parallel": 1, "pipeline_parallel": 1, "sharding": "none",
                        "link": "none", "link_bandwidth_gb_s": None},
        "bound": "compute", "step_time_ms": None,
        "throughput": {"samples_per_s": None, "tokens_per_s": None, "requests_per_s": None},
        "time_to_complete_hours": None, "ttft_ms": None, "tpot_ms": None, "latency_ms": None,
        "latency_ok": None, "batch_size": None, "power_w": None, "energy_kwh": None,
        "assumptions": [],
    }
    return {
        "rank": 1, "gpu": {"slug": "g", "name": "G"}, "gpu_count": 1, "quote": None,
        "estimate": est,
        "cost": {"known": False, "usd_per_hour": None, "total_usd": None,
                 "usd_per_million_output_tokens": None, "usd_per_1k_requests": None,
                 "replicas": 1, "instances": 1, "gpus": 1, "owned": False,
                 "amortized_usd_per_hour": None, "power_usd_per_hour": None,
                 "break_even_months": None, "energy_kwh": None},
        "score": 1.0, "pareto_optimal": False, "reasons": ["r"],
        "warnings": ["quote 3 is stale (40 days old)", "micro-batch 1 x 8"],
        "provision": {"skypilot_yaml": "resources:\n  accelerators: H100:8\n",
                      "kubernetes": {"replicas": 1, "nodeSelector": {}, "containers": []}},
    }
