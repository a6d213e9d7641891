"""Plain frozen dataclasses the engine reads and returns.

Units are in the field names (``_gb``, ``_gb_s``, ``_tflops``, ``_ms``, ``_w``). The engine
never sees database rows or HTTP payloads: the shell converts them into these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

# The engine's vocabulary: the API schemas, the CLI and the comparison page take their choices
# from these Literals (typing.get_args), so each enumeration is spelled once.
ComputePrecision = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
"""What a workload computes in: the precisions the catalog lists a peak for."""
Precision = Literal[ComputePrecision, "int4"]
WeightPrecision = Literal["int8", "int4"]
"""Quantised weights (inference)."""
KvCachePrecision = Literal["fp16", "bf16", "fp8", "int8"]
FormFactor = Literal["sxm", "oam", "pcie", "workstation", "consumer", "edge"]
Interconnect = Literal["nvlink", "infinity_fabric", "pcie", "none"]
WorkloadKind = Literal["training", "inference", "compute"]
Optimizer = Literal["adamw", "sgd", "adafactor"]
Sharding = Literal["auto", "none", "zero1", "zero2", "zero3"]
MemoryFormat = Literal["nchw", "nhwc"]
Bound = Literal["compute", "memory_bandwidth", "interconnect"]
Communication = Literal["stencil", "allreduce", "none"]
Fp64Units = Literal["vector", "matrix"]
ServingRuntime = Literal["batching-server", "llama.cpp"]
"""How the model is served: a continuous-batching server (vLLM, TensorRT-LLM, SGLang: timed
alike) or llama.cpp, whose matrix-vector kernels stream weights at a per-SM rate."""
FixKind = Literal[
    "gpu_count",
    "weight_precision",
    "activation_checkpointing",
    "sharding",
    "gpu_memory",
    "max_gpus",
    "budget",
    "max_usd_per_hour",
    "deadline",
    "max_power",
    "latency_limit",
    "precision",
    "interconnect",
    "constraint",
    "quote",
    "multi_node_offer",
    "limit",
]
"""What a fix changes (machine-readable; ``Fix.detail`` is the text for people)."""


def _cached_hash(obj: Any) -> int:
    """The dataclass field-tuple hash, computed once per object: engine memo tables key on
    GPUs and workloads, whose field tuples are long (and nested) to hash again on every
    lookup. Frozen objects never change, so the hash cannot go stale."""
    try:
        found: int = obj._hash  # one attribute read (~35 ns less than a __dict__ lookup)
        return found
    except AttributeError:
        cached = hash(tuple(getattr(obj, f.name) for f in fields(obj)))
        object.__setattr__(obj, "_hash", cached)
        return cached


@dataclass(frozen=True)
class GpuSpec:
    """One GPU type as the engine sees it. Tensor figures are DENSE; None = unsupported."""

    __hash__ = _cached_hash

    slug: str
    name: str
    vendor: str
    form_factor: FormFactor
    memory_gb: float
    memory_bandwidth_gb_s: float
    tdp_w: float
    fp64_tflops: float | None = None
    fp64_tensor_tflops: float | None = None
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    bf16_tflops: float | None = None
    fp16_tflops: float | None = None
    fp8_tflops: float | None = None
    int8_tops: float | None = None
    interconnect: Interconnect = "pcie"
    interconnect_bandwidth_gb_s: float | None = None
    """Per-GPU GPU-to-GPU bandwidth inside a node [GB/s] (NVLink total, or PCIe)."""
    max_gpus_per_node: int = 8
    pcie_gen: int | None = None
    architecture: str = ""
    sm_count: int | None = None
    """Streaming multiprocessors (NVIDIA) or compute units (AMD): the GEMM tile slots per wave."""
    boost_clock_mhz: float | None = None
    """Boost clock [MHz]: the clock the datasheet peaks are quoted at."""
    base_clock_mhz: float | None = None
    """Base clock [MHz]: the clock guaranteed at the board power limit under heavy load."""
    l2_cache_mb: float | None = None
    """Last-level on-chip cache [MB] (L2; AMD MI300: Infinity Cache)."""
    tensor_core_generation: int | None = None
    """Matrix-unit generation (NVIDIA tensor cores: 1 Volta .. 5 Blackwell; AMD CDNA 1-3;
    0 = none)."""
    memory_type: str = ""
    """The memory's kind as the catalog names it (HBM3, GDDR6, LPDDR5, ...; empty: unknown,
    read as stacked memory): whether ECC takes a share of it
    (:func:`service.engine.physics.memory.capacity_bytes`)."""
    network_gb_s_per_gpu: float | None = None
    """Cross-node bandwidth per GPU [GB/s, one way] of the offer the GPUs are rented or
    bought with (its fabric's rate / 8 / GPUs per node); None = the class default
    (:func:`service.engine.physics.parallelism.network_gb_s`)."""


@dataclass(frozen=True)
class TransformerModel:
    """A decoder-only or encoder transformer. ``params`` is the total parameter count."""

    __hash__ = _cached_hash

    params: float
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    vocab_size: int
    intermediate_size: int
    experts: int = 1
    experts_per_token: int = 1
    active_params: float | None = None
    """Parameters used per token (MoE); None = ``params``."""
    encoder_only: bool = False
    name: str = "custom"
    sliding_window: int | None = None
    """Sliding-window attention span [tokens] (Mistral 7B: 4096); None = full attention.
    Caps the KV cache per sequence and the attention work per token at this many tokens."""


@dataclass(frozen=True)
class GenericModel:
    """Any other network (CNN, detector): size and forward cost per sample."""

    __hash__ = _cached_hash

    params: float
    gflops_per_sample: float
    """Forward pass cost per sample [GFLOP] (1 MAC = 2 FLOP)."""
    activation_mb_per_sample: float
    """Activation memory kept for backward per sample at 16-bit [MB]."""
    name: str = "custom"
    layers: int | None = None
    """Weighted layers (convolutions + fully connected): kernels per forward pass; None = a
    ResNet-50-deep network (:data:`constants.GENERIC_DEFAULT_LAYERS`)."""
    layer_table: str | None = None
    """Name of the network's layer table (:data:`service.engine.physics.cnn.LAYER_TABLES`):
    timed layer by layer; None = the aggregate path (forward FLOPs and activation bytes)."""


ModelSpec = TransformerModel | GenericModel


@dataclass(frozen=True)
class TrainingSpec:
    __hash__ = _cached_hash

    batch_size: int
    """Global batch, in samples (sequences for transformers)."""
    seq_len: int | None = None
    tokens: float | None = None
    samples: float | None = None
    epochs: float | None = None
    dataset_samples: float | None = None
    optimizer: Optimizer = "adamw"
    activation_checkpointing: bool = False
    sharding: Sharding = "auto"
    flash_attention: bool = True
    lm_head_fraction: float = 1.0
    """Share of each sequence's tokens that go through the vocabulary projection and the loss
    [0-1]: 1 for causal-LM training, ~0.15 for masked-LM code that gathers the masked
    positions first, 0 for a task head (classification, span extraction) in its place."""
    memory_format: MemoryFormat = "nchw"
    """CNN activation layout: nchw (PyTorch's default) or nhwc (``channels_last``). Tensor-core
    convolutions work in NHWC, so NCHW training pays layout transposes around each one."""
    input_samples_per_s_per_gpu: float | None = None
    """Host/input-pipeline ceiling: the most samples per second the data loader (decode,
    augmentation, host-to-device copy) feeds one GPU [samples/s]; None = no ceiling (the GPU
    is never starved)."""


MAX_TRAFFIC_BUCKETS = 64
"""Most buckets a traffic histogram may hold: enough for a 8 x 8 grid of prompt
and output sizes, and it keeps the fleet program (buckets x pool options) small."""
MIN_SLO_PERCENTILE = 50.0
"""Lowest ``slo_percentile`` accepted [percent]: below the median a latency limit no longer
describes the service most requests get."""
SHARE_SUM_TOLERANCE = 1e-6
"""|sum of the bucket shares - 1| allowed: shares written with six decimals still sum to 1."""


@dataclass(frozen=True)
class TrafficBucket:
    """One request size of a traffic mix: its prompt and output tokens and the fraction of
    the requests that have it [fraction of requests, 0-1]."""

    __hash__ = _cached_hash

    prompt_tokens: int
    output_tokens: int
    share: float


@dataclass(frozen=True)
class InferenceSpec:
    __hash__ = _cached_hash

    prompt_tokens: int = 0
    output_tokens: int = 0
    batch_size: int | None = None
    max_ttft_ms: float | None = None
    max_tpot_ms: float | None = None
    max_latency_ms: float | None = None
    target_requests_per_s: float | None = None
    max_num_seqs: int | None = None
    """The runtime's cap on sequences in flight per replica (vLLM ``max_num_seqs``); None =
    the runtime default (:func:`service.engine.physics.serving.max_num_seqs`)."""
    effective_prompt_tokens: int | None = None
    """Mean real (unpadded) tokens per sample when the runtime batches without padding
    (TensorRT / FasterTransformer remove-padding kernels); work is counted on these, memory
    is still sized for ``prompt_tokens``. None = padded (every sample costs prompt_tokens)."""
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    """A pinned model split (TP degree, PP stages) per replica, as a measured deployment ran
    it; None = the engine's best split. Either given pins both (the other 1). A count too
    small for the pinned group, or a GPU whose node holds fewer GPUs than the TP degree, is
    judged on the engine's own splits."""
    input_samples_per_s_per_gpu: float | None = None
    """Host/input-pipeline ceiling for generic networks (CNNs): the most samples per second
    the host's preprocessing (decode, resize, copy) feeds one GPU [samples/s]; None = none."""
    traffic: tuple[TrafficBucket, ...] | None = None
    """A histogram of request sizes (LLM serving): ``target_requests_per_s`` is their total
    rate, each bucket gets its ``share`` of it, and the SLOs hold for every bucket. The
    single-shape estimate and ranking use ``prompt_tokens`` / ``output_tokens`` (the API
    fills them with the share-weighted means when not given); the mixed-fleet optimiser
    (:mod:`service.engine.choice.fleet`) serves each bucket at its own size. None = one size."""
    runtime: ServingRuntime = "batching-server"
    """The serving runtime (:data:`ServingRuntime`): llama.cpp caps the bandwidth its kernels
    reach (:func:`service.engine.physics.kernels.runtime_device`)."""
    slo_percentile: float = 100.0
    """With a traffic histogram: the share of the requests (weighted by bucket share) that
    must meet the latency limits [percent, 50-100]; the others may be served outside them
    (still served: at the capacity with the limits removed). 100 = every request. The
    single-shape estimate and ranking ignore it."""


@dataclass(frozen=True)
class ComputeSpec:
    __hash__ = _cached_hash

    total_tflop: float
    total_gb_moved: float = 0.0
    memory_gb: float = 0.0
    fp64_units: Fp64Units = "vector"
    """FP64 jobs: whether the code's FLOPs run on matrix (tensor) units (DGEMM, HPL) or on
    plain vector units (stencils, CFD, most solvers: the default)."""
    communication: Communication = "stencil"
    """What the GPUs exchange every step when the job is split (see
    :mod:`service.engine.physics.scaling`): halos of a 3-D domain decomposition (the default:
    structured-grid CFD, climate, seismic and lattice codes are the common multi-GPU HPC
    case), an all-reduce of a vector (dense iterative solvers), or nothing."""
    steps: float | None = None
    """Iterations / time steps, each ending in one exchange; None = derived from the job
    (:func:`service.engine.physics.scaling.job_steps`)."""
    serial_fraction: float | None = None
    """Share of the one-GPU time that does not parallelize (Amdahl); None = the default
    constant :data:`service.engine.constants.SERIAL_FRACTION`."""


@dataclass(frozen=True)
class Workload:
    __hash__ = _cached_hash

    kind: WorkloadKind
    precision: Precision
    model: ModelSpec | None = None
    weight_precision: Precision | None = None
    kv_cache_precision: Precision | None = None
    training: TrainingSpec | None = None
    inference: InferenceSpec | None = None
    compute: ComputeSpec | None = None


@dataclass(frozen=True)
class Fix:
    """One change that would make an infeasible option (or a rejected GPU) work.

    ``kind`` says what to change and ``value`` what to change it to (a count, a precision,
    a limit in the unit of ``field``; None when there is no single value); ``field`` names
    the request field to change when there is one (``constraints.max_gpus``)."""

    kind: FixKind
    value: float | str | bool | None
    detail: str
    field: str | None = None


@dataclass(frozen=True)
class Assumption:
    """A named constant the estimate used, with its value, unit and source."""

    name: str
    value: float | str
    unit: str
    source: str


@dataclass(frozen=True)
class MemoryBreakdown:
    """Memory per GPU [GB] (1 GB = 1e9 bytes)."""

    weights: float = 0.0
    gradients: float = 0.0
    optimizer_states: float = 0.0
    activations: float = 0.0
    kv_cache: float = 0.0
    overhead: float = 0.0

    @property
    def total(self) -> float:
        return (
            self.weights
            + self.gradients
            + self.optimizer_states
            + self.activations
            + self.kv_cache
            + self.overhead
        )


@dataclass(frozen=True)
class Parallelism:
    gpu_count: int
    nodes: int
    gpus_per_node: int
    data_parallel: int
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    sharding: Sharding = "none"
    link: str = "none"
    """The slowest link the job's collectives cross.

    One of nvlink, infinity_fabric, pcie, network, none.
    """
    link_bandwidth_gb_s: float | None = None


@dataclass(frozen=True)
class Estimate:
    """What one workload needs and how fast it runs on ``gpu_count`` GPUs of one type.

    Fields that do not apply to the workload kind are None.
    """

    gpu_slug: str
    gpu_count: int
    fits: bool
    precision_used: Precision
    memory_per_gpu_gb: float
    memory_available_gb: float
    memory: MemoryBreakdown
    parallelism: Parallelism
    bound: Bound | None
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    step_time_ms: float | None = None
    time_to_complete_hours: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    latency_ms: float | None = None
    batch_size: int | None = None
    requests_per_s: float | None = None
    """Inference: the group's capacity: requests per second its replicas complete at the
    capacity batch (``capacity_batch_size``) within the latency limits."""
    capacity_batch_size: int | None = None
    """Inference: sequences in flight per replica at capacity (the largest batch meeting the
    limits within memory and the runtime's sequence cap; a fixed ``batch_size``)."""
    pipeline_deeper_than_needed: bool = False
    """Inference with a target: a pipeline with fewer stages (same TP) holds the model and
    carries the load with no more replicas; the extra stages only shrink the batch (the
    ranking does not offer such a count)."""
    offered_requests_per_s: float | None = None
    """Inference with a target: the requests/s this group carries (the target split over the
    copies of the group it takes); ``batch_size``, TTFT, TPOT and latency are at this load."""
    power_w: float | None = None
    energy_kwh_total: float | None = None
    """Training/compute: energy the GPUs draw to finish the job, ``power_w`` x
    ``time_to_complete_hours`` [kWh]; None for inference and when the job's length is unknown."""
    energy_kwh_per_hour: float | None = None
    """Inference: energy the GPUs draw per hour of serving, ``power_w`` x 1 h [kWh/h]; None for
    training/compute."""
    latency_ok: bool | None = None
    """Inference: all requested latency limits hold (None when none were given)."""
    warnings: tuple[str, ...] = ()
    infeasible_reasons: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()
    """The smallest changes that make it fit (kind ``gpu_count`` 2, ``weight_precision`` int8)."""
    min_gpus_to_fit: int | None = None
    assumptions: tuple[Assumption, ...] = field(default=())
    micro_batch_size: int | None = None
    """Training: per-GPU micro-batch (samples) actually run; the rest is gradient accumulation."""
    gradient_accumulation_steps: int | None = None
    replicas: int | None = None
    """Inference: independent model copies the GPUs form (gpu_count / (TP x PP))."""
    compute_tflops_used: float | None = None
    """Dense peak per GPU [TFLOPS] at ``precision_used`` that the roofline used."""
    startup_s: float | None = None
    """Training/compute: seconds of launch and communicator set-up before the first step,
    part of ``time_to_complete_hours`` (0.0 on one GPU); None for inference."""
    parallel_efficiency: float | None = None
    """How well the GPUs are used, 1.0 = perfect scaling [fraction]. Compute jobs: time on one
    GPU / (gpu_count x time on gpu_count GPUs) (1.0 on one GPU). Training: samples/s per GPU
    at ``gpu_count`` over samples/s per GPU at the smallest count whose memory holds the job
    (1.0 at that count). None for inference and where no baseline fits."""
