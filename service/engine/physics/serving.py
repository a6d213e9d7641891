"""Inference estimate: placement (TP or PP), batch choice, prefill/decode roofline."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from service.engine import constants as c
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.physics.performance import (
    PeakRate,
    PhaseTime,
    bandwidth_gb_s,
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

CONTEXT_CACHE_SIZE = 256
"""Memoized :class:`Context` objects: a request asks for one or two per GPU type in turn, so
a small LRU holds a whole catalog's worth without growing with the number of requests."""
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


def context_tokens(spec: InferenceSpec) -> int:
    return max(1, spec.prompt_tokens + spec.output_tokens)


def sizing(workload: Workload, precision_used: Precision, tp: int, pp: int) -> Sizing:
    model = workload.model
    spec = workload.inference
    assert model is not None and spec is not None
    wbpp = mem.weight_bytes_per_param(precision_used, workload.weight_precision)
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


_Phase = tuple[float, float, float, float]
"""(compute_s, memory_s, comm_s, stall_s) of a :class:`PhaseTime`, unboxed for the hot loop."""


def _total(p: _Phase) -> float:
    """:attr:`PhaseTime.total_s`, same arithmetic in the same order."""
    return max(p[0], p[1]) + p[3] + p[2]


def _seq(k0: tuple[float, float], k1: tuple[float, float], comm: float) -> _Phase:
    """:func:`performance.sequential` of two kernels, same arithmetic in the same order."""
    compute, memory = k0[0] + k1[0], k0[1] + k1[1]
    stall = max(k0) + max(k1) - max(compute, memory)
    return compute, memory, comm, stall if stall > 0.0 else 0.0


class Roofline:
    """Roofline times of one split (TP degree ``tp`` over a ``link_gb_s`` link) as a function of
    the batch, with everything that does not depend on the batch computed once.

    See :func:`timing` for the model. The arithmetic is that of :func:`performance.roofline` /
    :func:`performance.sequential` term by term, so :meth:`timing` and :meth:`meets` agree
    bit for bit with each other and with the original per-call formulation."""

    def __init__(
        self, workload: Workload, gpu: GpuSpec, rate: PeakRate, tp: int, link_gb_s: float
    ) -> None:
        model, spec = workload.model, workload.inference
        assert model is not None and spec is not None
        self.spec, self.model, self.tp = spec, model, tp
        self.bw = bandwidth_gb_s(gpu)
        self.bytes_s = self.bw * c.GB
        self.wbpp = mem.weight_bytes_per_param(rate.precision_used, workload.weight_precision)
        self.tflops = rate.tflops
        eight_bit = rate.precision_used in ("fp8", "int8")
        eff_p = c.EFF_PREFILL if rate.tensor else c.EFF_NON_TENSOR
        self.decoder = False
        self.comm_den = link_gb_s * c.GB * c.COLLECTIVE_EFFICIENCY
        self.comm_vol = 2.0 * (tp - 1) / tp if tp > 1 else 0.0
        if isinstance(model, GenericModel):
            self.eff = c.EFF_CNN_INFERENCE if rate.tensor else c.EFF_NON_TENSOR
            self.flops_per = model.gflops_per_sample * 1e9
            self.act_per = mem.generic_activation_bytes(model, 1, 2.0, training=False)
            self.weights = model.params * self.wbpp
            return
        if eight_bit:
            eff_p *= c.EFF_8BIT_TRANSFORMER
        self.eff_p, self.h, self.layers = eff_p, model.hidden_size, model.layers
        n_active = mem.active_params(model)
        s = max(1, spec.prompt_tokens)
        self.s = s
        pairs = float(s) * s if model.encoder_only else mem.causal_attention_pairs(model, float(s))
        self.prompt_flops = 2.0 * n_active * s + 4.0 * model.layers * model.hidden_size * pairs
        self.weight_read = model.params * self.wbpp / tp
        if spec.output_tokens <= 0 or model.encoder_only:
            return
        self.decoder = True
        out = spec.output_tokens
        self.out = out
        self.ctx = mem.kv_tokens(model, spec.prompt_tokens + out / 2.0)
        self.kv_tok = mem.kv_bytes_per_token(model, kv_precision(workload, rate.precision_used))
        self.kv_div = min(tp, model.kv_heads)
        self.moe = model.experts > 1
        eff_d = c.EFF_DECODE_COMPUTE if rate.tensor else c.EFF_NON_TENSOR
        if eight_bit:
            eff_d *= c.EFF_8BIT_TRANSFORMER
        peak = rate.tflops * 1e12 * tp
        self.n_active = n_active
        self.den_d = peak * eff_d
        self.lin_prompt = 2.0 * n_active * s / (peak * eff_p)
        self.att_prompt = 4.0 * model.layers * model.hidden_size * pairs / (peak * eff_p)
        self.w_s = self.weight_read / self.bytes_s
        self.decode_comm_tokens = 1.0 + spec.prompt_tokens / out
        # chunked prefill: a prompt longer than one iteration's token budget is spread over
        # several iterations, each re-reading the weights and the batch's KV and carrying the
        # running sequences' decode tokens (the budget also sizes activation memory)
        self.chunks = float(math.ceil(s / c.SCHEDULED_TOKENS_PER_ITERATION))

    def _comm(self, tokens: float) -> float:
        """:func:`_tp_comm_s` for this split."""
        if self.tp <= 1 or tokens <= 0:
            return 0.0
        nbytes = tokens * self.h * 2.0
        return 2.0 * self.layers * (self.comm_vol * nbytes / self.comm_den + c.COLLECTIVE_LATENCY_S)

    def phases(self, batch: int) -> tuple[_Phase, _Phase | None]:
        """(prefill, decode) phases for ``batch``, unboxed."""
        if not self.decoder:
            if isinstance(self.model, GenericModel):
                flops = self.flops_per * batch
                act = self.act_per * batch * 2.0
                mem_b = self.weights + act
                eff = self.eff
            else:
                flops = self.prompt_flops * batch / self.tp
                mem_b = self.weight_read
                eff = self.eff_p
            generic = isinstance(self.model, GenericModel)
            comm = 0.0 if generic else self._comm(float(self.s * batch))
            compute_s = flops / (self.tflops * 1e12 * eff)
            return (compute_s, mem_b / (self.bw * c.GB), comm, 0.0), None
        den_d = self.den_d
        lin_decode = batch * 2.0 * self.n_active / den_d
        att_decode = batch * 4.0 * self.layers * self.h * self.ctx / den_d
        kv_read = batch * self.ctx * self.kv_tok / self.kv_div
        if self.moe:
            assert isinstance(self.model, TransformerModel)
            w_s = _moe_weight_bytes_read(self.model, self.wbpp, batch) / self.tp / self.bytes_s
        else:
            w_s = self.w_s
        kv_s = kv_read / self.bytes_s
        share = batch / self.out
        decode = _seq(
            (lin_decode + share * self.lin_prompt, w_s),
            (att_decode + share * self.att_prompt, kv_s),
            self._comm(batch * self.decode_comm_tokens),
        )
        rest = (batch - 1) / batch
        k = self.chunks
        prefill = _seq(
            (self.lin_prompt + k * rest * lin_decode, k * w_s),
            (self.att_prompt + k * rest * att_decode, k * kv_s),
            self._comm(float(self.s + k * (batch - 1))),
        )
        return prefill, decode

    def timing(self, batch: int) -> Timing:
        pre, dec = self.phases(batch)
        return Timing(PhaseTime(pre[0], pre[1], pre[2], pre[3]),
                      None if dec is None else PhaseTime(dec[0], dec[1], dec[2], dec[3]), batch)

    def latency_ms(self, batch: int) -> tuple[float, float | None, float]:
        """:func:`latency_checks` of :meth:`timing` without building it."""
        pre, dec = self.phases(batch)
        ttft = _total(pre) * 1e3
        if dec is None:
            return ttft, None, ttft
        tpot = _total(dec) * 1e3
        return ttft, tpot, ttft + self.spec.output_tokens * tpot

    def check(self, batch: int) -> tuple[bool, float, float]:
        """(:meth:`meets`, the largest ratio of a latency figure to its limit, the latency
        [ms]) from one timing; the ratio only guides :func:`boundary`, ``meets`` decides."""
        spec = self.spec
        ttft, tpot, latency = self.latency_ms(batch)
        ok, worst = True, 0.0
        for value, limit in ((ttft, spec.max_ttft_ms), (tpot, spec.max_tpot_ms),
                             (latency, spec.max_latency_ms)):
            if limit is not None and value is not None:
                ok = ok and not value > limit
                worst = max(worst, value / limit if limit > 0 else math.inf)
        return ok, worst, latency

    def meets(self, batch: int) -> bool:
        """:func:`meets` of :meth:`timing`."""
        spec = self.spec
        ttft, tpot, latency = self.latency_ms(batch)
        if spec.max_ttft_ms is not None and ttft > spec.max_ttft_ms:
            return False
        if spec.max_tpot_ms is not None and tpot is not None and tpot > spec.max_tpot_ms:
            return False
        return spec.max_latency_ms is None or latency <= spec.max_latency_ms


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
    The weight GEMMs (all tokens of the iteration) and attention (each sequence's own KV cache)
    run in sequence, each with its own roofline (:func:`performance.sequential`). TTFT is one
    such iteration carrying a whole prompt (no queueing), or ceil(prompt / budget) of them when
    the prompt exceeds :data:`constants.SCHEDULED_TOKENS_PER_ITERATION` (chunked prefill).
    Activation memory is sized for that budget (:func:`memory.serving_activation_bytes`);
    the steady-state iteration may carry more tokens than the budget at large batches, which
    for compute-bound iterations gives the same throughput as splitting it. PP stages run one
    after another for one batch: full FLOPs and bytes at one GPU's rate.
    """
    return Roofline(workload, gpu, rate, placement.tp, placement.layout.tp_link_gb_s).timing(batch)


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


def requests_per_s(spec: InferenceSpec, t: Timing, pp: int, replicas: int) -> float:
    """:func:`throughput`'s requests/s without building a :class:`Placement`."""
    if t.decode is not None and spec.output_tokens > 0:
        cycle = spec.output_tokens * t.decode.total_s
    else:
        cycle = t.ttft_s
    return t.batch / cycle * pp * replicas


def largest_meeting(roof: Roofline) -> int:
    """Largest batch up to :data:`MAX_AUTO_BATCH` meeting the latency limits (0: none).

    TTFT, TPOT and latency all grow with the batch (each iteration's time is a sum of maxima
    of terms affine in it, MoE weight reads rise with it), so the predicate is monotone and a
    bisection finds the boundary: O(log batch) evaluations, once per TP degree."""
    hi = int(c.MAX_AUTO_BATCH)
    ok_hi, g_hi, _ = roof.check(hi)
    if ok_hi:
        return hi
    if hi == 1:
        return 0
    ok_lo, g_lo, lat_lo = roof.check(1)
    return boundary(roof, 1, hi, (g_lo, g_hi, lat_lo))[0] if ok_lo else 0


def boundary(
    roof: Roofline, lo: int, hi: int, seed: tuple[float, float, float], stop_at: float = math.inf
) -> tuple[int, float]:
    """The largest batch in [lo, hi) meeting the limits and its latency [ms], given that
    ``lo`` meets them and ``hi`` does not (``seed``: their ratios from
    :meth:`Roofline.check`, and the latency at ``lo``); returns early, with a smaller batch,
    once that latency reaches ``stop_at`` (a caller after the least latency needs no more).
    The predicate is monotone, so any probe order keeps a valid bracket and gives the
    bisection's answer; the figures are nearly affine in the batch, so probing where the
    ratio crosses 1 (regula falsi; next to it too when within :data:`NEAR_LIMIT`) closes the
    bracket in a few timings, bisecting after two steps that removed little of it."""
    g_lo, g_hi, lat_lo = seed
    poor = 0  # interpolation steps in a row that removed under a quarter of the bracket
    while hi - lo > 1 and lat_lo < stop_at:
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


def best_batch(
    workload: Workload,
    gpu: GpuSpec,
    placement: Placement,
    rate: PeakRate,
    max_fit: int,
) -> Timing | None:
    """Largest batch (most requests/s) that fits memory and meets the latency limits, None
    when batch 1 misses (see :func:`largest_meeting`)."""
    roof = Roofline(workload, gpu, rate, placement.tp, placement.layout.tp_link_gb_s)
    batch = clamp_batch(largest_meeting(roof), max_fit)
    return None if batch is None else roof.timing(batch)


def clamp_batch(limit_batch: int, max_fit: int) -> int | None:
    """The best batch given the largest meeting the limits and the memory maximum."""
    hi = max(1, min(max_fit, int(c.MAX_AUTO_BATCH)))
    if hi <= limit_batch:
        return hi
    return limit_batch or None


class Context:
    """What every GPU count of one (workload, GPU, rate) shares: a split's sizing, link,
    roofline and largest batch meeting the limits do not depend on the count (only the
    replicas and the layout record do), so each is computed once per split, not per count."""

    def __init__(
        self, workload: Workload, gpu: GpuSpec, precision_used: Precision, rate: PeakRate | None
    ) -> None:
        self.workload, self.gpu, self.precision, self.rate = workload, gpu, precision_used, rate
        self.usable = mem.usable_memory_bytes(gpu.memory_gb)
        model = workload.model
        assert model is not None
        self.heads = model.attention_heads if isinstance(model, TransformerModel) else None
        self.layers = model.layers if isinstance(model, TransformerModel) else 0
        self._sizes: dict[tuple[int, int], Sizing] = {}
        self._roofs: dict[int, Roofline] = {}
        self._limits: dict[int, int] = {}
        self._fits: dict[tuple[int, int, int], bool] = {}

    def sizing(self, tp: int, pp: int) -> Sizing:
        key = (tp, pp)
        if key not in self._sizes:
            self._sizes[key] = sizing(self.workload, self.precision, tp, pp)
        return self._sizes[key]

    def fits(self, tp: int, pp: int, batch: int) -> bool:
        key = (tp, pp, batch)
        ok = self._fits.get(key)
        if ok is None:
            ok = self._fits[key] = self.sizing(tp, pp).breakdown(batch).total * c.GB <= self.usable
        return ok

    def splits(self, gpu_count: int) -> list[tuple[int, int]]:
        """Every model split, smallest first: TP inside a fast domain, then PP on top of it."""
        if self.heads is None:
            return [(1, 1)]
        heads = self.heads
        tps = [t for t in par.tp_candidates(self.gpu, gpu_count) if heads % t == 0]
        out = [(t, 1) for t in tps]
        top = tps[-1]
        out += [(top, p) for p in par.powers_of_two_upto(gpu_count // top) if 1 < p <= self.layers]
        return out

    def placement(self, gpu_count: int, tp: int, pp: int) -> Placement:
        layout = par.make_layout(self.gpu, gpu_count, tp, pp, "none")
        return Placement(layout, tp, pp, max(1, gpu_count // (tp * pp)))

    def roofline(self, tp: int) -> Roofline:
        roof = self._roofs.get(tp)
        if roof is None:
            assert self.rate is not None
            link = par.group_link(self.gpu, tp, spans_nodes=False)[1]
            roof = self._roofs[tp] = Roofline(self.workload, self.gpu, self.rate, tp, link)
        return roof

    def limit_batch(self, tp: int) -> int:
        if tp not in self._limits:
            self._limits[tp] = largest_meeting(self.roofline(tp))
        return self._limits[tp]


@functools.lru_cache(maxsize=CONTEXT_CACHE_SIZE)
def context(
    workload: Workload, gpu: GpuSpec, precision_used: Precision, rate: PeakRate | None = None
) -> Context:
    """The shared :class:`Context`, memoized: every count of a GPU type asks for it in turn
    (``rate`` None: sizing and placement only)."""
    return Context(workload, gpu, precision_used, rate)


def placements(
    workload: Workload, gpu: GpuSpec, gpu_count: int, precision_used: Precision, batch: int
) -> list[tuple[Placement, Sizing, bool]]:
    """Every model split, smallest first, with its sizing and whether ``batch`` fits."""
    ctx = _context_for(workload, gpu, precision_used)
    return [
        (ctx.placement(gpu_count, tp, pp), ctx.sizing(tp, pp), ctx.fits(tp, pp, batch))
        for tp, pp in ctx.splits(gpu_count)
    ]


def place(
    workload: Workload, gpu: GpuSpec, gpu_count: int, precision_used: Precision, batch: int
) -> tuple[Placement, Sizing, bool]:
    """Smallest model split that fits ``batch`` sequences (the largest split if none fits)."""
    ctx = _context_for(workload, gpu, precision_used)
    splits = ctx.splits(gpu_count)
    tp, pp = next((s for s in splits if ctx.fits(s[0], s[1], batch)), splits[-1])
    return ctx.placement(gpu_count, tp, pp), ctx.sizing(tp, pp), ctx.fits(tp, pp, batch)


def fits_any(
    workload: Workload, gpu: GpuSpec, gpu_count: int, precision_used: Precision, batch: int
) -> bool:
    """``place(...)[2]`` without building a placement: whether some split fits ``batch``."""
    ctx = _context_for(workload, gpu, precision_used)
    return any(ctx.fits(tp, pp, batch) for tp, pp in ctx.splits(gpu_count))


def _context_for(workload: Workload, gpu: GpuSpec, precision_used: Precision) -> Context:
    return context(workload, gpu, precision_used)
