"""Inference estimate: placement (TP or PP), batch choice, prefill/decode roofline."""

from __future__ import annotations

from dataclasses import dataclass

from service.engine import constants as c
from service.engine import memory as mem
from service.engine import parallelism as par
from service.engine.performance import (
    PeakRate,
    PhaseTime,
    all_reduce_s,
    bandwidth_gb_s,
    roofline,
    sequential,
)
from service.engine.types import (
    GenericModel,
    GpuSpec,
    InferenceSpec,
    MemoryBreakdown,
    Precision,
    TransformerModel,
    Workload,
)


@dataclass(frozen=True)
class Placement:
    layout: par.Layout
    tp: int
    pp: int
    replicas: int


@dataclass(frozen=True)
class Sizing:
    """Memory facts for a placement: bytes per GPU [B]."""

    weights: float
    overhead: float
    kv_per_sequence: float
    """KV bytes per GPU per sequence at full context."""
    act_per_sample: float

    def breakdown(self, batch: int) -> MemoryBreakdown:
        return MemoryBreakdown(
            weights=self.weights / c.GB,
            activations=self.act_per_sample * batch / c.GB,
            kv_cache=self.kv_per_sequence * batch / c.GB,
            overhead=self.overhead / c.GB,
        )

    def max_batch(self, usable: float) -> int:
        free = usable - self.weights - self.overhead
        per_seq = self.kv_per_sequence + self.act_per_sample
        if free <= 0:
            return 0
        if per_seq <= 0:
            return int(c.MAX_AUTO_BATCH)
        return int(free // per_seq)


def kv_precision(workload: Workload, precision_used: Precision) -> Precision:
    if workload.kv_cache_precision is not None:
        return workload.kv_cache_precision
    return "fp16" if precision_used in ("fp8", "int8", "int4") else precision_used


def context_tokens(spec: InferenceSpec) -> int:
    return max(1, spec.prompt_tokens + spec.output_tokens)


def sizing(workload: Workload, precision_used: Precision, tp: int, pp: int) -> Sizing:
    model = workload.model
    spec = workload.inference
    assert model is not None and spec is not None
    wbpp = mem.weight_bytes_per_param(precision_used, workload.weight_precision)
    weights = model.params * wbpp / (tp * pp)
    elem = mem.activation_bytes_per_element(precision_used)
    kv = 0.0
    if isinstance(model, TransformerModel) and not model.encoder_only and spec.output_tokens > 0:
        # KV heads split across TP ranks (replicated when g < t); each PP stage holds 1/pp of
        # the layers for pp in-flight batches, so PP does not change KV per GPU.
        per_token = mem.kv_bytes_per_token(model, kv_precision(workload, precision_used))
        kv = per_token * mem.kv_tokens(model, context_tokens(spec)) / min(tp, model.kv_heads)
    act_total = mem.inference_activation_bytes(model, 1, spec.prompt_tokens, tp, elem)
    return Sizing(weights, c.FRAMEWORK_OVERHEAD_GB * c.GB, kv, act_total)


def placements(
    workload: Workload, gpu: GpuSpec, gpu_count: int, precision_used: Precision, batch: int
) -> list[tuple[Placement, Sizing, bool]]:
    """Every model split, smallest first: TP inside a fast domain, then PP on top of it."""
    model = workload.model
    assert model is not None
    usable = mem.usable_memory_bytes(gpu.memory_gb)
    options: list[tuple[int, int]] = [(1, 1)]
    if isinstance(model, TransformerModel):
        tps = [t for t in par.tp_candidates(gpu, gpu_count) if model.attention_heads % t == 0]
        options = [(t, 1) for t in tps]
        options += [
            (tps[-1], p)
            for p in par.powers_of_two_upto(gpu_count // tps[-1])
            if 1 < p <= model.layers
        ]
    out: list[tuple[Placement, Sizing, bool]] = []
    for tp, pp in options:
        size = sizing(workload, precision_used, tp, pp)
        layout = par.make_layout(gpu, gpu_count, tp, pp, "none")
        placement = Placement(layout, tp, pp, max(1, gpu_count // (tp * pp)))
        out.append((placement, size, size.breakdown(batch).total * c.GB <= usable))
    return out


def place(
    workload: Workload, gpu: GpuSpec, gpu_count: int, precision_used: Precision, batch: int
) -> tuple[Placement, Sizing, bool]:
    """Smallest model split that fits ``batch`` sequences (the largest split if none fits)."""
    options = placements(workload, gpu, gpu_count, precision_used, batch)
    for option in options:
        if option[2]:
            return option
    return options[-1]


def _moe_weight_bytes_read(model: TransformerModel, wbpp: float, batch: int) -> float:
    """Weight bytes one decode step reads [B]: experts not routed to by any of the ``batch``
    tokens stay unread; expected touched fraction per layer = 1 - (1 - k/E)^b."""
    experts = mem.moe_expert_params(model)
    dense = model.params - experts
    touched = 1.0 - (1.0 - model.experts_per_token / model.experts) ** batch
    return (dense + experts * touched) * wbpp


@dataclass(frozen=True)
class Timing:
    """``prefill``: the phase that yields the first token (TTFT); ``decode``: one steady-state
    iteration of the running batch (TPOT), None for encoders/CNNs; ``batch``: concurrent
    sequences (continuous batching) or samples per forward pass."""

    prefill: PhaseTime
    decode: PhaseTime | None
    batch: int

    @property
    def ttft_s(self) -> float:
        return self.prefill.total_s


def _tp_comm_s(model: TransformerModel, tokens: float, placement: Placement) -> float:
    """Two all-reduces of the 16-bit activations per layer (Megatron TP) for ``tokens``."""
    if placement.tp <= 1 or tokens <= 0:
        return 0.0
    nbytes = tokens * model.hidden_size * 2.0
    return 2.0 * model.layers * all_reduce_s(nbytes, placement.tp, placement.layout.tp_link_gb_s)


def timing(
    workload: Workload,
    gpu: GpuSpec,
    placement: Placement,
    rate: PeakRate,
    batch: int,
) -> Timing:
    """Roofline times for ``batch``.

    CNNs and encoders: one forward pass over ``batch`` samples. Decoder LLMs: continuous
    (in-flight) batching as in vLLM / TensorRT-LLM (Yu et al. 2022, Orca; Agrawal et al. 2024,
    Sarathi-Serve): ``batch`` sequences decode together and new requests' prompts are prefilled
    inside the same iterations, so one iteration reads the weights and the batch's KV once and
    computes ``batch`` decode tokens plus, on average, ``batch x prompt / output`` prompt tokens.
    TTFT is one such iteration carrying a whole prompt (no queueing).
    """
    model = workload.model
    spec = workload.inference
    assert model is not None and spec is not None
    tp = placement.tp
    bw = bandwidth_gb_s(gpu)
    wbpp = mem.weight_bytes_per_param(rate.precision_used, workload.weight_precision)
    eff_p = c.EFF_PREFILL if rate.tensor else c.EFF_NON_TENSOR
    if isinstance(model, GenericModel):
        flops = model.gflops_per_sample * 1e9 * batch
        act = mem.generic_activation_bytes(model, batch, 2.0, training=False) * 2.0
        eff = c.EFF_CNN_INFERENCE if rate.tensor else c.EFF_NON_TENSOR
        prefill = roofline(flops, model.params * wbpp + act, rate.tflops, eff, bw)
        return Timing(prefill, None, batch)
    if rate.precision_used in ("fp8", "int8"):
        eff_p *= c.EFF_8BIT_TRANSFORMER
    n_active = mem.active_params(model)
    h, layers = model.hidden_size, model.layers
    s = max(1, spec.prompt_tokens)
    # 2 matmuls (QK^T, AV) x 2 FLOP per (query, key) pair per hidden unit
    if model.encoder_only:
        pairs = float(s) * s
    else:
        pairs = mem.causal_attention_pairs(model, float(s))
    prompt_flops = 2.0 * n_active * s + 4.0 * layers * h * pairs
    weight_read = model.params * wbpp / tp
    # PP stages run one after another for one batch: full FLOPs and bytes at one GPU's rate
    if spec.output_tokens <= 0 or model.encoder_only:
        comm = _tp_comm_s(model, float(s * batch), placement)
        prefill = roofline(prompt_flops * batch / tp, weight_read, rate.tflops, eff_p, bw, comm)
        return Timing(prefill, None, batch)
    out = spec.output_tokens
    ctx = mem.kv_tokens(model, spec.prompt_tokens + out / 2.0)
    kv_tok = mem.kv_bytes_per_token(model, kv_precision(workload, rate.precision_used))
    kv_read = batch * ctx * kv_tok / min(tp, model.kv_heads)
    if model.experts > 1:
        w_read = _moe_weight_bytes_read(model, wbpp, batch) / tp
    else:
        w_read = weight_read
    eff_d = c.EFF_DECODE_COMPUTE if rate.tensor else c.EFF_NON_TENSOR
    if rate.precision_used in ("fp8", "int8"):
        eff_d *= c.EFF_8BIT_TRANSFORMER
    peak = rate.tflops * 1e12 * tp
    bytes_s = bw * c.GB
    # two kernel classes per layer run in sequence, each with its own roofline: the weight
    # GEMMs (all tokens of the iteration) and attention (each sequence's own KV cache)
    lin_decode = batch * 2.0 * n_active / (peak * eff_d)
    att_decode = batch * 4.0 * layers * h * ctx / (peak * eff_d)
    lin_prompt = 2.0 * n_active * s / (peak * eff_p)
    att_prompt = 4.0 * layers * h * pairs / (peak * eff_p)
    w_s, kv_s = w_read / bytes_s, kv_read / bytes_s
    # steady state: each request brings its prompt once per `out` iterations
    share = batch / out
    decode = sequential(
        [(lin_decode + share * lin_prompt, w_s), (att_decode + share * att_prompt, kv_s)],
        _tp_comm_s(model, batch * (1.0 + spec.prompt_tokens / out), placement),
    )
    # the iteration that carries one whole prompt next to the other (batch - 1) sequences
    rest = (batch - 1) / batch
    prefill = sequential(
        [(lin_prompt + rest * lin_decode, w_s), (att_prompt + rest * att_decode, kv_s)],
        _tp_comm_s(model, float(s + batch - 1), placement),
    )
    return Timing(prefill, decode, batch)


def latency_checks(spec: InferenceSpec, t: Timing) -> tuple[float, float | None, float]:
    """(ttft_ms, tpot_ms, latency_ms) for a timing."""
    ttft = t.ttft_s * 1e3
    if t.decode is None:
        return ttft, None, ttft
    tpot = t.decode.total_s * 1e3
    return ttft, tpot, ttft + spec.output_tokens * tpot


def meets(spec: InferenceSpec, t: Timing) -> bool:
    ttft, tpot, latency = latency_checks(spec, t)
    if spec.max_ttft_ms is not None and ttft > spec.max_ttft_ms:
        return False
    if spec.max_tpot_ms is not None and tpot is not None and tpot > spec.max_tpot_ms:
        return False
    return spec.max_latency_ms is None or latency <= spec.max_latency_ms


def throughput(spec: InferenceSpec, t: Timing, placement: Placement) -> tuple[float, float]:
    """(requests/s for all replicas, seconds per request slot).

    Continuous batching: ``batch`` tokens per iteration, ``output_tokens`` iterations per
    request. Encoders/CNNs: ``batch`` samples per forward pass. PP keeps ``pp`` batches in
    flight, each stage busy with a different one."""
    if t.decode is not None and spec.output_tokens > 0:
        cycle = spec.output_tokens * t.decode.total_s
    else:
        cycle = t.ttft_s
    per_replica = t.batch / cycle * placement.pp
    return per_replica * placement.replicas, cycle


def best_batch(
    workload: Workload,
    gpu: GpuSpec,
    placement: Placement,
    rate: PeakRate,
    max_fit: int,
) -> Timing | None:
    """Largest batch (most requests/s) that fits memory and meets the latency limits.

    Throughput, TTFT and TPOT all grow with the batch (each iteration's time is affine in it),
    so the memory maximum is taken when it meets the limits, else a bisection finds the
    largest batch that does: O(log batch) roofline evaluations. None when batch 1 misses."""
    spec = workload.inference
    assert spec is not None
    hi = max(1, min(max_fit, int(c.MAX_AUTO_BATCH)))
    top = timing(workload, gpu, placement, rate, hi)
    if meets(spec, top):
        return top
    low = timing(workload, gpu, placement, rate, 1)
    if hi == 1 or not meets(spec, low):
        return None
    lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        t = timing(workload, gpu, placement, rate, mid)
        if meets(spec, t):
            lo, low = mid, t
        else:
            hi = mid
    return low
