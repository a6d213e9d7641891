"""API view of the engine's Estimate (the engine's dataclasses stay free of pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from service.engine.types import Estimate, Fix, FixKind
from service.text import no_control_chars
from service.workloads.schemas import WorkloadSpec


class EstimateRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "workload": {
                        "kind": "inference",
                        "model": {"preset": "llama-3.1-8b"},
                        "precision": "bf16",
                        "inference": {"prompt_tokens": 1024, "output_tokens": 256,
                                      "max_tpot_ms": 50},
                    },
                    "gpu_slug": "nvidia-h100-sxm5-80gb",
                    "gpu_count": 1,
                }
            ]
        },
    )

    workload: WorkloadSpec
    gpu_slug: str = Field(min_length=1, max_length=64)
    gpu_count: int = Field(default=1, ge=1, le=4096)

    _text = field_validator("*")(no_control_chars)


class MemoryBreakdownOut(BaseModel):
    weights: float
    gradients: float
    optimizer_states: float
    activations: float
    kv_cache: float
    overhead: float


class MemoryOut(BaseModel):
    per_gpu_gb: float = Field(description="Needed per GPU [GB]")
    available_gb: float = Field(description="Device memory per GPU [GB]")
    breakdown_gb: MemoryBreakdownOut


class ParallelismOut(BaseModel):
    gpu_count: int
    nodes: int
    gpus_per_node: int
    data_parallel: int
    tensor_parallel: int
    pipeline_parallel: int
    sharding: str
    link: str
    link_bandwidth_gb_s: float | None


class ThroughputOut(BaseModel):
    samples_per_s: float | None
    tokens_per_s: float | None = Field(
        description="Training: tokens processed; LLM inference: output tokens generated"
    )
    requests_per_s: float | None


class AssumptionOut(BaseModel):
    name: str
    value: float | str
    unit: str
    source: str


class GpuRef(BaseModel):
    slug: str
    name: str


class FixOut(BaseModel):
    """A change that would make it work, for machines (``kind``, ``value``, ``field``) and
    people (``detail``)."""

    kind: FixKind = Field(description="What to change")
    value: float | str | bool | None = Field(
        description="What to change it to (a count, a precision, a limit in the unit of "
        "`field`); null when there is no single value")
    detail: str = Field(description="The same, for people")
    field: str | None = Field(
        description="The request field to change (`constraints.max_gpus`), when there is one")


def fix_out(fix: Fix) -> FixOut:
    return FixOut(kind=fix.kind, value=fix.value, detail=fix.detail, field=fix.field)


class EstimateOut(BaseModel):
    gpu: GpuRef
    gpu_count: int
    fits: bool
    precision_used: str
    warnings: list[str]
    infeasible_reasons: list[str]
    fixes: list[FixOut] = Field(description="Smallest changes that make it fit")
    min_gpus_to_fit: int | None
    memory: MemoryOut
    parallelism: ParallelismOut
    bound: Literal["compute", "memory_bandwidth", "interconnect"] | None
    throughput: ThroughputOut
    step_time_ms: float | None
    time_to_complete_hours: float | None
    ttft_ms: float | None
    tpot_ms: float | None
    latency_ms: float | None
    latency_ok: bool | None
    batch_size: int | None
    power_w: float | None
    energy_kwh: float | None = Field(
        description="Training/compute: to finish; inference: per hour of serving"
    )
    assumptions: list[AssumptionOut]


def _r(value: float | None, digits: int = 6) -> float | None:
    """Round for display: the engine's floats carry noise no caller can use."""
    return None if value is None else float(f"{value:.{digits}g}")


def estimate_out(est: Estimate, *, gpu_name: str) -> EstimateOut:
    m = est.memory
    p = est.parallelism
    return EstimateOut(
        gpu=GpuRef(slug=est.gpu_slug, name=gpu_name),
        gpu_count=est.gpu_count,
        fits=est.fits,
        precision_used=est.precision_used,
        warnings=list(est.warnings),
        infeasible_reasons=list(est.infeasible_reasons),
        fixes=[fix_out(f) for f in est.fixes],
        min_gpus_to_fit=est.min_gpus_to_fit,
        memory=MemoryOut(
            per_gpu_gb=_r(est.memory_per_gpu_gb) or 0.0,
            available_gb=est.memory_available_gb,
            breakdown_gb=MemoryBreakdownOut(
                weights=_r(m.weights) or 0.0,
                gradients=_r(m.gradients) or 0.0,
                optimizer_states=_r(m.optimizer_states) or 0.0,
                activations=_r(m.activations) or 0.0,
                kv_cache=_r(m.kv_cache) or 0.0,
                overhead=_r(m.overhead) or 0.0,
            ),
        ),
        parallelism=ParallelismOut(
            gpu_count=p.gpu_count, nodes=p.nodes, gpus_per_node=p.gpus_per_node,
            data_parallel=p.data_parallel, tensor_parallel=p.tensor_parallel,
            pipeline_parallel=p.pipeline_parallel, sharding=p.sharding, link=p.link,
            link_bandwidth_gb_s=p.link_bandwidth_gb_s,
        ),
        bound=est.bound,
        throughput=ThroughputOut(
            samples_per_s=_r(est.samples_per_s), tokens_per_s=_r(est.tokens_per_s),
            requests_per_s=_r(est.requests_per_s),
        ),
        step_time_ms=_r(est.step_time_ms),
        time_to_complete_hours=_r(est.time_to_complete_hours),
        ttft_ms=_r(est.ttft_ms),
        tpot_ms=_r(est.tpot_ms),
        latency_ms=_r(est.latency_ms),
        latency_ok=est.latency_ok,
        batch_size=est.batch_size,
        power_w=_r(est.power_w),
        energy_kwh=_r(est.energy_kwh),
        assumptions=[
            AssumptionOut(name=a.name, value=a.value, unit=a.unit, source=a.source)
            for a in est.assumptions
        ],
    )
