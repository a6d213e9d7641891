"""Bytes needed per GPU: weights, gradients, optimizer states, activations, KV cache.

All functions return bytes [B]; callers convert to GB (1e9 B).
"""

from __future__ import annotations

from dataclasses import dataclass

from service.engine import constants as c
from service.engine.physics.transformer_ops import mlp_matrices
from service.engine.types import (
    GenericModel,
    GpuSpec,
    ModelSpec,
    Optimizer,
    Precision,
    Sharding,
    TransformerModel,
    Workload,
)

SIXTEEN_BIT: frozenset[Precision] = frozenset({"bf16", "fp16", "fp8", "int8", "int4"})


QUANTIZED_WEIGHTS: frozenset[Precision] = frozenset({"int8", "int4"})


def stored_weight_precision(workload: Workload) -> Precision | None:
    """The format inference weights are stored in when it is not the compute precision:
    ``weight_precision``, else the compute precision itself when that is int8 or int4 (an
    int8/int4 compute request runs on weights quantized to that format, scales and all;
    int4 compute runs at the int8 rate, :func:`performance.peak_rate`, so the rate's
    precision does not say which); None = weights in the precision the GPU computes in."""
    if workload.weight_precision is not None:
        return workload.weight_precision
    return workload.precision if workload.precision in QUANTIZED_WEIGHTS else None


def weight_bytes_per_param(precision: Precision, weight_precision: Precision | None) -> float:
    """Bytes per stored weight [B/param] for compute at ``precision`` and weights stored as
    ``weight_precision`` (:func:`stored_weight_precision`; None = ``precision``). int4
    weights carry group scales (:data:`constants.QUANT_SCALE_OVERHEAD`), int8 ones a scale
    per output channel (none counted), whether named by ``weight_precision`` or by the
    compute precision."""
    if weight_precision is None and precision in QUANTIZED_WEIGHTS:
        weight_precision = precision
    if weight_precision == "int4":
        return c.BYTES_PER_ELEMENT["int4"] * (1.0 + c.QUANT_SCALE_OVERHEAD)
    if weight_precision is not None:
        return c.BYTES_PER_ELEMENT[weight_precision]
    return c.BYTES_PER_ELEMENT[precision]


def activation_bytes_per_element(precision: Precision) -> float:
    """Activation element size [B]: 16-bit for mixed precision (fp8 training keeps bf16)."""
    return 2.0 if precision in SIXTEEN_BIT else c.BYTES_PER_ELEMENT[precision]


@dataclass(frozen=True)
class StateBytes:
    """Unsharded model-state bytes per parameter [B/param]."""

    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def training_state_bytes(precision: Precision, optimizer: Optimizer) -> StateBytes:
    """Per-parameter training state. Mixed precision (16-bit compute): 2 weights + 2 grads +
    4 fp32 master + optimizer moments (Adam 8) = 16 B/param (ZeRO paper §3). Full fp32: 4+4+8."""
    moments = {
        "adamw": c.ADAM_STATE_BYTES,
        "sgd": c.SGD_STATE_BYTES,
        "adafactor": c.ADAFACTOR_STATE_BYTES,
    }[optimizer]
    if precision in SIXTEEN_BIT:
        return StateBytes(2.0, 2.0, c.MASTER_WEIGHT_BYTES + moments)
    scale = c.BYTES_PER_ELEMENT[precision] / 4.0  # fp32/tf32 -> 1, fp64 -> 2
    elem = c.BYTES_PER_ELEMENT[precision]
    return StateBytes(elem, elem, moments * scale)


def shard_divisors(sharding: Sharding, dp: int) -> tuple[int, int, int]:
    """Divisors of (weights, gradients, optimizer) under ZeRO stage ``sharding`` over ``dp``
    data-parallel ranks (Rajbhandari et al. 2020: ZeRO-1 states, -2 + grads, -3 + weights)."""
    if dp <= 1 or sharding in ("none", "auto"):
        return 1, 1, 1
    if sharding == "zero1":
        return 1, 1, dp
    if sharding == "zero2":
        return 1, dp, dp
    return dp, dp, dp


def moe_expert_params(model: TransformerModel) -> float:
    """Total parameters held in routed experts [params] (0 for dense models)."""
    if model.experts <= 1:
        return 0.0
    if model.active_params is not None and model.experts > model.experts_per_token:
        per_expert = (model.params - model.active_params) / (
            model.experts - model.experts_per_token
        )
        return max(0.0, per_expert * model.experts)
    # SwiGLU expert: gate, up, down projections (Mixtral/Llama style)
    return 3.0 * model.hidden_size * model.intermediate_size * model.experts * model.layers


def active_params(model: ModelSpec) -> float:
    """Parameters used per token [params]: MoE counts only the routed experts."""
    if isinstance(model, GenericModel):
        return model.params
    if model.active_params is not None:
        return model.active_params
    if model.experts <= 1:
        return model.params
    expert_total = moe_expert_params(model)
    return model.params - expert_total * (1 - model.experts_per_token / model.experts)


def mlp_activation_bytes_per_token(hidden: int, ffn: int, *, gated: bool) -> float:
    """Bytes one token's MLP keeps for backward at 16-bit [B per token per layer], counted
    op by op (h = hidden, f = ffn size; 2 B per 16-bit element, 1 B per dropout-mask entry):

    * the input of the up (and gate) GEMM: 2h, shared by both GEMMs;
    * GELU MLP: the up-projection output (GELU's input) 2f and the GELU output (the down
      GEMM's input) 2f;
    * gated MLP (SwiGLU/GeGLU): the gate and up outputs 2f + 2f, the activation's output
      2f (the product's backward reads it) and the product (the down GEMM's input) 2f;
    * the dropout mask on the MLP output: h.

    GELU: 3h + 4f, which at f = 4h is the 19 s*b*h MLP share of Korthikanti et al. 2022's
    34 (2sbh input + 8sbh up output + 8sbh GELU output + sbh mask, §4.1). Gated: 3h + 8f.
    """
    working = 8.0 * ffn if gated else 4.0 * ffn
    return 2.0 * hidden + working + hidden


def layer_activation_bytes_per_token(model: TransformerModel) -> float:
    """Bytes one token keeps per layer at 16-bit, attention scores aside [B per token].

    Korthikanti et al. 2022's 34*h (:data:`constants.ACT_COEF_LINEAR`) assumes a GELU MLP
    with f = 4h; its attention, norm and residual share, 34h less that MLP's
    :func:`mlp_activation_bytes_per_token`, is kept, and the model's own MLP (its ffn size,
    gated when :func:`transformer_ops.mlp_matrices` finds gate, up and down matrices) is
    added, times the top-k experts each token visits in an MoE layer."""
    h = model.hidden_size
    gelu_4h = mlp_activation_bytes_per_token(h, 4 * h, gated=False)
    own = mlp_activation_bytes_per_token(
        h, model.intermediate_size, gated=mlp_matrices(model) == 3
    )
    copies = model.experts_per_token if model.experts > 1 else 1
    return c.ACT_COEF_LINEAR * h - gelu_4h + copies * own


def transformer_activation_bytes(
    model: TransformerModel,
    seq_len: int,
    micro_batch: int,
    tp: int,
    *,
    flash_attention: bool,
    checkpointing: bool,
    elem_bytes: float,
    lm_head_fraction: float,
) -> float:
    """Activations kept for backward per GPU [B] (Korthikanti et al. 2022, Table 2).

    Per layer at 16-bit with tensor + sequence parallelism of degree t: s*b*(B/t +
    5*a*s/t), with B = 34h for a GELU MLP of f = 4h (eq. 1 at t = 1) and in general
    :func:`layer_activation_bytes_per_token` (the model's own MLP, top-k copies of it in an
    MoE layer); the attention-score term disappears with flash attention. Sequence
    parallelism (Megatron-LM ``--sequence-parallel``) shards the norm/dropout activations
    along the sequence, so every term divides by t. Full checkpointing keeps each layer's input,
    2*s*b*h/t under sequence parallelism (§4.1), plus one layer's working set. fp32 logits for
    the loss are added (split across t) for the ``lm_head_fraction`` of tokens that reach the
    vocabulary projection.
    """
    s, b, h, a = seq_len, micro_batch, model.hidden_size, model.attention_heads
    linear = layer_activation_bytes_per_token(model) / tp
    attention = 0.0 if flash_attention else c.ACT_COEF_ATTENTION * a * s / tp
    per_layer = s * b * (linear + attention) * elem_bytes / 2.0
    if checkpointing:
        kept = model.layers * c.ACT_COEF_CHECKPOINT * s * b * h * elem_bytes / 2.0 / tp
        body = kept + per_layer
    else:
        body = model.layers * per_layer
    logits = s * b * lm_head_fraction * model.vocab_size * c.LOGIT_BYTES / tp
    return body + logits


def generic_activation_bytes(
    model: GenericModel, micro_batch: int, elem_bytes: float, *, training: bool
) -> float:
    """Activation bytes for a CNN/detector [B] from its per-sample figure at 16-bit."""
    per_sample = model.activation_mb_per_sample * 1e6 * elem_bytes / 2.0
    if not training:
        per_sample *= c.INFERENCE_LIVE_ACT_FRACTION
    return per_sample * micro_batch


def kv_bytes_per_token(model: TransformerModel, kv_precision: Precision) -> float:
    """KV cache per token [B]: 2 (K and V) x layers x kv_heads x head_dim x bytes (GQA-aware).

    Llama-2-7B fp16: 2*32*32*128*2 = 524,288 B = 0.5 MiB; Llama-2-70B (g=8): 327,680 B.
    """
    head_dim = model.hidden_size / model.attention_heads
    return 2.0 * model.layers * model.kv_heads * head_dim * c.BYTES_PER_ELEMENT[kv_precision]


def kv_tokens(model: TransformerModel, context: float) -> float:
    """Tokens a sequence keeps in its KV cache [tokens]: the context, capped by the sliding
    window when the model has one (Mistral 7B: 4096; Jiang et al. 2023, §2)."""
    if model.sliding_window is not None and model.sliding_window > 0:
        return min(context, float(model.sliding_window))
    return context


def causal_attention_pairs(model: TransformerModel, seq: float) -> float:
    """(query, key) pairs a causal prefill of ``seq`` tokens scores per layer and head-dim:
    s^2/2 for full attention; w^2/2 + (s - w) x w under a sliding window of w tokens."""
    w = model.sliding_window
    if w is None or w <= 0 or seq <= w:
        return seq * seq / 2.0
    return w * w / 2.0 + (seq - w) * w


def attention_pairs(model: TransformerModel, seq: int, flash: bool = True) -> float:
    """(query, key) pairs one training sequence scores per layer and head-dim: all s^2 in
    an encoder (bidirectional) or without a fused kernel (``flash`` False: QK^T and PV are
    whole matmuls, the causal mask applied after), the causal ones
    (:func:`causal_attention_pairs`, sliding windows included) in a decoder's fused kernel,
    which skips the masked tiles."""
    if model.encoder_only or not flash:
        return float(seq) * float(seq)
    return causal_attention_pairs(model, float(seq))


def inference_activation_bytes(
    model: ModelSpec, batch: int, prompt_tokens: int, tp: int, elem_bytes: float
) -> float:
    """Live activations of a forward pass over ``batch`` samples [B] (encoders, CNNs): one
    layer's working set for ``batch`` x prompt tokens, capped at one scheduler budget."""
    if isinstance(model, GenericModel):
        return generic_activation_bytes(model, batch, elem_bytes, training=False)
    tokens = min(batch * max(prompt_tokens, 1), c.SCHEDULED_TOKENS_PER_ITERATION)
    return tokens * model.hidden_size * c.ACT_COEF_LINEAR * elem_bytes / 2.0 / tp


def serving_activation_bytes(model: TransformerModel, tp: int, elem_bytes: float) -> float:
    """Activation working set of a continuous-batching decoder server [B], independent of
    the batch: the scheduler puts at most :data:`constants.SCHEDULED_TOKENS_PER_ITERATION`
    tokens (decode tokens + prefill chunks) into one iteration, and the engine reserves one
    layer's working set for that many tokens (vLLM sizes it by a profiling forward pass at
    ``max_num_batched_tokens``; TensorRT-LLM by ``max_num_tokens``)."""
    tokens = c.SCHEDULED_TOKENS_PER_ITERATION
    return tokens * model.hidden_size * c.ACT_COEF_LINEAR * elem_bytes / 2.0 / tp


def ecc_reserved(gpu: GpuSpec) -> bool:
    """Whether ECC takes :data:`constants.ECC_RESERVED_FRACTION` of the GPU's memory: GDDR
    boards of NVIDIA's datacenter PCIe line, which ship with ECC on (workstation and
    consumer boards ship with it off; stacked memory keeps ECC in its sideband)."""
    return (gpu.form_factor == "pcie" and gpu.vendor.lower() == "nvidia"
            and gpu.memory_type.upper().startswith("GDDR"))


def capacity_bytes(gpu: GpuSpec) -> float:
    """Memory the GPU offers [B]: its size in GiB (the catalog's ``memory_gb`` is the
    marketing size, binary: an 80 GB A100 holds 81,920 MiB), less the ECC share where
    :func:`ecc_reserved`. A module whose memory the CPU and its OS share (form factor
    ``edge``: Jetson) gives the GPU what they leave, which no datasheet states: it keeps the
    decimal reading of its size (``memory_gb`` x 1e9 B, 7% under the size), as the engine
    read every GPU before."""
    if gpu.form_factor == "edge":
        return gpu.memory_gb * c.GB
    size = gpu.memory_gb * c.GIB
    return size * (1.0 - c.ECC_RESERVED_FRACTION) if ecc_reserved(gpu) else size


def memory_size(gpu: GpuSpec) -> str:
    """ "85.9 GB (80 GiB)": a GPU's memory in the GB its needs are counted in, and its size
    (less ECC's share on boards that keep it in memory)."""
    gb = capacity_bytes(gpu) / c.GB
    if gpu.form_factor == "edge":
        return f"{gb:.1f} GB (shared with the CPU)"
    if ecc_reserved(gpu):
        return f"{gb:.1f} GB ({gpu.memory_gb:g} GiB, less ECC's 1/16)"
    return f"{gb:.1f} GB ({gpu.memory_gb:g} GiB)"


def usable_memory_bytes(gpu: GpuSpec) -> float:
    """Memory a job may allocate on one GPU [B]: :func:`capacity_bytes` after the
    fragmentation reserve."""
    return capacity_bytes(gpu) * (1.0 - c.MEMORY_RESERVE_FRACTION)


def capacity_gb(gpu: GpuSpec) -> float:
    """:func:`capacity_bytes` in GB (decimal, as memory needs are counted)."""
    return capacity_bytes(gpu) / c.GB


def usable_gb(gpu: GpuSpec) -> float:
    """:func:`usable_memory_bytes` in GB (decimal, as memory needs are counted)."""
    return usable_memory_bytes(gpu) / c.GB


def usable_text(gpu: GpuSpec) -> str:
    """ "76.5 GB usable of 85.9 GB (80 GiB)": what a memory failure compares its need with."""
    return f"{usable_gb(gpu):.1f} GB usable of {memory_size(gpu)}"
