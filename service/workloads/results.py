"""API view of a ranking result (the engine's Recommendation), as returned and as stored."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from service.engine.recommend_types import (
    Candidate,
    CostBreakdown,
    Fabric,
    Offer,
    Recommendation,
    RejectionCode,
    WarningCode,
)
from service.estimates.schemas import EstimateOut, FixOut, GpuRef, estimate_out, fix_out
from service.workloads.models import ConstraintsIn, Objective


class QuoteRef(BaseModel):
    id: int
    provider: str
    region: str
    instance_type: str
    gpu_count: int = Field(description="GPUs in one instance")
    pricing: str
    price_usd_per_hour: float | None
    purchase_price_usd: float | None
    age_days: float
    stale: bool
    network_gbps: float | None = Field(default=None,
                                       description="Network of one instance [Gb/s]")
    network_fabric: Fabric | None = Field(default=None, description="null = unknown")
    multi_node: bool = Field(default=False,
                             description="Clusters of this instance type are offered")


class CostOut(BaseModel):
    known: bool = Field(description="False: no usable quote; every money figure is null")
    usd_per_hour: float | None
    total_usd: float | None = Field(description="Training/compute: to finish")
    usd_per_million_output_tokens: float | None
    usd_per_1k_requests: float | None
    replicas: int
    instances: int
    gpus: int = Field(description="GPUs paid for, all replicas")
    owned: bool
    amortized_usd_per_hour: float | None
    power_usd_per_hour: float | None
    break_even_months: float | None
    energy_kwh: float | None


class ProvisionOut(BaseModel):
    skypilot_yaml: str | None = Field(
        description="A SkyPilot task (`resources:`, `num_nodes:`; serving: a SkyServe "
        "`service:` block and `resources.ports`); add `run:`. Null for owned hardware, "
        "providers that are not SkyPilot clouds and GPUs without a SkyPilot name")
    skypilot_note: str | None = Field(description="Why there is no SkyPilot task")
    kubernetes: list[dict[str, Any]] = Field(
        description="Complete manifests: Deployment + Service (serving, one node per "
        "replica), StatefulSet + headless Service per replica group (multi-node serving), "
        "Job (training/compute; Indexed, one pod per node, for multi-node); a placeholder "
        "image to replace, GPU requests/limits, nodeSelector on `nvidia.com/gpu.product` as "
        "GPU Feature Discovery publishes it")
    kubernetes_note: str | None = Field(description="What the manifests leave to the caller")


class WarningOut(BaseModel):
    code: WarningCode = Field(description="Stable, machine-readable")
    message: str


class CandidateOut(BaseModel):
    rank: int
    gpu: GpuRef
    gpu_count: int = Field(description="GPUs in one replica")
    quote: QuoteRef | None
    estimate: EstimateOut
    cost: CostOut
    score: float = Field(description="The value ranked on; lower is better")
    pareto_optimal: bool
    reasons: list[str]
    warnings: list[WarningOut]
    provision: ProvisionOut


class RejectionOut(BaseModel):
    gpu: GpuRef
    code: RejectionCode
    reason: str
    fix: FixOut = Field(description="The nearest change that would make it a candidate")
    other_fixes: list[FixOut] = Field(description="Other changes that would also work")


class RecommendationResult(BaseModel):
    objective: Objective
    constraints: ConstraintsIn
    catalog_revision: str
    generated_at: datetime
    recommendations: list[CandidateOut]
    rejected: list[RejectionOut]
    warnings: list[str]


class RunOut(BaseModel):
    id: str
    workload_id: str
    created_at: datetime
    catalog_revision: str
    objective: Objective
    limit: int
    result: RecommendationResult


def _money(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.6g}")


def _quote(offer: Offer | None) -> QuoteRef | None:
    if offer is None:
        return None
    return QuoteRef(
        id=offer.quote_id, provider=offer.provider, region=offer.region,
        instance_type=offer.instance_type, gpu_count=offer.gpu_count, pricing=offer.pricing,
        price_usd_per_hour=offer.price_usd_per_hour, purchase_price_usd=offer.purchase_price_usd,
        age_days=round(offer.age_days, 2), stale=offer.stale,
        network_gbps=offer.network_gbps, network_fabric=offer.fabric,
        multi_node=offer.multi_node,
    )


def _cost(cost: CostBreakdown) -> CostOut:
    return CostOut(
        known=cost.known,
        usd_per_hour=_money(cost.usd_per_hour),
        total_usd=_money(cost.total_usd),
        usd_per_million_output_tokens=_money(cost.usd_per_million_output_tokens),
        usd_per_1k_requests=_money(cost.usd_per_1k_requests),
        replicas=cost.replicas,
        instances=cost.instances,
        gpus=cost.gpus,
        owned=cost.owned,
        amortized_usd_per_hour=_money(cost.amortized_usd_per_hour),
        power_usd_per_hour=_money(cost.power_usd_per_hour),
        break_even_months=_money(cost.break_even_months),
        energy_kwh=_money(cost.energy_kwh),
    )


def _candidate(c: Candidate) -> CandidateOut:
    return CandidateOut(
        rank=c.rank,
        gpu=GpuRef(slug=c.gpu_slug, name=c.gpu_name),
        gpu_count=c.gpu_count,
        quote=_quote(c.offer),
        estimate=estimate_out(c.estimate, gpu_name=c.gpu_name),
        cost=_cost(c.cost),
        score=float(f"{c.score:.9g}"),
        pareto_optimal=c.pareto_optimal,
        reasons=list(c.reasons),
        warnings=[WarningOut(code=w.code, message=w.message) for w in c.warnings],
        provision=ProvisionOut(skypilot_yaml=c.provision.skypilot_yaml,
                               skypilot_note=c.provision.skypilot_note,
                               kubernetes=[dict(m) for m in c.provision.kubernetes],
                               kubernetes_note=c.provision.kubernetes_note),
    )


def result_out(
    rec: Recommendation,
    *,
    constraints: ConstraintsIn,
    catalog_revision: str,
    generated_at: datetime,
    extra_warnings: list[str],
) -> RecommendationResult:
    return RecommendationResult(
        objective=rec.objective,
        constraints=constraints,
        catalog_revision=catalog_revision,
        generated_at=generated_at,
        recommendations=[_candidate(c) for c in rec.recommendations],
        rejected=[
            RejectionOut(gpu=GpuRef(slug=r.gpu_slug, name=r.gpu_name), code=r.code,
                         reason=r.reason, fix=fix_out(r.fix),
                         other_fixes=[fix_out(f) for f in r.other_fixes])
            for r in rec.rejected
        ],
        warnings=extra_warnings + list(rec.warnings),
    )
