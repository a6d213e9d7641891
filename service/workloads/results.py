"""API view of a ranking result (the engine's Recommendation), as returned and as stored."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter

from service.engine.recommend_types import Candidate, CostBreakdown, Offer, Recommendation
from service.estimates.schemas import EstimateOut, GpuRef, estimate_out
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
    skypilot_yaml: str = Field(description="A ready SkyPilot `resources:` block")
    kubernetes: dict[str, Any] = Field(description="Container resources + nodeSelector")


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
    warnings: list[str]
    provision: ProvisionOut


class RejectionOut(BaseModel):
    gpu: GpuRef
    code: str
    reason: str
    fix: str = Field(description="The nearest change that would make it a candidate")


_REJECTIONS = TypeAdapter(list[RejectionOut])


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
    created_by_key_id: int | None = Field(default=None,
                                          description="Id of the API key that created the run")
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
        warnings=list(c.warnings),
        provision=ProvisionOut(skypilot_yaml=c.provision.skypilot_yaml,
                               kubernetes=dict(c.provision.kubernetes)),
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
        # One per GPU type that is not a candidate (5,000 at the large-catalog scale): one
        # validation call for the list (~2 us a row; a model per row costs ~5x that)
        rejected=_REJECTIONS.validate_python([
            {"gpu": {"slug": r.gpu_slug, "name": r.gpu_name}, "code": r.code,
             "reason": r.reason, "fix": r.fix}
            for r in rec.rejected
        ]),
        warnings=extra_warnings + list(rec.warnings),
    )
