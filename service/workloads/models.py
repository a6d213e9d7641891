"""Stored workloads and their recommendation runs (tables and API schemas)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy import JSON, Column, ForeignKey, String, UniqueConstraint
from sqlmodel import Field as SQLField
from sqlmodel import SQLModel

import service.core.tables  # noqa: F401  (the naming convention, before any table)
from service.core.text import no_control_chars
from service.core.times import utcnow
from service.engine.recommend_types import Deployment, Objective, Pricing
from service.engine.types import FormFactor
from service.workloads.schemas import WorkloadSpec

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False, str_strip_whitespace=True)


class ConstraintsIn(BaseModel):
    """Limits on the answer; all optional. Spot is opt-in via `pricing`."""

    model_config = _STRICT

    max_gpus: int | None = Field(
        default=None, ge=1, le=100_000,
        description="Most GPUs in one replica [count]",
    )
    gpu_slugs: list[str] | None = Field(
        default=None, max_length=200,
        description="Only these GPUs (catalog slugs); null = every GPU",
    )
    exclude_gpu_slugs: list[str] = Field(
        default_factory=list, max_length=200,
        description="Never these GPUs (catalog slugs)",
    )
    vendors: list[str] | None = Field(
        default=None, max_length=20,
        description="Only these vendors, e.g. [\"NVIDIA\", \"AMD\"]; null = any",
    )
    form_factors: list[FormFactor] | None = Field(
        default=None, max_length=20, description="Only these form factors; null = any"
    )
    deployment: Deployment | None = Field(
        default=None,
        description=(
            "cloud prices from hourly quotes; on_prem and edge from purchase quotes amortised "
            "over the configured years plus power; null = any"
        ),
    )
    max_power_w: float | None = Field(default=None, gt=0, le=100_000, description="Per GPU [W]")
    providers: list[str] | None = Field(
        default=None, max_length=50,
        description="Only quotes from these providers; null = any",
    )
    regions: list[str] | None = Field(
        default=None, max_length=200,
        description="Only quotes in these regions; null = any",
    )
    pricing: list[Pricing] | None = Field(
        default=None, max_length=20,
        description="Allowed pricing kinds; default on_demand + reserved",
    )
    budget_usd: float | None = Field(
        default=None, gt=0, le=1e12,
        description="Most money for the whole job (training/compute) [USD]",
    )
    max_usd_per_hour: float | None = Field(
        default=None, gt=0, le=1e7,
        description="Most money per hour for all GPUs and replicas [USD/hour]",
    )
    deadline_hours: float | None = Field(
        default=None, gt=0, le=1e6,
        description="Training/compute must finish within this [hours]",
    )
    require_fast_interconnect: bool = Field(
        default=False,
        description="Multi-GPU splits only over NVLink / Infinity Fabric, not PCIe",
    )
    time_tolerance: float = Field(
        default=0.05, ge=0, le=1,
        description=(
            "Objective time: answers within this fraction of the fastest count as equally "
            "fast, and the cheapest of them ranks first [fraction]; 0 = the fastest at any "
            "price"
        ),
    )

    max_gpu_types: int | None = Field(
        default=None, ge=1, le=64,
        description=(
            "Traffic histograms: most GPU types the fleet mixes [count]; null = any number; "
            "1 = the best single type"),
    )
    mix: bool = Field(
        default=True,
        description="Traffic histograms: false = one GPU type only (as max_gpu_types 1)",
    )

    _text = field_validator("*")(no_control_chars)

    @model_validator(mode="after")
    def _lengths(self) -> ConstraintsIn:
        for name in ("gpu_slugs", "exclude_gpu_slugs", "vendors", "providers", "regions"):
            for item in getattr(self, name) or []:
                if not 0 < len(item) <= 100:
                    raise ValueError(f"{name}: each entry must be 1-100 characters")
        return self

    @model_validator(mode="after")
    def _one_type_limit(self) -> ConstraintsIn:
        if not self.mix and self.max_gpu_types not in (None, 1):
            raise ValueError(f"max_gpu_types: {self.max_gpu_types} contradicts mix false (one "
                             "GPU type); give one of them, or max_gpu_types 1")
        return self


class WorkloadSubmission(WorkloadSpec):
    """The engine's workload JSON plus a name, an objective and constraints."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={
            "examples": [
                {
                    "name": "chat-assistant-8b",
                    "objective": "cost",
                    "kind": "inference",
                    "model": {"preset": "llama-3.1-8b"},
                    "precision": "bf16",
                    "inference": {"prompt_tokens": 1024, "output_tokens": 256,
                                  "max_ttft_ms": 1000, "max_tpot_ms": 50,
                                  "target_requests_per_s": 20},
                    "constraints": {"max_gpus": 8},
                },
                {
                    "name": "pretrain-70b",
                    "objective": "balanced",
                    "kind": "training",
                    "model": {"preset": "llama-2-70b"},
                    "precision": "bf16",
                    "training": {"batch_size": 1024, "seq_len": 4096, "tokens": 2e11},
                    "constraints": {"max_gpus": 1024},
                },
            ]
        },
    )

    name: str = Field(
        default="unnamed", min_length=1, max_length=200,
        description="A label for the workload, shown in lists",
    )
    objective: Objective = Field(
        default="balanced",
        description=(
            "What to rank on (lower is better): cost (USD to finish, or per unit of work), time "
            "(hours to finish, or latency), energy (kWh), balanced (half cost, half time, each "
            "relative to the best)"
        ),
    )
    constraints: ConstraintsIn = Field(
        default_factory=ConstraintsIn,
        description="Limits on the answer; all optional",
    )


class RecommendationQuery(WorkloadSubmission):
    """POST /v1/recommendations: a workload, answered and not stored."""

    limit: int = Field(default=10, ge=1, le=100, description="Ranked candidates to return [count]")


class StoredWorkload(SQLModel, table=True):
    __tablename__ = "workloads"
    __table_args__ = (UniqueConstraint("owner_key_id", "idempotency_key"),)

    id: str = SQLField(sa_type=String(36), primary_key=True)
    name: str = SQLField(max_length=200)
    objective: str = SQLField(sa_type=String(16))
    kind: str = SQLField(sa_type=String(16))
    spec: dict[str, Any] = SQLField(sa_column=Column(JSON, nullable=False))
    """The submission as validated (name, objective, constraints and the workload)."""
    idempotency_key: str | None = SQLField(default=None, sa_type=String(200))
    """Unique per owner: one key's Idempotency-Key never replays another key's workload."""
    request_hash: str = SQLField(sa_type=String(64))
    created_at: datetime = SQLField(default_factory=utcnow, index=True)
    owner_key_id: int | None = SQLField(
        default=None, sa_column_args=[ForeignKey("api_keys.id")], index=True
    )
    """The API key that stored it; null for workloads stored before owners (admins only)."""


class RecommendationRun(SQLModel, table=True):
    __tablename__ = "recommendation_runs"

    id: str = SQLField(sa_type=String(36), primary_key=True)
    workload_id: str = SQLField(
        sa_type=String(36),
        sa_column_args=[ForeignKey("workloads.id", ondelete="CASCADE")],
        index=True,
    )
    objective: str = SQLField(sa_type=String(16))
    result_limit: int
    catalog_revision: str = SQLField(sa_type=String(64))
    created_at: datetime = SQLField(default_factory=utcnow, index=True)
    result: dict[str, Any] = SQLField(sa_column=Column(JSON, nullable=False))
    created_by_key_id: int | None = SQLField(
        default=None, sa_column_args=[ForeignKey("api_keys.id")], index=True
    )


class RunRequest(BaseModel):
    """POST /v1/workloads/{id}/runs: how to rank the stored workload this time."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"objective": "cost", "limit": 5, "constraints": {"max_gpus": 8}}]})

    objective: Objective | None = Field(default=None,
                                        description="Default: the workload's own objective")
    limit: int = Field(default=10, ge=1, le=100, description="Recommendations to return")
    constraints: ConstraintsIn | None = Field(
        default=None,
        description="Replaces the workload's stored constraints for this run (all of them); "
                    "null keeps the stored ones")


class WorkloadPublic(BaseModel):
    id: str = Field(description="Stable workload id (UUID)")
    name: str = Field(description="The label given at submission")
    objective: Objective = Field(description="The objective it is ranked on by default")
    kind: str = Field(description="training, inference or compute")
    created_at: datetime = Field(description="When it was stored (UTC)")
    owner_key_id: int | None = Field(default=None,
                                     description="Id of the API key that stored it")
    workload: dict[str, Any] = Field(description="The submission as stored")


class RunSummary(BaseModel):
    id: str = Field(description="Run id (UUID)")
    workload_id: str = Field(description="The workload ranked")
    objective: Objective = Field(description="The objective the run ranked on")
    limit: int = Field(description="Candidates the run returned at most [count]")
    catalog_revision: str = Field(
        description=(
            "Fingerprint of the catalog and quotes the run saw; equal revisions give equal "
            "answers"
        ),
    )
    created_at: datetime = Field(description="When the run was made (UTC)")
    top_gpu_slug: str | None = Field(
        description="The first-ranked GPU; null when nothing was feasible",
    )
    top_gpu_count: int | None = Field(
        description="GPUs per replica of the first-ranked candidate [count]",
    )
