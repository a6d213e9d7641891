"""API view of the engine's Estimate (the engine's dataclasses stay free of pydantic)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from service.core.text import no_control_chars
from service.engine.types import Assumption, Bound, Estimate, Fix, FixKind
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

    workload: WorkloadSpec = Field(
        description=(
            "The workload (same shape as in POST /v1/recommendations, without name, objective "
            "and constraints)"
        ),
    )
    gpu_slug: str = Field(
        min_length=1, max_length=64,
        description="The GPU type (catalog slug), e.g. nvidia-h100-sxm5-80gb",
    )
    gpu_count: int = Field(
        default=1, ge=1, le=4096,
        description="GPUs to split the workload over [count]",
    )

    _text = field_validator("*")(no_control_chars)


class MemoryBreakdownOut(BaseModel):
    weights: float = Field(description="Model weights per GPU [GB]")
    gradients: float = Field(description="Gradients per GPU (training) [GB]")
    optimizer_states: float = Field(
        description="Optimizer states per GPU, incl. fp32 master weights (training) [GB]",
    )
    activations: float = Field(
        description=(
            "Activations saved for backward (training) or in flight (inference) per GPU [GB]"
        ),
    )
    kv_cache: float = Field(description="Attention KV cache per GPU (LLM inference) [GB]")
    overhead: float = Field(description="Runtime, CUDA context and fragmentation per GPU [GB]")


class MemoryOut(BaseModel):
    per_gpu_gb: float = Field(description="Needed per GPU [GB]")
    available_gb: float = Field(description=(
        "Device memory per GPU [GB, decimal, as per_gpu_gb]: the catalog's size read as GiB, "
        "less ECC's 1/16 on datacenter GDDR boards (an 80 GB H100: 85.9); jobs may use it "
        "less a 5% allocator reserve"))
    breakdown_gb: MemoryBreakdownOut = Field(description="What the per-GPU memory is made of [GB]")


class ParallelismOut(BaseModel):
    gpu_count: int = Field(description="GPUs in the layout [count]")
    nodes: int = Field(description="Servers the GPUs span [count]")
    gpus_per_node: int = Field(description="GPUs used in each server [count]")
    data_parallel: int = Field(description="Data-parallel degree (model copies) [count]")
    tensor_parallel: int = Field(
        description="Tensor-parallel degree (each layer split across GPUs) [count]",
    )
    pipeline_parallel: int = Field(description="Pipeline-parallel degree (layer stages) [count]")
    sharding: str = Field(description="Model-state sharding used: none, zero1, zero2, zero3")
    link: str = Field(
        description=(
            "The link the split communicates over: nvlink, infinity_fabric, pcie, network, none"
        ),
    )
    link_bandwidth_gb_s: float | None = Field(
        description="Bandwidth of that link per GPU [GB/s]; null for a single GPU",
    )


class ThroughputOut(BaseModel):
    samples_per_s: float | None = Field(
        description="Samples (sequences, images) processed per second [samples/s]",
    )
    tokens_per_s: float | None = Field(
        description="Training: tokens processed; LLM inference: output tokens generated"
    )
    requests_per_s: float | None = Field(
        description=("Inference: capacity of these GPUs (every replica in them) within the "
                     "SLOs, at the capacity batch [requests/s]"),
    )


class AssumptionOut(BaseModel):
    name: str = Field(description="The constant's name in the engine")
    value: float | str = Field(description="Its value")
    unit: str = Field(description="Its unit")
    source: str = Field(description="Where it comes from (paper, datasheet, benchmark)")


class GpuRef(BaseModel):
    slug: str = Field(description="Stable GPU id in the catalog")
    name: str = Field(description="Marketing name")


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


def fix_data(fix: Fix) -> dict[str, Any]:
    """:class:`FixOut` as plain data, as it serializes (an int ``value`` is a float there)."""
    value = fix.value
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    return {"kind": fix.kind, "value": value, "detail": fix.detail, "field": fix.field}


ENERGY_KWH_DEPRECATED = (
    "Deprecated: its unit depends on the kind. Sent as before: equal to `energy_kwh_total` for "
    "training/compute [kWh] and to `energy_kwh_per_hour` for inference [kWh/hour]; read those"
)
"""The description of the deprecated ``energy_kwh`` of an estimate and of a cost."""


class EstimateOut(BaseModel):
    gpu: GpuRef = Field(description="The GPU type estimated")
    gpu_count: int = Field(description="GPUs estimated [count]")
    fits: bool = Field(description="The workload fits in memory and meets its SLOs on these GPUs")
    precision_used: str = Field(
        description="Precision the compute runs at on this GPU (may fall back, e.g. fp8 -> fp16)",
    )
    warnings: list[str] = Field(description="Caveats about the estimate")
    infeasible_reasons: list[str] = Field(
        description="Why it does not fit or misses an SLO; empty when it fits",
    )
    fixes: list[FixOut] = Field(description="Smallest changes that make it fit")
    min_gpus_to_fit: int | None = Field(
        description=(
            "Fewest GPUs of this type whose memory holds the workload [count]; null when none "
            "does"
        ),
    )
    memory: MemoryOut = Field(description="Memory needed per GPU and its breakdown")
    parallelism: ParallelismOut = Field(description="How the work is split over the GPUs")
    bound: Bound | None = Field(
        description="What limits speed: compute, memory_bandwidth or interconnect",
    )
    throughput: ThroughputOut = Field(description="Work done per second")
    step_time_ms: float | None = Field(
        description="Training: one optimizer step; inference: one serving iteration [ms]",
    )
    time_to_complete_hours: float | None = Field(
        description="Training/compute: time to finish the job, its start-up included [hours]",
    )
    startup_s: float | None = Field(
        default=None,
        description=(
            "Training/compute: launch and communicator set-up before the first step on these "
            "GPUs, part of time_to_complete_hours: 2.6 s + 12.3 ms per GPU on several GPUs, 0 "
            "on one [s]; null for inference (and in runs stored before this field existed)"
        ),
    )
    ttft_ms: float | None = Field(description="LLM inference: time to first token [ms]")
    tpot_ms: float | None = Field(
        description="LLM inference: time per output token after the first [ms]",
    )
    latency_ms: float | None = Field(description="Inference: end-to-end time per request [ms]")
    latency_ok: bool | None = Field(
        description="Inference: every latency SLO is met; null when none was given",
    )
    batch_size: int | None = Field(
        description=(
            "Batch the estimate runs at [requests or samples]; inference with a target: the "
            "sequences in flight per replica at that load (Little's law), and TTFT, TPOT and "
            "latency are read there; without one: the capacity batch"
        ),
    )
    capacity_batch_size: int | None = Field(
        default=None,
        description=(
            "Inference: sequences per replica at capacity, the largest batch that meets the "
            "SLOs within memory and the runtime's max_num_seqs [requests]; throughput."
            "requests_per_s is counted at it"
        ),
    )
    offered_requests_per_s: float | None = Field(
        default=None,
        description=(
            "Inference with a target: the load these GPUs carry, the target split over the "
            "copies of this group a recommendation runs [requests/s]"
        ),
    )
    power_w: float | None = Field(description="Power drawn by all GPUs at this load [W]")
    energy_kwh: float | None = Field(deprecated=True, description=ENERGY_KWH_DEPRECATED)
    energy_kwh_total: float | None = Field(
        default=None,
        description=(
            "Training/compute: energy all these GPUs draw to finish the job, power_w x "
            "time_to_complete_hours [kWh]; null for inference and when the job's length is "
            "unknown (and in runs stored before this field existed)"
        ),
    )
    energy_kwh_per_hour: float | None = Field(
        default=None,
        description=(
            "Inference: energy these GPUs draw per hour of serving, power_w x 1 hour "
            "[kWh/hour]; null for training/compute (and in runs stored before this field "
            "existed)"
        ),
    )
    parallel_efficiency: float | None = Field(
        description=(
            "How well the GPUs are used, 1 = perfect scaling [fraction]. Compute: time on one "
            "GPU / (GPUs x time on these GPUs); training: samples/s per GPU here over that at "
            "the fewest GPUs that hold the job; null for inference"
        ),
    )
    assumptions: list[AssumptionOut] | None = Field(
        description=("Every named constant used, with its value, unit and source; null in a "
                     "recommendation's compact view, whose top-level `assumptions` lists them "
                     "once for all candidates"),
    )


def _r(value: float | None, digits: int = 6) -> float | None:
    """Round for display: the engine's floats carry noise no caller can use."""
    return None if value is None else float(f"{value:.{digits}g}")


def figure(value: float | None) -> float | None:
    """An estimate's figure as its answer shows it (6 significant digits)."""
    return _r(value)


def deprecated_energy_kwh(total: float | None, per_hour: float | None) -> float | None:
    """The deprecated ``energy_kwh``: the figure of whichever of the two the kind sets."""
    return total if total is not None else per_hour


def estimate_out(est: Estimate, *, gpu_name: str) -> EstimateOut:
    return EstimateOut.model_validate(estimate_data(est, gpu_name=gpu_name))


def estimate_data(est: Estimate, *, gpu_name: str, assumptions: bool = True) -> dict[str, Any]:
    """:class:`EstimateOut`'s fields as plain data: a recommendation validates all of its
    candidates' in one call (a model built per nested object costs ~3x more). Without
    ``assumptions`` that list is null (a compact recommendation lists them once)."""
    m = est.memory
    p = est.parallelism
    return {
        "gpu": {"slug": est.gpu_slug, "name": gpu_name},
        "gpu_count": est.gpu_count,
        "fits": est.fits,
        "precision_used": est.precision_used,
        "warnings": list(est.warnings),
        "infeasible_reasons": list(est.infeasible_reasons),
        "fixes": [fix_data(f) for f in est.fixes],
        "min_gpus_to_fit": est.min_gpus_to_fit,
        "memory": {
            "per_gpu_gb": _r(est.memory_per_gpu_gb) or 0.0,
            "available_gb": float(est.memory_available_gb),
            "breakdown_gb": {
                "weights": _r(m.weights) or 0.0,
                "gradients": _r(m.gradients) or 0.0,
                "optimizer_states": _r(m.optimizer_states) or 0.0,
                "activations": _r(m.activations) or 0.0,
                "kv_cache": _r(m.kv_cache) or 0.0,
                "overhead": _r(m.overhead) or 0.0,
            },
        },
        "parallelism": {
            "gpu_count": p.gpu_count, "nodes": p.nodes, "gpus_per_node": p.gpus_per_node,
            "data_parallel": p.data_parallel, "tensor_parallel": p.tensor_parallel,
            "pipeline_parallel": p.pipeline_parallel, "sharding": p.sharding, "link": p.link,
            "link_bandwidth_gb_s": _float(p.link_bandwidth_gb_s),
        },
        "bound": est.bound,
        "throughput": {
            "samples_per_s": _r(est.samples_per_s), "tokens_per_s": _r(est.tokens_per_s),
            "requests_per_s": _r(est.requests_per_s),
        },
        "step_time_ms": _r(est.step_time_ms),
        "time_to_complete_hours": _r(est.time_to_complete_hours),
        "startup_s": _r(est.startup_s),
        "ttft_ms": _r(est.ttft_ms),
        "tpot_ms": _r(est.tpot_ms),
        "latency_ms": _r(est.latency_ms),
        "latency_ok": est.latency_ok,
        "batch_size": est.batch_size,
        "capacity_batch_size": est.capacity_batch_size,
        "offered_requests_per_s": _r(est.offered_requests_per_s),
        "power_w": _r(est.power_w),
        "energy_kwh": _r(deprecated_energy_kwh(est.energy_kwh_total, est.energy_kwh_per_hour)),
        "energy_kwh_total": _r(est.energy_kwh_total),
        "energy_kwh_per_hour": _r(est.energy_kwh_per_hour),
        "parallel_efficiency": _r(est.parallel_efficiency, 4),
        "assumptions": assumption_data(est.assumptions) if assumptions else None,
    }


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def assumption_data(assumptions: Iterable[Assumption]) -> list[dict[str, Any]]:
    """:class:`AssumptionOut` objects as plain data, as they serialize (an int ``value`` is a
    float there): what a recommendation's answer is serialized from."""
    out = []
    for a in assumptions:
        value = a.value
        if isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        out.append({"name": a.name, "value": value, "unit": a.unit, "source": a.source})
    return out
