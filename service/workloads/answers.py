"""A recommendation's answer in each of its views, written as JSON without validating it again.

``summary`` (the default) is the ranked list a portal shows; ``compact`` and ``full`` are the
whole explained answer (:class:`~service.workloads.results.RecommendationResult`). Every field
of a summary is the field of the same path in the full answer, with the same value: a summary
is the full answer with fields left out, so a caller can move between views without
translating (tests/api/test_answer_views.py checks it).

The answer is built as plain data that already has the types the response models declare and
is written with orjson: the route returns the bytes, and FastAPI neither validates the answer
again nor serializes it (validation of a 10-candidate full answer cost about as much as
building it). The response models stay the documented contract (OpenAPI).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import orjson
from fastapi import Response
from pydantic import BaseModel, Field

from service.engine.choice.fleet import Fleet
from service.engine.recommend_types import (
    Candidate,
    Objective,
    Recommendation,
    RejectionCode,
    WarningCode,
)
from service.engine.types import Bound
from service.estimates.schemas import GpuRef, figure
from service.workloads.fleet_schemas import FleetGpu, fleet_out
from service.workloads.models import ConstraintsIn
from service.workloads.results import (
    RecommendationResult,
    as_float,
    money,
    result_data,
    score_out,
)

View = Literal["summary", "compact", "full"]
"""``summary`` (the default): per candidate the figures a portal shows (GPU, count, offer,
cost, time or latency, batch, bound, warning codes) and per rejected GPU its slug and code
(why in words and the nearest fix: ``compact``), ~4-9 KB for 10 candidates (at most 12 KB);
``compact``: the whole explained answer, with the engine constants listed once in the
answer's ``assumptions`` and each estimate's ``assumptions`` null (~40-75 KB); ``full``: the
same with every estimate listing its constants as well (~100-270 KB), exactly what a stored
run keeps."""

VIEW_DESCRIPTION = (
    "`summary` (default): the ranked list a portal shows, `RecommendationSummary` (per "
    "candidate: GPU, count, offer, cost, time or latency, batch, bound, warning codes; "
    "per rejected GPU: slug and code; why in words and the nearest fix: `compact`), ~4-9 "
    "KB for 10 candidates. `compact`: the whole explained answer, `RecommendationResult` "
    "(estimates, reasons, fixes, provisioning), with the engine constants listed once in "
    "`assumptions` and each estimate's `assumptions` null (~40-75 KB). `full`: "
    "`RecommendationResult` with every estimate listing its constants too (~100-270 KB), "
    "as a stored run keeps it. Every field of a summary has the same path and value in "
    "the other views.")


class GpuSlug(BaseModel):
    slug: str = Field(description="Stable GPU id in the catalog")


class QuoteSummary(BaseModel):
    id: int = Field(description="Quote id (GET /v1/quotes/{id})")
    provider: str = Field(description="Cloud or seller, e.g. aws, lambda")
    region: str = Field(description="Provider region, or global")
    instance_type: str = Field(description="The provider's instance (or product) name")
    pricing: str = Field(description="on_demand, spot, reserved_1y, reserved_3y or purchase")
    price_usd_per_hour: float | None = Field(
        description="Price of one whole instance [USD/hour]; null for purchase quotes")
    purchase_price_usd: float | None = Field(
        description="Price to buy one instance [USD]; null for hourly quotes")
    stale: bool = Field(description="Observed longer ago than GPU_ADVISOR_STALE_QUOTE_DAYS")


class CostSummary(BaseModel):
    usd_per_hour: float | None = Field(
        description="All instances of all replicas per hour [USD/hour]; null: no usable quote")
    total_usd: float | None = Field(description="Training/compute: to finish [USD]")
    usd_per_million_output_tokens: float | None = Field(
        description="LLM inference: per million generated tokens [USD]")
    usd_per_1k_requests: float | None = Field(
        description="Non-LLM inference: per 1,000 requests [USD]")


class EstimateSummary(BaseModel):
    bound: Bound | None = Field(
        description="What limits speed: compute, memory_bandwidth or interconnect")
    batch_size: int | None = Field(
        description="Batch the estimate runs at [requests or samples]")
    time_to_complete_hours: float | None = Field(
        description="Training/compute: time to finish the job [hours]")
    latency_ms: float | None = Field(description="Inference: end-to-end time per request [ms]")
    ttft_ms: float | None = Field(description="LLM inference: time to first token [ms]")
    tpot_ms: float | None = Field(
        description="LLM inference: time per output token after the first [ms]")


class WarningCodeOut(BaseModel):
    code: WarningCode = Field(description="Stable, machine-readable (the message: view=compact)")


class CandidateSummary(BaseModel):
    rank: int = Field(description="Position in the answer, 1 = best")
    gpu: GpuRef = Field(description="The GPU type")
    gpu_count: int = Field(description="GPUs it runs and pays for, every replica included")
    replicas: int = Field(description="Model copies it runs [count]")
    gpus_per_replica: int = Field(description="GPUs one copy runs on [count]")
    quote: QuoteSummary | None = Field(
        description="The offer used to price it; null when no usable quote exists")
    cost: CostSummary = Field(description="What it costs, per hour and per unit of work")
    estimate: EstimateSummary = Field(description="Speed: time or latency, batch and bound")
    score: float | None = Field(description="The value ranked on; lower is better")
    pareto_optimal: bool = Field(
        description="No other priced candidate is at least as good on cost, time and energy "
                    "and better on one")
    warnings: list[WarningCodeOut] = Field(description="Caveats, by code")


class RejectionSummary(BaseModel):
    gpu: GpuSlug = Field(description="The GPU type ruled out")
    code: RejectionCode = Field(description="Machine-readable reason (why in words, with the "
                                            "figures, and the nearest fix: view=compact)")


class FleetOfferSummary(BaseModel):
    quote_id: int = Field(description="The price quote used (GET /v1/quotes/{id})")
    provider: str = Field(description="Cloud or seller")
    region: str = Field(description="Provider region, or global")
    instance: str = Field(description="The provider's instance type")
    pricing: str = Field(description="on_demand, spot, reserved_1y, reserved_3y or purchase")
    price_usd_per_hour: float | None = Field(description="One instance [USD/hour]")


class FleetPoolSummary(BaseModel):
    name: str = Field(description="The pool's name")
    gpu: FleetGpu = Field(description="The GPU type")
    gpu_count: int = Field(description="GPUs of the pool in total [count]")
    replicas: int = Field(description="Model replicas in the pool [count]")
    offer: FleetOfferSummary = Field(description="The offer the pool is rented from")
    usd_per_hour: float = Field(description="The pool's cost [USD/hour]")
    utilization: float = Field(description="Share of the pool's capacity its load takes")


class FleetSummary(BaseModel):
    status: str = Field(description="optimal, time_limit, fallback_single_type or infeasible")
    pools: list[FleetPoolSummary] = Field(description="The fleet's pools (routing, buckets "
                                                      "and provisioning: view=compact)")
    gpu_count: int = Field(description="GPUs of the whole fleet [count]")
    usd_per_hour: float | None = Field(description="The whole fleet [USD/hour]")
    usd_per_million_tokens: float | None = Field(
        description="The fleet's cost per million output tokens at the target rate [USD]")
    saving_fraction: float | None = Field(
        description="The saving over the best single type [fraction of its cost]")
    objective: str = Field(description="cost (the least USD/hour) or time (the least mean "
                                       "latency within max_usd_per_hour)")
    mean_latency_ms: float | None = Field(
        description="objective time: the request-weighted mean end-to-end latency [ms]")
    slo_percentile: float = Field(
        description="The share of requests that had to meet the latency limits [percent]")
    within_slo_fraction: float | None = Field(
        description="Share of requests the fleet serves within the latency limits [fraction] "
                    "(which buckets are outside: view=compact)")


class RecommendationSummary(BaseModel):
    """The ranked answer's summary (``view=summary``, the default)."""

    objective: Objective = Field(description="The objective ranked on")
    catalog_revision: str = Field(
        description="Fingerprint of the catalog and quotes used; equal revisions give equal "
                    "answers")
    generated_at: datetime = Field(description="When the answer was computed (UTC)")
    recommendations: list[CandidateSummary] = Field(
        description="Feasible candidates, best first (one per GPU type)")
    rejected: list[RejectionSummary] = Field(description="GPUs ruled out, each with its code")
    warnings: list[str] = Field(description="Caveats about the whole answer")
    fleet: FleetSummary | None = Field(
        default=None, description="Traffic histograms: the cheapest mixed fleet, in short; "
                                  "null otherwise")


RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The ranked answer in the view asked for: `RecommendationSummary` "
                         "(`view=summary`, the default) or `RecommendationResult` "
                         "(`view=compact`, `view=full`)"},
}
ANSWER_MODEL = RecommendationSummary | RecommendationResult
"""The routes' documented response model (OpenAPI ``anyOf``, one per view)."""


_FLEET_KEYS = ("status", "pools", "gpu_count", "usd_per_hour", "usd_per_million_tokens",
               "saving_fraction", "objective", "mean_latency_ms", "slo_percentile",
               "within_slo_fraction")
_POOL_KEYS = ("name", "gpu", "gpu_count", "replicas", "offer", "usd_per_hour", "utilization")
_OFFER_KEYS = ("quote_id", "provider", "region", "instance", "pricing", "price_usd_per_hour")


def _fleet_summary(fleet: dict[str, Any]) -> dict[str, Any]:
    """:class:`FleetSummary`: the fleet's data with fields left out."""
    out = {k: fleet[k] for k in _FLEET_KEYS}
    out["pools"] = [{**{k: p[k] for k in _POOL_KEYS},
                     "offer": {k: p["offer"][k] for k in _OFFER_KEYS}} for p in fleet["pools"]]
    return out


def _candidate_summary(c: Candidate) -> dict[str, Any]:
    o, k, e = c.offer, c.cost, c.estimate
    return {
        "rank": c.rank,
        "gpu": {"slug": c.gpu_slug, "name": c.gpu_name},
        "gpu_count": c.gpu_count,
        "replicas": c.replicas,
        "gpus_per_replica": c.gpus_per_replica,
        "quote": None if o is None else {
            "id": o.quote_id, "provider": o.provider, "region": o.region,
            "instance_type": o.instance_type, "pricing": o.pricing,
            "price_usd_per_hour": as_float(o.price_usd_per_hour),
            "purchase_price_usd": as_float(o.purchase_price_usd), "stale": o.stale},
        "cost": {"usd_per_hour": money(k.usd_per_hour), "total_usd": money(k.total_usd),
                 "usd_per_million_output_tokens": money(k.usd_per_million_output_tokens),
                 "usd_per_1k_requests": money(k.usd_per_1k_requests)},
        "estimate": {"bound": e.bound, "batch_size": e.batch_size,
                     "time_to_complete_hours": figure(e.time_to_complete_hours),
                     "latency_ms": figure(e.latency_ms), "ttft_ms": figure(e.ttft_ms),
                     "tpot_ms": figure(e.tpot_ms)},
        "score": score_out(c.score),
        "pareto_optimal": c.pareto_optimal,
        "warnings": [{"code": w.code} for w in c.warnings],
    }


@dataclass(frozen=True)
class Answer:
    """A ranking and what its answer says about it, in any view."""

    rec: Recommendation
    constraints: ConstraintsIn
    catalog_revision: str
    generated_at: datetime
    warnings: list[str]
    """The service's warnings about the answer (stale prices), before the engine's."""
    fleet: Fleet | None = None
    """The cheapest mixed fleet, for a workload with a traffic histogram."""

    def data(self, view: View) -> dict[str, Any]:
        """The answer in ``view`` as plain data, typed as its response model serializes."""
        # rare (traffic histograms only): the fleet's model, dumped as it serializes
        fleet = None if self.fleet is None else fleet_out(self.fleet).model_dump(mode="json")
        if view != "summary" and not self.rec.explained:
            raise ValueError(f"view {view!r} needs an explained ranking (explained=True)")
        if view != "summary":
            return result_data(self.rec, constraints=self.constraints,
                               catalog_revision=self.catalog_revision,
                               generated_at=self.generated_at, extra_warnings=self.warnings,
                               full=view == "full", fleet=fleet)
        return {
            "objective": self.rec.objective,
            "catalog_revision": self.catalog_revision,
            "generated_at": self.generated_at,
            "recommendations": [_candidate_summary(c) for c in self.rec.recommendations],
            "rejected": [{"gpu": {"slug": r.gpu_slug}, "code": r.code}
                         for r in self.rec.rejected],
            "warnings": self.warnings + list(self.rec.warnings),
            "fleet": None if fleet is None else _fleet_summary(fleet),
        }

    def result(self, view: Literal["compact", "full"] = "full") -> RecommendationResult:
        """The validated whole answer (what a stored run keeps)."""
        return RecommendationResult.model_validate(self.data(view))

    def response(self, view: View) -> Response:
        return Response(content=to_json(self.data(view)), media_type="application/json")


def to_json(data: dict[str, Any]) -> bytes:
    """The bytes pydantic's ``model_dump_json`` writes for the same data: UTC times end in
    ``Z``, floats in their shortest form, non-finite ones as null."""
    return orjson.dumps(data, option=orjson.OPT_UTC_Z)
