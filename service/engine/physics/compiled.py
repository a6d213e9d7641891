"""The serving model's hot searches compiled (numba): requests/s over a vector of batches,
the latency check, the limit-batch search and a batch's timing.

The serving searches (the throughput-best batch of a split, the largest batch meeting the
latency limits, the least batch carrying an offered load) time the serving model at tens to
hundreds of batches per split; in Python (:class:`serving.ServingModel`, scalar) or numpy
(:mod:`batched`, ~80 array operations a call on a few hundred elements, so numpy's
per-operation cost sets it) they were most of a recommendation's time. Here the same formulas
run as compiled loops: per batch, the GEMMs of a layer through the tile loop of
:meth:`kernels.GemmShape.time`, attention, elementwise traffic, the LM head, the TP
all-reduces and pipeline hops, the decode iteration and prefill chunks (or an encoder's
forward pass), the busiest pipeline stage and the replica's requests/s.

Every operation is the reference's, in the same order, in IEEE double arithmetic without
fast-math (no reassociation, no fused multiply-add) and numpy's error model (a division by zero
gives inf, not an exception), so the results are the references' bit for bit:
:func:`requests_per_s` is :func:`batched.requests_per_s` (its MoE expert-coverage power taken
from numpy before the loop, as numpy computes it); :func:`check`, :func:`timing` and
:func:`largest_meeting` are :meth:`ServingModel.check_scalar`, :meth:`ServingModel.timing_scalar`
and :func:`serving.largest_meeting_scalar` (their power is libm's, as Python's float power is).
``tests/unit/test_compiled.py`` checks all four on random LLM, MoE and encoder workloads over
every catalog GPU and split, pipeline splits included; the differential test checks the
answers. CNNs and detectors have no compiled form (:func:`batched.supported`).

Compilation: ~6 s of CPU the first time (on this 2-core machine; the training walk,
:mod:`compiled_training`, another ~4 s, the compute scaling, :mod:`compiled_scaling`, ~3 s, an
inference estimate's split loop, :mod:`compiled_serving`, ~2 s),
then loaded from numba's on-disk cache in well under a second (:func:`_cache_dir` says where);
the app's start-up (``warm_up``) pays it before the first request.

Units: seconds [s], requests/s.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numba
import numpy as np
from numpy.typing import NDArray

from service.engine.physics import batched
from service.engine.physics.batched import Array, GemmStack, stack
from service.engine.types import TransformerModel

if TYPE_CHECKING:  # pragma: no cover
    from service.engine.physics.kernels import GemmShape
    from service.engine.physics.serving import Lengths, ServingModel
    from service.engine.types import InferenceSpec

# indices of the scalar parameters in a packed model (:class:`Packed`)
_DECODER, _MOE, _TP, _PP, _LAYERS = 0, 1, 2, 3, 4
_SMS, _PER_FLOP, _EXPERTS, _TOP_K, _MAX_Z = 5, 6, 7, 8, 9
_ELEMENTWISE, _MOE_ELEMENTWISE, _ATTN_FLOPS_S, _BYTES_S, _KERNELS_S = 10, 11, 12, 13, 14
_FIXED_S, _PER_SEQ_S, _H, _ACT_B, _COMM_VOL, _LINK_S, _COLL_LATENCY = 15, 16, 17, 18, 19, 20, 21
_PP_LINK_S, _PIPE_LATENCY, _DEV_SMS, _KV_BLOCKS, _CTX, _KV_LAYER = 22, 23, 24, 25, 26, 27
_OUT, _S, _DECODE_ATTN, _PROMPT_ATTN, _PROMPT_ATTN_BYTES, _TOKENS = 28, 29, 30, 31, 32, 33
_OUTPUT_TOKENS, _STAGE_SHARE, _TILES, _CHUNKS, _UNTOUCHED = 34, 35, 36, 37, 38
_MAX_TTFT, _MAX_TPOT, _MAX_LATENCY = 39, 40, 41  # NaN: no such limit
_PARAMS = 42
# columns of the GEMM table, one row per GEMM (then 4 x tiles: tile rows, tile columns across
# N, split-K cap, one tile's FLOPs per unit of depth)
_K, _WEIGHT_S, _ROW_S, _LIVE, _TILE_TABLES = 0, 1, 2, 3, 4


class Packed:
    """A serving model's figures as the compiled loops read them: the scalars in one float64
    vector, the GEMM stack's tables in one 2-D array (a row per GEMM; shared by every model of
    the same layer shapes on the same device)."""

    __slots__ = ("params", "gemms")

    def __init__(self, sm: ServingModel, st: GemmStack) -> None:
        ops, model, spec = sm.ops, sm.model, sm.spec
        assert isinstance(model, TransformerModel)
        p = [0.0] * _PARAMS
        p[_DECODER] = 1.0 if sm.decoder else 0.0
        p[_MOE] = 1.0 if ops.moe else 0.0
        p[_TP], p[_PP], p[_LAYERS] = sm.tp, sm.pp, sm.layers
        p[_SMS], p[_PER_FLOP] = st.sms, st.per_flop
        p[_EXPERTS], p[_TOP_K], p[_MAX_Z] = ops.experts, ops.top_k, ops.max_z
        p[_ELEMENTWISE] = ops.elementwise
        p[_MOE_ELEMENTWISE] = ops.moe_elementwise
        p[_UNTOUCHED] = (1.0 - model.experts_per_token / model.experts) if ops.moe else 1.0
        p[_ATTN_FLOPS_S], p[_BYTES_S] = ops.dev.attention_flops_s, ops.dev.bytes_s
        p[_KERNELS_S] = ops.kernels_s
        p[_FIXED_S], p[_PER_SEQ_S] = sm.fixed_s, sm.per_seq_s
        p[_H] = sm.h
        p[_ACT_B] = sm.coll_b
        p[_COMM_VOL], p[_LINK_S], p[_COLL_LATENCY] = sm.comm_vol, sm.link_s, sm.coll_latency
        p[_PP_LINK_S], p[_PIPE_LATENCY] = sm.pp_link_s, sm.pp_latency
        p[_DEV_SMS] = sm.dev.sms
        p[_STAGE_SHARE] = sm.stage_share
        p[_TILES] = st.tiles
        write_request(p, sm.lengths, spec)
        self.params = np.array(p, dtype=np.float64)
        self.gemms = _gemm_table(st)


_DECODER_ENTRIES = np.array([_S, _PROMPT_ATTN, _PROMPT_ATTN_BYTES, _KV_BLOCKS, _CTX, _KV_LAYER,
                             _OUT, _DECODE_ATTN, _CHUNKS, _OUTPUT_TOKENS, _MAX_TTFT, _MAX_TPOT,
                             _MAX_LATENCY], dtype=np.intp)
_ENCODER_ENTRIES = np.array([_S, _PROMPT_ATTN, _PROMPT_ATTN_BYTES, _TOKENS, _MAX_TTFT,
                             _MAX_TPOT, _MAX_LATENCY], dtype=np.intp)


def request_entries(ln: Lengths, spec: InferenceSpec) -> tuple[NDArray[np.intp], Array]:
    """The entries of a packed model that depend on the request (its lengths, from ``ln``,
    and its latency limits; NaN: no such limit) as (indices, values): the others depend on
    the model, device and split only, so a split's packed figures can be kept across
    requests and these written over them (one assignment into a row)."""
    limits = [math.nan if limit is None else float(limit)
              for limit in (spec.max_ttft_ms, spec.max_tpot_ms, spec.max_latency_ms)]
    if ln.decoder:
        return _DECODER_ENTRIES, np.array(
            [ln.s, ln.prompt_attn, ln.prompt_attn_bytes, ln.kv_blocks, ln.ctx, ln.kv_layer,
             ln.out, ln.decode_attn, ln.chunks, spec.output_tokens, *limits], dtype=np.float64)
    return _ENCODER_ENTRIES, np.array(
        [ln.s, ln.prompt_attn, ln.prompt_attn_bytes, ln.tokens, *limits], dtype=np.float64)


def write_request(p: list[float], ln: Lengths, spec: InferenceSpec) -> None:
    """:func:`request_entries` written into the list ``p`` (a model packed whole)."""
    indices, values = request_entries(ln, spec)
    for i, value in zip(indices.tolist(), values.tolist(), strict=True):
        p[i] = value


def _gemm_table(st: GemmStack) -> Array:
    """The stack's GEMMs as one table (:func:`shape_row` each), built once per stack (the
    stack lives in the shared cache with its layer shapes)."""
    found = st.table
    if found is None:
        found = st.table = np.array([shape_row(sh) for sh in st.shapes], dtype=np.float64)
    return found


def shape_row(shape: GemmShape) -> list[float]:
    """A GEMM's row of a table the compiled loops read (:func:`gemm_row`): columns
    :data:`_K`, :data:`_WEIGHT_S`, :data:`_ROW_S`, :data:`_LIVE`, then per tile shape its
    rows, its tile columns across N, its split-K cap and one tile's FLOPs per unit of depth."""
    row = [shape.k, shape.weight_s, shape.row_s, 0.0 if shape.empty else 1.0]
    for i in range(4):
        row += [float(t[i]) for t in shape.shapes]
    return row


def pack(sm: ServingModel) -> Packed:
    """``sm``'s :class:`Packed` figures, built once per model."""
    found = sm.packed
    if not isinstance(found, Packed):
        found = sm.packed = Packed(sm, stack(sm.ops))
    return found


def _cache_dir() -> None:
    """Where numba keeps the compiled loops: beside this file (``__pycache__``) when that is
    writable, else ``NUMBA_CACHE_DIR`` when set, else a directory under the system's temporary
    directory (an installed, read-only image whose user has no home: numba would otherwise
    refuse to import this module)."""
    config: Any = numba.config  # its settings are module attributes set at import
    here = Path(__file__).parent
    cache = here / "__pycache__"
    if config.CACHE_DIR or os.access(cache if cache.is_dir() else here, os.W_OK):
        return
    config.CACHE_DIR = str(Path(tempfile.gettempdir()) / "gpu-advisor-numba")


_cache_dir()
_NO_TOUCHED = np.zeros(0)
_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def node_layout(per_node: int, count: int) -> tuple[int, int]:
    """:func:`parallelism.node_layout` of ``count`` GPUs, nodes of ``per_node`` (>= 1):
    (nodes, GPUs used per node)."""
    if count <= per_node:
        return 1, count
    return -(-count // per_node), per_node


@_jit
def group_link(domain: int, fast_gb_s: float, pcie_gb_s: float, network_gb_s: float,
               in_node: int, spans: bool) -> tuple[bool, float]:
    """:func:`parallelism.group_link` of ``in_node`` GPUs of a node (and other nodes when
    ``spans``) on a GPU of fast domain ``domain`` and those one-way link rates [GB/s]: (the
    slowest link is PCIe, its rate)."""
    if in_node <= 1 and not spans:
        return False, 0.0
    fast = domain > 1 and in_node <= domain
    intra = fast_gb_s if fast else pcie_gb_s
    if spans:
        return False, min(network_gb_s, intra)
    return not fast, intra


@_jit
def _kv_read(p: Array, seqs: float) -> float:
    """:meth:`ServingModel._kv_read` (:func:`batched._kv_read`) of one element."""
    if seqs <= 0.0:
        return 0.0
    sms = p[_DEV_SMS]
    blocks = seqs * p[_KV_BLOCKS]
    stretch = sms / blocks if blocks < sms else 1.0
    read: float = seqs * p[_CTX] * p[_KV_LAYER] * stretch
    return read


@_jit
def _hops(p: Array, rows: float) -> float:
    """:meth:`ServingModel._pipeline` (``pp`` > 1): one send per stage boundary."""
    nbytes = rows * p[_H] * p[_ACT_B]
    hops: float = (p[_PP] - 1.0) * (nbytes / p[_PP_LINK_S] + p[_PIPE_LATENCY])
    return hops


@_jit
def _gemm(p: Array, g: Array, gi: int, mg: float, groups: float, moe: bool) -> tuple[float, float]:
    """:meth:`kernels.GemmShape.time` of GEMM ``gi`` at ``mg`` rows (``groups`` problems when
    ``moe``), on the serving model's device."""
    return gemm_row(p[_SMS], p[_PER_FLOP], int(p[_TILES]), g, gi, mg, groups, moe)


@_jit
def gemm_row(sms: float, per_flop: float, n_tiles: int, g: Array, gi: int, mg: float,
             groups: float, moe: bool) -> tuple[float, float]:
    """:meth:`kernels.GemmShape.time` of the GEMM in row ``gi`` of table ``g`` (columns
    :data:`_K` ...) at ``mg`` rows (``groups`` problems when ``moe``) on a device of ``sms``
    tile slots and ``per_flop`` seconds per FLOP of one slot: the tile loop's running minimum,
    stopped at the first memory-bound tile."""
    if not (g[gi, _LIVE] > 0.0 and mg > 0.0):
        return 0.0, 0.0
    tm, nt, sc, tf = _TILE_TABLES, _TILE_TABLES + n_tiles, _TILE_TABLES + 2 * n_tiles, \
        _TILE_TABLES + 3 * n_tiles
    memory = g[gi, _WEIGHT_S] + mg * g[gi, _ROW_S]
    if moe:
        memory = memory * groups
    enough = memory / per_flop
    least = 0.0
    for t in range(n_tiles):
        tiles = np.ceil(mg / g[gi, tm + t]) * g[gi, nt + t]
        if moe:
            tiles = tiles * groups
        tiles = max(tiles, 1.0)
        split = max(min(sms // tiles, g[gi, sc + t]), 1.0)
        depth = g[gi, _K]
        if tiles < sms and split > 1.0:
            tiles = tiles * split
            depth = g[gi, _K] / split
        work = np.ceil(tiles / sms) * g[gi, tf + t] * depth
        if t == 0 or work < least:
            least = work
        if least <= enough:
            break
    return least * per_flop, memory


@_jit
def _iteration(
    p: Array, g: Array, rows: float, attn_flops: float, attn_bytes: float, head_rows: float,
    touched: float,
) -> tuple[float, float, float, float]:
    """:meth:`ServingModel._iteration` (:func:`batched._iteration`): (compute_s, memory_s,
    comm_s, stall_s) of one pass of ``rows`` tokens through every layer, the LM head over
    ``head_rows`` rows, fixed costs and communication."""
    moe = p[_MOE] > 0.0
    layers = p[_LAYERS]
    c0, m0 = _gemm(p, g, 0, rows, 1.0, False)
    c1, m1 = _gemm(p, g, 1, rows, 1.0, False)
    if moe:
        groups = max(1.0, p[_EXPERTS] * touched)
        spread = rows * p[_TOP_K] / groups
        pr = p[_TOP_K] / p[_EXPERTS]
        mean = rows * pr
        busiest = max(spread, min(rows, mean + p[_MAX_Z] * math.sqrt(rows * pr * (1.0 - pr))))
        if groups > 1.0 and busiest > spread:
            # the busiest expert runs its own rows; the others share the mean load
            c2, m2 = _gemm(p, g, 2, spread, groups - 1.0, True)
            c5, m5 = _gemm(p, g, 5, busiest, 1.0, True)
            c3, m3 = _gemm(p, g, 3, spread, groups - 1.0, True)
            c6, m6 = _gemm(p, g, 6, busiest, 1.0, True)
            c2, m2, c3, m3 = c2 + c5, m2 + m5, c3 + c6, m3 + m6
        else:
            c2, m2 = _gemm(p, g, 2, spread, groups, True)
            c3, m3 = _gemm(p, g, 3, spread, groups, True)
        elementwise = p[_ELEMENTWISE] * rows * p[_MOE_ELEMENTWISE]
    else:
        c2, m2 = _gemm(p, g, 2, rows, 1.0, False)
        c3, m3 = _gemm(p, g, 3, rows, 1.0, False)
        elementwise = p[_ELEMENTWISE] * rows
    attn_c = attn_flops / p[_ATTN_FLOPS_S]
    attn_m = attn_bytes / p[_BYTES_S]
    lc = c0 + c1 + c2 + c3 + attn_c
    lm = m0 + m1 + m2 + m3 + attn_m
    lt = max(c0, m0) + max(c1, m1) + max(c2, m2) + max(c3, m3) + max(attn_c, attn_m)
    mem_s = elementwise / p[_BYTES_S]
    lm = lm + mem_s
    lt = lt + mem_s + p[_KERNELS_S]
    hc, hm = _gemm(p, g, 4, head_rows, 1.0, False)
    compute = lc * layers + hc
    memory = lm * layers + hm
    total = lt * layers + max(hc, hm) + p[_FIXED_S] + p[_PER_SEQ_S] * head_rows
    comm = 0.0
    if p[_TP] > 1.0 and rows > 0.0:
        nbytes = rows * p[_H] * p[_ACT_B]
        comm = 2.0 * layers * (p[_COMM_VOL] * nbytes / p[_LINK_S] + p[_COLL_LATENCY])
    hops = _hops(p, rows) if p[_PP] > 1.0 else 0.0
    links = comm + hops
    return compute, memory, links, max(0.0, total - max(compute, memory))


@_jit
def _touched(p: Array, rows: float) -> float:
    """:func:`serving._experts_touched`: 1 - (1 - k/E)^rows (libm's power, as Python's)."""
    if p[_MOE] <= 0.0:
        return 1.0
    untouched: float = p[_UNTOUCHED] ** max(rows, 1.0)
    return 1.0 - untouched


@_jit
def _blend(mixed: tuple[float, float, float, float], alone: tuple[float, float, float, float],
           f: float) -> tuple[float, float, float, float]:
    """:func:`serving._blend`: the mean of ``f`` x ``mixed`` and (1 - ``f``) x ``alone``."""
    g = 1.0 - f
    device = f * (max(mixed[0], mixed[1]) + mixed[3]) + g * (max(alone[0], alone[1]) + alone[3])
    compute = f * mixed[0] + g * alone[0]
    memory = f * mixed[1] + g * alone[1]
    links = f * mixed[2] + g * alone[2]
    return compute, memory, links, max(0.0, device - max(compute, memory))


@_jit
def _cycle(p: Array, g: Array, b: float, arrivals: float, cover: float,
           cover_alone: float) -> tuple[float, float, float, float]:
    """:meth:`ServingModel._cycle` at batch ``b`` with ``arrivals`` prompts per ``out``
    iterations (``cover``: the expert coverage of the iteration carrying prompt tokens,
    ``cover_alone``: of a decode-only one; nan to compute them here)."""
    kv = _kv_read(p, b)
    chunked = arrivals * p[_CHUNKS]
    if chunked >= p[_OUT]:
        share = arrivals / p[_OUT]
        rows = b + share * p[_S]
        if math.isnan(cover):
            cover = _touched(p, rows)
        return _iteration(p, g, rows, b * p[_DECODE_ATTN] + share * p[_PROMPT_ATTN],
                          kv + share * p[_PROMPT_ATTN_BYTES], b, cover)
    if math.isnan(cover_alone):
        cover_alone = _touched(p, b)
    alone = _iteration(p, g, b, b * p[_DECODE_ATTN], kv, b, cover_alone)
    if chunked <= 0.0:
        return alone
    k = p[_CHUNKS]
    rows = b + p[_S] / k
    if math.isnan(cover):
        cover = _touched(p, rows)
    mixed = _iteration(p, g, rows, b * p[_DECODE_ATTN] + p[_PROMPT_ATTN] / k,
                       kv + p[_PROMPT_ATTN_BYTES] / k, b, cover)
    return _blend(mixed, alone, chunked / p[_OUT])


@_jit
def _encode(p: Array, g: Array, b: float, touched: float) -> tuple[float, float, float, float]:
    """An encoder's forward pass at batch ``b`` (:meth:`ServingModel.phases`)."""
    rows = b * p[_TOKENS]
    if math.isnan(touched):
        touched = _touched(p, rows)
    return _iteration(p, g, rows, b * p[_PROMPT_ATTN], b * p[_PROMPT_ATTN_BYTES], 0.0, touched)


@_jit
def _prefill(p: Array, g: Array, b: float) -> tuple[float, float, float, float]:
    """:meth:`ServingModel._prefill`: the prompt in ``chunks`` iterations beside b - 1
    decoders."""
    k = p[_CHUNKS]
    rest = b - 1.0
    rows = p[_S] / k + rest
    c_, m_, l_, s_ = _iteration(
        p, g, rows, p[_PROMPT_ATTN] / k + rest * p[_DECODE_ATTN],
        p[_PROMPT_ATTN_BYTES] / k + _kv_read(p, rest), 1.0 + rest, _touched(p, rows))
    return c_ * k, m_ * k, l_ * k, s_ * k


@_jit
def _total(ph: tuple[float, float, float, float]) -> float:
    """:attr:`PhaseTime.total_s`."""
    total: float = max(ph[0], ph[1]) + ph[3] + ph[2]
    return total


@_jit
def _stage_s(p: Array, b: float, iteration: float) -> float:
    """:meth:`ServingModel._stage_s` (``pp`` > 1): the last stage's share of an iteration of
    ``iteration`` [s] at batch ``b``, plus its one send."""
    decoder = p[_DECODER] > 0.0
    rows = b + b / p[_OUT] * p[_S] if decoder else b * p[_TOKENS]
    head_rows = b if decoder else 0.0
    hops = _hops(p, rows)
    work = iteration - p[_FIXED_S] - p[_PER_SEQ_S] * head_rows - hops
    stage: float = p[_STAGE_SHARE] * max(0.0, work) + hops / (p[_PP] - 1.0)
    return stage


@_jit
def _timing(p: Array, g: Array, b: float) -> tuple[
        tuple[float, float, float, float], tuple[float, float, float, float],
        tuple[float, float, float, float], float]:
    """:meth:`ServingModel.timing`'s figures at batch ``b``: the prefill phase (an encoder's
    forward pass), the decode and TPOT phases (zeros for encoders) and the busiest stage's
    time."""
    if p[_DECODER] > 0.0:
        decode = _cycle(p, g, b, b, math.nan, math.nan)
        prefill = _prefill(p, g, b)
        tpot = _cycle(p, g, b, b - 1.0, math.nan, math.nan)
        timed = decode
    else:
        prefill = _encode(p, g, b, math.nan)
        decode = tpot = (0.0, 0.0, 0.0, 0.0)
        timed = prefill
    stage = _stage_s(p, b, _total(timed)) if p[_PP] > 1.0 else 0.0
    return prefill, decode, tpot, stage


@_jit
def _rates(p: Array, g: Array, batches: Array, touched: Array, alone: Array,
           out: Array) -> None:
    """requests/s of one replica at each of ``batches`` into ``out`` (:func:`batched._rates`),
    ``touched``: the expert coverage of the iteration carrying prompt tokens (an encoder's
    pass) at each batch, ``alone``: of a decode-only iteration (MoE; numpy's)."""
    moe = p[_MOE] > 0.0
    for i in range(batches.shape[0]):
        out[i] = rate(p, g, batches[i], touched[i] if moe else 1.0, alone[i] if moe else 1.0)


@_jit
def rate(p: Array, g: Array, b: float, cover: float, cover_alone: float) -> float:
    """Requests/s of one replica at batch ``b`` (:func:`serving.requests_per_s` of its
    timing), ``cover`` and ``cover_alone``: the expert coverages of its iterations
    (:func:`_cycle`; 1.0 for dense layers)."""
    decoder = p[_DECODER] > 0.0
    pp = p[_PP]
    ph = _cycle(p, g, b, b, cover, cover_alone) if decoder else _encode(p, g, b, cover)
    iteration = _total(ph)
    if pp > 1.0:
        busiest = pp * _stage_s(p, b, iteration)
        if busiest > iteration:
            iteration = busiest
    cycle = p[_OUTPUT_TOKENS] * iteration if decoder else iteration
    out: float = b / cycle * pp
    return out


@_jit
def _check(p: Array, g: Array, b: float) -> tuple[bool, float, float]:
    """:meth:`ServingModel.check` at batch ``b``: (meets the limits, the largest ratio of a
    latency figure to its limit, the latency [ms]); decode first when TPOT has a limit."""
    max_tpot = p[_MAX_TPOT]
    if p[_DECODER] > 0.0:
        per_token = _total(_cycle(p, g, b, b - 1.0, math.nan, math.nan))
        if not math.isnan(max_tpot):
            tpot = per_token * 1e3
            if tpot > max_tpot:
                return False, (tpot / max_tpot if max_tpot > 0 else math.inf), math.inf
        ttft = _total(_prefill(p, g, b)) * 1e3
        tpot = per_token * 1e3
        latency = ttft + p[_OUTPUT_TOKENS] * tpot
        has_tpot = True
    else:
        ttft = _total(_encode(p, g, b, math.nan)) * 1e3
        tpot = latency = ttft
        has_tpot = False
    ok, worst = True, 0.0
    for value, limit, present in ((ttft, p[_MAX_TTFT], True), (tpot, max_tpot, has_tpot),
                                  (latency, p[_MAX_LATENCY], True)):
        if present and not math.isnan(limit):
            ok = ok and not value > limit
            worst = max(worst, value / limit if limit > 0 else math.inf)
    return ok, worst, latency


@_jit
def _largest_meeting(p: Array, g: Array, hi: int, near: float) -> int:
    """:func:`serving.largest_meeting` and its :func:`serving.boundary` (regula falsi on the
    check's ratio, the neighbour tried within ``near`` of the limit, bisection after two poor
    steps), probe for probe."""
    ok_hi, g_hi, _ = _check(p, g, float(hi))
    if ok_hi:
        return hi
    if hi == 1:
        return 0
    ok_lo, g_lo, _ = _check(p, g, 1.0)
    if not ok_lo:
        return 0
    lo = 1
    poor = 0
    while hi - lo > 1:
        width = hi - lo
        mid = (lo + hi) // 2
        if poor < 2 and math.isfinite(g_hi) and g_hi > g_lo:
            mid = lo + int((1.0 - g_lo) / (g_hi - g_lo) * width)
            mid = min(max(mid, lo + 1), hi - 1)
        ok, ratio, _ = _check(p, g, float(mid))
        if ok:
            lo, g_lo = mid, ratio
            step = mid + 1 if ratio > 1.0 - near else 0
        else:
            hi, g_hi = mid, ratio
            step = mid - 1 if ratio < 1.0 + near else 0
        if lo < step < hi:
            ok, ratio, _ = _check(p, g, float(step))
            if ok:
                lo, g_lo = step, ratio
            else:
                hi, g_hi = step, ratio
        poor = poor + 1 if 4 * (width - (hi - lo)) < width else 0
    return lo


def largest_meeting(sm: ServingModel, hi: int, near: float) -> int:
    """:func:`serving.largest_meeting` up to ``hi``, compiled: the same probes, the same
    batch."""
    pk = pack(sm)
    return int(_largest_meeting(pk.params, pk.gemms, hi, near))


def requests_per_s(sm: ServingModel, batches: Array) -> Array:
    """:func:`batched.requests_per_s`, the same floats, compiled."""
    pk = pack(sm)
    touched = alone = _NO_TOUCHED
    if sm.ops.moe:
        # batched._iteration's expert coverages, by numpy itself (its power, not libm's)
        model = sm.model
        assert isinstance(model, TransformerModel)
        if sm.decoder:
            rows, alone_rows = batched.cycle_rows(sm, batches, batches)
            alone = batched.experts_touched(model, alone_rows)
        else:  # an encoder's pass: one coverage (``alone`` is not read)
            rows = batches * sm.tokens
        touched = batched.experts_touched(model, rows)
        if not sm.decoder:
            alone = touched
    out = np.empty_like(batches)
    _rates(pk.params, pk.gemms, batches, touched, alone, out)
    return out


_Phase4 = tuple[float, float, float, float]


def timing(sm: ServingModel, batch: int) -> tuple[
        _Phase4, _Phase4 | None, _Phase4 | None, float]:
    """(prefill phase, decode phase or None, TPOT phase or None, busiest stage [s]) of
    :meth:`ServingModel.timing` at ``batch``, the same floats, compiled."""
    pk = pack(sm)
    return packed_timing(pk.params, pk.gemms, batch)


def packed_timing(params: Array, gemms: Array, batch: int) -> tuple[
        _Phase4, _Phase4 | None, _Phase4 | None, float]:
    """:func:`timing` of a model's packed figures (whether it decodes read from them)."""
    pre, dec, tpot, stage = _timing(params, gemms, float(batch))
    if params[_DECODER] > 0.0:
        return pre, dec, tpot, stage
    return pre, None, None, stage


def check(sm: ServingModel, batch: int) -> tuple[bool, float, float]:
    """:meth:`ServingModel.check`, the same floats, compiled."""
    pk = pack(sm)
    ok, worst, latency = _check(pk.params, pk.gemms, float(batch))
    return bool(ok), float(worst), float(latency)



def warm_up() -> None:
    """Compile (or load from numba's cache) the loops before the first request needs them."""
    p = np.ones(_PARAMS)  # one tile shape; MoE, so every branch's callees are compiled
    g = np.ones((7, _TILE_TABLES + 4))
    _rates(p, g, np.ones(1), np.ones(1), np.ones(1), np.empty(1))
    _check(p, g, 1.0)
    _timing(p, g, 1.0)
    _largest_meeting(p, g, 2, 0.02)
