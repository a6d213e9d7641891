"""Consistency checks on a workload's numbers, each naming the offending field."""

from __future__ import annotations

from service.engine.types import (
    MAX_TRAFFIC_BUCKETS,
    MIN_SLO_PERCENTILE,
    SHARE_SUM_TOLERANCE,
    GenericModel,
    InferenceSpec,
    TransformerModel,
    Workload,
)


def _model_errors(model: TransformerModel) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    if model.attention_heads > 0 and model.hidden_size % model.attention_heads:
        errors.append(
            (
                "model.hidden_size",
                f"hidden_size {model.hidden_size} is not divisible by "
                f"attention_heads {model.attention_heads}",
            )
        )
    if model.kv_heads > model.attention_heads:
        errors.append(("model.kv_heads", "kv_heads cannot exceed attention_heads"))
    elif model.kv_heads > 0 and model.attention_heads % model.kv_heads:
        errors.append(
            (
                "model.kv_heads",
                f"attention_heads {model.attention_heads} is not divisible by "
                f"kv_heads {model.kv_heads}",
            )
        )
    if model.experts_per_token > model.experts:
        errors.append(
            (
                "model.experts_per_token",
                f"experts_per_token {model.experts_per_token} exceeds experts {model.experts}",
            )
        )
    if model.active_params is not None and model.active_params > model.params:
        errors.append(("model.active_params", "active_params exceeds params"))
    implied = 12.0 * model.layers * model.hidden_size**2
    if model.experts == 1 and model.params < 0.2 * implied:
        errors.append(
            (
                "model.params",
                f"params {model.params:.3g} is far below 12*layers*hidden^2 = {implied:.3g}",
            )
        )
    return errors


def validate_workload(workload: Workload, *, require_amount: bool = True) -> list[tuple[str, str]]:
    """Return (field path, message) for every inconsistent number; empty when valid.

    ``require_amount=False``: training without tokens / samples / epochs is valid (memory,
    layout and throughput do not depend on the amount; only the time to finish does)."""
    errors: list[tuple[str, str]] = []
    model = workload.model
    if isinstance(model, TransformerModel):
        errors.extend(_model_errors(model))
    if workload.kind != "compute" and model is None:
        errors.append(("model", f"a {workload.kind} workload needs a model"))
    if workload.weight_precision is not None and workload.kind == "training":
        if workload.weight_precision in ("int8", "int4"):
            errors.append(
                ("weight_precision", "quantized weights apply to inference only")
            )
    # a section of another kind would be read as this kind's: an inference section makes
    # the ranking treat the workload as serving, whatever its kind
    for name, section in (("training", workload.training), ("inference", workload.inference),
                          ("compute", workload.compute)):
        if section is not None and name != workload.kind:  # each kind reads its own
            errors.append((name, f"a {workload.kind} workload takes no {name} section"))
    if workload.kind == "training":
        errors.extend(_training_errors(workload, require_amount=require_amount))
    elif workload.kind == "inference":
        errors.extend(_inference_errors(workload))
    elif workload.compute is None:
        errors.append(("compute", "a compute workload needs a compute spec"))
    return errors


def _training_errors(workload: Workload, *, require_amount: bool) -> list[tuple[str, str]]:
    spec = workload.training
    if spec is None:
        return [("training", "a training workload needs a training spec")]
    errors: list[tuple[str, str]] = []
    if spec.batch_size < 1:
        errors.append(("training.batch_size", "batch_size must be >= 1"))
    if isinstance(workload.model, TransformerModel) and not spec.seq_len:
        errors.append(("training.seq_len", "seq_len is required to train a transformer"))
    has_work = (
        spec.tokens is not None
        or spec.samples is not None
        or (spec.epochs is not None and spec.dataset_samples is not None)
    )
    if spec.epochs is not None and spec.dataset_samples is None:
        errors.append(("training.dataset_samples", "epochs need dataset_samples"))
    elif not has_work and require_amount:
        errors.append(
            ("training.tokens", "give tokens, samples, or epochs with dataset_samples")
        )
    ceiling = spec.input_samples_per_s_per_gpu
    if ceiling is not None and ceiling <= 0:
        errors.append(("training.input_samples_per_s_per_gpu", "must be > 0"))
    if not 0.0 <= spec.lm_head_fraction <= 1.0:  # NaN fails too
        errors.append(("training.lm_head_fraction", "must be between 0 and 1"))
    if spec.tokens is not None and isinstance(workload.model, GenericModel):
        errors.append(("training.tokens", "tokens apply to transformers; use samples"))
    return errors


def _inference_errors(workload: Workload) -> list[tuple[str, str]]:
    spec = workload.inference
    if spec is None:
        return [("inference", "an inference workload needs an inference spec")]
    errors: list[tuple[str, str]] = []
    if isinstance(workload.model, TransformerModel):
        if spec.prompt_tokens + spec.output_tokens <= 0:
            errors.append(
                (
                    "inference.prompt_tokens",
                    "prompt_tokens + output_tokens must be > 0 for a transformer",
                )
            )
        if workload.model.encoder_only and spec.output_tokens > 0:
            errors.append(
                ("inference.output_tokens", "an encoder-only model generates no tokens")
            )
    if spec.batch_size is not None and spec.batch_size < 1:
        errors.append(("inference.batch_size", "batch_size must be >= 1"))
    ceiling = spec.input_samples_per_s_per_gpu
    if ceiling is not None and isinstance(workload.model, TransformerModel):
        errors.append((
            "inference.input_samples_per_s_per_gpu",
            "input_samples_per_s_per_gpu applies to generic networks (CNNs) only",
        ))
    if ceiling is not None and ceiling <= 0:
        errors.append(("inference.input_samples_per_s_per_gpu", "must be > 0"))
    if spec.runtime == "llama.cpp" and not (isinstance(workload.model, TransformerModel)
                                            and not workload.model.encoder_only):
        errors.append(("inference.runtime",
                       "llama.cpp serves generative (decoder) transformers only"))
    if spec.traffic is not None:
        errors.extend(_traffic_errors(workload, spec))
    if not MIN_SLO_PERCENTILE <= spec.slo_percentile <= 100.0:
        errors.append(("inference.slo_percentile",
                       f"must be {MIN_SLO_PERCENTILE:g} to 100 [percent], not "
                       f"{spec.slo_percentile:g}"))
    elif spec.slo_percentile < 100.0 and spec.traffic is None:
        errors.append(("inference.slo_percentile", "a percentile SLO applies with a traffic "
                       "histogram (inference.traffic or traffic_preset)"))
    return errors


def _traffic_errors(workload: Workload, spec: InferenceSpec) -> list[tuple[str, str]]:
    """A traffic histogram: 1-64 buckets of LLM requests whose shares sum to 1."""
    traffic = spec.traffic or ()
    field = "inference.traffic"
    if not isinstance(workload.model, TransformerModel) or workload.model.encoder_only:
        return [(field, "a traffic histogram applies to generative (decoder) transformer "
                 "models only")]
    if not 1 <= len(traffic) <= MAX_TRAFFIC_BUCKETS:
        return [(field, f"give 1 to {MAX_TRAFFIC_BUCKETS} buckets, not {len(traffic)}")]
    errors: list[tuple[str, str]] = []
    for i, b in enumerate(traffic):
        if b.prompt_tokens < 1:
            errors.append((f"{field}.{i}.prompt_tokens", "must be >= 1"))
        if b.output_tokens < 1:
            errors.append((f"{field}.{i}.output_tokens", "must be >= 1 (a served request "
                           "generates at least one token)"))
        if not 0.0 < b.share <= 1.0:
            errors.append((f"{field}.{i}.share", "must be > 0 and <= 1"))
    total = sum(b.share for b in traffic)
    if abs(total - 1.0) > SHARE_SUM_TOLERANCE:
        errors.append((field, f"the shares sum to {total:.9g}, not 1 (within "
                       f"{SHARE_SUM_TOLERANCE:g})"))
    if not spec.target_requests_per_s:
        errors.append(("inference.target_requests_per_s",
                       "a traffic histogram needs the total rate (target_requests_per_s)"))
    if spec.batch_size is not None:
        errors.append(("inference.batch_size", "a fixed batch_size does not apply with a "
                       "traffic histogram (each bucket runs at its own batch)"))
    if spec.effective_prompt_tokens is not None:
        errors.append(("inference.effective_prompt_tokens", "does not apply with a traffic "
                       "histogram (each bucket gives its own prompt_tokens)"))
    return errors
