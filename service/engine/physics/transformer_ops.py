"""The operators of one transformer layer, timed on one :class:`~kernels.Device`.

A layer (per GPU, tensor-parallel degree t) runs, for ``tokens`` rows:

* GEMMs: QKV (h -> (a + 2g) d / t), attention output (a d / t -> h), MLP up (+ gate for
  gated MLPs: h -> m f / t) and down (f / t -> h); MoE layers run the MLP GEMMs per expert
  over the tokens routed to it (tokens x k / E rows each).
* attention: flash-style, its FLOPs at the attention rate and its bytes (Q, K, V, O, and the
  KV cache read by decoding sequences) at memory bandwidth, one kernel;
* non-GEMM ops: norms, residual adds, rotary/bias (:data:`constants.TRANSFORMER_ELEMENTWISE_PASSES`
  vectors of h per token) and the MLP activation (m + 1 vectors of f / t), memory-bound;
* :data:`constants.TRANSFORMER_KERNELS_PER_LAYER` kernel launches.

Each kernel is bound by the larger of its compute and memory times (sum of maxima), so a
large GPU that is fast at GEMMs still waits on the memory-bound ops: what makes small models
scale with bandwidth rather than with tensor peak.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from statistics import NormalDist

from service.engine import constants as c
from service.engine.cache import Memo, memo_of
from service.engine.physics.kernels import Device, GemmShape, Kernel, gemm
from service.engine.types import TransformerModel


def _attention_params(model: TransformerModel) -> float:
    """One layer's attention weights, unsplit: QKV (the KV heads' share) and the output."""
    h, a, g = model.hidden_size, model.attention_heads, model.kv_heads
    d = h / a
    return h * (a + 2 * g) * d + a * d * h


def mlp_matrices(model: TransformerModel) -> int:
    """2 (GELU MLP: up, down) or 3 (gated SwiGLU/GeGLU: gate, up, down), whichever makes the
    layer shapes add up to the model's parameter count (embeddings tied or not)."""
    h, f = model.hidden_size, model.intermediate_size
    attn = _attention_params(model)
    best, best_err = 2, math.inf
    for mats in (2, 3):
        body = model.layers * (attn + mats * h * f * model.experts)
        for embeddings in (1, 2):
            err = abs(body + embeddings * model.vocab_size * h - model.params)
            if err < best_err:
                best, best_err = mats, err
    return best


def layer_forward_flops_per_token(model: TransformerModel) -> float:
    """GEMM FLOPs of one token's forward pass through every layer, unsplit: QKV, attention
    output and the MLP through its ``experts_per_token`` experts (:class:`LayerOps`' shapes
    at TP 1, whose KV heads are never replicated; attention scores, the embedding and the LM
    head not included). A TP split only adds (replicated KV heads)."""
    h, f = model.hidden_size, model.intermediate_size
    return 2.0 * model.layers * (_attention_params(model)
                                 + mlp_matrices(model) * h * f * model.experts_per_token)


class LayerOps:
    """Shapes of one layer split ``tp`` ways, and the device they run on."""

    def __init__(
        self, model: TransformerModel, dev: Device, tp: int, act_bytes: float, w_bytes: float
    ) -> None:
        h, a = model.hidden_size, model.attention_heads
        g, f = model.kv_heads, model.intermediate_size
        d = h / a
        self.dev, self.h, self.tp = dev, h, tp
        self.act_b, self.w_b = act_bytes, w_bytes
        mats = mlp_matrices(model)
        self.qkv_n = (a + 2 * max(g, tp)) * d / tp  # KV heads replicated when g < t
        self.o_k = a * d / tp
        self.up_n = (mats - 1) * f / tp
        self.down_k = f / tp
        self.experts = model.experts
        self.top_k = model.experts_per_token
        self.elementwise = (c.TRANSFORMER_ELEMENTWISE_PASSES * h + mats * f / tp) * act_bytes
        # MoE: each token's extra experts add half a dense layer's elementwise traffic each
        self.moe_elementwise = 1.0 + (self.top_k - 1) * 0.5
        self.kernels_s = c.TRANSFORMER_KERNELS_PER_LAYER * dev.kernel_s
        self.vocab_n = model.vocab_size / tp
        self.layers = model.layers
        self.moe = model.experts > 1
        # expected largest of E standard normals (Blom's order-statistic approximation)
        self.max_z = NormalDist().inv_cdf((model.experts - 0.375) / (model.experts + 0.25)) \
            if self.moe else 0.0
        self.qkv = self.shape(self.qkv_n, h)
        self.out = self.shape(h, self.o_k)
        self.up = self.shape(self.up_n, h)
        self.down = self.shape(h, self.down_k)
        self.head = self.shape(self.vocab_n, h)
        # backward data gradients (tokens x k from tokens x n): N and K fixed per layer GEMM,
        # built once with the rest; the weight gradients reduce over the tokens (K varies)
        self.grads = tuple(self.shape(k, n) for n, k in self._weights())
        self.head_grad = self.shape(h, self.vocab_n)
        self.stacked: object | None = None
        """The five GEMM shapes as arrays, built by :mod:`batched` on first use."""

    def _weights(self) -> tuple[tuple[float, float], ...]:
        """(n, k) of the layer's four weight GEMMs: QKV, attention output, MLP up, MLP down."""
        h = self.h
        return ((self.qkv_n, h), (h, self.o_k), (self.up_n, h), (h, self.down_k))

    def shape(self, n: float, k: float) -> GemmShape:
        return GemmShape(self.dev, n, k, in_bytes=self.act_b, weight_bytes=self.w_b,
                         out_bytes=self.act_b)

    def gemm(self, m: float, n: float, k: float, groups: float = 1.0) -> tuple[float, float]:
        return gemm(self.dev, m, n, k, in_bytes=self.act_b, weight_bytes=self.w_b,
                    out_bytes=self.act_b, groups=groups)

    def forward(
        self, tokens: float, attn_flops: float, attn_bytes: float, touched: float = 1.0
    ) -> tuple[float, float, float]:
        """(compute_s, memory_s, total_s) of one layer's forward over ``tokens`` rows, with
        ``attn_flops`` [FLOP] and ``attn_bytes`` [B] of attention on this GPU; ``touched``:
        share of the experts any token is routed to (MoE)."""
        kernels = [self.qkv.time(tokens), self.out.time(tokens)]
        if self.moe:
            groups, rows, busiest = self.expert_rows(tokens, touched)
            for shape in (self.up, self.down):
                kernels.append(per_expert(shape.time, groups, rows, busiest))
            elementwise = self.elementwise * tokens * self.moe_elementwise
        else:
            kernels.append(self.up.time(tokens))
            kernels.append(self.down.time(tokens))
            elementwise = self.elementwise * tokens
        dev = self.dev
        kernels.append((attn_flops / dev.attention_flops_s, attn_bytes / dev.bytes_s))
        compute = memory = total = 0.0
        for k0, k1 in kernels:
            compute += k0
            memory += k1
            total += k0 if k0 > k1 else k1
        mem_s = elementwise / dev.bytes_s
        return compute, memory + mem_s, total + mem_s + self.kernels_s

    def expert_rows(self, tokens: float, touched: float = 1.0) -> tuple[float, float, float]:
        """(experts run, mean rows per expert, the busiest expert's rows) over ``tokens``
        tokens when a share ``touched`` of the experts is routed to."""
        groups = max(1.0, self.experts * touched)
        rows = tokens * self.top_k / groups
        return groups, rows, max(rows, self.busiest_expert_rows(tokens))

    def busiest_expert_rows(self, tokens: float) -> float:
        """Expected rows of the busiest expert when ``tokens`` tokens each pick k of E experts
        uniformly: an expert's load is Binomial(tokens, k/E), mean m = tokens k/E, sd
        s = sqrt(tokens (k/E)(1 - k/E)); the largest of E is ~ m + z_E s (normal approximation,
        z_E = the expected largest of E standard normals, Blom's approximation: 1.43 for
        E = 8, 2.34 for E = 64), at most ``tokens``. For scale: capacity-factor runtimes
        (GShard / Switch Transformer) size every expert's buffer at 1.0-1.25 x the mean load
        (Fedus et al. 2021, sec. 2.2);
        dropless grouped GEMMs (vLLM, TensorRT-LLM) pay the busiest expert's extra tiles.
        The excess vanishes in relative terms as tokens grow (s / m ~ 1 / sqrt(m)).
        :meth:`forward` runs the busiest expert at this load and the other E - 1 at the mean."""
        p = self.top_k / self.experts
        mean = tokens * p
        return min(tokens, mean + self.max_z * math.sqrt(tokens * p * (1.0 - p)))

    def backward(self, tokens: float, attn_flops: float, attn_bytes: float) -> tuple[
            float, float, float]:
        """(compute_s, memory_s, total_s) of one layer's backward: each GEMM's data gradient
        (tokens x k from tokens x n) and weight gradient (k x n reduced over tokens), MoE MLP
        GEMMs over the rows routed to each expert (the busiest at its own load, as
        :meth:`forward`), attention backward (``attn_flops`` and ``attn_bytes``: the
        backward's own), and :data:`constants.BACKWARD_ELEMENTWISE_FACTOR` x the forward
        non-GEMM traffic."""
        kernels = []
        moe = self.moe
        groups = rows = busiest = 0.0
        if moe:
            groups, rows, busiest = self.expert_rows(tokens)
        for w, ((n, k), grad) in enumerate(zip(self._weights(), self.grads, strict=True)):
            if moe and w >= 2:  # the MLP's up and down GEMMs, per expert
                kernels.append(per_expert(grad.time, groups, rows, busiest))
                kernels.append(per_expert(partial(self.gemm, k, n), groups, rows, busiest))
                continue
            kernels.append(grad.time(tokens))
            kernels.append(self.gemm(k, n, tokens))
        dev = self.dev
        kernels.append((attn_flops / dev.attention_flops_s, attn_bytes / dev.bytes_s))
        compute = memory = total = 0.0
        for k0, k1 in kernels:
            compute += k0
            memory += k1
            total += k0 if k0 > k1 else k1
        # the MoE factor is 1 for dense layers (an exact product)
        mem_s = (c.BACKWARD_ELEMENTWISE_FACTOR * self.elementwise * tokens
                 * self.moe_elementwise / dev.bytes_s)
        return compute, memory + mem_s, total + mem_s + 2.0 * self.kernels_s

    def lm_head(self, rows: float) -> tuple[float, float]:
        """(compute_s, memory_s) of the vocabulary projection for ``rows`` tokens."""
        return self.head.time(rows)


def per_expert(time: Callable[[float, float], Kernel], groups: float, rows: float,
               busiest: float) -> Kernel:
    """(compute_s, memory_s) of one GEMM run by ``groups`` experts (``time(rows, groups)``):
    the busiest expert at its own ``busiest`` rows and the others at the mean ``rows``, or
    all at the mean when none is busier (:meth:`LayerOps.expert_rows`)."""
    if groups > 1.0 and busiest > rows:
        (c0, m0), (c1, m1) = time(rows, groups - 1.0), time(busiest, 1.0)
        return c0 + c1, m0 + m1
    return time(rows, groups)


def backward_attention_factor(flash: bool) -> float:
    """Attention backward FLOPs over forward: 2.5 with FlashAttention (dQ, dK, dV and dP, 4
    matmuls to the forward's 2, plus the scores recomputed: Dao et al. 2022, sec. 3.1), 2 for
    eager attention (the scores were kept)."""
    return 2.5 if flash else 2.0


def layer_ops(
    model: TransformerModel, dev: Device, tp: int, act_bytes: float, w_bytes: float,
    memo: Memo | None = None,
) -> LayerOps:
    """The :class:`LayerOps` of (model, device, TP, element sizes): none of it depends on a
    request's amounts, so with a ``memo`` one is built per key and kept in the shared engine
    cache (its GEMM shapes are immutable once built)."""
    return memo_of(memo).get("layer_ops", (model, dev, tp, act_bytes, w_bytes),
                             lambda: LayerOps(model, dev, tp, act_bytes, w_bytes))


def attention_flops(model: TransformerModel, pairs: float, tp: int) -> float:
    """Attention FLOPs on one GPU: QK^T and PV, 2 x 2 x d per (query, key) pair per head,
    over a / t heads; ``pairs`` = (query, key) pairs per head summed over the queries."""
    return 4.0 * pairs * model.hidden_size / tp


def kv_bytes_per_token_layer(model: TransformerModel, kv_bytes_per_token: float, tp: int) -> float:
    """KV bytes of one token in one layer on one GPU (KV heads split over min(t, g) ranks)."""
    return kv_bytes_per_token / model.layers / min(tp, model.kv_heads)
