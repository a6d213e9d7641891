"""Helpers shared by the test files: problem+json assertions, request bodies, API keys,
submitted workloads and quote imports through the app, and old database rows for migrations.

Test files import from here, never from one another.
"""

from __future__ import annotations

import importlib.util
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlmodel import Session

from service.core.security import create_key

PROBLEM = "application/problem+json"
H100 = "nvidia-h100-sxm5-80gb"


def assert_problem(resp: Any, status: int, field: str | None = None) -> dict[str, Any]:
    """Assert an RFC 9457 problem+json answer with ``status`` (and an error naming ``field``);
    returns its body."""
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = resp.json()
    assert body["status"] == status and body["title"] and body["type"].startswith("https://")
    if field is not None:
        fields = [e["field"] for e in body["errors"]]
        assert field in fields, fields
    return body


# -- request bodies ----------------------------------------------------------------------------

def new_gpu(**over: Any) -> dict[str, Any]:
    """A valid POST /v1/gpus body for a GPU the seed catalog does not have."""
    body = {
        "slug": "test-gpu-1",
        "name": "Test GPU 1",
        "vendor": "NVIDIA",
        "architecture": "Test",
        "form_factor": "pcie",
        "launch_year": 2024,
        "memory_gb": 48,
        "memory_type": "GDDR6",
        "memory_bandwidth_gb_s": 864,
        "fp32_tflops": 90,
        "bf16_tflops": 360,
        "fp16_tflops": 360,
        "tdp_w": 350,
        "interconnect": "pcie",
        "interconnect_bandwidth_gb_s": 64,
        "aliases": ["TG1"],
        "source": "test fixture",
        "source_date": "2026-11-30",
    }
    body.update(over)
    return body


def new_quote(**over: Any) -> dict[str, Any]:
    """A valid POST /v1/quotes body: an 8 x H100 on-demand instance of a test provider."""
    body = {
        "gpu_slug": H100,
        "provider": "TestCloud",
        "region": "eu-test-1",
        "instance_type": "t.8xh100",
        "gpu_count": 8,
        "pricing": "on_demand",
        "price_usd_per_hour": 24.0,
        "source": "test fixture",
        "captured_at": "2026-11-29T12:00:00",
    }
    body.update(over)
    return body


LLAMA_8B_CHAT: dict[str, Any] = {
    "name": "chat-8b",
    "objective": "cost",
    "kind": "inference",
    "model": {"preset": "llama-3.1-8b"},
    "precision": "bf16",
    "inference": {"prompt_tokens": 1024, "output_tokens": 256, "max_ttft_ms": 2000,
                  "max_tpot_ms": 60, "target_requests_per_s": 10},
    "constraints": {"max_gpus": 8},
}
"""A chat-serving workload (Llama 3.1 8B, SLOs and a target load) for POST /v1/workloads."""


# -- keys and stored workloads -----------------------------------------------------------------

def api_key(session: Session, role: str) -> tuple[dict[str, str], int]:
    """A new API key of ``role``, committed: (Authorization headers, key id)."""
    row, key = create_key(session, name=f"test-{role}-{uuid.uuid4().hex[:6]}", role=role)  # type: ignore[arg-type]
    session.commit()
    assert row.id is not None
    return {"Authorization": f"Bearer {key}"}, row.id


def submit_workload(client: TestClient, headers: dict[str, str], **over: Any) -> str:
    """Submit :data:`LLAMA_8B_CHAT` (with ``over`` applied); returns the stored workload's id."""
    resp = client.post("/v1/workloads", json={**LLAMA_8B_CHAT, **over}, headers=headers)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


# -- quote imports -----------------------------------------------------------------------------

SKYPILOT_HEADER = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,"
                   "SpotPrice,Region,AvailabilityZone")
T4_GPU_INFO = "\"{'Gpus': [{'Name': 'T4', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 16384}}]}\""
CSV = {"Content-Type": "text/csv"}


def t4_file(*prices: str) -> bytes:
    """A SkyPilot catalog CSV with one 1 x T4 instance per price (``t.0``, ``t.1``, ...)."""
    lines = [SKYPILOT_HEADER] + [f"t.{i},T4,1.0,4.0,16.0,{T4_GPU_INFO},{p},,test-1,az{i}"
                                 for i, p in enumerate(prices)]
    return ("\n".join(lines) + "\n").encode()


def do_import(client: TestClient, headers: dict[str, str], body: bytes, *,
              status: int = 200, ctype: dict[str, str] = CSV, **params: Any) -> dict[str, Any]:
    """POST /v1/quotes/import (SkyPilot format, provider ``testcloud`` unless given), asserting
    ``status``; returns the JSON answer."""
    params.setdefault("format", "skypilot")
    params.setdefault("provider", "testcloud")
    params = {k: v for k, v in params.items() if v is not None}
    resp = client.post("/v1/quotes/import", content=body, params=params,
                       headers={**headers, **ctype})
    assert resp.status_code == status, resp.text
    out: dict[str, Any] = resp.json()
    return out


# -- old database rows -------------------------------------------------------------------------

OLD_GPU_ROW = """
INSERT INTO gpus (slug, name, vendor, architecture, form_factor, memory_gb, memory_type,
  memory_bandwidth_gb_s, tdp_w, interconnect, max_gpus_per_node, mig_instances, aliases,
  source, notes, version, created_at, updated_at)
VALUES (:slug, 'x', 'NVIDIA', '', 'sxm', 80, '', 3350, 700, 'nvlink', 8, 7, '[]', 'test', '',
  3, :now, :now)
"""
"""A gpus row in the columns of revision 0003 (before the figure columns), for migration tests
(parameters: ``slug``, ``now``)."""

STORED_WORKLOAD_ROW = """
INSERT INTO workloads (id, name, objective, kind, spec, request_hash, created_at)
VALUES ('w1', 'old', 'cost', 'training', '{}', 'h', :now)
"""
"""A stored workload ``w1`` in the columns of revision 0005 (parameter: ``now``)."""

STORED_RUN_ROW = """
INSERT INTO recommendation_runs (id, workload_id, objective, result_limit, catalog_revision,
  created_at, result)
VALUES ('r1', 'w1', 'cost', 5, 'rev', :now, :result)
"""
"""A stored run ``r1`` of workload ``w1`` (parameters: ``now``, ``result`` as JSON text)."""


def stored_candidate_before_0006() -> dict[str, Any]:
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


def table_revisions(engine: Any) -> dict[str, int]:
    """Each table's revision counter (migration 0007's ``table_revisions`` rows)."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT table_name, revision FROM table_revisions"))
        return {str(name): int(rev) for name, rev in rows}


MIGRATIONS = Path(__file__).resolve().parents[1] / "migrations" / "versions"


def migration_module(filename: str) -> ModuleType:
    """The Alembic revision ``migrations/versions/<filename>`` loaded as a module (its frozen
    tables and rules are what the migration tests compare with the seed data)."""
    spec = importlib.util.spec_from_file_location(filename.removesuffix(".py"),
                                                  MIGRATIONS / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
