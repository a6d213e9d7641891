"""The API's request and response shapes for the client, hand-written with pydantic only.

Checked against the committed OpenAPI document by tests/api/test_client_models.py: every field
here exists there with a compatible JSON type, request models require exactly what the server
requires, and response models require nothing the server may leave out. Response models accept
fields added later (``extra="allow"``), so a newer server never breaks an older bot; request
models refuse unknown fields, so a typo fails before the call.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")

Kind = Literal["training", "inference", "compute"]
Precision = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
Objective = Literal["cost", "time", "balanced", "energy"]
Pricing = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "purchase"]
View = Literal["compact", "full"]
Runtime = Literal["batching-server", "llama.cpp"]
"""The whole explained answer's shape (``RecommendationResult``): ``compact`` lists the engine
constants once, in ``RecommendationResult.assumptions``; ``full`` also repeats them in every
estimate. The server's default view, ``summary``, is ``RecommendationSummary`` (the client's
``recommend_summary``)."""


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")


_ENERGY_KWH_DEPRECATED = (
    "energy_kwh is kWh to finish for training / compute but kWh per hour for inference: read "
    "energy_kwh_total or energy_kwh_per_hour")


# -- requests --------------------------------------------------------------------------------

class ModelIn(_Request):
    """A preset id, or an explicit transformer, or a generic network."""

    preset: str | None = None
    params: float | None = None
    layers: int | None = None
    hidden_size: int | None = None
    attention_heads: int | None = None
    kv_heads: int | None = None
    vocab_size: int | None = None
    intermediate_size: int | None = None
    experts: int = 1
    experts_per_token: int = 1
    active_params: float | None = None
    encoder_only: bool = False
    gflops_per_sample: float | None = None
    activation_mb_per_sample: float | None = None
    name: str = "custom"


class TrainingIn(_Request):
    batch_size: int
    seq_len: int | None = None
    tokens: float | None = None
    samples: float | None = None
    epochs: float | None = None
    dataset_samples: float | None = None
    optimizer: Literal["adamw", "sgd", "adafactor"] = "adamw"
    activation_checkpointing: bool = False
    sharding: Literal["auto", "none", "zero1", "zero2", "zero3", "fsdp"] = "auto"
    flash_attention: bool = True
    lm_head_fraction: float = 1.0
    """Share of each sequence's tokens that reach the vocabulary projection and the loss."""
    memory_format: Literal["nchw", "nhwc"] = "nchw"
    input_samples_per_s_per_gpu: float | None = None


class TrafficBucketIn(_Request):
    prompt_tokens: int
    output_tokens: int
    share: float
    """Fraction of the requests of this size; the shares sum to 1."""


class InferenceIn(_Request):
    prompt_tokens: int = 0
    output_tokens: int = 0
    batch_size: int | None = None
    max_ttft_ms: float | None = None
    max_tpot_ms: float | None = None
    max_latency_ms: float | None = None
    target_requests_per_s: float | None = None
    max_num_seqs: int | None = None
    """The runtime's cap on sequences per replica (vLLM max_num_seqs); None: its default."""
    effective_prompt_tokens: int | None = None
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    """A pinned TP / PP split per replica; None: the engine's best split."""
    input_samples_per_s_per_gpu: float | None = None
    runtime: Runtime = "batching-server"
    """Serving runtime: a batching server (vLLM, TensorRT-LLM, SGLang) or llama.cpp."""
    traffic: list[TrafficBucketIn] | None = None
    """A request-size histogram (the answer then has a ``fleet``); or ``traffic_preset``."""
    traffic_preset: str | None = None
    slo_percentile: float = 100.0
    """With traffic: the share of requests that must meet the latency limits [percent]."""


class ComputeIn(_Request):
    total_tflop: float
    total_gb_moved: float = 0.0
    memory_gb: float = 0.0
    fp64_units: Literal["vector", "matrix"] = "vector"
    communication: Literal["stencil", "allreduce", "none"] = "stencil"
    steps: float | None = None
    serial_fraction: float | None = None


class Constraints(_Request):
    max_gpus: int | None = None
    gpu_slugs: list[str] | None = None
    exclude_gpu_slugs: list[str] = Field(default_factory=list)
    vendors: list[str] | None = None
    form_factors: list[str] | None = None
    deployment: Literal["cloud", "on_prem", "edge"] | None = None
    max_power_w: float | None = None
    providers: list[str] | None = None
    regions: list[str] | None = None
    pricing: list[Pricing] | None = None
    budget_usd: float | None = None
    max_usd_per_hour: float | None = None
    deadline_hours: float | None = None
    require_fast_interconnect: bool = False
    time_tolerance: float = 0.05
    """Objective time: answers within this fraction of the fastest rank cheapest first."""
    max_gpu_types: int | None = None
    """Traffic histograms: most GPU types the fleet mixes; 1 = the best single type."""
    mix: bool = True


class Workload(_Request):
    """What runs: the engine's workload (``POST /v1/estimates`` takes this)."""

    kind: Kind
    model: ModelIn | None = None
    precision: Precision = "bf16"
    weight_precision: Literal["int8", "int4"] | None = None
    kv_cache_precision: Literal["fp16", "bf16", "fp8", "int8"] | None = None
    training: TrainingIn | None = None
    inference: InferenceIn | None = None
    compute: ComputeIn | None = None


class WorkloadSubmission(Workload):
    """A workload to store or rank: plus a name, an objective and constraints."""

    name: str = "unnamed"
    objective: Objective = "balanced"
    constraints: Constraints = Field(default_factory=Constraints)


class RunRequest(_Request):
    objective: Objective | None = None
    limit: int = 10
    constraints: Constraints | None = None


# -- responses -------------------------------------------------------------------------------

class Page(_Response, Generic[T]):
    data: list[T]
    total: int
    limit: int
    offset: int


class Gpu(_Response):
    slug: str
    name: str
    vendor: str
    architecture: str | None = None
    form_factor: str
    memory_gb: float
    memory_bandwidth_gb_s: float
    fp64_tflops: float | None = None
    fp32_tflops: float | None = None
    bf16_tflops: float | None = None
    fp16_tflops: float | None = None
    fp8_tflops: float | None = None
    int8_tops: float | None = None
    tdp_w: float
    interconnect: str
    interconnect_bandwidth_gb_s: float | None = None
    max_gpus_per_node: int | None = None
    aliases: list[str] = Field(default_factory=list)
    source: str
    notes: str | None = None
    version: int
    created_at: datetime
    updated_at: datetime


class Quote(_Response):
    id: int
    gpu_slug: str
    provider: str
    region: str | None = None
    instance_type: str
    gpu_count: int | None = None
    pricing: Pricing
    price_usd_per_hour: float | None = None
    purchase_price_usd: float | None = None
    price_usd_per_gpu_hour: float | None = None
    source: str
    captured_at: datetime
    valid_until: datetime | None = None
    observed_at: date | None = None
    """The day the source observed the price; age_days and stale count from it."""
    version: int
    age_days: float | None = None
    stale: bool = False
    expired: bool = False
    network_gbps: float | None = None
    network_fabric: str | None = None
    multi_node: bool | None = None
    network_source: str | None = None


class PriceChange(_Response):
    id: int
    quote_id: int
    event: Literal["price_change", "deleted"] = "price_change"
    gpu_slug: str | None = None
    provider: str | None = None
    changed_at: datetime
    changed_by: str | None = None
    old_price_usd_per_hour: float | None
    new_price_usd_per_hour: float | None
    old_purchase_price_usd: float | None
    new_purchase_price_usd: float | None


class Preset(_Response):
    id: str
    name: str
    family: str
    model_type: str
    model: dict[str, Any]
    source: str
    notes: str


class GpuRef(_Response):
    slug: str
    name: str


class Memory(_Response):
    per_gpu_gb: float
    available_gb: float
    breakdown_gb: dict[str, float]


class Throughput(_Response):
    samples_per_s: float | None
    tokens_per_s: float | None
    requests_per_s: float | None


class Fix(_Response):
    """A change that would make it work: ``kind`` (e.g. gpu_count, weight_precision, budget),
    ``value`` (in the unit of ``field``), ``detail`` for people."""

    kind: str
    value: float | str | bool | None
    detail: str
    field: str | None


class Notice(_Response):
    """A warning with a stable ``code`` (e.g. tpot_above_reading_speed, stale_quote)."""

    code: str
    message: str


class Assumption(_Response):
    """A named engine constant an estimate used."""

    name: str
    value: float | str
    unit: str
    source: str


class Estimate(_Response):
    gpu: GpuRef
    gpu_count: int
    fits: bool
    warnings: list[str]
    infeasible_reasons: list[str]
    fixes: list[Fix]
    min_gpus_to_fit: int | None
    memory: Memory
    bound: str | None
    throughput: Throughput
    step_time_ms: float | None
    time_to_complete_hours: float | None
    """Training / compute: time to finish, start-up included [hours]."""
    startup_s: float | None = None
    """Training / compute: launch and communicator set-up before the first step [s] (0 on
    one GPU); null for inference."""
    ttft_ms: float | None
    tpot_ms: float | None
    latency_ms: float | None
    power_w: float | None
    energy_kwh: float | None = Field(deprecated=_ENERGY_KWH_DEPRECATED)
    """Deprecated, still sent: kWh to finish (training / compute) or kWh per hour (inference)."""
    energy_kwh_total: float | None = None
    """Training / compute: energy to finish [kWh]; null for inference and without an amount
    of training."""
    energy_kwh_per_hour: float | None = None
    """Inference: energy per hour of serving [kWh/hour]; null for training / compute."""
    parallel_efficiency: float | None
    assumptions: list[Assumption] | None = None
    """Null in a recommendation's compact view (the answer lists them once)."""


class QuoteRef(_Response):
    id: int
    provider: str
    region: str
    instance_type: str
    gpu_count: int
    pricing: str
    price_usd_per_hour: float | None
    purchase_price_usd: float | None
    observed_at: date | None = None
    age_days: float | None = None
    stale: bool = False
    network_gbps: float | None = None
    network_fabric: str | None = None
    multi_node: bool = False


class _ReadsLikeADict(_Response):
    """Also readable as the plain dict the client returned before this was typed:
    ``cost["usd_per_hour"]``, ``cost.get("total_usd")``, ``"gpus" in cost`` (fields the server
    added later included); iterating is pydantic's, (name, value) pairs."""

    def __getitem__(self, key: str) -> Any:
        if key in type(self).model_fields:
            return getattr(self, key)
        extra = self.__pydantic_extra__ or {}
        if key in extra:
            return extra[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in type(self).model_fields
                                         or key in (self.__pydantic_extra__ or {}))

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default


class Cost(_ReadsLikeADict):
    """What a candidate costs. Money is null when ``known`` is false (no usable quote) and for
    the figures that do not apply (``total_usd`` is for training and compute jobs,
    ``usd_per_million_output_tokens`` for LLM serving, ``usd_per_1k_requests`` for other
    serving, the ``owned`` figures for purchase quotes)."""

    known: bool
    usd_per_hour: float | None
    """All instances of all replicas [USD/hour]; owned: amortisation + power."""
    total_usd: float | None
    """Training / compute: to finish [USD]."""
    usd_per_million_output_tokens: float | None
    usd_per_1k_requests: float | None
    replicas: int
    instances: int
    """Instances rented or bought, all replicas."""
    gpus: int
    """GPUs paid for, all replicas (= the candidate's ``gpu_count``)."""
    owned: bool
    amortized_usd_per_hour: float | None
    power_usd_per_hour: float | None
    break_even_months: float | None
    energy_kwh: float | None = Field(deprecated=_ENERGY_KWH_DEPRECATED)
    """Deprecated, still sent: kWh to finish (training / compute) or kWh per hour (inference)."""
    energy_kwh_total: float | None = None
    """Training / compute: energy to finish [kWh]; null for inference and without an amount
    of training."""
    energy_kwh_per_hour: float | None = None
    """Inference: energy per hour of serving, all replicas [kWh/hour]; null for training /
    compute."""


class Provision(_ReadsLikeADict):
    """Ready-to-use provisioning: a SkyPilot task and Kubernetes manifests."""

    skypilot_yaml: str | None
    """A SkyPilot task (add ``run:``); null for owned hardware, providers that are not SkyPilot
    clouds and GPUs without a SkyPilot name (``skypilot_note`` says which)."""
    skypilot_note: str | None
    kubernetes: list[dict[str, Any]]
    """Complete manifests (Deployment + Service, StatefulSets, or a Job), as plain objects."""
    kubernetes_note: str | None


class Candidate(_Response):
    rank: int
    gpu: GpuRef
    gpu_count: int
    """GPUs the answer runs and pays for, every replica included (= cost.gpus)."""
    replicas: int
    gpus_per_replica: int
    quote: QuoteRef | None
    estimate: Estimate
    cost: Cost
    score: float | None
    pareto_optimal: bool
    reasons: list[str]
    warnings: list[Notice]
    provision: Provision


class Rejection(_Response):
    gpu: GpuRef
    code: str
    reason: str
    fix: Fix
    other_fixes: list[Fix] = []


class RecommendationResult(_Response):
    objective: Objective
    catalog_revision: str
    generated_at: datetime
    recommendations: list[Candidate]
    rejected: list[Rejection]
    warnings: list[str]
    assumptions: list[Assumption] = Field(default_factory=list)
    fleet: dict[str, Any] | None = None
    """Traffic histograms: the mixed fleet (pools, cost, best single type, saving); see the
    API's ``FleetOut`` schema."""


class GpuSlug(_Response):
    slug: str


class QuoteSummary(_Response):
    id: int
    provider: str
    region: str
    instance_type: str
    pricing: str
    price_usd_per_hour: float | None
    purchase_price_usd: float | None
    stale: bool


class CostSummary(_ReadsLikeADict):
    usd_per_hour: float | None
    total_usd: float | None
    usd_per_million_output_tokens: float | None
    usd_per_1k_requests: float | None


class EstimateSummary(_Response):
    bound: str | None
    batch_size: int | None
    time_to_complete_hours: float | None
    latency_ms: float | None
    ttft_ms: float | None
    tpot_ms: float | None


class WarningCode(_Response):
    code: str


class CandidateSummary(_Response):
    """A candidate as the summary lists it: each field is the same as in :class:`Candidate`."""

    rank: int
    gpu: GpuRef
    gpu_count: int
    replicas: int
    gpus_per_replica: int
    quote: QuoteSummary | None
    cost: CostSummary
    estimate: EstimateSummary
    score: float | None
    pareto_optimal: bool
    warnings: list[WarningCode]


class RejectionSummary(_Response):
    """A rejected GPU in the summary: its slug and code (why in words and the nearest fix:
    :meth:`recommend`'s ``compact`` answer)."""

    gpu: GpuSlug
    code: str


class RecommendationSummary(_Response):
    """The ranked answer's summary (the server's default view): what a portal shows."""

    objective: Objective
    catalog_revision: str
    generated_at: datetime
    recommendations: list[CandidateSummary]
    rejected: list[RejectionSummary]
    warnings: list[str]
    fleet: dict[str, Any] | None = None
    """Traffic histograms: the cheapest mixed fleet in short (status, pools, GPUs, cost)."""


class StoredWorkload(_Response):
    id: str
    name: str
    objective: Objective
    kind: str
    created_at: datetime
    owner_key_id: int | None = None
    workload: dict[str, Any]


class Run(_Response):
    id: str
    workload_id: str
    created_at: datetime
    catalog_revision: str
    objective: Objective
    limit: int
    created_by_key_id: int | None = None
    result: RecommendationResult


class RunSummary(_Response):
    id: str
    workload_id: str
    objective: Objective
    limit: int
    catalog_revision: str
    created_at: datetime
    top_gpu_slug: str | None
    top_gpu_count: int | None


SERVER_SCHEMAS: dict[type[BaseModel], str] = {
    ModelIn: "ModelInput", TrainingIn: "TrainingInput", InferenceIn: "InferenceInput",
    ComputeIn: "ComputeInput", Constraints: "ConstraintsIn", Workload: "WorkloadSpec",
    WorkloadSubmission: "WorkloadSubmission", RunRequest: "RunRequest",
    Gpu: "GpuPublic", Quote: "QuotePublic", PriceChange: "PriceChangePublic",
    Preset: "PresetOut", GpuRef: "GpuRef", Memory: "MemoryOut", Throughput: "ThroughputOut",
    Estimate: "EstimateOut", QuoteRef: "QuoteRef", Cost: "CostOut", Provision: "ProvisionOut",
    Candidate: "CandidateOut",
    Rejection: "RejectionOut", RecommendationResult: "RecommendationResult",
    Fix: "FixOut", Notice: "WarningOut",
    GpuSlug: "GpuSlug", QuoteSummary: "QuoteSummary", CostSummary: "CostSummary",
    EstimateSummary: "EstimateSummary", WarningCode: "WarningCodeOut",
    CandidateSummary: "CandidateSummary", RejectionSummary: "RejectionSummary",
    RecommendationSummary: "RecommendationSummary",
    StoredWorkload: "WorkloadPublic", Run: "RunOut", RunSummary: "RunSummary",
}
"""Each client model and the OpenAPI component it mirrors (checked by a test)."""
