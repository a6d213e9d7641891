"""Request schema for a workload (pydantic v2), converted to the engine's :class:`Workload`."""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from service.core.text import no_control_chars
from service.engine import validate_workload
from service.engine.types import (
    MAX_TRAFFIC_BUCKETS,
    MIN_SLO_PERCENTILE,
    Communication,
    ComputePrecision,
    ComputeSpec,
    Fp64Units,
    GenericModel,
    InferenceSpec,
    KvCachePrecision,
    MemoryFormat,
    ModelSpec,
    Optimizer,
    ServingRuntime,
    Sharding,
    TrafficBucket,
    TrainingSpec,
    TransformerModel,
    WeightPrecision,
    Workload,
    WorkloadKind,
)
from service.presets.catalog import PRESETS, unknown_preset_message
from service.presets.traffic import TRAFFIC_PRESETS, unknown_traffic_preset_message

MAX_PARAMS = 1e14
MAX_TOKENS = 1e16
MAX_INT = 10_000_000
ShardingChoice = Literal[Sharding, "fsdp"]
"""The engine's sharding names, plus fsdp: the API's alias for zero3."""


class WorkloadError(Exception):
    """The workload is well-formed JSON but its numbers are inconsistent or unknown."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{field}: {message}" for field, message in errors))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    _text = field_validator("*")(no_control_chars)


class ModelInput(_Strict):
    """A preset id, or an explicit transformer, or a generic network (CNN, detector)."""

    preset: str | None = Field(
        default=None, min_length=1, max_length=64,
        description=(
            "A known model's id (GET /v1/models), e.g. llama-3.1-8b; when given, the "
            "architecture fields are ignored"
        ),
    )
    params: float | None = Field(
        default=None, ge=1, le=MAX_PARAMS,
        description="Total parameters [count], e.g. 7e9",
    )
    layers: int | None = Field(
        default=None, gt=0, le=10_000,
        description="Transformer layers (blocks) [count]",
    )
    hidden_size: int | None = Field(
        default=None, gt=0, le=1_000_000,
        description="Model (embedding) width [elements]",
    )
    attention_heads: int | None = Field(
        default=None, gt=0, le=100_000,
        description="Query attention heads per layer [count]",
    )
    kv_heads: int | None = Field(
        default=None, gt=0, le=100_000,
        description=(
            "Key/value heads per layer [count] (grouped-query attention); default = "
            "attention_heads"
        ),
    )
    vocab_size: int | None = Field(
        default=None, gt=0, le=10_000_000,
        description="Vocabulary size [tokens]",
    )
    intermediate_size: int | None = Field(
        default=None, gt=0, le=10_000_000,
        description="Feed-forward inner width [elements]; default 4 x hidden_size",
    )
    experts: int = Field(
        default=1, ge=1, le=100_000,
        description="Mixture-of-experts: experts per layer [count]; 1 = dense",
    )
    experts_per_token: int = Field(
        default=1, ge=1, le=100_000,
        description="Mixture-of-experts: experts each token is routed to [count]",
    )
    active_params: float | None = Field(
        default=None, ge=1, le=MAX_PARAMS,
        description="Parameters used per token [count] (mixture-of-experts); default = params",
    )
    encoder_only: bool = Field(
        default=False,
        description="True for encoder-only transformers (BERT): no KV cache, no token generation",
    )
    gflops_per_sample: float | None = Field(
        default=None, ge=1e-6, le=1e9,
        description="Generic network (CNN, detector): forward work per sample [GFLOP]",
    )
    activation_mb_per_sample: float | None = Field(
        default=None, ge=0, le=1e7,
        description="Generic network: activation memory per sample [MB]",
    )
    name: str = Field(
        default="custom", max_length=128,
        description="A label for a custom model, shown in reasons",
    )

    @model_validator(mode="after")
    def _one_shape(self) -> ModelInput:
        if self.preset is not None:
            return self
        transformer = ("layers", "hidden_size", "attention_heads", "vocab_size")
        if self.gflops_per_sample is not None:
            if self.params is None:
                raise ValueError("params is required for a generic model")
            return self
        missing = [f for f in ("params", *transformer) if getattr(self, f) is None]
        if missing:
            raise ValueError(
                "give a preset, a transformer (params, layers, hidden_size, attention_heads, "
                "vocab_size, ...) or a generic model (params, gflops_per_sample); missing: "
                + ", ".join(missing)
            )
        return self

    def to_engine(self) -> ModelSpec:
        if self.preset is not None:
            preset = PRESETS.get(self.preset)
            if preset is None:
                raise WorkloadError([("model.preset", unknown_preset_message(self.preset))])
            return preset.model
        if self.gflops_per_sample is not None:
            assert self.params is not None
            return GenericModel(
                params=self.params,
                gflops_per_sample=self.gflops_per_sample,
                activation_mb_per_sample=self.activation_mb_per_sample or 0.0,
                name=self.name,
                layers=self.layers,
            )
        assert self.params is not None and self.layers is not None
        assert self.hidden_size is not None and self.attention_heads is not None
        assert self.vocab_size is not None
        return TransformerModel(
            params=self.params,
            layers=self.layers,
            hidden_size=self.hidden_size,
            attention_heads=self.attention_heads,
            kv_heads=self.kv_heads or self.attention_heads,
            vocab_size=self.vocab_size,
            intermediate_size=self.intermediate_size or 4 * self.hidden_size,
            experts=self.experts,
            experts_per_token=self.experts_per_token,
            active_params=self.active_params,
            encoder_only=self.encoder_only,
            name=self.name,
        )


class TrainingInput(_Strict):
    batch_size: int = Field(gt=0, le=MAX_INT, description="Global batch [samples/sequences]")
    seq_len: int | None = Field(
        default=None, gt=0, le=10_000_000,
        description="Sequence length [tokens] (transformers)",
    )
    tokens: float | None = Field(
        default=None, ge=1, le=MAX_TOKENS,
        description=(
            "Tokens to train on in total [tokens]; or give samples, or epochs with "
            "dataset_samples"
        ),
    )
    samples: float | None = Field(
        default=None, ge=1, le=MAX_TOKENS,
        description="Samples (sequences, images) to train on in total [samples]",
    )
    epochs: float | None = Field(
        default=None, ge=1e-6, le=100_000,
        description="Passes over the dataset [count]; needs dataset_samples",
    )
    dataset_samples: float | None = Field(
        default=None, ge=1, le=MAX_TOKENS,
        description="Dataset size [samples]; with epochs",
    )
    optimizer: Optimizer = Field(
        default="adamw",
        description=(
            "Optimizer: adamw (two fp32 states per parameter), sgd (momentum), adafactor "
            "(factored)"
        ),
    )
    activation_checkpointing: bool = Field(
        default=False,
        description=(
            "Recompute activations in the backward pass: less memory, about a third more compute"
        ),
    )
    sharding: ShardingChoice = Field(
        default="auto",
        description=(
            "How model states are split over data-parallel GPUs: auto picks the cheapest that "
            "fits; zero1/2/3 (fsdp = zero3) shard optimizer states, gradients, weights"
        ),
    )
    flash_attention: bool = Field(
        default=True,
        description=(
            "Fused attention kernels (no materialised attention matrix). False: eager "
            "attention as BERT-era code runs it (separate QK^T, scale, mask, softmax, dropout "
            "and PV kernels over the whole score matrix)"
        ),
    )
    lm_head_fraction: float = Field(
        default=1.0, ge=0, le=1,
        description=(
            "Share of each sequence's tokens that go through the vocabulary projection and "
            "the loss [0-1]: 1 for causal-LM training and fine-tuning; ~0.15 for BERT-style "
            "masked-LM pre-training whose code gathers the masked positions first (NVIDIA's "
            "BERT); 0 when a task head (classification, SQuAD span extraction) replaces it. "
            "Ignored for CNNs"
        ),
    )
    memory_format: MemoryFormat = Field(
        default="nchw",
        description=(
            "CNN activation layout: nchw (PyTorch's default) or nhwc (channels_last). "
            "Tensor-core convolutions work in NHWC, so NCHW mixed-precision training pays a "
            "layout transpose around every convolution; ignored for transformers"
        ),
    )
    input_samples_per_s_per_gpu: float | None = Field(
        default=None, gt=0, le=1e9,
        description=(
            "Host/input-pipeline ceiling [samples/s per GPU]: the most samples per second the "
            "data loader (storage reads, JPEG decode, augmentation, host-to-device copy) feeds "
            "one GPU; a node's figure divided by its GPUs. A step never runs faster than its "
            "samples at this rate. Null = no ceiling (synthetic or pre-loaded data)"
        ),
    )

    def to_engine(self) -> TrainingSpec:
        sharding: Sharding = "zero3" if self.sharding == "fsdp" else self.sharding
        return TrainingSpec(
            batch_size=self.batch_size,
            seq_len=self.seq_len,
            tokens=self.tokens,
            samples=self.samples,
            epochs=self.epochs,
            dataset_samples=self.dataset_samples,
            optimizer=self.optimizer,
            activation_checkpointing=self.activation_checkpointing,
            sharding=sharding,
            flash_attention=self.flash_attention,
            lm_head_fraction=self.lm_head_fraction,
            memory_format=self.memory_format,
            input_samples_per_s_per_gpu=self.input_samples_per_s_per_gpu,
        )


class TrafficBucketIn(_Strict):
    """One request size of a traffic mix and its share of the requests."""

    prompt_tokens: int = Field(ge=1, le=10_000_000, description="Input tokens [tokens]")
    output_tokens: int = Field(ge=1, le=10_000_000, description="Generated tokens [tokens]")
    share: float = Field(
        gt=0, le=1,
        description="Fraction of the requests of this size [fraction]; the shares sum to 1 "
                    "(within 1e-6)")


class InferenceInput(_Strict):
    prompt_tokens: int = Field(
        default=0, ge=0, le=10_000_000,
        description="Input tokens per request [tokens] (memory is sized for these)",
    )
    output_tokens: int = Field(
        default=0, ge=0, le=10_000_000,
        description="Generated tokens per request [tokens]; 0 for encoders and CNNs",
    )
    batch_size: int | None = Field(
        default=None, gt=0, le=1_000_000,
        description="Requests served together [requests]; null = the largest that meets the SLOs",
    )
    max_ttft_ms: float | None = Field(
        default=None, gt=0, le=1e9,
        description="SLO: longest time to first token [ms]",
    )
    max_tpot_ms: float | None = Field(
        default=None, gt=0, le=1e9,
        description="SLO: longest time per output token after the first [ms]",
    )
    max_latency_ms: float | None = Field(
        default=None, gt=0, le=1e10,
        description="SLO: longest end-to-end time per request [ms]",
    )
    target_requests_per_s: float | None = Field(
        default=None, gt=0, le=1e9,
        description="Load to serve [requests/s]; replicas are added to reach it",
    )
    max_num_seqs: int | None = Field(
        default=None, ge=1, le=1_000_000,
        description=(
            "Serving runtime's cap on sequences one replica runs at once [sequences] (vLLM "
            "max_num_seqs, TensorRT-LLM max_batch_size); null = vLLM's default: 1,024 on GPUs "
            "with >= 70 GiB, 256 below. Ignored when batch_size is given"
        ),
    )
    effective_prompt_tokens: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        description=(
            "Mean real (unpadded) prompt tokens per sample [tokens], when the runtime skips "
            "padding (TensorRT / FasterTransformer remove-padding, variable-length attention). "
            "Work is counted on these, memory is still sized for prompt_tokens. Transformer "
            "models only; at most prompt_tokens. Null = padded: every sample costs prompt_tokens."
        ),
    )

    tensor_parallel: int | None = Field(
        default=None, ge=1, le=1024,
        description=(
            "Pin the model split per replica to this tensor-parallel degree [GPUs] (as a "
            "measured deployment ran it); null = the engine picks the best split. Transformer "
            "models only; a power of 2 dividing the attention heads, at most a node's GPUs "
            "(a larger TP is not pinned)"
        ),
    )
    pipeline_parallel: int | None = Field(
        default=None, ge=1, le=1024,
        description=(
            "Pin the pipeline stages per replica [count]; null = the engine picks. Pinning "
            "either pins both (the other defaults to 1); a GPU count smaller than tensor x "
            "pipeline is judged on the engine's own splits"
        ),
    )
    runtime: ServingRuntime = Field(
        default="batching-server",
        description=(
            "Serving runtime: batching-server (vLLM, TensorRT-LLM, SGLang: continuous "
            "batching, timed alike) or llama.cpp (one request at a time on a workstation or "
            "edge GPU; its matrix-vector kernels stream the weights at a rate set by the GPU's "
            "SMs and clock, so HBM parts reach well under their bandwidth at batch 1)"),
    )
    input_samples_per_s_per_gpu: float | None = Field(
        default=None, gt=0, le=1e9,
        description=(
            "Host/input-pipeline ceiling for generic networks (CNNs, detectors) [samples/s per "
            "GPU]: the most images per second the host's preprocessing (decode, resize, copy) "
            "feeds one GPU; a node's figure divided by its GPUs. Null = no ceiling"
        ),
    )

    traffic: list[TrafficBucketIn] | None = Field(
        default=None, min_length=1, max_length=MAX_TRAFFIC_BUCKETS,
        description=(
            "Request-size histogram (LLM serving): up to 64 buckets {prompt_tokens, "
            "output_tokens, share}, shares summing to 1; target_requests_per_s is the total "
            "rate and the SLOs hold for every bucket. The answer then carries a `fleet`: the "
            "cheapest mix of GPU types, counts and offers serving it. The ranked candidates "
            "are for the share-weighted mean request (prompt_tokens/output_tokens default to "
            "it). Exclusive with traffic_preset"),
    )
    traffic_preset: str | None = Field(
        default=None, min_length=1, max_length=64,
        description=(
            "A named traffic histogram of a published trace (GET /v1/traffic-presets), e.g. "
            "azure-conversation-2023; exclusive with traffic"),
    )

    slo_percentile: float = Field(
        default=100.0, ge=MIN_SLO_PERCENTILE, le=100,
        description=(
            "With traffic or traffic_preset: the share of the requests (weighted by bucket "
            "share) that must meet max_ttft_ms / max_tpot_ms / max_latency_ms [percent, "
            "50-100]. The fleet may serve the rest outside those limits (still served, at the "
            "GPUs' throughput-best batch that fits); its pools say which buckets and how "
            "much. 100 = every request (the default)"),
    )

    def to_engine(self) -> InferenceSpec:
        data = self.model_dump(exclude={"traffic", "traffic_preset"})
        traffic = self.buckets()
        if traffic is not None:
            data["traffic"] = traffic
            # the single-shape candidates run the mean request when no size was given
            if not self.prompt_tokens and not self.output_tokens:
                data["prompt_tokens"] = max(1, round(
                    sum(b.prompt_tokens * b.share for b in traffic)))
                data["output_tokens"] = max(1, round(
                    sum(b.output_tokens * b.share for b in traffic)))
        return InferenceSpec(**data)

    def buckets(self) -> tuple[TrafficBucket, ...] | None:
        """The traffic histogram given or named; None without one (or for an unknown preset,
        which :meth:`errors` names)."""
        if self.traffic is not None:
            return tuple(TrafficBucket(b.prompt_tokens, b.output_tokens, b.share)
                         for b in self.traffic)
        if self.traffic_preset is not None:
            preset = TRAFFIC_PRESETS.get(self.traffic_preset)
            return preset.buckets if preset is not None else None
        return None

    def errors(self, model: ModelSpec | None) -> list[tuple[str, str]]:
        """Checks that need the resolved model or more than one field: (field, message)."""
        layout = self._layout_errors(model) + self._traffic_errors()
        if self.effective_prompt_tokens is None:
            return layout
        return layout + self._padding_errors(model)

    def _layout_errors(self, model: ModelSpec | None) -> list[tuple[str, str]]:
        if self.tensor_parallel is None and self.pipeline_parallel is None:
            return []
        if model is not None and not isinstance(model, TransformerModel):
            return [("inference.tensor_parallel",
                     "a pinned TP/PP split applies to transformer models only")]
        out: list[tuple[str, str]] = []
        if isinstance(model, TransformerModel):
            tp, pp = self.tensor_parallel or 1, self.pipeline_parallel or 1
            if tp & (tp - 1):
                out.append(("inference.tensor_parallel",
                            f"tensor_parallel {tp} is not a power of 2"))
            elif model.attention_heads % tp:
                out.append(("inference.tensor_parallel",
                            f"tensor_parallel {tp} does not divide the model's "
                            f"{model.attention_heads} attention heads"))
            if pp > model.layers:
                out.append(("inference.pipeline_parallel",
                            f"pipeline_parallel {pp} exceeds the model's {model.layers} layers"))
        return out

    def _traffic_errors(self) -> list[tuple[str, str]]:
        if self.traffic is not None and self.traffic_preset is not None:
            return [("inference.traffic_preset", "give traffic or traffic_preset, not both")]
        if self.traffic_preset is not None and self.traffic_preset not in TRAFFIC_PRESETS:
            return [("inference.traffic_preset",
                     unknown_traffic_preset_message(self.traffic_preset))]
        return []

    def _padding_errors(self, model: ModelSpec | None) -> list[tuple[str, str]]:
        assert self.effective_prompt_tokens is not None
        field = "inference.effective_prompt_tokens"
        if model is not None and not isinstance(model, TransformerModel):
            return [(field, "effective_prompt_tokens applies to transformer models only")]
        if self.effective_prompt_tokens > self.prompt_tokens:
            return [(
                field,
                f"effective_prompt_tokens {self.effective_prompt_tokens} exceeds "
                f"prompt_tokens {self.prompt_tokens}",
            )]
        return []


class ComputeInput(_Strict):
    total_tflop: float = Field(gt=0, le=1e15, description="Work [TFLOP]")
    total_gb_moved: float = Field(default=0.0, ge=0, le=1e15, description="Memory traffic [GB]")
    memory_gb: float = Field(default=0.0, ge=0, le=1e9, description="Working set [GB]")
    fp64_units: Fp64Units = Field(
        default="vector",
        description=(
            "Which FP64 units the code's FLOPs run on (fp64 precision only): vector = plain "
            "FP64 (stencils, CFD, most solvers); matrix = FP64 tensor/matrix cores (DGEMM, HPL)"
        ),
    )

    communication: Communication = Field(
        default="stencil",
        description=(
            "What the GPUs exchange every step when the job is split: stencil = halos of a 3-D "
            "domain decomposition, shrinking as (working set / GPUs)^(2/3) (the default: "
            "structured-grid CFD, climate, seismic codes); allreduce = a dense iterative "
            "solver's vector all-reduced each step; none = independent tasks"
        ),
    )
    steps: float | None = Field(
        default=None, ge=1, le=1e12,
        description=(
            "Iterations / time steps, each ending in one exchange [count]; default: the "
            "sweeps over the working set, total_gb_moved / memory_gb (at least 1)"
        ),
    )
    serial_fraction: float | None = Field(
        default=None, ge=0, lt=1,
        description=(
            "Share of the one-GPU time that does not parallelize (Amdahl) [fraction]; "
            "default 5e-4 (well-scaled HPC codes: 1e-4..1e-3)"
        ),
    )

    def to_engine(self) -> ComputeSpec:
        return ComputeSpec(**self.model_dump())


_EXAMPLES: list[dict[str, Any]] = [
    {
        "kind": "inference",
        "model": {"preset": "llama-3.1-8b"},
        "precision": "bf16",
        "inference": {
            "prompt_tokens": 1024,
            "output_tokens": 256,
            "max_ttft_ms": 500,
            "max_tpot_ms": 50,
        },
    },
    {
        "kind": "training",
        "model": {"preset": "llama-2-70b"},
        "precision": "bf16",
        "training": {
            "batch_size": 1024,
            "seq_len": 4096,
            "tokens": 2e11,
            "optimizer": "adamw",
            "activation_checkpointing": True,
            "sharding": "auto",
        },
    },
    {
        "kind": "compute",
        "precision": "fp64",
        "compute": {"total_tflop": 500000, "total_gb_moved": 20000, "memory_gb": 60},
    },
    {
        "kind": "inference",
        "model": {"preset": "bert-large"},
        "precision": "fp16",
        "inference": {
            "prompt_tokens": 512,
            "effective_prompt_tokens": 180,
            "batch_size": 64,
            "max_latency_ms": 100,
        },
    },
    {
        "kind": "compute",
        "precision": "fp64",
        "compute": {"total_tflop": 2000000, "memory_gb": 70, "fp64_units": "matrix"},
    },
]


class WorkloadSpec(_Strict):
    """A workload as submitted: what to run, at which precision, and how much of it."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, json_schema_extra=cast(Any, {"examples": _EXAMPLES})
    )

    kind: WorkloadKind = Field(
        description=(
            "What is run: training, inference (serving), or compute (an HPC job given by its "
            "FLOPs and bytes)"
        ),
    )
    model: ModelInput | None = Field(
        default=None,
        description=(
            "The model: a preset, an explicit transformer, or a generic network; omit for "
            "compute jobs"
        ),
    )
    precision: ComputePrecision = Field(
        default="bf16",
        description="Arithmetic precision of the compute (tensor-core peak used)",
    )
    weight_precision: WeightPrecision | None = Field(
        default=None,
        description="Quantised weights (inference): int8 or int4; null = same as precision",
    )
    kv_cache_precision: KvCachePrecision | None = Field(
        default=None,
        description="KV-cache element type (inference); null = same as precision",
    )
    training: TrainingInput | None = Field(default=None, description="Amounts for kind=training")
    inference: InferenceInput | None = Field(
        default=None,
        description="Amounts and SLOs for kind=inference",
    )
    compute: ComputeInput | None = Field(default=None, description="Amounts for kind=compute")

    def to_engine(self, *, require_amount: bool = True) -> Workload:
        """Resolve presets and check consistency; raises :class:`WorkloadError`.
        ``require_amount=False``: a training workload may omit tokens / samples / epochs
        (an estimate then answers everything but the time and energy to finish).

        Only the section of the workload's ``kind`` reaches the engine: a ``training``,
        ``inference`` or ``compute`` section given beside another kind is not read (the
        engine takes a workload with an inference section for a serving one, wherever its
        kind says otherwise)."""
        model = self.model.to_engine() if self.model is not None else None
        kind = self.kind
        training = self.training if kind == "training" else None
        inference = self.inference if kind == "inference" else None
        compute = self.compute if kind == "compute" else None
        workload = Workload(
            kind=kind,
            precision=self.precision,
            model=model,
            weight_precision=self.weight_precision,
            kv_cache_precision=self.kv_cache_precision,
            training=training.to_engine() if training else None,
            inference=inference.to_engine() if inference else None,
            compute=compute.to_engine() if compute else None,
        )
        errors = validate_workload(workload, require_amount=require_amount)
        if inference is not None:
            own = inference.errors(model)
            if any(field == "inference.traffic_preset" for field, _ in own):
                # an unknown preset leaves the request without sizes: that is its one error
                errors = [e for e in errors if e[0] != "inference.prompt_tokens"]
            named = {field for field, _ in errors}
            errors += [e for e in own if e[0] not in named]
        if errors:
            raise WorkloadError(errors)
        return workload
