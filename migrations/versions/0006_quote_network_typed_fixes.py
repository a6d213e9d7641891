"""quotes: network fields (per-instance Gb/s, fabric, multi-node, source); stored runs: typed
fixes, coded warnings, provisioning specs

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 19:00:00

Adds four columns to ``quotes`` and fills them for rows whose instance family the default table
knows (frozen copy below of service/quotes/networks.py at this revision: a migration must not
change meaning when that table changes later); other rows keep an unknown network
(``multi_node`` false). Each filled row bumps ``version`` like any other write.

Stored recommendation runs are rewritten to the new result shape, so reading an old run back
still validates: each rejection's ``fix`` text becomes ``{kind, value, detail, field}`` (the
kind read from the fixed phrasings the engine used; ``detail`` keeps the text), ``"; or "``
alternatives become ``other_fixes``, warnings become ``{code, message}``, an estimate's fixes
likewise, and the old provisioning fragment is kept in ``kubernetes_note`` (it was no
manifest). The downgrade turns them back into text.
"""

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_AWS = "AWS EC2 accelerated computing instance specifications (network bandwidth, EFA)"
_GCP = "Google Cloud 'Network bandwidths and GPUs' (A2)"
_AZ = "Azure ND-series docs (ND40rs_v2: 100 Gb/s InfiniBand EDR)"
_NEB = "Nebius GPU clusters docs (InfiniBand 3.2 Tbit/s per 8-GPU VM)"
_OCI = "Oracle Cloud compute shapes (GPU shapes network bandwidth)"
_RULES: tuple[tuple[str, str, float, str, bool, str], ...] = (
    ("aws", r"p5e?n?\.48xlarge", 3200, "efa", True, _AWS),
    ("aws", r"p4de?\.24xlarge", 400, "efa", True, _AWS),
    ("aws", r"p3dn\.24xlarge", 100, "efa", True, _AWS),
    ("aws", r"p3\.16xlarge", 25, "ethernet", True, _AWS),
    ("aws", r"p3\.8xlarge", 10, "ethernet", True, _AWS),
    ("aws", r"g6e\.48xlarge", 400, "efa", True, _AWS),
    ("aws", r"g6\.48xlarge", 100, "efa", True, _AWS),
    ("aws", r"g5\.48xlarge", 100, "efa", True, _AWS),
    ("aws", r"g4dn\.metal", 100, "efa", True, _AWS),
    ("aws", r"g4dn\.12xlarge", 50, "efa", True, _AWS),
    ("aws", r"(g4dn|g5|g6|g6e|p3)\.(x|2x)large", 10, "ethernet", False, _AWS),
    ("gcp", r"a2-highgpu-8g", 100, "ethernet", True, _GCP),
    ("gcp", r"a2-highgpu-1g", 24, "ethernet", False, _GCP),
    ("azure", r"Standard_ND40rs_v2", 100, "infiniband", True, _AZ),
    ("nebius", r"gpu-(h100|h200|b200)-sxm_8gpu-.*", 3200, "infiniband", True, _NEB),
    ("oci", r"BM\.GPU3\.8", 50, "ethernet", True, _OCI),
    ("oci", r"VM\.GPU\.A10\.1", 24, "ethernet", False, _OCI),
    ("oci", r"VM\.GPU\.A10\.2", 48, "ethernet", False, _OCI),
)

_FIX_KINDS: tuple[tuple[str, str, str | None], ...] = (
    # (pattern on the old text, kind, field); the first number in the text is the value
    (r"^needs \d+ GPUs \(over the limit", "max_gpus", "constraints.max_gpus"),
    (r"^needs \d+ GPUs", "gpu_count", "gpu_count"),
    (r"^fits with activation checkpointing", "activation_checkpointing",
     "training.activation_checkpointing"),
    (r"^fits with sharding", "sharding", "training.sharding"),
    (r"^fits with int(8|4) weights", "weight_precision", "weight_precision"),
    (r"^use a GPU with >= \d+ GB", "gpu_memory", None),
    (r"^over budget", "budget", "constraints.budget_usd"),
    (r"^over max_usd_per_hour", "max_usd_per_hour", "constraints.max_usd_per_hour"),
    (r"^over deadline", "deadline", "constraints.deadline_hours"),
    (r"^over max_gpus", "max_gpus", "constraints.max_gpus"),
    (r"^exceeds max_power_w", "max_power", "constraints.max_power_w"),
    (r"^a faster GPU", "latency_limit", None),
    (r"^use a GPU with \w+ support", "precision", "precision"),
    (r"^add a quote", "quote", None),
    (r"^ask for more results", "limit", "limit"),
    (r"^use an NVLink", "interconnect", "constraints.require_fast_interconnect"),
)
_WARNING_CODES: tuple[tuple[str, str], ...] = (
    (r"^quote \d+ is stale", "stale_quote"),
    (r"^spot capacity", "spot_capacity"),
    (r"^no usable price quote", "no_price"),
    (r"^no usable quote holds", "partial_quote_coverage"),
)


def _fix(text: str) -> dict[str, Any]:
    for pattern, kind, field in _FIX_KINDS:
        if re.search(pattern, text):
            if kind in ("weight_precision", "sharding"):
                value: Any = re.search(r"(int8|int4|zero3)", text).group(1)  # type: ignore[union-attr]
            elif kind in ("activation_checkpointing",):
                value = True
            else:
                m = re.search(r"\d+(\.\d+)?", text.replace(",", ""))
                value = float(m.group(0)) if m and kind in (
                    "gpu_count", "max_gpus", "gpu_memory") else None
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
            return {"kind": kind, "value": value, "detail": text, "field": field}
    return {"kind": "constraint", "value": None, "detail": text, "field": None}


def _warning(text: str) -> dict[str, str]:
    for pattern, code in _WARNING_CODES:
        if re.search(pattern, text):
            return {"code": code, "message": text}
    return {"code": "estimate", "message": text}


def _upgrade_result(result: dict[str, Any]) -> dict[str, Any]:
    for r in result.get("rejected") or []:
        if isinstance(r.get("fix"), str):
            parts = [p for p in r["fix"].split("; or ") if p] or [r["fix"]]
            r["fix"] = _fix(parts[0])
            r["other_fixes"] = [_fix(p) for p in parts[1:]]
    for c in result.get("recommendations") or []:
        c["warnings"] = [_warning(w) if isinstance(w, str) else w for w in c.get("warnings", [])]
        est = c.get("estimate") or {}
        est["fixes"] = [_fix(f) if isinstance(f, str) else f for f in est.get("fixes", [])]
        prov = c.get("provision") or {}
        if isinstance(prov.get("kubernetes"), dict):
            c["provision"] = {
                "skypilot_yaml": prov.get("skypilot_yaml"),
                "skypilot_note": None,
                "kubernetes": [],
                "kubernetes_note": "run stored before complete manifests (revision 0006); "
                "its fragment: " + json.dumps(prov["kubernetes"], sort_keys=True),
            }
    return result


def _downgrade_result(result: dict[str, Any]) -> dict[str, Any]:
    for r in result.get("rejected") or []:
        if isinstance(r.get("fix"), dict):
            fixes = [r["fix"], *r.pop("other_fixes", [])]
            r["fix"] = "; or ".join(f["detail"] for f in fixes)
    for c in result.get("recommendations") or []:
        c["warnings"] = [w["message"] if isinstance(w, dict) else w
                         for w in c.get("warnings", [])]
        est = c.get("estimate") or {}
        est["fixes"] = [f["detail"] if isinstance(f, dict) else f for f in est.get("fixes", [])]
        prov = c.get("provision") or {}
        if isinstance(prov.get("kubernetes"), list):
            c["provision"] = {"skypilot_yaml": prov.get("skypilot_yaml") or "",
                              "kubernetes": prov["kubernetes"][0] if prov["kubernetes"] else {}}
    return result


def _rewrite_runs(change: Any) -> None:
    runs = sa.table("recommendation_runs", sa.column("id", sa.String()),
                    sa.column("result", sa.JSON()))
    bind = op.get_bind()
    for row in bind.execute(sa.select(runs.c.id, runs.c.result)).all():
        result = row.result if isinstance(row.result, dict) else json.loads(row.result)
        bind.execute(runs.update().where(runs.c.id == row.id).values(result=change(result)))


def upgrade() -> None:
    with op.batch_alter_table("quotes", schema=None,
                              table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        batch_op.add_column(sa.Column("network_gbps", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("network_fabric", sa.String(16), nullable=True))
        batch_op.add_column(sa.Column("multi_node", sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column("network_source", sa.String(2000), nullable=True))
    quotes = sa.table(
        "quotes",
        sa.column("id", sa.Integer()), sa.column("provider", sa.String()),
        sa.column("instance_type", sa.String()), sa.column("version", sa.Integer()),
        sa.column("updated_at", sa.DateTime(timezone=True)),
        sa.column("network_gbps", sa.Float()), sa.column("network_fabric", sa.String()),
        sa.column("multi_node", sa.Boolean()), sa.column("network_source", sa.String()),
    )
    bind = op.get_bind()
    now = datetime.now(UTC)
    rows = bind.execute(sa.select(quotes.c.id, quotes.c.provider, quotes.c.instance_type)
                        .where(quotes.c.network_fabric.is_(None))).all()
    for row in rows:
        for provider, pattern, gbps, fabric, multi, source in _RULES:
            if row.provider == provider and re.fullmatch(pattern, row.instance_type):
                bind.execute(quotes.update().where(quotes.c.id == row.id).values(
                    network_gbps=gbps, network_fabric=fabric, multi_node=multi,
                    network_source=f"default for {provider} {row.instance_type}: {source}",
                    version=quotes.c.version + 1, updated_at=now))
                break
    _rewrite_runs(_upgrade_result)


def downgrade() -> None:
    _rewrite_runs(_downgrade_result)
    with op.batch_alter_table("quotes", schema=None,
                              table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        batch_op.drop_column("network_source")
        batch_op.drop_column("multi_node")
        batch_op.drop_column("network_fabric")
        batch_op.drop_column("network_gbps")
