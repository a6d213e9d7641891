"""API view of a ranking result (the engine's Recommendation), as returned and as stored."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, Field

from service.engine.recommend_types import (
    Candidate,
    CostBreakdown,
    Fabric,
    Objective,
    Offer,
    Recommendation,
    RejectionCode,
    WarningCode,
)
from service.estimates.schemas import (
    ENERGY_KWH_DEPRECATED,
    AssumptionOut,
    EstimateOut,
    FixOut,
    GpuRef,
    assumption_data,
    deprecated_energy_kwh,
    estimate_data,
    fix_data,
)
from service.workloads.fleet_schemas import FleetOut
from service.workloads.models import ConstraintsIn


class QuoteRef(BaseModel):
    id: int = Field(description="Quote id (GET /v1/quotes/{id})")
    provider: str = Field(description="Cloud or seller, e.g. aws, lambda")
    region: str = Field(description="Provider region, or global")
    instance_type: str = Field(description="The provider's instance (or product) name")
    gpu_count: int = Field(description="GPUs in one instance")
    pricing: str = Field(description="on_demand, spot, reserved_1y, reserved_3y or purchase")
    price_usd_per_hour: float | None = Field(
        description="Price of one whole instance [USD/hour]; null for purchase quotes",
    )
    purchase_price_usd: float | None = Field(
        description="Price to buy one instance [USD]; null for hourly quotes",
    )
    observed_at: date | None = Field(
        default=None, description="The day the source observed the price (YYYY-MM-DD); null in "
        "runs stored before this field existed")
    age_days: float = Field(
        description="Days since the price was observed (the start of observed_at, UTC) [days]")
    stale: bool = Field(description="age_days is over the configured limit "
                                    "(GPU_ADVISOR_STALE_QUOTE_DAYS): used, with a warning")
    network_gbps: float | None = Field(default=None,
                                       description="Network of one instance [Gb/s]")
    network_fabric: Fabric | None = Field(default=None, description="null = unknown")
    multi_node: bool = Field(default=False,
                             description="Clusters of this instance type are offered")


class CostOut(BaseModel):
    known: bool = Field(description="False: no usable quote; every money figure is null")
    usd_per_hour: float | None = Field(
        description=(
            "All instances of all replicas per hour [USD/hour] (owned: amortisation + power)"
        ),
    )
    total_usd: float | None = Field(description="Training/compute: to finish")
    usd_per_million_output_tokens: float | None = Field(
        description=(
            "LLM inference: cost per million generated tokens at the achieved throughput [USD]"
        ),
    )
    usd_per_1k_requests: float | None = Field(
        description="Non-LLM inference: cost per 1,000 requests [USD]",
    )
    replicas: int = Field(description="Copies of the model serving in parallel (inference) [count]")
    instances: int = Field(description="Instances rented or bought, all replicas [count]")
    gpus: int = Field(description="GPUs paid for, all replicas")
    owned: bool = Field(description="Priced from a purchase quote (on_prem, edge)")
    amortized_usd_per_hour: float | None = Field(
        description="Owned: purchase price spread over the amortisation years [USD/hour]",
    )
    power_usd_per_hour: float | None = Field(
        description="Owned: electricity at the configured price [USD/hour]",
    )
    break_even_months: float | None = Field(
        description="Owned: months after which buying beats the cheapest hourly quote [months]",
    )
    energy_kwh: float | None = Field(deprecated=True, description=ENERGY_KWH_DEPRECATED)
    energy_kwh_total: float | None = Field(
        default=None,
        description=(
            "Training/compute: energy to finish, the estimate's `energy_kwh_total` [kWh]; null "
            "for inference and when the job's length is unknown (and in runs stored before "
            "this field existed)"
        ),
    )
    energy_kwh_per_hour: float | None = Field(
        default=None,
        description=(
            "Inference: energy per hour of serving, all replicas [kWh/hour]; null for "
            "training/compute (and in runs stored before this field existed)"
        ),
    )


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
    message: str = Field(description="The warning, for people")


class CandidateOut(BaseModel):
    rank: int = Field(description="Position in the answer, 1 = best")
    gpu: GpuRef = Field(description="The GPU type")
    gpu_count: int = Field(
        description="GPUs the answer runs and pays for, every replica included (= cost.gpus) "
                    "[count]")
    replicas: int = Field(
        description="Model copies it runs: serving replicas (inference), data-parallel "
                    "replicas (training), 1 (compute jobs) [count]")
    gpus_per_replica: int = Field(
        description="GPUs one copy runs on: TP x PP (inference, training), every GPU (compute "
                    "jobs); replicas x gpus_per_replica = gpu_count [count]")
    quote: QuoteRef | None = Field(
        description="The offer used to price it; null when no usable quote exists",
    )
    estimate: EstimateOut = Field(description="The full estimate behind this candidate")
    cost: CostOut = Field(description="What it costs, per hour and per unit of work")
    score: float | None = Field(
        description="The value ranked on; lower is better; null when it is not a finite number "
                    "(a figure the engine cannot bound, e.g. an unknown time)")
    pareto_optimal: bool = Field(
        description=(
            "No other priced candidate is at least as good on cost, time and energy and better "
            "on one"
        ),
    )
    reasons: list[str] = Field(description="Why it ranks here, in plain words")
    warnings: list[WarningOut] = Field(
        description="Caveats with stable codes: stale quote, spot pricing, estimate near a limit",
    )
    provision: ProvisionOut = Field(description="Ready-to-use provisioning snippets")


class RejectionOut(BaseModel):
    gpu: GpuRef = Field(description="The GPU type ruled out")
    code: RejectionCode = Field(description="Machine-readable reason")
    reason: str = Field(description="Why it was ruled out, with the figures")
    fix: FixOut = Field(description="The nearest change that would make it a candidate")
    other_fixes: list[FixOut] = Field(description="Other changes that would also work")



class RecommendationResult(BaseModel):
    objective: Objective = Field(description="The objective ranked on")
    constraints: ConstraintsIn = Field(description="The constraints applied")
    catalog_revision: str = Field(
        description=(
            "Fingerprint of the catalog and quotes used; equal revisions give equal answers"
        ),
    )
    generated_at: datetime = Field(description="When the answer was computed (UTC)")
    recommendations: list[CandidateOut] = Field(
        description="Feasible candidates, best first (one per GPU type: its best count and offer)",
    )
    rejected: list[RejectionOut] = Field(
        description="GPUs ruled out, each with the reason and the nearest fix",
    )
    warnings: list[str] = Field(description="Caveats about the whole answer")
    assumptions: list[AssumptionOut] = Field(
        default_factory=list,
        description=("Every named constant the candidates' estimates used (value, unit, "
                     "source), once; in the full view each estimate lists its own too. Empty "
                     "in runs stored before this field existed"),
    )
    fleet: FleetOut | None = Field(
        default=None,
        description=("Traffic histograms (inference.traffic or traffic_preset): the cheapest "
                     "fleet of pools (GPU type, count, offer, layout) serving every bucket "
                     "within the SLOs, with the best single type beside it; null otherwise"),
    )


class RunOut(BaseModel):
    id: str = Field(description="Run id (UUID)")
    workload_id: str = Field(description="The workload ranked")
    created_at: datetime = Field(description="When the run was made (UTC)")
    catalog_revision: str = Field(description="Fingerprint of the catalog and quotes the run saw")
    objective: Objective = Field(description="The objective ranked on")
    limit: int = Field(description="Candidates returned at most [count]")
    created_by_key_id: int | None = Field(default=None,
                                          description="Id of the API key that created the run")
    result: RecommendationResult = Field(description="The ranked answer exactly as it was returned")


def money(value: float | None) -> float | None:
    """A money figure to 6 significant digits."""
    return None if value is None else float(f"{value:.6g}")


def score_out(score: float) -> float | None:
    """The ranked value to 9 significant digits; None when it is not finite."""
    return float(f"{score:.9g}") if math.isfinite(score) else None


def as_float(value: float | None) -> float | None:
    """A figure as the answer's ``float`` fields serialize it (an int is a float there)."""
    return None if value is None else float(value)


def _quote(offer: Offer | None) -> dict[str, Any] | None:
    if offer is None:
        return None
    return {
        "id": offer.quote_id, "provider": offer.provider, "region": offer.region,
        "instance_type": offer.instance_type, "gpu_count": offer.gpu_count,
        "pricing": offer.pricing, "price_usd_per_hour": as_float(offer.price_usd_per_hour),
        "purchase_price_usd": as_float(offer.purchase_price_usd),
        "observed_at": offer.observed_at, "age_days": float(round(offer.age_days, 2)),
        "stale": offer.stale,
        "network_gbps": as_float(offer.network_gbps), "network_fabric": offer.fabric,
        "multi_node": offer.multi_node,
    }


def _cost(cost: CostBreakdown) -> dict[str, Any]:
    return {
        "known": cost.known,
        "usd_per_hour": money(cost.usd_per_hour),
        "total_usd": money(cost.total_usd),
        "usd_per_million_output_tokens": money(cost.usd_per_million_output_tokens),
        "usd_per_1k_requests": money(cost.usd_per_1k_requests),
        "replicas": cost.replicas,
        "instances": cost.instances,
        "gpus": cost.gpus,
        "owned": cost.owned,
        "amortized_usd_per_hour": money(cost.amortized_usd_per_hour),
        "power_usd_per_hour": money(cost.power_usd_per_hour),
        "break_even_months": money(cost.break_even_months),
        "energy_kwh": money(
            deprecated_energy_kwh(cost.energy_kwh_total, cost.energy_kwh_per_hour)),
        "energy_kwh_total": money(cost.energy_kwh_total),
        "energy_kwh_per_hour": money(cost.energy_kwh_per_hour),
    }


def _candidate(c: Candidate, full: bool) -> dict[str, Any]:
    """:class:`CandidateOut`'s fields as plain data, exactly as they serialize."""
    return {
        "rank": c.rank,
        "gpu": {"slug": c.gpu_slug, "name": c.gpu_name},
        "gpu_count": c.gpu_count,
        "replicas": c.replicas,
        "gpus_per_replica": c.gpus_per_replica,
        "quote": _quote(c.offer),
        "estimate": estimate_data(c.estimate, gpu_name=c.gpu_name, assumptions=full),
        "cost": _cost(c.cost),
        "score": score_out(c.score),
        "pareto_optimal": c.pareto_optimal,
        "reasons": list(c.reasons),
        "warnings": [{"code": w.code, "message": w.message} for w in c.warnings],
        "provision": {"skypilot_yaml": c.provision.skypilot_yaml,
                      "skypilot_note": c.provision.skypilot_note,
                      "kubernetes": [dict(m) for m in c.provision.kubernetes],
                      "kubernetes_note": c.provision.kubernetes_note},
    }


def stale_price_warnings(candidates: Sequence[Candidate], *, stale_days: float) -> list[str]:
    """One answer warning when a listed candidate is priced from a quote observed longer ago
    than the staleness limit: which candidates, which offers, observed when, how old."""
    stale = [c for c in candidates if c.offer is not None and c.offer.stale]
    if not stale:
        return []
    parts = []
    for c in stale:
        o = c.offer
        assert o is not None
        day = f"observed {o.observed_at.isoformat()}, " if o.observed_at else ""
        parts.append(f"#{c.rank} {c.gpu_slug}: quote {o.quote_id} {o.provider} "
                     f"{o.instance_type} ({o.region}, {o.pricing}), {day}"
                     f"{o.age_days:.0f} days old")
    return [f"stale prices (observed more than {stale_days:g} days ago; check them before "
            f"deploying) behind {len(stale)} of {len(candidates)} listed candidates: "
            + "; ".join(parts)]


def result_data(
    rec: Recommendation,
    *,
    constraints: ConstraintsIn,
    catalog_revision: str,
    generated_at: datetime,
    extra_warnings: list[str],
    full: bool = True,
    fleet: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """:class:`RecommendationResult`'s fields as plain data, exactly as the model serializes
    them (every ``float`` field a float, dates and times as objects for the JSON encoder), so
    the answer is written without validating it again: one rejection per GPU type that is not
    a candidate (5,000 at the large-catalog scale) and every candidate's nested estimate, cost
    and provisioning. ``full``: each estimate lists its constants too (see
    :data:`service.workloads.answers.View`); ``fleet``: the fleet's data, when the workload has
    a traffic histogram. tests/api/test_answer_views.py checks the bytes
    against the model's."""
    return {
        "objective": rec.objective,
        "constraints": constraints.model_dump(mode="json"),
        "catalog_revision": catalog_revision,
        "generated_at": generated_at,
        "recommendations": [_candidate(c, full) for c in rec.recommendations],
        "rejected": [
            {"gpu": {"slug": r.gpu_slug, "name": r.gpu_name}, "code": r.code,
             "reason": r.reason, "fix": fix_data(r.fix),
             "other_fixes": [fix_data(f) for f in r.other_fixes]}
            for r in rec.rejected
        ],
        "warnings": extra_warnings + list(rec.warnings),
        "assumptions": assumption_data(dict.fromkeys(
            a for c in rec.recommendations for a in c.estimate.assumptions)),
        "fleet": fleet,
    }
