"""Latency floors of a serving option at the load it carries (transformers with a target).

:mod:`inference_floors` bounds a count's latency at batch 1: no option of the count is faster.
But an option carrying an offered load runs at the batch the load settles at
(:func:`estimate.operating_batch`: the least batch whose requests/s cover the load per
replica), and on a busy replica that batch, hence the latency, is far above batch 1: the
balanced objective ranks that latency, so a batch-1 floor left most GPU types of a large
catalog unpruned (their floors a third of their real scores).

The load a replica carries is bounded below by what its copies share. A count of ``n`` GPUs
on split (tp, pp) runs ``g = n // (tp pp)`` replicas, and an option of ``k`` copies of the
count puts ``target / (k g)`` requests/s on each; the replica's requests/s at batch ``b`` are
``b x pp / (out x iteration(b))`` (:func:`serving.requests_per_s`: ``out`` output tokens per
request, ``iteration`` the mean decode iteration, or the busiest stage times ``pp`` when that
is longer; encoders: ``b x pp / forward(b)``). The operating batch covers its load, so

    b >= target / (k g) x out x iteration(b) / pp >= target tp / (k n) x out x F_tp(b),

with ``g pp tp <= n`` and ``F_tp`` the floor of the mean iteration at TP ``tp``
(:func:`inference_floors._tpot`, which holds for any pipeline depth). ``F_tp`` grows with the
batch (every kernel's rows, bytes and the KV read grow), so starting from ``b = 1`` the
iteration ``b <- ceil(load x out x F_tp(b))`` only rises and stays at or below the operating
batch; the latency floor at the batch it reaches (:func:`inference_floors._latency_s`, also
growing with the batch) bounds the option's latency. It depends on ``target tp / (k n)``
only: with ``m = k n / tp`` TP groups sharing the target, this module tabulates it per TP
degree at ``m = 1, 2, 4, ...`` (a larger ``m`` only lowers it, so an ``m`` in between takes
the next power of two) until the batch reached is 1, where it equals the batch-1 floor.

:func:`count_pairs` turns that into the balanced search's floors of a count: an option of
``k`` copies pays for ``n k`` GPUs (:func:`bounds.count_floors`' cost floor at ``k``) and is
no faster than the floor at ``k``; the copies are unknown before estimating, so the count gets
one (cost, time) pair per range of ``k`` (the range's least cost, its largest ``k``'s time)
and a last pair for every larger ``k`` (the batch-1 floor). Every option of the count is at
or above one of its pairs in both figures, so the least balanced score over the pairs bounds
the count (:class:`search.BalancedSearch`).

A decoder's request floor (GPU-seconds per request: the cost floor of every count, with or
without a target) is raised here too (:func:`_decode_request_s`): :func:`inference_floors.
_request_s` counts FLOPs alone, as if a batch could grow without end and hide the weight reads,
but an option's batch stops where the latency limits are met (the floors reach them first:
:func:`_batch_ceiling`), and the iterations a request shares with the others' prompt chunks
take that time too. On chat workloads (TPOT limits, prompts of thousands of tokens) it is
within a few percent of the best option's; the FLOPs-only floor was two thirds of it.

Dense transformers only (MoE routing is left to the batch-1 floor), with a target and no fixed
batch (the request floor: dense decoders, any target or batch). Compiled (numba) with
:mod:`compiled`'s settings: the same operations in the same order as :mod:`inference_floors`'
numpy (``tests/unit/test_load_floors.py`` compares them and checks every pair, and the request
floor, against the engine's own options).

Units: seconds [s] inside, milliseconds [ms] out, requests/s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from service.engine import constants as c
from service.engine.cache import Memo
from service.engine.choice import inference_floors as ifl
from service.engine.physics.compiled import _jit
from service.engine.physics.estimate import workload_rate
from service.engine.types import GpuSpec, TransformerModel, Workload

Array = NDArray[np.float64]

# a TP degree's figures, packed (:func:`_pack`)
_MATRIX, _ATTENTION, _BYTES, _KERNEL_S, _SMS, _LINK_S, _LINK_LAT, _TP = 0, 1, 2, 3, 4, 5, 6, 7
_LAYERS, _H, _QKV_N, _O_K, _UP_N, _DOWN_K, _ELEMENTWISE, _MOE_EL = 8, 9, 10, 11, 12, 13, 14, 15
_VOCAB_N, _ACT_B, _W_B, _COLL_B, _KPL, _DECODER, _S, _TOKENS = 16, 17, 18, 19, 20, 21, 22, 23
_PROMPT_ATTN, _PROMPT_ATTN_BYTES, _OUT, _CTX, _KV_LAYER, _KV_BLOCKS = 24, 25, 26, 27, 28, 29
_DECODE_ATTN, _CHUNKS, _STEP, _PER_SEQ = 30, 31, 32, 33
_WIDTH = 34

LEVELS = 32
"""Powers of two of TP groups tabulated (``m`` up to 2^31): past the last, the batch-1 floor."""
_MAX_STEPS = 16
"""Rounds of the batch iteration at most (each only raises the batch, so stopping early keeps
the floor a floor; it converges in a few unless the load nearly saturates the replica)."""
_LOAD_SLACK = 1e-6
"""The load is lowered by this much (the operating batch covers it to 1e-9, ``copies_needed``
rounds to 1e-9): far above float rounding, far below any figure that matters."""


@_jit
def _gemm(p: Array, flops: float, nbytes: float) -> float:
    """:func:`inference_floors._gemm` on one GPU."""
    a: float = flops / p[_MATRIX]
    b: float = nbytes / p[_BYTES]
    return a if a >= b else b


@_jit
def _layer_gemm(p: Array, j: int) -> tuple[float, float]:
    """(N, K) of a dense layer's ``j``-th GEMM (QKV, output, up, down projections)."""
    h = p[_H]
    if j == 0:
        return p[_QKV_N], h
    if j == 1:
        return h, p[_O_K]
    if j == 2:
        return p[_UP_N], h
    return h, p[_DOWN_K]


@_jit
def _iteration(p: Array, rows: float, attn_flops: float, attn_bytes: float, head_rows: float,
               fixed: float) -> float:
    """:func:`inference_floors._iteration` of a dense layer stack on one GPU."""
    h, act_b, w_b = p[_H], p[_ACT_B], p[_W_B]
    layer = 0.0
    if rows > 0:
        for j in range(4):
            n, k = _layer_gemm(p, j)
            layer += _gemm(p, 2.0 * rows * n * k, k * n * w_b + rows * (k + n) * act_b)
        layer += p[_ELEMENTWISE] * rows * p[_MOE_EL] / p[_BYTES]
    a = attn_flops / p[_ATTENTION]
    b = attn_bytes / p[_BYTES]
    layer += a if a >= b else b
    layer += p[_KPL] * p[_KERNEL_S]
    total = layer * p[_LAYERS] + fixed
    if head_rows > 0:
        v = p[_VOCAB_N]
        total += _gemm(p, 2.0 * head_rows * v * h, h * v * w_b + head_rows * (h + v) * act_b)
    tp = p[_TP]
    if tp > 1 and rows > 0:
        vol = 2.0 * (tp - 1) / tp
        total += 2.0 * p[_LAYERS] * (vol * rows * h * p[_COLL_B] / p[_LINK_S] + p[_LINK_LAT])
    out: float = total
    return out


@_jit
def _kv_read(p: Array, seqs: float) -> float:
    """:func:`inference_floors._kv_read` on one GPU."""
    if seqs <= 0:
        return 0.0
    blocks = seqs * p[_KV_BLOCKS]
    sms = p[_SMS]
    stretch = sms / blocks if blocks < sms else 1.0
    out: float = seqs * p[_CTX] * p[_KV_LAYER] * stretch
    return out


@_jit
def _tpot(p: Array, b: float) -> float:
    """:func:`inference_floors._tpot` on one GPU (its fixed time per iteration: the step's and
    ``b`` sequences')."""
    fixed = p[_STEP] + p[_PER_SEQ] * b
    kv = _kv_read(p, b)
    arrivals = b - 1.0
    chunked = arrivals * p[_CHUNKS]
    out_n, s = p[_OUT], p[_S]
    if chunked >= out_n:
        share = arrivals / out_n
        return _iteration(p, b + share * s, b * p[_DECODE_ATTN] + share * p[_PROMPT_ATTN],
                          kv + share * p[_PROMPT_ATTN_BYTES], b, fixed)
    alone = _decode_only(p, b)
    if chunked <= 0.0:
        return alone
    k = p[_CHUNKS]
    mixed = _iteration(p, b + s / k, b * p[_DECODE_ATTN] + p[_PROMPT_ATTN] / k,
                       kv + p[_PROMPT_ATTN_BYTES] / k, b, fixed)
    f = chunked / out_n
    out: float = f * mixed + (1.0 - f) * alone
    return out


@_jit
def latency_s(p: Array, batch: float) -> float:
    """:func:`inference_floors._latency_s` on one GPU (end-to-end latency floor at ``batch``)."""
    b = batch
    if p[_DECODER] <= 0.0:
        return _iteration(p, b * p[_TOKENS], b * p[_PROMPT_ATTN], b * p[_PROMPT_ATTN_BYTES],
                          0.0, 0.0)
    out: float = _ttft_s(p, b) + p[_OUT] * _tpot(p, b)
    return out


@_jit
def _ttft_s(p: Array, b: float) -> float:
    """A decoder's time-to-first-token floor [s] at batch ``b`` (:func:`latency_s`'s first
    term): its prompt's chunks, each in an iteration beside the ``b - 1`` others' decodes."""
    k, rest = p[_CHUNKS], b - 1.0
    chunk = _iteration(p, p[_S] / k + rest, p[_PROMPT_ATTN] / k + rest * p[_DECODE_ATTN],
                       p[_PROMPT_ATTN_BYTES] / k + _kv_read(p, rest), 1.0 + rest,
                       p[_STEP] + p[_PER_SEQ] * (1.0 + rest))
    out: float = k * chunk
    return out


@_jit
def cycle_s(p: Array, b: float, output_tokens: float) -> float:
    """Floor [s] of the time a replica's batch of ``b`` takes to complete (the denominator of
    its requests/s before the pipeline's factor): ``output_tokens`` mean iterations, or an
    encoder's forward pass."""
    if p[_DECODER] <= 0.0:
        return latency_s(p, b)
    out: float = output_tokens * _tpot(p, b)
    return out


_LIMIT_SLACK = 1e-6
"""A floor counts as over a latency limit only past this relative margin (the floors are
in seconds, the limits and the estimate's figures in milliseconds: rounding, ~1e-16, is far
inside)."""


@_jit
def _over(p: Array, b: float, limits: Array) -> float:
    """The floors at batch ``b`` over their limits, the largest ratio (TPOT: :func:`_tpot`;
    TTFT: :func:`_ttft_s`; end-to-end latency: their sum, :func:`latency_s`; ``limits`` [s]:
    TTFT, TPOT, latency, inf: none). Every floor grows with the batch, so the ratio does."""
    tpot = _tpot(p, b)
    worst: float = tpot / limits[1]
    if limits[0] < math.inf or limits[2] < math.inf:
        ttft = _ttft_s(p, b)
        worst = max(worst, ttft / limits[0], (ttft + p[_OUT] * tpot) / limits[2])
    return worst


_CEILING_WIDTH = 1.0 / 64
"""The batch ceiling's search stops once the batches left between the last within the limits
and the first over them are this share of the former or fewer (:func:`_batch_ceiling`: it
then takes the largest of them, a ceiling at most this much loose)."""


@_jit
def _batch_ceiling(p: Array, top: int, fixed: int, limits: Array) -> int:
    """A batch no decoder's option on this TP degree runs above: the request's batch where it
    fixes one, else the largest up to ``top`` whose floors are within the limits
    (:func:`_over` at most 1 + :data:`_LIMIT_SLACK`: an estimate's figures are at or above
    the floors, so a batch past it misses a limit), found by regula falsi on the ratio (it
    grows with the batch, nearly in proportion) and bisection after two poor steps, to within
    :data:`_CEILING_WIDTH`; at least 1 (an option whose limits no batch meets runs at
    batch 1)."""
    if fixed > 0:
        return fixed
    near = 1.0 + _LIMIT_SLACK
    g_hi = _over(p, float(top), limits)
    if g_hi <= near:
        return top
    g_lo = _over(p, 1.0, limits)
    if g_lo > near:
        return 1
    lo, hi = 1, top
    poor = 0
    while hi - lo > 1 and hi - lo > lo * _CEILING_WIDTH:
        width = hi - lo
        mid = (lo + hi) // 2
        if poor < 2 and g_hi > g_lo:
            mid = lo + int((near - g_lo) / (g_hi - g_lo) * width)
            mid = min(max(mid, lo + 1), hi - 1)
        g = _over(p, float(mid), limits)
        if g <= near:
            lo, g_lo = mid, g
        else:
            hi, g_hi = mid, g
        poor = poor + 1 if 4 * (width - (hi - lo)) < width else 0
    return hi - 1


@_jit
def _decode_only(p: Array, b: float) -> float:
    """The floor [s] of a decode-only iteration of ``b`` sequences (:func:`_tpot`'s
    ``alone``)."""
    return _iteration(p, b, b * p[_DECODE_ATTN], _kv_read(p, b), b, p[_STEP] + p[_PER_SEQ] * b)


@_jit
def _chunk_s(p: Array) -> float:
    """The least time [s] one prompt chunk adds to an iteration of any batch of one or more
    (:func:`_tpot`'s ``mixed`` over ``alone``): each GEMM's time is the larger of two affine
    functions of its rows, so convex, and adds the least at the fewest rows (one); attention
    adds at least the lesser of the chunk's FLOPs at its rate and its bytes at bandwidth; the
    elementwise traffic and the TP all-reduce add in proportion to the rows."""
    k = p[_CHUNKS]
    if k <= 0.0:
        return 0.0
    x = p[_S] / k
    h, act_b, w_b = p[_H], p[_ACT_B], p[_W_B]
    layer = 0.0
    for j in range(4):
        n, kk = _layer_gemm(p, j)
        one = _gemm(p, 2.0 * n * kk, kk * n * w_b + (kk + n) * act_b)
        more = _gemm(p, 2.0 * (1.0 + x) * n * kk, kk * n * w_b + (1.0 + x) * (kk + n) * act_b)
        layer += more - one
    layer += p[_ELEMENTWISE] * x * p[_MOE_EL] / p[_BYTES]
    a = p[_PROMPT_ATTN] / k / p[_ATTENTION]
    b = p[_PROMPT_ATTN_BYTES] / k / p[_BYTES]
    layer += a if a <= b else b
    total = layer * p[_LAYERS]
    tp = p[_TP]
    if tp > 1:
        total += 2.0 * p[_LAYERS] * 2.0 * (tp - 1) / tp * x * h * p[_COLL_B] / p[_LINK_S]
    out: float = total
    return out


@_jit
def _iteration_per_seq(p: Array, top: float, chunk: float) -> float:
    """A lower bound of ``F(b) / b`` over the batches ``1 <= b <= top``, ``F`` the mean
    iteration's floor (:func:`_tpot`). ``F(b) >= D(b) + min(1, (b - 1) k / out) C``: ``D`` the
    decode-only iteration (:func:`_decode_only`), ``C`` a chunk's least time
    (:func:`_chunk_s`), ``k`` the prompt's chunks (a request sees the ``b - 1`` others'
    chunks spread over its ``out`` iterations, at most one chunk's worth in each, and more
    rows, FLOPs and bytes never take less). ``D(b) / b`` never rises with the batch (each of
    its terms is a constant, or the larger of a constant and a multiple of ``b``, over
    ``b``) and ``min(1, (b - 1) k / out) / b`` rises, then falls: over each interval
    ``[top / 2^(i+1), top / 2^i]`` the bound takes ``D / b`` at the top end and the chunk
    term at the end where it is least (down to where ``D / b`` alone is above the least so
    far)."""
    k, out_n = p[_CHUNKS], p[_OUT]
    best = math.inf
    hi = top
    while True:
        lo = hi / 2.0 if hi / 2.0 > 1.0 else 1.0
        share_lo = (lo - 1.0) * k / out_n
        share_hi = (hi - 1.0) * k / out_n
        phi_lo = (share_lo if share_lo < 1.0 else 1.0) / lo
        phi_hi = (share_hi if share_hi < 1.0 else 1.0) / hi
        decode = _decode_only(p, hi) / hi
        if decode >= best:
            break  # every interval below takes at least this (``D / b`` grows as b falls)
        value = decode + chunk * (phi_lo if phi_lo < phi_hi else phi_hi)
        if value < best:
            best = value
        if lo <= 1.0:
            break
        hi = lo
    return best


@_jit
def _decode_request_s(packed: Array, tps: NDArray[np.int64], per_node: NDArray[np.int64],
                      top: int, fixed: int, limits: Array, out: Array) -> None:
    """``out[g]``: raised to the GPU-seconds a decoder's request needs at least on GPU ``g``,
    where that is more: on TP degree ``t`` at batch ``b``, a replica's requests/s are at most
    ``b pp / (out F_t(b))`` (:func:`serving.requests_per_s`, ``F_t`` the mean iteration's
    floor, :func:`_tpot`) on ``t pp`` GPUs, so a request takes ``t out F_t(b) / b`` GPU-s or
    more, at the batches up to the ceiling (:func:`_batch_ceiling`;
    :func:`_iteration_per_seq`). The least over the degrees the GPU's node holds."""
    for g in range(packed.shape[1]):
        best = math.inf
        for j in range(packed.shape[0]):
            if tps[j] > per_node[g]:
                continue
            p = packed[j, g]
            b = _batch_ceiling(p, top, fixed, limits)
            if fixed > 0:
                per_seq = _tpot(p, float(b)) / b
            else:
                per_seq = _iteration_per_seq(p, float(b), _chunk_s(p))
            value = tps[j] * p[_OUT] * per_seq
            if value < best:
                best = value
        if best < math.inf and best > out[g]:
            out[g] = best


@_jit
def _row(p: Array, target: float, output_tokens: float, max_batch: float, out: Array) -> None:
    """``out[j]``: the latency floor [s] of one TP degree's packed figures ``p`` with the
    target shared by ``2**j`` TP groups (see the module docstring); NaN past the level where
    the batch reached is 1 (the batch-1 floor holds from there)."""
    for j in range(out.shape[0]):
        load = target / 2.0 ** j * (1.0 - _LOAD_SLACK)
        b = 1.0
        for _ in range(_MAX_STEPS):
            need = math.ceil(load * cycle_s(p, b, output_tokens))
            if need <= b or b >= max_batch:
                break
            b = need if need < max_batch else max_batch
        if b <= 1.0:
            for rest in range(j, out.shape[0]):
                out[rest] = math.nan
            break
        out[j] = latency_s(p, b)


@_jit
def _table(packed: Array, target: float, output_tokens: float, max_batch: float,
           out: Array) -> None:
    """``out[i]``: :func:`_row` of TP degree row ``i`` of ``packed``."""
    for i in range(packed.shape[0]):
        _row(packed[i], target, output_tokens, max_batch, out[i])


@_jit
def _tables(packed: Array, tps: NDArray[np.int64], per_node: NDArray[np.int64],
            at: NDArray[np.intp], target: float, output_tokens: float, max_batch: float,
            out: Array) -> None:
    """``out[a, k]``: :func:`_row` of GPU ``at[a]``'s ``k``-th TP degree its node holds (rows
    of ``packed`` [TP degree, GPU, figure]); the rows past them are left as they are."""
    for a in range(at.shape[0]):
        g = at[a]
        k = 0
        for i in range(packed.shape[0]):
            if tps[i] <= per_node[g]:
                _row(packed[i, g], target, output_tokens, max_batch, out[a, k])
                k += 1


@_jit
def _ranges(latency: Array, tps: NDArray[np.int64], n: int, k0: int, out: Array) -> int:
    """``out[r]``: the least of ``latency[i, j]`` over the TP degrees ``tps[i] <= n``, at the
    least level ``j`` with ``2**j >= k n / tps[i]`` for ``k = k0 2**r`` (the target shared by
    ``k`` copies of ``n`` GPUs); returns how many ranges were filled (it stops where some
    degree is down to the batch-1 floor, NaN, or past the table)."""
    hi = float(k0)
    for r in range(out.shape[0]):
        best = math.inf
        for i in range(tps.shape[0]):
            t = tps[i]
            if t > n:
                continue
            m = hi * n / t
            j = 0
            while j < latency.shape[1] and 2.0 ** j < m:
                j += 1
            if j >= latency.shape[1]:
                return r
            value = latency[i, j]
            if math.isnan(value):
                return r
            if value < best:
                best = value
        if best == math.inf:
            return r
        out[r] = best
        hi *= 2.0
    filled: int = out.shape[0]
    return filled


@_jit
def _ranges_of(latency: Array, tps: NDArray[np.int64], counts: NDArray[np.int64],
               k0s: NDArray[np.int64], out: Array, filled: NDArray[np.int64]) -> None:
    """:func:`_ranges` of each of ``counts`` with its ``k0s`` into the rows of ``out``, how
    many each filled into ``filled``."""
    for i in range(counts.shape[0]):
        filled[i] = _ranges(latency, tps, counts[i], k0s[i], out[i])


@_jit
def _count_pairs(latency: Array, tps: NDArray[np.int64], per_node: NDArray[np.int64],
                 items: NDArray[np.int64], figures: Array, low: float, out: Array,
                 filled: NDArray[np.int64]) -> None:
    """:func:`bounds.count_pairs` of many GPUs' counts in one call, the same floats: item
    ``i`` is ``items[i]`` = (the GPU's row of ``latency`` [GPU, k, level], an
    :class:`AllTables`' array; ``n``; its least copies ``k0``) and ``figures[i]`` = (USD per
    GPU-hour, NaN: none; the GPU's :attr:`bounds.Floors.gpu_hours`, :attr:`paid_per_gpu`;
    the count's latency floor [ms], :func:`bounds.count_latency_floors`' figure; the GPU's
    :attr:`bounds.Pending.lb_time`). Its pairs go to ``out`` [pair, 2] after the items
    before it, ``filled[i]`` of them: the ranges'
    (:func:`_ranges` over the TP degrees of ``tps`` its node holds, ``per_node``), then the
    count's :func:`bounds.count_floors` pair at its batch-1 latency floor (alone where the
    count has no price or its GPU no paid work)."""
    held = np.empty(tps.shape[0], np.int64)
    ranges = np.empty(latency.shape[2])
    at = 0
    for i in range(items.shape[0]):
        g, n, k0 = items[i, 0], items[i, 1], items[i, 2]
        usd, hours0, paid = figures[i, 0], figures[i, 1], figures[i, 2]
        latency_ms, lb_time = figures[i, 3], figures[i, 4]
        # bounds.count_floors (inference, no job hours): Python's max, first of equals
        hours = hours0
        x = n * k0 * paid
        if x > hours:
            hours = x
        if 0.0 > hours:
            hours = 0.0
        base_time = lb_time if lb_time > latency_ms else latency_ms
        if math.isnan(usd) or not paid > 0.0:
            out[at, 0] = 0.0 if math.isnan(usd) else hours * usd
            out[at, 1] = base_time
            filled[i] = 1
            at += 1
            continue
        k = 0
        for j in range(tps.shape[0]):
            if tps[j] <= per_node[g]:
                held[k] = tps[j]
                k += 1
        got = _ranges(latency[g, :k], held[:k], n, k0, ranges)
        m = 0
        lo = hi = k0
        for r in range(got):
            found = ranges[r]
            if not found * low > base_time:
                break
            h = n * lo * paid
            h = h if h > hours0 else hours0
            out[at + m, 0] = h * usd
            out[at + m, 1] = found * low
            m += 1
            lo, hi = hi + 1, 2 * hi
        h = n * lo * paid
        h = h if h > hours0 else hours0
        out[at + m, 0] = h * usd
        out[at + m, 1] = base_time
        filled[i] = m + 1
        at += m + 1


def count_pairs_many(tables: AllTables, items: NDArray[np.int64], figures: Array,
                     low: float) -> list[list[tuple[float, float]]]:
    """:func:`_count_pairs` of ``items`` (their GPUs' rows of ``tables`` filled first): each
    item's pairs, as :func:`bounds.count_pairs` lists them."""
    tables.ensure(np.unique(items[:, 0]).astype(np.intp))
    out = np.empty((len(items) * (LEVELS + 1), 2))
    filled = np.empty(len(items), np.int64)
    _count_pairs(tables.latency_ms, tables.tps, tables.per_node, items, figures, low, out,
                 filled)
    ends = np.cumsum(filled).tolist()
    flat: list[tuple[float, float]] = list(map(tuple, out[:ends[-1] if ends else 0].tolist()))
    return [flat[end - got:end] for end, got in zip(ends, filled.tolist(), strict=True)]


def _shape_row(sh: ifl._Shapes, model: TransformerModel, tp: int) -> Array:
    """TP degree ``tp``'s figures that do not depend on the device, packed (device slots 0)."""
    ops, ln = sh.ops, sh.ln
    out = np.zeros(_WIDTH)
    out[_TP], out[_LAYERS], out[_H] = tp, model.layers, float(ops.h)
    out[_QKV_N], out[_O_K], out[_UP_N], out[_DOWN_K] = ops.qkv_n, ops.o_k, ops.up_n, ops.down_k
    out[_ELEMENTWISE], out[_MOE_EL], out[_VOCAB_N] = ops.elementwise, ops.moe_elementwise, \
        ops.vocab_n
    out[_ACT_B], out[_W_B], out[_COLL_B] = sh.act_b, sh.wbpp, sh.coll_b
    out[_KPL] = c.TRANSFORMER_KERNELS_PER_LAYER
    out[_DECODER], out[_S], out[_TOKENS] = float(ln.decoder), ln.s, ln.tokens
    out[_PROMPT_ATTN], out[_PROMPT_ATTN_BYTES], out[_OUT] = ln.prompt_attn, \
        ln.prompt_attn_bytes, ln.out
    out[_CTX], out[_KV_LAYER], out[_KV_BLOCKS] = ln.ctx, ln.kv_layer, ln.kv_blocks
    out[_DECODE_ATTN], out[_CHUNKS] = ln.decode_attn, ln.chunks
    out[_STEP], out[_PER_SEQ] = c.STEP_OVERHEAD_S, c.SEQUENCE_STEP_OVERHEAD_S
    return out


@dataclass(frozen=True)
class Packed:
    """A request's figures at each TP degree of a floor table on each GPU of its columns."""

    tps: NDArray[np.int64]
    rows: Array
    """[TP degree, GPU, figure]."""
    per_node: NDArray[np.int64]
    index: dict[str, int]


def packed(workload: Workload, table: ifl.Table, memo: Memo) -> Packed:
    """The :class:`Packed` rows of ``table``'s columns: the table's own where it was built
    with them (:func:`floor_table`), else packed now and kept in the request's memo, by the
    table's identity (the entry holds the table, so its id is not reused while it lives)."""
    cols = table.cols
    if table.rows is not None and cols is not None:
        return Packed(np.array(table.tps, dtype=np.int64), table.rows, cols.per_node,
                      table.index)
    kept = memo.scratch("load_floor_rows", (workload, id(table)),
                        lambda: (table, _packed(workload, table, memo)))
    assert kept[0] is table
    return kept[1]


def _packed(workload: Workload, table: ifl.Table, memo: Memo) -> Packed:
    assert table.cols is not None
    rows, _ = _pack(workload, table.tps, table.cols, memo)
    return Packed(np.array(table.tps, dtype=np.int64), rows, table.cols.per_node, table.index)


def _pack(workload: Workload, tps: Sequence[int], cols: ifl.Columns, memo: Memo
          ) -> tuple[Array, Array]:
    """The request's figures at each of ``tps`` on each GPU of ``cols``, [TP degree, GPU,
    figure], and each GPU's request floor (:func:`inference_floors._request_s` at TP 1)."""
    spec, model = workload.inference, workload.model
    assert spec is not None and isinstance(model, TransformerModel)
    rows = np.zeros((len(tps), len(cols.gpus), _WIDTH))
    request = np.zeros(len(cols.gpus))
    for precision, at, dev in ifl.precision_groups(cols, spec.runtime, memo):
        for j, t in enumerate(tps):
            sh = ifl._shapes(workload, precision, t, dev, memo)
            if t == 1:
                request[at] = ifl._request_s(sh, model, cols, at)
            rows[j, at] = _shape_row(sh, model, t)
    for j, t in enumerate(tps):
        rows[j, :, _MATRIX], rows[j, :, _ATTENTION] = cols.matrix, cols.attention
        rows[j, :, _BYTES], rows[j, :, _KERNEL_S] = cols.bytes_s, cols.kernel_s
        rows[j, :, _SMS] = cols.sms
        if t > 1:
            rows[j, :, _LINK_S], rows[j, :, _LINK_LAT] = cols.links(t)
    return rows, request


@_jit
def _latencies(packed: Array, tps: NDArray[np.int64], per_node: NDArray[np.int64],
               batch: float, out: Array) -> None:
    """``out[j, g]``: :func:`latency_s` [ms] at ``batch`` of TP degree row ``j`` on GPU
    ``g`` where its node holds the degree (left as it is elsewhere)."""
    for j in range(packed.shape[0]):
        for g in range(packed.shape[1]):
            if tps[j] <= per_node[g]:
                out[j, g] = latency_s(packed[j, g], batch) * 1e3


def floor_table(workload: Workload, cols: ifl.Columns, cap: int, memo: Memo) -> ifl.Table:
    """:func:`inference_floors.table`, its latency floors compiled for dense transformers
    (:func:`latency_s`: the same floats, ``tests/unit/test_load_floors.py``), with its packed
    rows kept on it (:func:`packed` reads them); MoE models take the numpy table."""
    model, spec = workload.model, workload.inference
    assert isinstance(model, TransformerModel) and spec is not None
    if model.experts > 1:
        return ifl.table(workload, cols, cap, memo)
    n = len(cols.gpus)
    per_node_max = int(cols.per_node.max()) if n else 1
    tps = ifl.tp_degrees(workload, cap, per_node_max)
    rows, request = _pack(workload, tps, cols, memo)
    degrees = np.array(tps, dtype=np.int64)
    if not model.encoder_only and spec.output_tokens > 0:
        limits = np.array([math.inf if x is None else x / 1e3 for x in (
            spec.max_ttft_ms, spec.max_tpot_ms, spec.max_latency_ms)])
        _decode_request_s(rows, degrees, cols.per_node, int(c.MAX_AUTO_BATCH),
                          spec.batch_size or 0, limits, request)
    latency = np.full((len(tps), n), math.inf)
    _latencies(rows, degrees, cols.per_node, float(spec.batch_size or 1), latency)
    pinned = ((spec.tensor_parallel or 1, spec.pipeline_parallel or 1)
              if spec.tensor_parallel or spec.pipeline_parallel else None)
    return ifl.Table(tuple(tps), latency, request, {g.slug: i for i, g in enumerate(cols.gpus)},
                     cols.per_node, pinned, cols, rows)


@dataclass(frozen=True)
class LoadTable:
    """One GPU type's latency floors [ms] under load (see the module docstring)."""

    tps: NDArray[np.int64]
    """The TP degrees tabulated (those a split may use on the type's node)."""
    latency_ms: Array
    """[TP degree, level j]: the floor with the target shared by ``2**j`` TP groups; NaN from
    the level where it is the batch-1 floor."""

    def ranges_of(self, counts: list[int], k0s: list[int]) -> list[list[float]]:
        """For each of ``counts`` (``n`` GPUs) with its least copies ``k0`` (``k0s``): the
        floors [ms] with the target shared by ``k0``, ``2 k0``, ``4 k0``, ... copies, the
        least over the TP degrees ``n`` GPUs hold, as far as every degree is above its
        batch-1 floor (:func:`_ranges`); one compiled call."""
        out = np.empty((len(counts), LEVELS))
        filled = np.empty(len(counts), np.int64)
        _ranges_of(self.latency_ms, self.tps, np.array(counts, np.int64),
                   np.array(k0s, np.int64), out, filled)
        rows: list[list[float]] = out.tolist()
        return [row[:got] for row, got in zip(rows, filled.tolist(), strict=True)]


def supported(workload: Workload) -> bool:
    """Dense transformer serving with a target and no fixed batch."""
    spec, model = workload.inference, workload.model
    return (ifl.supported(workload) and spec is not None and bool(spec.target_requests_per_s)
            and spec.batch_size is None and isinstance(model, TransformerModel)
            and model.experts <= 1)


def load_table(workload: Workload, gpu: GpuSpec, table: ifl.Table | None,
               memo: Memo) -> LoadTable | None:
    """``gpu``'s :class:`LoadTable` (kept in the request's memo) from the request's floor
    ``table`` over the catalog's columns where it has the GPU, else from the GPU alone; None
    where it does not apply (:func:`supported`, no rate)."""
    if not supported(workload) or workload_rate(workload, gpu) is None:
        return None
    kept = memo.scratch("load_floor_table", (workload, gpu, id(table)),
                        lambda: (table, _load_table(workload, gpu, table, memo)))
    assert kept[0] is table  # held by the entry: its id is not reused while it lives
    return kept[1]


class AllTables:
    """Every GPU of a floor table's columns: :func:`_load_table`'s floors of each, tabulated
    where first asked (:meth:`ensure`: the GPUs asked together in one compiled call; a
    balanced search at catalog scale asks for about two thirds of them). One request's,
    mutable, like its memo."""

    __slots__ = ("tps", "per_node", "index", "latency_ms", "done", "_rows", "_load")

    def __init__(self, rows: Packed, per_node: NDArray[np.int64],
                 load: tuple[float, float, float]) -> None:
        self.tps = rows.tps
        self.per_node = per_node
        self.index = rows.index
        self.latency_ms: Array = np.full((rows.rows.shape[1], len(rows.tps), LEVELS), math.nan)
        """[GPU, k, level]: the floors [ms] on the GPU's ``k``-th TP degree (those its node
        holds, in order; NaN past them) with the target shared by ``2**level`` TP groups;
        read only the rows :meth:`ensure` has filled."""
        self.done = np.zeros(rows.rows.shape[1], dtype=np.bool_)
        """Whether each GPU's rows of :attr:`latency_ms` are filled."""
        self._rows = rows.rows
        self._load = load
        """(target requests/s, output tokens, the largest batch) :func:`_row` takes."""

    def ensure(self, at: NDArray[np.intp]) -> None:
        """Fill the rows of the GPUs ``at`` (column indices) not filled yet, in one compiled
        call (:func:`_tables`: each GPU's own floats, whatever else is asked with it)."""
        todo = np.unique(at[~self.done[at]])
        if not len(todo):
            return
        out = np.full((len(todo), len(self.tps), LEVELS), math.nan)
        _tables(self._rows, self.tps, self.per_node, todo, *self._load, out)
        self.latency_ms[todo] = out * 1e3
        self.done[todo] = True

    def of(self, slug: str) -> LoadTable | None:
        """The :class:`LoadTable` of the GPU ``slug`` (None where the columns lack it)."""
        g = self.index.get(slug)
        if g is None:
            return None
        if not self.done[g]:
            self.ensure(np.array([g], dtype=np.intp))
        tps = self.tps[self.tps <= self.per_node[g]]
        return LoadTable(tps, np.asarray(self.latency_ms[g, :len(tps)], dtype=np.float64))


def all_tables(workload: Workload, table: ifl.Table, memo: Memo) -> AllTables | None:
    """The :class:`AllTables` of ``table``'s columns (kept in the request's memo by the
    table's identity, as :func:`packed`), none of its rows filled yet; None where load floors
    do not apply (:func:`supported`) or the table has no columns."""
    if not supported(workload) or table.cols is None:
        return None
    kept = memo.scratch("load_floor_tables", (workload, id(table)),
                        lambda: (table, _all_tables(workload, table, memo)))
    assert kept[0] is table
    return kept[1]


def _all_tables(workload: Workload, table: ifl.Table, memo: Memo) -> AllTables:
    spec = workload.inference
    assert spec is not None
    rows = packed(workload, table, memo)
    return AllTables(rows, np.asarray(rows.per_node, dtype=np.int64),
                     (float(spec.target_requests_per_s or 0.0), float(spec.output_tokens),
                      float(c.MAX_AUTO_BATCH)))


def _load_table(workload: Workload, gpu: GpuSpec, table: ifl.Table | None,
                memo: Memo) -> LoadTable:
    spec = workload.inference
    assert spec is not None
    if table is not None and table.cols is not None:
        kept = memo.peek("load_floor_tables", (workload, id(table)))
        if isinstance(kept, tuple) and kept[0] is table and isinstance(kept[1], AllTables):
            found = kept[1].of(gpu.slug)
            if found is not None:  # every GPU's already tabulated (the same compiled rows)
                return found
    if table is None or table.cols is None or gpu.slug not in table.index:
        rate = workload_rate(workload, gpu)
        assert rate is not None
        cols = ifl.columns([gpu], [rate], spec.runtime, memo)
        table = floor_table(workload, cols, max(1, gpu.max_gpus_per_node), memo)
        rows = packed(workload, table, memo)  # the table's own rows (a dense model's)
    else:
        rows = packed(workload, table, memo)
    i = rows.index[gpu.slug]
    usable = rows.tps <= rows.per_node[i]
    out = np.full((int(usable.sum()), LEVELS), math.nan)
    _table(np.ascontiguousarray(rows.rows[usable, i]), float(spec.target_requests_per_s or 0.0),
           float(spec.output_tokens), float(c.MAX_AUTO_BATCH), out)
    return LoadTable(rows.tps[usable], out * 1e3)


def warm_up() -> None:
    """Compile (or load from numba's cache) the loops before the first request needs them."""
    p = np.ones((1, _WIDTH))
    out = np.full((1, 2), math.nan)
    _table(p, 1.0, 1.0, 2.0, out)
    _tables(p.reshape(1, 1, _WIDTH), np.ones(1, np.int64), np.ones(1, np.int64),
            np.zeros(1, np.intp), 1.0, 1.0, 2.0, out.reshape(1, 1, 2))
    _latencies(p.reshape(1, 1, _WIDTH), np.ones(1, np.int64), np.ones(1, np.int64), 1.0,
               np.full((1, 1), math.inf))
    for fixed in (0, 1):
        _decode_request_s(p.reshape(1, 1, _WIDTH), np.ones(1, np.int64),
                          np.ones(1, np.int64), 2, fixed, np.full(3, math.inf), np.zeros(1))
    _ranges_of(out, np.ones(1, np.int64), np.ones(1, np.int64), np.ones(1, np.int64),
               np.empty((1, 2)), np.empty(1, np.int64))
    _count_pairs(out.reshape(1, 1, 2), np.ones(1, np.int64), np.ones(1, np.int64),
                 np.zeros((1, 3), np.int64), np.ones((1, 5)), 1.0, np.empty((3, 2)),
                 np.empty(1, np.int64))


__all__ = ["LEVELS", "AllTables", "LoadTable", "Packed", "all_tables", "count_pairs_many",
           "cycle_s", "floor_table",
           "latency_s", "load_table", "packed", "supported", "warm_up"]
