"""Inference: placement (TP or PP), batch choice under the latency limits, and the one serving
cost model (:class:`ServingModel`) the estimate, the ranking and its lower bounds share."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from service.engine import constants as c
from service.engine.cache import Memo, memo_of
from service.engine.physics import batched, cnn, compiled, kernels
from service.engine.physics import compiled_serving as cs
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.physics import transformer_ops as tops
from service.engine.physics.performance import PeakRate, PhaseTime
from service.engine.types import (
    GenericModel,
    GpuSpec,
    InferenceSpec,
    MemoryBreakdown,
    Precision,
    ServingRuntime,
    TransformerModel,
    Workload,
)

NEAR_LIMIT = 0.02
"""Relative distance of a latency figure to its limit within which :func:`boundary` also
times the neighbouring batch (a guess that close is usually right next to the boundary)."""


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
    """Activations that grow with the batch (encoders, CNNs: one forward pass of it)."""
    act_fixed: float = 0.0
    """Activations independent of the batch (decoder serving: one scheduler budget)."""

    def breakdown(self, batch: int) -> MemoryBreakdown:
        return MemoryBreakdown(
            weights=self.weights / c.GB,
            activations=(self.act_fixed + self.act_per_sample * batch) / c.GB,
            kv_cache=self.kv_per_sequence * batch / c.GB,
            overhead=self.overhead / c.GB,
        )

    def max_batch(self, usable: float) -> int:
        free = usable - self.weights - self.overhead - self.act_fixed
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


def max_num_seqs(workload: Workload, gpu: GpuSpec) -> int:
    """Sequences one decoder replica may run at once: the request's ``max_num_seqs``, else
    the serving runtime's default for the GPU's memory (vLLM V1: 1,024 from 70 GiB, 256
    below); never above :data:`MAX_AUTO_BATCH`. Encoders and CNNs: :data:`MAX_AUTO_BATCH`
    (their batch is a dynamic batcher's, not a runtime's sequence cap)."""
    spec, model = workload.inference, workload.model
    top = int(c.MAX_AUTO_BATCH)
    decoder = (isinstance(model, TransformerModel) and not model.encoder_only
               and spec is not None and spec.output_tokens > 0)
    if not decoder or spec is None:
        return top
    if spec.max_num_seqs is not None:
        return max(1, min(top, spec.max_num_seqs))
    large = mem.capacity_bytes(gpu) >= c.RUNTIME_LARGE_GPU_GIB * c.GIB
    return min(top, int(c.RUNTIME_MAX_NUM_SEQS_LARGE if large else c.RUNTIME_MAX_NUM_SEQS_SMALL))


def context_tokens(spec: InferenceSpec) -> int:
    return max(1, spec.prompt_tokens + spec.output_tokens)


def sizing(workload: Workload, precision_used: Precision, tp: int, pp: int) -> Sizing:
    model = workload.model
    spec = workload.inference
    assert model is not None and spec is not None
    wbpp = mem.weight_bytes_per_param(precision_used, mem.stored_weight_precision(workload))
    weights = model.params * wbpp / (tp * pp)
    elem = mem.activation_bytes_per_element(precision_used)
    overhead = c.FRAMEWORK_OVERHEAD_GB * c.GB
    if isinstance(model, TransformerModel) and not model.encoder_only and spec.output_tokens > 0:
        # KV heads split across TP ranks (replicated when g < t); each PP stage holds 1/pp of
        # the layers for pp in-flight batches, so PP does not change KV per GPU.
        per_token = mem.kv_bytes_per_token(model, kv_precision(workload, precision_used))
        kv = per_token * mem.kv_tokens(model, context_tokens(spec)) / min(tp, model.kv_heads)
        # continuous batching: the activation working set is one scheduler budget of tokens,
        # whatever the number of sequences in flight
        act_fixed = mem.serving_activation_bytes(model, tp, elem)
        return Sizing(weights, overhead, kv, 0.0, act_fixed)
    act_per = mem.inference_activation_bytes(model, 1, spec.prompt_tokens, tp, elem)
    return Sizing(weights, overhead, 0.0, act_per)


def least_gpus_for_weights(workload: Workload, gpu: GpuSpec, precision_used: Precision
                           ) -> float | None:
    """A lower bound on the GPUs any split that fits needs: a split (tp, pp) holds the
    weights / (tp pp) and the overhead on each GPU (:func:`sizing`; the KV cache and
    activations only add), so it fits only where tp pp >= weights / (usable - overhead),
    and a count n runs splits with tp pp <= n. Lowered by 1e-9 against float rounding;
    None where not even the overhead fits."""
    model = workload.model
    assert model is not None
    room = mem.usable_memory_bytes(gpu) - c.FRAMEWORK_OVERHEAD_GB * c.GB
    if room <= 0:
        return None
    wbpp = mem.weight_bytes_per_param(precision_used, mem.stored_weight_precision(workload))
    return model.params * wbpp / room * (1.0 - 1e-9)


def _experts_touched(model: TransformerModel, tokens: float) -> float:
    """Share of a layer's experts at least one of ``tokens`` tokens is routed to:
    1 - (1 - k/E)^tokens (uniform routing)."""
    if model.experts <= 1:
        return 1.0
    untouched: float = (1.0 - model.experts_per_token / model.experts) ** max(tokens, 1.0)
    return 1.0 - untouched


@dataclass(frozen=True)
class Timing:
    """``prefill``: the phase that yields the first token (TTFT); ``decode``: the mean
    iteration of the running batch over a request's lifetime with every arrival's prompt
    chunks in it (throughput), None for encoders/CNNs; ``tpot``: the mean iteration one
    request sees while it decodes (the others' prompts only: its own is in its TTFT), None
    for encoders/CNNs; ``batch``: concurrent sequences (continuous batching) or samples per
    forward pass."""

    prefill: PhaseTime
    decode: PhaseTime | None
    tpot: PhaseTime | None
    batch: int
    stage_s: float = 0.0
    """PP: the busiest stage's busy time [s] in one iteration of one micro-batch (the decode
    iteration; the forward pass for encoders), its send included; 0 without PP."""

    @property
    def ttft_s(self) -> float:
        return self.prefill.total_s


_Phase = tuple[float, float, float, float]
"""(compute_s, memory_s, comm_s, stall_s) of a :class:`PhaseTime`, unboxed for the hot loop;
``stall_s`` is what the kernels' sum of maxima and the fixed costs add to max(compute, memory)."""


def _total(p: _Phase) -> float:
    """:attr:`PhaseTime.total_s`."""
    return max(p[0], p[1]) + p[3] + p[2]


def _phase(compute: float, memory: float, total: float, comm: float) -> _Phase:
    return compute, memory, comm, max(0.0, total - max(compute, memory))


def _blend(mixed: _Phase, alone: _Phase, f: float) -> _Phase:
    """The mean of ``f`` x ``mixed`` and (1 - ``f``) x ``alone`` iterations: compute, memory
    and links averaged, the stall what the mean device time adds to the larger of the means
    (the mean of maxima is at least the maximum of means)."""
    g = 1.0 - f
    device = f * (max(mixed[0], mixed[1]) + mixed[3]) + g * (max(alone[0], alone[1]) + alone[3])
    return _phase(f * mixed[0] + g * alone[0], f * mixed[1] + g * alone[1], device,
                  f * mixed[2] + g * alone[2])


def _latencies(
    spec: InferenceSpec, ttft_s: float, tpot_s: float | None
) -> tuple[float, float | None, float]:
    """(ttft_ms, tpot_ms, latency_ms): latency = TTFT + output tokens x TPOT."""
    ttft = ttft_s * 1e3
    if tpot_s is None:
        return ttft, None, ttft
    tpot = tpot_s * 1e3
    return ttft, tpot, ttft + spec.output_tokens * tpot


def _check(
    spec: InferenceSpec, ttft: float, tpot: float | None, latency: float
) -> tuple[bool, float, float]:
    ok, worst = True, 0.0
    for value, limit in ((ttft, spec.max_ttft_ms), (tpot, spec.max_tpot_ms),
                         (latency, spec.max_latency_ms)):
        if limit is not None and value is not None:
            ok = ok and not value > limit
            worst = max(worst, value / limit if limit > 0 else math.inf)
    return ok, worst, latency


def decode_longer(spec: InferenceSpec, ttft_ms: float | None, tpot_ms: float | None) -> bool:
    """Whether a request spends longer in its decode iterations (``output_tokens`` x TPOT)
    than in its prompt (TTFT): the phase an estimate's bound and its explanation name."""
    return ttft_ms is not None and tpot_ms is not None and spec.output_tokens * tpot_ms > ttft_ms


def latencies(spec: InferenceSpec, t: Timing) -> tuple[float, float | None, float]:
    """(ttft_ms, tpot_ms, latency_ms) of a :class:`Timing`."""
    return _latencies(spec, t.ttft_s, None if t.tpot is None else t.tpot.total_s)


def meets(spec: InferenceSpec, t: Timing) -> bool:
    """Whether a :class:`Timing` meets every latency limit of ``spec``."""
    return _check(spec, *latencies(spec, t))[0]


def requests_per_s(spec: InferenceSpec, t: Timing, pp: int, replicas: int) -> float:
    """Requests/s of ``replicas`` copies at timing ``t``: continuous batching completes
    ``batch`` requests every ``output_tokens`` iterations; encoders/CNNs ``batch`` per forward
    pass; ``pp`` batches in flight (one per stage, as vLLM's virtual engines and TensorRT-LLM's
    micro-batches run): a micro-batch's iteration is its round trip through every stage
    (hops and the host's scheduling included, which no stage overlaps: the pipeline's
    bubbles), unless ``pp`` x the busiest stage's time is longer -- the last stage also runs
    the LM head, so stages are not equal (Narayanan et al. 2021 on stage imbalance)."""
    if t.decode is not None and spec.output_tokens > 0:
        iteration = t.decode.total_s
        if pp > 1 and pp * t.stage_s > iteration:
            iteration = pp * t.stage_s
        cycle = spec.output_tokens * iteration
    else:
        cycle = t.ttft_s
        if pp > 1 and pp * t.stage_s > cycle:
            cycle = pp * t.stage_s
    return t.batch / cycle * pp * replicas


class Lengths(NamedTuple):
    """A transformer serving model's figures that depend on the request's lengths, for one TP
    degree (:func:`lengths`); every other figure depends on the model, device and split only."""

    decoder: bool
    """Decodes output tokens (continuous batching), else one forward pass (encoders)."""
    s: int
    """Prompt tokens (at least 1)."""
    tokens: float
    """Encoders: rows per sequence (the effective prompt); 0 for decoders."""
    prompt_attn: float
    """Attention FLOPs of one prompt on one GPU."""
    prompt_attn_bytes: float
    out: int
    """Decoders: output tokens (else 0), and below: the mean context, one token's KV bytes in
    one layer on one GPU, decode attention's thread blocks per sequence, one decode token's
    attention FLOPs, the prompt's chunks (0 for encoders)."""
    ctx: float
    kv_layer: float
    kv_blocks: float
    decode_attn: float
    chunks: float


def lengths(model: TransformerModel, spec: InferenceSpec, tp: int, act_b: float,
            kv_token_bytes: float) -> Lengths:
    """:class:`Lengths` of ``spec`` on TP degree ``tp`` (``act_b``: activation bytes per
    element; ``kv_token_bytes``: one token's KV cache bytes over every layer)."""
    s = max(1, spec.prompt_tokens)
    h = model.hidden_size
    if spec.output_tokens <= 0 or model.encoder_only:
        tokens = float(max(1, spec.effective_prompt_tokens or s))
        pairs = tokens * tokens if model.encoder_only else (
            mem.causal_attention_pairs(model, tokens))
        return Lengths(False, s, tokens, tops.attention_flops(model, pairs, tp),
                       4.0 * tokens * h * act_b / tp, 0, 0.0, 0.0, 0.0, 0.0, 0.0)
    out = spec.output_tokens
    ctx = mem.kv_tokens(model, spec.prompt_tokens + out / 2.0)
    # decode attention's thread blocks per sequence on one rank: query heads x context
    # partitions (DECODE_ATTENTION_PARTITION_TOKENS)
    kv_blocks = max(1.0, model.attention_heads / tp) * math.ceil(
        ctx / c.DECODE_ATTENTION_PARTITION_TOKENS)
    pairs = mem.causal_attention_pairs(model, float(s))
    return Lengths(True, s, 0.0, tops.attention_flops(model, pairs, tp),
                   4.0 * s * h * act_b / tp, out, ctx,
                   tops.kv_bytes_per_token_layer(model, kv_token_bytes, tp), kv_blocks,
                   tops.attention_flops(model, ctx, tp),
                   float(math.ceil(s / c.SCHEDULED_TOKENS_PER_ITERATION)))


def packed_timing(params: np.ndarray, gemms: np.ndarray, batch: int) -> Timing:
    """The :class:`Timing` at ``batch`` of a serving model's packed figures
    (:class:`compiled.Packed`, or a split table's row), compiled."""
    pre, dec, tpot, stage = compiled.packed_timing(params, gemms, batch)
    return Timing(PhaseTime(*pre), None if dec is None else PhaseTime(*dec),
                  None if tpot is None else PhaseTime(*tpot), batch, stage)


def serving_device(gpu: GpuSpec, rate: PeakRate, runtime: ServingRuntime,
                   memo: Memo | None) -> kernels.Device:
    """The device a serving runtime runs ``gpu`` at ``rate`` on (kept in the shared cache's
    ``device`` table)."""
    return memo_of(memo).get("device", (gpu, rate, runtime),
                             lambda: kernels.runtime_device(gpu, rate, runtime))


def element_bytes(workload: Workload, precision: Precision) -> tuple[float, float, float]:
    """(bytes per stored weight, per activation element, per element of a TP all-reduce or
    pipeline send) of serving ``workload`` at compute ``precision``: 8-bit engines keep
    activations in 8 bits between GEMMs but all-reduce and send them in the runtimes' 16-bit
    dtype (:data:`constants.COLLECTIVE_ACTIVATION_BYTES`)."""
    wbpp = mem.weight_bytes_per_param(precision, mem.stored_weight_precision(workload))
    act_b = mem.activation_bytes_per_element(precision)
    if precision in ("fp8", "int8"):
        act_b = 1.0
    return wbpp, act_b, max(act_b, c.COLLECTIVE_ACTIVATION_BYTES)


def tp_link(gpu: GpuSpec, link_gb_s: float) -> tuple[float, float]:
    """(all-reduce bytes/s, latency [s]) of a TP group over a link of ``link_gb_s`` one way:
    the vendor's collective library (all-reduces, pipeline sends) reaches its software factor
    of NCCL's bandwidth and pays its latency over it (:data:`constants.VENDOR_EFFICIENCY`);
    a link no faster than PCIe pays PCIe's latency."""
    vendor = kernels.vendor_factor(gpu)
    fast = link_gb_s > par.pcie_gb_s(gpu) + 1e-9
    latency = c.COLLECTIVE_LATENCY_S if fast else c.PCIE_COLLECTIVE_LATENCY_S
    return (link_gb_s or 1.0) * c.GB * c.COLLECTIVE_EFFICIENCY * vendor, latency / vendor


class ServingModel:
    """The one inference cost model: time of a forward pass or a continuous-batching iteration
    as a function of the batch, for one split (TP degree ``tp``, PP degree ``pp``, TP link
    ``link_gb_s`` one way), on the operator model of :mod:`kernels` / :mod:`transformer_ops`.

    * CNNs/detectors: convolutions at the device's conv rate vs their input/output bytes,
      memory-bound elementwise ops, weights read once per batch, a kernel cost per layer.
    * Encoders: every layer's operators over batch x tokens rows (``effective_prompt_tokens``
      when the runtime skips padding), attention over each sequence.
    * Decoders: continuous (in-flight) batching as in vLLM / TensorRT-LLM (Orca, Yu et al.
      2022; Sarathi-Serve, Agrawal et al. 2024): one iteration runs ``batch`` decode tokens
      through every layer (weights read once, each sequence's KV cache read by attention),
      the LM head for the decoding rows, TP all-reduces, and a fixed scheduling cost; ``batch``
      prompts arrive every ``output`` iterations, each a chunk (or ceil(prompt / budget)
      chunks) riding in an iteration of its own, or spread over every iteration once they
      fill them all (:meth:`_cycle`). Throughput is the mean iteration with every arrival;
      TPOT the mean iteration one request sees (the other batch - 1 arrivals); TTFT the
      iteration(s) that carry its own prompt beside batch - 1 decoding sequences.

    PP: stages run one after another for one batch (the same operators, split in depth) plus
    a send/recv per stage boundary; ``pp`` batches are in flight, bounded by the busiest
    stage (:func:`requests_per_s`).
    Estimate, ranking and lower bounds all time inference through this class."""

    def __init__(
        self,
        workload: Workload,
        gpu: GpuSpec,
        rate: PeakRate,
        tp: int,
        link_gb_s: float,
        pp: int = 1,
        pp_link_gb_s: float | None = None,
        memo: Memo | None = None,
    ) -> None:
        model, spec = workload.model, workload.inference
        assert model is not None and spec is not None
        self.spec, self.model, self.tp, self.pp = spec, model, tp, pp
        self._timings: dict[int, Timing] = {}
        self.packed: object | None = None
        """Its figures as the compiled array model reads them (:mod:`compiled`), on first use."""
        self.dev = dev = serving_device(gpu, rate, spec.runtime, memo)
        self.wbpp, self.act_b, self.coll_b = element_bytes(workload, rate.precision_used)
        self.decoder = False
        vendor = kernels.vendor_factor(gpu)
        self.link_s, self.coll_latency = tp_link(gpu, link_gb_s)
        self.comm_vol = 2.0 * (tp - 1) / tp if tp > 1 else 0.0
        self.pp_link_s = (pp_link_gb_s or link_gb_s or 1.0) * c.GB * vendor
        self.pp_latency = c.PIPELINE_STAGE_LATENCY_S / vendor
        self.fixed_s = 0.0
        self.per_seq_s = 0.0  # decoders only: the runtime's per-sequence work per iteration
        if isinstance(model, GenericModel):
            self._init_generic(model, memo)
            return
        self.h, self.layers = model.hidden_size, model.layers
        self.ops = tops.layer_ops(model, dev, tp, self.act_b, self.wbpp, memo)
        self.stage_share = 0.0
        """PP: the last stage's share of an iteration's device and TP time -- ceil(L / pp)
        layers and the LM head, by weights (:meth:`_stage_s`)."""
        if pp > 1:
            head = float(model.vocab_size * model.hidden_size)
            layer = max(0.0, model.params - head) / self.layers
            self.stage_share = (math.ceil(self.layers / pp) * layer + head) / (
                self.layers * layer + head)
        self.kv_token_bytes = mem.kv_bytes_per_token(
            model, kv_precision(workload, rate.precision_used))
        self.lengths = ln = lengths(model, spec, tp, self.act_b, self.kv_token_bytes)
        self.s = ln.s
        self.prompt_attn, self.prompt_attn_bytes = ln.prompt_attn, ln.prompt_attn_bytes
        if not ln.decoder:
            self.tokens = ln.tokens
            return
        self.decoder = True
        self.out, self.ctx, self.kv_layer, self.kv_blocks = ln.out, ln.ctx, ln.kv_layer, \
            ln.kv_blocks
        self.decode_attn, self.chunks = ln.decode_attn, ln.chunks
        self.share = self.s / ln.out
        self.fixed_s = c.STEP_OVERHEAD_S
        self.per_seq_s = c.SEQUENCE_STEP_OVERHEAD_S

    def _init_generic(self, model: GenericModel, memo: Memo | None) -> None:
        key = (model, self.dev, self.act_b, self.wbpp)
        m = memo_of(memo)
        # the tabulated network is kept across requests (shared table cnn_network); its
        # batch memo is this context's
        self.cnn = m.scratch("cnn_inference", key, lambda: m.get(
            "cnn_network", key, lambda: cnn.network(model, self.dev, self.act_b, self.wbpp,
                                                    training=False)).fresh())
        self.fixed_s = self.cnn.kernels_s

    # ------------------------------------------------------------------ pieces
    def _comm(self, tokens: float) -> float:
        """TP: two all-reduces per layer of ``tokens`` x h activations (Megatron-LM), in the
        16-bit dtype 8-bit engines all-reduce in (:data:`constants.COLLECTIVE_ACTIVATION_BYTES`)."""
        if self.tp <= 1 or tokens <= 0:
            return 0.0
        nbytes = tokens * self.h * self.coll_b
        return 2.0 * self.layers * (self.comm_vol * nbytes / self.link_s + self.coll_latency)

    def _pipeline(self, tokens: float) -> float:
        """PP: one send/recv of ``tokens`` x h 16-bit activations per stage boundary."""
        if self.pp <= 1:
            return 0.0
        nbytes = tokens * self.h * self.coll_b
        return (self.pp - 1) * (nbytes / self.pp_link_s + self.pp_latency)

    def _iteration(
        self, rows: float, attn_flops: float, attn_bytes: float, head_rows: float
    ) -> _Phase:
        """One pass of ``rows`` tokens through every layer, attention work per layer given,
        the LM head over ``head_rows`` rows, fixed costs and communication."""
        model = self.model
        touched = 1.0
        if self.ops.moe and isinstance(model, TransformerModel):
            touched = _experts_touched(model, rows)
        lc, lm, lt = self.ops.forward(rows, attn_flops, attn_bytes, touched)
        hc, hm = self.ops.lm_head(head_rows)
        layers = self.layers
        compute = lc * layers + hc
        memory = lm * layers + hm
        # fixed scheduling cost per iteration, plus the runtime's per-sequence work for every
        # sequence that samples a token in it (``head_rows``)
        total = lt * layers + (hc if hc > hm else hm) + self.fixed_s + self.per_seq_s * head_rows
        comm = self._comm(rows) + self._pipeline(rows)
        return _phase(compute, memory, total, comm)

    def phases(self, batch: int) -> tuple[_Phase, _Phase | None, _Phase | None]:
        """(prefill, decode, tpot) phases for ``batch``, unboxed."""
        if not self.decoder:
            if isinstance(self.model, GenericModel):
                conv_c, conv_m, total = self.cnn.time(batch)
                total = max(total, cnn.input_floor_s(batch, self.spec.input_samples_per_s_per_gpu))
                return _phase(conv_c, conv_m, total, 0.0), None, None
            rows = batch * self.tokens
            return self._iteration(
                rows, batch * self.prompt_attn, batch * self.prompt_attn_bytes, 0.0
            ), None, None
        decode = self._decode(batch)
        return self._prefill(batch), decode, self._tpot(batch)

    def _kv_read(self, seqs: float) -> float:
        """Bytes-equivalent of reading ``seqs`` sequences' KV cache in one layer: the bytes,
        scaled up when the decode-attention kernel has fewer thread blocks than the GPU has
        SMs (its achieved bandwidth falls in proportion; see
        :data:`constants.DECODE_ATTENTION_PARTITION_TOKENS`). Never less per sequence as
        ``seqs`` grows: the time is flat until every SM has a block, then grows with it."""
        if seqs <= 0:
            return 0.0
        blocks = seqs * self.kv_blocks
        stretch = self.dev.sms / blocks if blocks < self.dev.sms else 1.0
        return seqs * self.ctx * self.kv_layer * stretch

    def _cycle(self, batch: int, arrivals: float) -> _Phase:
        """The mean iteration at ``batch`` over ``out`` iterations during which ``arrivals``
        prompts are prefilled, ``chunks`` iterations each (chunked prefill, Sarathi-Serve).

        Where the arrivals' chunks fill every iteration (``arrivals`` x ``chunks`` >=
        ``out``), each iteration carries ``arrivals`` / ``out`` prompts' tokens beside the
        ``batch`` decode tokens. Otherwise ``arrivals`` x ``chunks`` iterations carry one
        chunk each and the rest decode alone: a prompt's chunk is one large pass, not spread
        thin over every iteration (a MoE layer touches nearly every expert on a chunk and
        only ~``batch`` x top-k of them on a decode-only pass; a dense layer reads its weights
        either way), so the two kinds are timed apart and averaged."""
        b = float(batch)
        kv = self._kv_read(b)
        chunked = arrivals * self.chunks
        if chunked >= self.out:
            share = arrivals / self.out
            return self._iteration(
                b + share * self.s,
                b * self.decode_attn + share * self.prompt_attn,
                kv + share * self.prompt_attn_bytes,
                b,
            )
        alone = self._iteration(b, b * self.decode_attn, kv, b)
        if chunked <= 0.0:
            return alone
        k = self.chunks
        mixed = self._iteration(b + self.s / k, b * self.decode_attn + self.prompt_attn / k,
                                kv + self.prompt_attn_bytes / k, b)
        return _blend(mixed, alone, chunked / self.out)

    def _decode(self, batch: int) -> _Phase:
        """A decoder's mean iteration at ``batch`` over a request's lifetime (throughput):
        ``batch`` requests complete and ``batch`` prompts arrive every ``out`` iterations."""
        return self._cycle(batch, float(batch))

    def _tpot(self, batch: int) -> _Phase:
        """The mean iteration a request sees while it decodes at ``batch`` (TPOT): the other
        ``batch`` - 1 sequences' successors arrive in its ``out`` iterations; its own prompt
        ran before its first token (TTFT, :meth:`_prefill`)."""
        return self._cycle(batch, float(batch) - 1.0)

    def _prefill(self, batch: int) -> _Phase:
        """TTFT: the prompt in ceil(prompt / budget) iterations beside batch - 1 decoders."""
        b = float(batch)
        k = self.chunks
        rest = b - 1.0
        chunk = self._iteration(
            self.s / k + rest,
            self.prompt_attn / k + rest * self.decode_attn,
            self.prompt_attn_bytes / k + self._kv_read(rest),
            1.0 + rest,
        )
        return chunk[0] * k, chunk[1] * k, chunk[2] * k, chunk[3] * k

    # ------------------------------------------------------------------ results
    def timing(self, batch: int) -> Timing:
        """The :class:`Timing` at ``batch`` (memoized on this object: the counts of one GPU
        type ask for the same few batches)."""
        found = self._timings.get(batch)
        if found is None:
            if batched.supported(self):  # compiled: the same floats as timing_scalar's
                pk = compiled.pack(self)
                found = packed_timing(pk.params, pk.gemms, batch)
            else:
                found = self.timing_scalar(batch)
            self._timings[batch] = found
        return found

    def timing_scalar(self, batch: int) -> Timing:
        """:meth:`timing` in Python floats, operator by operator (the reference)."""
        pre, dec, tpot = self.phases(batch)
        return Timing(PhaseTime(*pre), None if dec is None else PhaseTime(*dec),
                      None if tpot is None else PhaseTime(*tpot), batch,
                      self._stage_s(batch, pre if dec is None else dec))

    def _stage_s(self, batch: int, phase: _Phase) -> float:
        """PP: the last stage's share of one iteration -- ceil(L / pp) layers and the LM head,
        by weights -- of its device and TP time (the host's fixed costs and the stage hops
        taken out), plus its one send."""
        model = self.model
        if self.pp <= 1 or not isinstance(model, TransformerModel):
            return 0.0
        b = float(batch)
        rows = b + b / self.out * self.s if self.decoder else b * self.tokens
        head_rows = b if self.decoder else 0.0
        hops = self._pipeline(rows)
        work = _total(phase) - self.fixed_s - self.per_seq_s * head_rows - hops
        return self.stage_share * max(0.0, work) + hops / (self.pp - 1)

    def latency_ms(self, batch: int) -> tuple[float, float | None, float]:
        """(ttft_ms, tpot_ms, latency_ms) at ``batch``."""
        pre, _, tpot = self.phases(batch)
        return _latencies(self.spec, _total(pre), None if tpot is None else _total(tpot))

    def check(self, batch: int) -> tuple[bool, float, float]:
        """(meets the limits, the largest ratio of a latency figure to its limit, the latency
        [ms]); the ratio only guides :func:`boundary`.

        A decoder with a TPOT limit is timed decode first: when TPOT alone misses its limit the
        batch fails whatever its TTFT, so the prefill is not timed, and the ratio returned is
        TPOT's (at most the largest; only the probe positions depend on it, never the
        boundary, since the predicate is monotone) and the latency is inf (a failing batch's
        latency is never used).

        Transformers run it compiled (:func:`compiled.check`, the same floats as
        :meth:`check_scalar`, the reference)."""
        if batched.supported(self):
            return compiled.check(self, batch)
        return self.check_scalar(batch)

    def check_scalar(self, batch: int) -> tuple[bool, float, float]:
        """:meth:`check` in Python floats, operator by operator (the reference)."""
        spec = self.spec
        limit = spec.max_tpot_ms
        if self.decoder and limit is not None:
            per_token = self._tpot(batch)
            tpot = _total(per_token) * 1e3
            if tpot > limit:
                return False, (tpot / limit if limit > 0 else math.inf), math.inf
            return _check(spec, *_latencies(spec, _total(self._prefill(batch)),
                                            _total(per_token)))
        return _check(spec, *self.latency_ms(batch))

    def meets(self, batch: int) -> bool:
        return self.check(batch)[0]

    def requests_per_s(self, t: Timing, replicas: int) -> float:
        """:func:`requests_per_s` of this split."""
        return requests_per_s(self.spec, t, self.pp, replicas)

    # ------------------------------------------------------------------ lower bounds
    def _per_token_gemm_flops(self) -> float:
        """GEMM FLOPs of one token through every layer, summed over the split's GPUs."""
        ops, h = self.ops, self.h
        mlp = h * ops.up_n + ops.down_k * h
        if ops.moe:
            mlp *= ops.top_k
        return 2.0 * self.layers * (h * ops.qkv_n + ops.o_k * h + mlp) * self.tp

    def request_floor_s(self) -> float:
        """GPU-seconds one request needs at the very least, on any split and batch: its GEMM
        FLOPs at the full GEMM rate, attention at the larger of its FLOPs and its KV reads
        (summed over the split's GPUs), no fixed costs. Every kernel the model times takes at
        least this (tile and wave quantization and fixed costs only add)."""
        dev = self.dev
        if isinstance(self.model, GenericModel):
            return max(self.cnn.flops / dev.conv_inference_flops_s,
                       self.cnn.floor_bytes / dev.bytes_s)
        dense = self._per_token_gemm_flops() / dev.matrix_flops_s
        per_gpu_attn = self.layers * self.tp / dev.attention_flops_s
        if not self.decoder:
            return self.tokens * dense + per_gpu_attn * self.prompt_attn
        linear = (self.s + self.out) * dense
        attention = per_gpu_attn * (self.prompt_attn + self.out * self.decode_attn)
        kv_read = self.layers * self.tp * self.out * self.ctx * self.kv_layer / dev.bytes_s
        return linear + max(attention, kv_read)

    def latency_floor_ms(self) -> float:
        """A CNN's or detector's latency [ms] no option beats: the fixed costs plus the
        request floor's work (transformers' floors: :mod:`choice.inference_floors`)."""
        assert isinstance(self.model, GenericModel)
        return (self.fixed_s + self.request_floor_s()) * 1e3


def largest_meeting(roof: ServingModel, hi: int | None = None) -> int:
    """Largest batch up to ``hi`` (default :data:`MAX_AUTO_BATCH`) meeting the latency limits
    (0: none).

    TTFT, TPOT and latency all grow with the batch (each kernel's time is a maximum of terms
    that never fall as the batch grows: tile waves, bytes; MoE weight reads rise with it), so
    the predicate is monotone and a bisection finds the boundary: O(log batch) evaluations."""
    hi = int(c.MAX_AUTO_BATCH) if hi is None else max(1, hi)
    if batched.supported(roof):  # compiled, probe for probe
        return compiled.largest_meeting(roof, hi, NEAR_LIMIT)
    return largest_meeting_scalar(roof, hi)


def largest_meeting_scalar(roof: ServingModel, hi: int) -> int:
    """:func:`largest_meeting` through :meth:`ServingModel.check` (the reference; CNNs)."""
    ok_hi, g_hi, _ = roof.check(hi)
    if ok_hi:
        return hi
    if hi == 1:
        return 0
    ok_lo, g_lo, lat_lo = roof.check(1)
    return boundary(roof, 1, hi, (g_lo, g_hi, lat_lo))[0] if ok_lo else 0


def boundary(
    roof: ServingModel,
    lo: int,
    hi: int,
    seed: tuple[float, float, float],
) -> tuple[int, float]:
    """The largest batch in [lo, hi) meeting the limits and its latency [ms], given that
    ``lo`` meets them and ``hi`` does not (``seed``: their ratios from
    :meth:`ServingModel.check`, and the latency at ``lo``). The predicate is monotone,
    so any probe order keeps a valid bracket and gives the bisection's answer; the figures are
    nearly affine in the batch, so probing where the ratio crosses 1 (regula falsi; next to it
    too when within :data:`NEAR_LIMIT`) closes the bracket in a few timings, bisecting after two
    steps that removed little of it."""
    g_lo, g_hi, lat_lo = seed
    poor = 0  # interpolation steps in a row that removed under a quarter of the bracket
    while hi - lo > 1:
        width = hi - lo
        mid = (lo + hi) // 2
        if poor < 2 and math.isfinite(g_hi) and g_hi > g_lo:
            mid = lo + int((1.0 - g_lo) / (g_hi - g_lo) * width)
            mid = min(max(mid, lo + 1), hi - 1)
        ok, g, lat = roof.check(mid)
        if ok:
            lo, g_lo, lat_lo = mid, g, lat
            step = mid + 1 if g > 1.0 - NEAR_LIMIT else 0
        else:
            hi, g_hi = mid, g
            step = mid - 1 if g < 1.0 + NEAR_LIMIT else 0
        if lo < step < hi:  # next to the limit: the neighbour likely closes the bracket
            ok, g, lat = roof.check(step)
            if ok:
                lo, g_lo, lat_lo = step, g, lat
            else:
                hi, g_hi = step, g
        poor = poor + 1 if 4 * (width - (hi - lo)) < width else 0
    return lo, lat_lo


CAPACITY_GRID_STEP = 1.25
"""Ratio between the batches :meth:`Context.capacity_batch` times below the largest meeting
the limits (about 30 timings from 1,024 down to 1)."""


def batch_grid(top: int) -> set[int]:
    """``top`` and the batches below it on a :data:`CAPACITY_GRID_STEP` grid, down to 1."""
    grid, x = {top}, float(top)
    while x > 1.0:
        x /= CAPACITY_GRID_STEP
        grid.add(max(1, int(x)))
    return grid


def clamp_batch(limit_batch: int, max_fit: int) -> int | None:
    """The best batch given the largest meeting the limits and the memory maximum."""
    hi = max(1, min(max_fit, int(c.MAX_AUTO_BATCH)))
    if hi <= limit_batch:
        return hi
    return limit_batch or None


class Context:
    """What every GPU count of one (workload, GPU, rate) shares: a split's sizing, links,
    serving model and largest batch meeting the limits do not depend on the count (only the
    replicas and the layout record do), so each is computed once per split, not per count.
    Mutable (its memo dicts fill as it is asked): one request's, never shared."""

    def __init__(
        self,
        workload: Workload,
        gpu: GpuSpec,
        precision_used: Precision,
        rate: PeakRate | None,
        memo: Memo | None = None,
    ) -> None:
        self.workload, self.gpu, self.precision, self.rate = workload, gpu, precision_used, rate
        # its own memo over the caller's shared cache, not the caller's memo: the caller's
        # keeps this context, and a context keeping it back would make every request's
        # figures a reference cycle, freed only by the collector
        self.memo = None if memo is None else Memo(memo.shared)
        self.usable = mem.usable_memory_bytes(gpu)
        self.seqs_cap = max_num_seqs(workload, gpu)
        model = workload.model
        assert model is not None
        self.heads = model.attention_heads if isinstance(model, TransformerModel) else None
        self.layers = model.layers if isinstance(model, TransformerModel) else 0
        self._sizes: dict[tuple[int, int], Sizing] = {}
        self._models: dict[tuple[int, int], ServingModel] = {}
        self._limits: dict[tuple[int, int], int] = {}
        self._capacity: dict[tuple[int, int], int | None] = {}
        self._timings: dict[tuple[int, int, int], Timing] = {}
        self._rates: dict[tuple[int, int], dict[int, float]] = {}
        self._fits: dict[tuple[int, int, int], bool] = {}
        self._needs: dict[tuple[int, int, int], float] = {}
        """Bytes per GPU a split needs at a batch (:meth:`fits`): a figure of the sizing only,
        so shared like :attr:`_sizes` by every context of the request and precision."""
        self._splits: dict[int, list[tuple[int, int]]] = {}
        self._fitting: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._entries: dict[tuple[int, float, float], tuple[np.ndarray, np.ndarray]] = {}
        """The request's packed entries per (TP, element sizes) (:meth:`write_entries`): the
        same for every GPU type, so shared by every context of the request."""
        self._table: cs.SplitTable | None = None
        self._plans: dict[tuple[int, bool, float], tuple[int, int, int, int, int] | None] = {}
        self._points: dict[tuple[int, bool, float], tuple[
            int, int, int, float, tuple[float, float | None, float], bool] | None] = {}
        self._least: dict[tuple[int, int], float] = {}
        self.compiled_splits = (rate is not None and isinstance(model, TransformerModel)
                                and model.experts <= 1)
        """Whether :meth:`split_plan` runs (dense transformers: see :mod:`compiled_serving`)."""

    def sizing(self, tp: int, pp: int) -> Sizing:
        key = (tp, pp)
        if key not in self._sizes:
            self._sizes[key] = sizing(self.workload, self.precision, tp, pp)
        return self._sizes[key]

    def batch_cap(self, tp: int, pp: int) -> int:
        """The largest batch split (tp, pp) can run: memory, the runtime's sequence cap
        (:func:`max_num_seqs`) and :data:`MAX_AUTO_BATCH`; at least 1."""
        return max(1, min(self.sizing(tp, pp).max_batch(self.usable), self.seqs_cap))

    def fits(self, tp: int, pp: int, batch: int) -> bool:
        key = (tp, pp, batch)
        ok = self._fits.get(key)
        if ok is None:
            need = self._needs.get(key)
            if need is None:
                need = self._needs[key] = self.sizing(tp, pp).breakdown(batch).total * c.GB
            ok = self._fits[key] = need <= self.usable
        return ok

    def fitting(self, gpu_count: int, batch: int) -> list[tuple[int, int]]:
        """The splits of ``gpu_count`` (:meth:`splits`, in order) that fit ``batch``, once
        per count and batch (callers do not mutate it); shared with the memory twin's
        context, as :meth:`fits` is."""
        key = (gpu_count, batch)
        found = self._fitting.get(key)
        if found is None:
            found = self._fitting[key] = [s for s in self.splits(gpu_count)
                                          if self.fits(s[0], s[1], batch)]
        return found

    def fits_any(self, gpu_count: int, batch: int) -> bool:
        """Whether some split of ``gpu_count`` fits ``batch``: :meth:`fitting`'s list where
        it was made, else the splits asked in turn up to the first that fits (the memory
        search's probes ask for counts whose full list nothing else needs)."""
        known = self._fitting.get((gpu_count, batch))
        if known is not None:
            return bool(known)
        return any(self.fits(tp, pp, batch) for tp, pp in self.splits(gpu_count))

    def splits(self, gpu_count: int) -> list[tuple[int, int]]:
        """:meth:`_splits` of ``gpu_count``, once per count (callers do not mutate it)."""
        found = self._splits.get(gpu_count)
        if found is None:
            found = self._splits[gpu_count] = self._split_list(gpu_count)
        return found

    def _split_list(self, gpu_count: int) -> list[tuple[int, int]]:
        """Every model split, smallest first: TP degrees (powers of 2 dividing the heads) inside
        one node -- over NVLink / Infinity Fabric within the fast domain, over PCIe beyond it,
        as vLLM and TensorRT-LLM run PCIe cards -- then PP stages on top of TP 1 and of the
        largest fast-domain TP, inside a node only when the node is not one fast domain, and
        across nodes only when no split inside one node holds the model at the estimate's
        smallest batch (a fixed batch_size, else 1). The serving model prices each (PCIe
        all-reduces, stage hops) and the estimate keeps the best."""
        if self.heads is None:
            return [(1, 1)]
        spec = self.workload.inference
        per_node = max(1, self.gpu.max_gpus_per_node)
        if spec is not None and (spec.tensor_parallel or spec.pipeline_parallel):
            # a pinned split, where the count holds it and its TP group fits in one node
            pinned = (spec.tensor_parallel or 1, spec.pipeline_parallel or 1)
            if pinned[0] <= per_node and pinned[0] * pinned[1] <= gpu_count:
                return [pinned]
        key = (self.heads, self.layers, per_node, par.fast_domain_size(self.gpu), gpu_count)
        in_node, across = memo_of(self.memo).get("serving_splits", key,
                                                  lambda: split_candidates(*key))
        out = list(in_node)
        batch = (spec.batch_size if spec is not None else None) or 1  # the estimate's least
        if across and not any(self.fits(t, p, batch) for t, p in out):
            out += across  # the model needs more than a node
        return out

    def least_memory_split(self, gpu_count: int, batch: int) -> tuple[int, int]:
        """The split of ``gpu_count`` needing the least memory per GPU at ``batch`` (ties: the
        smaller split): what a count that fits no split is judged and explained on."""
        splits = self.splits(gpu_count)
        return min(splits, key=lambda s: self.sizing(*s).breakdown(batch).total)

    def placement(self, gpu_count: int, tp: int, pp: int) -> Placement:
        layout = par.layout(self.gpu, gpu_count, tp, pp, "none", memo_of(self.memo))
        return Placement(layout, tp, pp, max(1, gpu_count // (tp * pp)))

    def model(self, tp: int, pp: int = 1) -> ServingModel:
        key = (tp, pp)
        found = self._models.get(key)
        if found is None:
            assert self.rate is not None
            found = self._models[key] = ServingModel(
                self.workload, self.gpu, self.rate, tp, pp=pp, memo=self.memo,
                **links(self.gpu, tp, pp)
            )
        return found

    def timing(self, tp: int, pp: int, batch: int) -> Timing:
        """The split's :class:`Timing` at ``batch``, once per context (every count of the GPU
        type asks for the same few batches)."""
        local = (tp, pp, batch)
        found = self._timings.get(local)
        if found is None:
            if self.compiled_splits:  # the split table's packed model (the same figures)
                table = self._split_table()
                row = table.row(self, tp, pp)
                found = packed_timing(table.params[row], table.gemms[row], batch)
            else:
                found = self.model(tp, pp).timing(batch)
            self._timings[local] = found
        return found

    def _split_table(self) -> cs.SplitTable:
        """The context's :class:`compiled_serving.SplitTable` (made on first use)."""
        table = self._table
        if table is None:
            table = self._table = cs.SplitTable()
        return table

    def least_latency_ms(self, gpu_count: int, batch: int) -> float:
        """The least end-to-end latency [ms] at ``batch`` over the splits of ``gpu_count``
        (:func:`latencies` of :meth:`timing`; inf for none), once per context and count: the
        split table's rows timed in one compiled pass where :attr:`compiled_splits` (the same
        floats)."""
        key = (gpu_count, batch)
        found = self._least.get(key)
        if found is None:
            splits = self.splits(gpu_count)
            if self.compiled_splits and splits:
                table = self._split_table()
                rows = table.rows_of(self, splits)  # first: it may grow the arrays
                found = cs.least_latency_ms(table.params, table.gemms, rows, batch)
            else:
                spec = self.workload.inference
                assert spec is not None
                found = min((latencies(spec, self.timing(tp, pp, batch))[2]
                             for tp, pp in splits), default=math.inf)
            self._least[key] = found
        return found

    def capacity_batch(self, tp: int, pp: int = 1) -> int | None:
        """The batch at which split (tp, pp) completes the most requests per second within the
        latency limits, memory and the runtime's cap (None: no batch meets them).

        Throughput usually grows with the batch, but not always: tile and wave quantization
        (a GEMM of 399 rows takes 4 waves of 128-row tiles, one of 255 rows 2) and growing
        attention work can make a smaller batch faster per request; a runtime is tuned to the
        best one (its max_num_seqs), not to the largest that fits. So every batch from the
        largest meeting the limits down one :data:`CAPACITY_GRID_STEP` (25%), and a grid of
        that step below, is timed and the one with the most requests/s is kept (ties: the
        smaller batch). A tighter limit whose best batch lies in that top step is then never
        better than the looser one (the property suite checks it). Once per context."""
        key = (tp, pp)
        found = self._capacity.get(key, 0)
        if found != 0:
            return found
        top = clamp_batch(self.limit_batch(tp, pp), self.batch_cap(tp, pp))

        def compute() -> int | None:
            if top is None:
                return None
            spec = self.workload.inference
            assert spec is not None
            # every batch of the top grid step, then the grid below it
            floor = max(1, math.ceil(top / CAPACITY_GRID_STEP))
            grid = sorted(set(range(floor, top + 1)) | batch_grid(floor))
            rates = self.requests_per_s_at(tp, pp, grid)
            return grid[rates.index(max(rates))]  # the first (smallest) of equal rates

        best = self._capacity[key] = compute()
        return best

    def requests_per_s_at(self, tp: int, pp: int, batches: list[int]) -> list[float]:
        """Requests/s of one replica of split (tp, pp) at each of ``batches``, memoized per
        batch on this context (the capacity grid and every count's operating-batch search
        share most of their batches): the ones not yet known all at once through the array
        form of the serving model (:mod:`batched`'s formulas, compiled: :mod:`compiled`), or
        batch by batch through the scalar one for models without it (CNNs) and for one or two
        batches."""
        known = self._rates.get((tp, pp))
        if known is None:
            known = self._rates[tp, pp] = {}
        missing = [b for b in batches if b not in known]
        if missing:
            roof = self.model(tp, pp)
            if len(missing) > 2 and batched.supported(roof):
                rates: list[float] = compiled.requests_per_s(
                    roof, np.array(missing, dtype=np.float64)).tolist()
            else:
                spec = self.workload.inference
                assert spec is not None
                rates = [requests_per_s(spec, self.timing(tp, pp, b), pp, 1) for b in missing]
            known.update(zip(missing, rates, strict=True))
        return [known[b] for b in batches]

    def _stack_key(self) -> tuple[object, ...]:
        """What a split's packed figures depend on besides the split and the request's
        lengths and limits: model, GPU, rate, runtime, weight and KV precisions, whether it
        decodes (the key of :meth:`split_stack`; taken once or twice per context)."""
        workload, spec = self.workload, self.workload.inference
        model = workload.model
        assert spec is not None and isinstance(model, TransformerModel)
        decoder = not model.encoder_only and spec.output_tokens > 0
        return (model, self.gpu, self.rate, spec.runtime, mem.stored_weight_precision(workload),
                workload.kv_cache_precision, decoder)

    def split_stack(self) -> cs.SplitStack:
        """The splits' packed serving models (:class:`compiled.Packed`) as the shared cache
        keeps them across requests (:class:`compiled_serving.SplitStack`: the splits earlier
        requests of the same model, GPU, rate, runtime, precisions and decoding asked for),
        empty where none is kept."""
        found: cs.SplitStack | None = memo_of(self.memo).find("serving_stack",
                                                              self._stack_key())
        return found if found is not None else cs.EMPTY_STACK

    def grown_stack(self, stack: cs.SplitStack, splits: list[tuple[int, int]]
                    ) -> cs.SplitStack:
        """``stack`` and the packed serving models of ``splits`` (not in it) after it: a new
        stack, which the shared cache keeps from now on in its place."""
        bases = []
        for tp, pp in splits:
            sm = self.model(tp, pp)
            pk = compiled.pack(sm)
            bases.append((pk.params, pk.gemms, sm.act_b, sm.kv_token_bytes))
        grown = stack.with_rows(splits, bases)
        memo_of(self.memo).put("serving_stack", self._stack_key(), grown)
        return grown

    def write_entries(self, params: np.ndarray, stack: cs.SplitStack, rows: list[int]) -> None:
        """This request's entries written over the figures of ``rows`` of ``params`` (a
        split table's copy of ``stack``'s): :func:`compiled.request_entries` of
        :func:`lengths`, once per TP degree and element sizes in the request."""
        model, spec = self.workload.model, self.workload.inference
        assert isinstance(model, TransformerModel) and spec is not None
        known, keys = self._entries, stack.entries
        for r in rows:
            key = keys[r]
            found = known.get(key)
            if found is None:
                found = known[key] = compiled.request_entries(lengths(model, spec, *key), spec)
            params[r, found[0]] = found[1]

    def split_plan(self, gpu_count: int, latency_mode: bool, tie: float) -> tuple[
            int, int, int, int, int] | None:
        """``estimate._estimate_inference``'s choice of split on ``gpu_count`` GPUs, compiled
        (:func:`compiled_serving.split_plan`; ``tie``: its SPLIT_TIE): (tp, pp, capacity
        batch, batch at the load, replicas in the group), None when no fitting split has a
        batch. Only where :attr:`compiled_splits`; the limit and capacity batches are memoized
        per split across the counts, as :meth:`limit_batch` and :meth:`capacity_batch` are,
        and the plan per count, kept by :meth:`split_point` (a ranking's light figures and the
        full estimate of the same count ask for it twice)."""
        key = (gpu_count, latency_mode, tie)
        if key not in self._plans:
            self.split_point(gpu_count, latency_mode, tie)
            self._plans.setdefault(key, None)  # no split of the count fits
        return self._plans[key]

    def split_point(self, gpu_count: int, latency_mode: bool, tie: float) -> tuple[
            int, int, int, float, tuple[float, float | None, float], bool] | None:
        """:meth:`split_plan` and the figures of what it keeps in one compiled call
        (:func:`compiled_serving.split_point`; :meth:`timing` of its two batches gives the
        same floats): (tp, pp, replicas in the group, requests/s of the group at the capacity
        batch, latencies at the load's batch, whether they meet the limits); where no fitting
        split has a batch, the first fitting split's figures at the smallest batch
        (``estimate.serving_point``'s fallback); None where no split of ``gpu_count`` fits.
        Once per count and mode; the plan is kept for :meth:`split_plan`. Only where
        :attr:`compiled_splits`."""
        key = (gpu_count, latency_mode, tie)
        if key in self._points:
            return self._points[key]
        spec = self.workload.inference
        assert spec is not None
        min_batch = spec.batch_size or 1
        table = self._split_table()
        order = table.order(self, gpu_count, min_batch)
        if not len(order):
            self._points[key] = None
            return None
        kept, row, cap_b, load_b, group, requests_s, ttft, tpot, latency, ok = cs.split_point(
            table.params, table.gemms, table.caps, table.limits, table.capacities, order,
            gpu_count, float(spec.target_requests_per_s or 0.0), spec.batch_size or 0,
            latency_mode, int(c.MAX_AUTO_BATCH), CAPACITY_GRID_STEP, NEAR_LIMIT, tie,
            min_batch)
        tp, pp = table.splits[row]
        self._plans[key] = None if kept < 0 else (tp, pp, int(cap_b), int(load_b), int(group))
        decodes = table.params[row, compiled._DECODER] > 0.0
        point = self._points[key] = (tp, pp, group, requests_s,
                                     (ttft, tpot if decodes else None, latency), bool(ok))
        return point

    def known_padded(self, gpu_count: int) -> bool:
        """Whether :meth:`split_point` of ``gpu_count`` in throughput mode is known, before it
        runs, to keep a split holding more replicas than the target needs
        (:func:`compiled_serving.padded_plan` over the split table's memos: the capacity
        batches found at this context's other counts, which do not depend on the count).
        False where it cannot tell: no split table yet, a split of the count not in it or
        its capacity batch not found yet, no target, a fixed batch size, not
        :attr:`compiled_splits`."""
        spec, table = self.workload.inference, self._table
        if not self.compiled_splits or table is None or spec is None or spec.batch_size \
                or not spec.target_requests_per_s:
            return False
        splits = self.fitting(gpu_count, 1)  # split_point's order at the smallest batch, 1
        rows = table.known_rows(splits) if splits else None
        if rows is None:
            return False
        return bool(cs.padded_plan(table.params, table.gemms, table.capacities, rows,
                                   gpu_count, float(spec.target_requests_per_s)))

    def limit_batch(self, tp: int, pp: int = 1) -> int:
        """The largest batch meeting the latency limits on split (tp, pp), searched up to the
        batch that fits memory (a larger one could never run: ``clamp_batch`` of it and of
        the unbounded search agree): an int, once per context."""
        key = (tp, pp)
        found = self._limits.get(key)
        if found is None:
            found = self._limits[key] = largest_meeting(self.model(tp, pp),
                                                        self.batch_cap(tp, pp))
        return found


def split_candidates(heads: int, layers: int, per_node: int, fast_domain: int, gpu_count: int
                     ) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """The splits :meth:`Context._split_list` weighs on ``gpu_count`` GPUs of a node of
    ``per_node`` whose fast domain joins ``fast_domain``, for a model of ``heads`` attention
    heads and ``layers`` layers: (those inside one node, smallest first; the pipelines
    across nodes it adds when none of those holds the model). A pure function of its
    arguments (kept across requests)."""
    tps = [t for t in par.powers_of_two_upto(min(gpu_count, per_node)) if heads % t == 0]
    fast = [t for t in par.powers_of_two_upto(max(1, min(fast_domain, gpu_count)))
            if heads % t == 0]  # parallelism.tp_candidates
    out = [(t, 1) for t in tps]
    in_node_gpus = min(gpu_count, per_node)
    if fast_domain < in_node_gpus:
        # PP inside a node only where its GPUs are not all on one fast fabric (PCIe cards,
        # NVLink pairs): on NVLink / Infinity Fabric nodes serving runtimes split TP inside
        # the node and PP across nodes (vLLM docs, "Distributed inference and serving":
        # tensor parallel size = GPUs per node, pipeline size = nodes)
        out += [(base, p) for base in sorted({1, fast[-1]})
                for p in par.powers_of_two_upto(in_node_gpus // base)
                if 1 < p <= layers]
    across: list[tuple[int, int]] = []
    if gpu_count > per_node:
        # pipeline stages across nodes
        base = fast[-1]
        across = [(base, p) for p in par.powers_of_two_upto(gpu_count // base)
                  if base * p > per_node and p <= layers]
    return tuple(out), tuple(across)


def links(gpu: GpuSpec, tp: int, pp: int) -> dict[str, float]:
    """One-way bandwidths [GB/s] of a split's TP group and of its pipeline hops."""
    per_node = max(1, gpu.max_gpus_per_node)
    tp_link = par.group_link(gpu, tp, spans_nodes=False)[1]
    group = tp * pp
    pp_link = par.group_link(gpu, min(group, per_node), spans_nodes=group > per_node)[1]
    return {"link_gb_s": tp_link, "pp_link_gb_s": pp_link}


def context(
    workload: Workload,
    gpu: GpuSpec,
    precision_used: Precision,
    rate: PeakRate | None = None,
    memo: Memo | None = None,
) -> Context:
    """The :class:`Context` of this call's ``memo`` (a fresh one without): every count of a
    GPU type asks for it in turn (``rate`` None: sizing and placement only)."""
    if memo is None:
        return Context(workload, gpu, precision_used, rate)
    key = (workload, gpu, precision_used, rate)
    return memo.scratch("inference_context", key,
                        lambda: _new_context(workload, gpu, precision_used, rate, memo))


def made_context(workload: Workload, gpu: GpuSpec, precision_used: Precision,
                 rate: PeakRate | None, memo: Memo) -> Context | None:
    """The :class:`Context` :func:`context` made in this call for these arguments, or None
    (none is made here)."""
    found = memo.peek("inference_context", (workload, gpu, precision_used, rate))
    return found if isinstance(found, Context) else None


def _new_context(workload: Workload, gpu: GpuSpec, precision_used: Precision,
                 rate: PeakRate | None, memo: Memo) -> Context:
    """A context of this call whose memory figures are shared: a split's sizing and the bytes
    it needs at a batch with every GPU type of the same precision (they depend on the
    workload, precision and split only), the request's packed entries
    (:func:`compiled.request_entries` of :func:`lengths`) with every GPU type, the splits,
    fits and fitting splits with the rate-less context of the GPU's memory twin (the memory
    probes' own, :func:`fits_any`, :func:`parallelism.memory_twin`), so each is computed once
    per call and memory configuration."""
    ctx = Context(workload, gpu, precision_used, rate, memo)
    ctx._sizes = memo.scratch("inference_sizes", (workload, precision_used), dict)
    ctx._needs = memo.scratch("inference_needs", (workload, precision_used), dict)
    # the request's packed entries per (TP, element sizes): the same for every GPU type
    ctx._entries = memo.scratch("inference_entries", workload, dict)
    if rate is not None:
        # the memory twin's (par.memory_twin): its splits and fits are this GPU's
        sized = context(workload, par.memory_twin(gpu, precision_used, memo), precision_used,
                        None, memo)
        ctx._fits, ctx._splits, ctx._fitting = sized._fits, sized._splits, sized._fitting
    return ctx


def place(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    precision_used: Precision,
    batch: int,
    memo: Memo | None = None,
) -> tuple[Placement, Sizing, bool]:
    """Smallest model split that fits ``batch`` sequences (the least-memory split if none
    fits)."""
    ctx = context(workload, gpu, precision_used, memo=memo)
    fits = ctx.fitting(gpu_count, batch)
    tp, pp = fits[0] if fits else ctx.least_memory_split(gpu_count, batch)
    return ctx.placement(gpu_count, tp, pp), ctx.sizing(tp, pp), ctx.fits(tp, pp, batch)


def fits_any(
    workload: Workload,
    gpu: GpuSpec,
    gpu_count: int,
    precision_used: Precision,
    batch: int,
    memo: Memo | None = None,
) -> bool:
    """``place(...)[2]`` without building a placement: whether some split fits ``batch``."""
    return context(workload, gpu, precision_used, memo=memo).fits_any(gpu_count, batch)
