"""API view of a mixed GPU fleet (the engine's :class:`~service.engine.choice.fleet.Fleet`):
the top-level ``fleet`` of a recommendation for a traffic histogram."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from service.engine.choice.fleet import Fleet, FleetPool
from service.engine.recommend_types import Offer


class FleetGpu(BaseModel):
    slug: str = Field(description="Catalog slug of the GPU type")
    name: str = Field(description="The GPU's name")


class FleetOffer(BaseModel):
    quote_id: int = Field(description="The price quote used (GET /v1/quotes/{id})")
    provider: str = Field(description="Cloud or seller")
    region: str = Field(description="Provider region, or global")
    instance: str = Field(description="The provider's instance type")
    gpus_per_instance: int = Field(description="GPUs in one instance [count]")
    pricing: str = Field(description="on_demand, spot, reserved_1y, reserved_3y or purchase")
    price_usd_per_hour: float | None = Field(
        description="One instance [USD/hour]; null for purchase quotes")


class FleetLayout(BaseModel):
    tensor_parallel: int = Field(description="TP degree of one model replica [GPUs]")
    pipeline_parallel: int = Field(description="PP stages of one model replica [count]")


class FleetBucketOut(BaseModel):
    bucket: int = Field(description="Index of the bucket in the traffic histogram")
    prompt_tokens: int = Field(description="The bucket's prompt size [tokens]")
    output_tokens: int = Field(description="The bucket's output size [tokens]")
    share: float = Field(description="Fraction of this bucket's requests the pool serves")
    requests_per_s: float = Field(description="Requests of this bucket the pool serves [1/s]")
    share_outside_slo: float = Field(
        description="Part of `share` served outside the latency limits (slo_percentile < "
                    "100; 0 otherwise) [fraction of the bucket's requests]")


class FleetProvision(BaseModel):
    skypilot_yaml: str | None = Field(
        description="A SkyServe service for the pool (`sky serve up`); add `run:`. Null when "
                    "the pool cannot be launched on a SkyPilot cloud (see skypilot_note)")
    skypilot_note: str | None = Field(description="Why there is no SkyPilot task")
    kubernetes: list[dict[str, Any]] = Field(
        description="The pool's Deployment + Service (StatefulSets for multi-node replicas), "
                    "named after the pool")
    kubernetes_note: str | None = Field(description="What the manifests leave to the caller")


class FleetPoolOut(BaseModel):
    name: str = Field(description="The pool's name (its Kubernetes and SkyServe name)")
    gpu: FleetGpu = Field(description="The GPU type")
    gpu_count: int = Field(description="GPUs of the pool in total [count]")
    replicas: int = Field(description="Model replicas in the pool [count]")
    instances: int = Field(description="Instances of the offer rented [count]")
    offer: FleetOffer = Field(description="The offer the pool is rented from")
    layout: FleetLayout = Field(description="Model split of each replica")
    usd_per_hour: float = Field(description="The pool's cost [USD/hour]")
    utilization: float = Field(
        description="Share of the pool's capacity its load takes [fraction] (within the "
                    "SLOs; for requests served outside them, of the capacity without them)")
    buckets: list[FleetBucketOut] = Field(description="The request sizes it serves")
    buckets_outside_slo: list[int] = Field(
        description="Buckets (indices) the pool serves, in part or in full, outside the "
                    "latency limits (slo_percentile < 100)")
    provision: FleetProvision = Field(description="Deployable specs for this pool")


class SingleTypeOut(BaseModel):
    gpu: FleetGpu | None = Field(description="The GPU type; null when no single type serves "
                                             "every bucket")
    gpu_count: int = Field(description="GPUs in total [count]")
    usd_per_hour: float | None = Field(description="Its cost [USD/hour]")
    within_slo_fraction: float | None = Field(
        description="Share of all requests it serves within the latency limits [fraction]")
    mean_latency_ms: float | None = Field(
        description="objective time: its request-weighted mean end-to-end latency under the "
                    "budget [ms]; null otherwise")
    pools: list[FleetPoolOut] = Field(
        description="Its pools (one type; two when two counts or layouts of it are cheaper)")


class FleetOut(BaseModel):
    status: str = Field(
        description="optimal (proven within mip_gap 1e-7; with mix false, proven the "
                    "cheapest single type); time_limit (the best found when the solver's time "
                    "limit struck); fallback_single_type (the mixed program found nothing "
                    "better in time); greedy (the solver found nothing in time: the cheapest "
                    "one-option fleet, not proven; mip_gap null); infeasible (see warnings)")
    solver: str = Field(description="The integer-program solver used")
    mip_gap: float | None = Field(
        description="Relative optimality gap reported by the solver: (best fleet - lower "
                    "bound) / best fleet; 0 = proven optimal [fraction]")
    max_gpu_types: int | None = Field(description="The GPU-type limit applied; null = none")
    pools: list[FleetPoolOut] = Field(description="The fleet: one pool per GPU type, count, "
                                                  "offer and layout")
    gpu_count: int = Field(description="GPUs of the whole fleet [count]")
    usd_per_hour: float | None = Field(description="The whole fleet [USD/hour]")
    usd_per_million_tokens: float | None = Field(
        description="The fleet's cost per million output tokens at the target rate [USD]")
    objective: str = Field(
        description="cost: the least USD/hour within the SLOs; time: the least "
                    "request-weighted mean end-to-end latency within the SLOs costing at most "
                    "constraints.max_usd_per_hour (objective time with that budget given)")
    mean_latency_ms: float | None = Field(
        description="objective time: the fleet's request-weighted mean end-to-end latency "
                    "[ms]; null for cost")
    slo_percentile: float = Field(
        description="The share of requests that had to meet the latency limits [percent]")
    within_slo_fraction: float | None = Field(
        description="Share of all requests (weighted by bucket share) the fleet serves within "
                    "the latency limits [fraction]; at least slo_percentile / 100")
    best_single_type: SingleTypeOut = Field(
        description="The cheapest fleet of one GPU type, for comparison")
    saving_usd_per_hour: float | None = Field(
        description="best_single_type.usd_per_hour - usd_per_hour [USD/hour]")
    saving_fraction: float | None = Field(
        description="The saving over the best single type [fraction of its cost]")
    routing: list[str] = Field(description=(
        "How to route requests to the pools: by prompt length, and by the request's "
        "max_tokens where buckets of one prompt size differ in output; each rule names the "
        "pools of its cell and the share of its requests each takes"))
    options: int = Field(description="Pool options (type, count, offer, layout) compared")
    warnings: list[str] = Field(description="Caveats about the fleet")


SOLVER = "HiGHS branch-and-cut via scipy.optimize.milp"


OUTSIDE_MIN = 1e-6
"""A bucket share served outside the limits below this is solver noise."""


def _fraction(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _latency(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _money(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.6g}")


def _offer(o: Offer) -> dict[str, Any]:
    return {"quote_id": o.quote_id, "provider": o.provider, "region": o.region,
            "instance": o.instance_type, "gpus_per_instance": o.gpu_count,
            "pricing": o.pricing, "price_usd_per_hour": o.price_usd_per_hour}


def _pool(p: FleetPool) -> dict[str, Any]:
    return {
        "name": p.name, "gpu": {"slug": p.gpu_slug, "name": p.gpu_name},
        "gpu_count": p.gpu_count, "replicas": p.replicas, "instances": p.instances,
        "offer": _offer(p.offer),
        "layout": {"tensor_parallel": p.tensor_parallel,
                   "pipeline_parallel": p.pipeline_parallel},
        "usd_per_hour": _money(p.usd_per_hour), "utilization": round(p.utilization, 4),
        "buckets": [{"bucket": b.bucket, "prompt_tokens": b.prompt_tokens,
                     "output_tokens": b.output_tokens, "share": round(b.fraction, 6),
                     "requests_per_s": float(f"{b.requests_per_s:.6g}"),
                     "share_outside_slo": round(b.outside_fraction, 6)} for b in p.buckets],
        "buckets_outside_slo": [b.bucket for b in p.buckets
                                if b.outside_fraction > OUTSIDE_MIN],
        "provision": {"skypilot_yaml": p.provision.skypilot_yaml,
                      "skypilot_note": p.provision.skypilot_note,
                      "kubernetes": [dict(m) for m in p.provision.kubernetes],
                      "kubernetes_note": p.provision.kubernetes_note},
    }


def fleet_out(fleet: Fleet) -> FleetOut:
    single = fleet.best_single_type
    return FleetOut.model_validate({
        "status": fleet.status, "solver": SOLVER,
        "mip_gap": None if fleet.mip_gap is None else float(f"{fleet.mip_gap:.3g}"),
        "max_gpu_types": fleet.max_gpu_types,
        "pools": [_pool(p) for p in fleet.pools],
        "gpu_count": sum(p.gpu_count for p in fleet.pools),
        "usd_per_hour": _money(fleet.usd_per_hour),
        "usd_per_million_tokens": _money(fleet.usd_per_million_tokens),
        "slo_percentile": fleet.slo_percentile,
        "objective": fleet.objective, "mean_latency_ms": _latency(fleet.mean_latency_ms),
        "within_slo_fraction": _fraction(fleet.within_slo_fraction),
        "best_single_type": {
            "gpu": ({"slug": single[0].gpu_slug, "name": single[0].gpu_name}
                    if single else None),
            "gpu_count": sum(p.gpu_count for p in single),
            "usd_per_hour": _money(fleet.single_usd_per_hour),
            "within_slo_fraction": _fraction(fleet.single_within_slo_fraction),
            "mean_latency_ms": _latency(fleet.single_mean_latency_ms),
            "pools": [_pool(p) for p in single],
        },
        "saving_usd_per_hour": _money(fleet.saving_usd_per_hour),
        "saving_fraction": (None if fleet.saving_fraction is None
                            else round(fleet.saving_fraction, 4)),
        "routing": list(fleet.routing), "options": fleet.options,
        "warnings": list(fleet.warnings),
    })
