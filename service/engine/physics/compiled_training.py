"""Training's layout walk compiled (numba): a transformer job's splits, micro-steps, step
times and the walk over its (TP, sharding) splits, for several GPU counts in one call; and the
least count whose memory holds the job.

A training ranking plans every GPU count of every GPU type it evaluates (~190 plans a varied
request); each plan walks its splits in preference order, times the fitting ones' micro-steps
operator by operator (:class:`training.MicroStep`) and their steps (:func:`training._step`),
and keeps the first within :data:`training.LAYOUT_TIE` of the fastest
(:func:`training.fastest_scalar`). In Python that was ~50 us a plan, most of a training
request. Here it runs as one compiled loop over the counts asked
(:func:`plans`): per count its splits (:func:`training_splits.splits`), per split the
micro-batches worth timing (:meth:`training_splits.Split.micro_choices`, the faster kept), the
micro-step's GEMMs
through the tile loop of :meth:`kernels.GemmShape.time` (data gradients from the layer's
shapes, weight gradients built at the micro-step's token count as :func:`kernels.gemm` builds
them), attention, elementwise traffic, the LM head and the loss, then the step's collectives,
exposure and input stall, and the walk's stop and prune rules.

Every operation is the reference's, in the same order, in IEEE doubles without fast-math and
with numpy's error model (compiled with :mod:`compiled`'s settings), so the plan is the
reference's bit for bit: ``tests/unit/test_compiled_training.py`` compares the walk with the
Python one (kept as the reference, and still what CNN jobs and counts that fit nowhere use) on
random dense and MoE jobs over every catalog GPU and count, and the least fitting count with
the Python search.

Units: seconds [s], bytes [B], GB where named.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from service.engine import constants as c
from service.engine.cache import Memo
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.physics import training_splits as splits
from service.engine.physics import transformer_ops as tops
from service.engine.physics.batched import Array
from service.engine.physics.compiled import (
    _K,
    _LIVE,
    _ROW_S,
    _TILE_TABLES,
    _WEIGHT_S,
    _jit,
    gemm_row,
    group_link,
    node_layout,
    shape_row,
)
from service.engine.physics.performance import exposed_comm_s
from service.engine.types import TransformerModel

if TYPE_CHECKING:  # pragma: no cover
    from service.engine.physics.kernels import Device
    from service.engine.physics.training import _Job
    from service.engine.types import GpuSpec, Precision, Sharding, Workload

# a job's scalars (:func:`pack_job`)
_SMS, _PER_FLOP, _TILES, _BYTES_S, _ATTN_FLOPS_S, _KERNELS_S = 0, 1, 2, 3, 4, 5
_ACT_B, _H, _HEADS, _SEQ, _FLASH, _PAIRS, _LAYERS, _PASSES = 6, 7, 8, 9, 10, 11, 12, 13
_MOE, _EXPERTS, _TOP_K, _MAX_Z, _MOE_ELEMENTWISE, _LOGIT_BYTES = 14, 15, 16, 17, 18, 19
_BWD_ELEMENTWISE, _USABLE_GB, _OVERHEAD_GB, _BANDWIDTH, _GRAD_BYTES = 20, 21, 22, 23, 24
_WEIGHT_BYTES, _TP_BYTES, _TP_PER_LAYER, _OVERLAP, _COLL_EFF, _GB = 25, 26, 27, 28, 29, 30
_COLL_LATENCY, _INPUT_SPS, _SPLIT_K_MIN, _TIE, _FLOOR_FLOPS, _BATCH = 31, 32, 33, 34, 35, 36
_FLOOR_RATE, _STATE_W, _STATE_G, _STATE_O, _DOMAIN, _PER_NODE = 37, 38, 39, 40, 41, 42
_FAST_LINK, _PCIE_LINK, _NETWORK_LINK, _HEAD_FRACTION, _FWD_SCORE_B = 43, 44, 45, 46, 47
_BWD_SCORE_B, _BWD_ATTN = 48, 49
_PARAMS = 50
# a TP degree's scalars: TP, elementwise bytes per token, TP link [GB/s], vocabulary / TP,
# activations per sample [GB], parameters per GPU [G]
_TP, _ELEMENTWISE, _TP_LINK, _VOCAB, _ACT_GB, _PARAMS_GB = 0, 1, 2, 3, 4, 5
_TP_COLUMNS = 6
# rows of a TP degree's GEMM table: the layer's forward GEMMs and the LM head, the data
# gradients of the four layer GEMMs and of the head, then the weight gradients (column _K:
# their rows m, column _WEIGHT_S: their n; the rest is built at the micro-step's tokens)
_FORWARD, _HEAD, _DATA_GRADS, _HEAD_GRAD, _WEIGHT_GRADS, _HEAD_WEIGHT_GRAD = 0, 4, 5, 9, 10, 14
_ROWS = 15
# columns of a packed split
_S_TI, _S_TP, _S_DP, _S_SHARDING, _S_BATCH, _S_WEIGHTS, _S_GRADS, _S_OPTIM, _S_ACT = range(9)
_SPLIT_COLUMNS = 9
SHARDING_CODES = {s: float(i) for i, s in enumerate(splits.SHARDING_ORDER)}
assert {s for s, i in SHARDING_CODES.items() if i <= 1.0} == {"none", "zero1"}  # _walk
# columns of the walk's record of each split (``out``): micro-batch, then the step's six
# figures (:data:`training._Step`); NaN: not walked
_O_MICRO, _O_STEP = 0, 1
_OUT_COLUMNS = 7
# columns of a count's plan (:func:`plans`): the chosen split's row, its micro-batch, its
# step's six figures and the step time (micro-batch NaN: no split fits)
P_DP, P_MICRO, _P_STEP = _S_DP, _SPLIT_COLUMNS, _SPLIT_COLUMNS + 1
P_TOTAL = _SPLIT_COLUMNS + 7
_PLAN_COLUMNS = _SPLIT_COLUMNS + 8
_AUTO = -1.0


def supported(workload: Workload) -> bool:
    """Transformer jobs have a compiled walk; CNNs keep the Python one (their layer tables)."""
    return isinstance(workload.model, TransformerModel)


def _weight_grad_row(m: float, n: float, n_tiles: int) -> list[float]:
    """A weight gradient (m x tokens) @ (tokens x n): what does not depend on the tokens."""
    row = [m, n, 0.0, 1.0 if n > 0 else 0.0]
    row += [float(tm) for tm, _ in c.GEMM_TILES]
    row += [float(math.ceil(n / tn)) for _, tn in c.GEMM_TILES]
    row += [0.0] * n_tiles
    row += [2.0 * tm * tn for tm, tn in c.GEMM_TILES]
    return row


def _tp_rows(ops: tops.LayerOps) -> list[list[float]]:
    """The GEMM rows (:data:`_ROWS`) of one TP degree."""
    n_tiles = len(c.GEMM_TILES)
    rows = [shape_row(s) for s in (ops.qkv, ops.out, ops.up, ops.down, ops.head)]
    rows += [shape_row(s) for s in ops.grads]
    rows.append(shape_row(ops.head_grad))
    rows += [_weight_grad_row(k, n, n_tiles) for n, k in ops._weights()]
    rows.append(_weight_grad_row(ops.h, ops.vocab_n, n_tiles))
    return rows


class _Tables(NamedTuple):
    """A model's layers on one device, per TP degree: the :class:`LayerOps` and their GEMM
    rows as one array [degree, row, column]."""

    ops: tuple[tops.LayerOps, ...]
    rows: Array


def _tables(model: TransformerModel, dev: Device, act_b: float, degrees: tuple[int, ...],
            memo: Memo) -> _Tables:
    """:class:`_Tables` of (model, device, element size, TP degrees), kept in the shared cache
    (``training_tables``): every job training the model on the device asks again."""
    def build() -> _Tables:
        ops = tuple(tops.layer_ops(model, dev, tp, act_b, act_b, memo) for tp in degrees)
        return _Tables(ops, np.array([_tp_rows(o) for o in ops], dtype=np.float64))

    return memo.get("training_tables", (model, dev, act_b, degrees), build)


class PackedJob:
    """A job's figures as the compiled walk reads them (one per job and call): its scalars,
    and per TP degree (index log2 TP) its scalars and GEMM table."""

    __slots__ = ("params", "tps", "tables")

    def __init__(self, params: Array, tps: Array, tables: Array) -> None:
        self.params, self.tps, self.tables = params, tps, tables


def packed_memory(workload: Workload, gpu: GpuSpec, rate_precision: Precision,
                  recompute: bool, memo: Memo) -> tuple[Array, Array]:
    """:func:`pack_memory` of ``gpu``'s memory twin (:func:`parallelism.memory_twin`: its
    memory columns are ``gpu``'s), once a request per twin and configuration (read only:
    :func:`training.least_fitting_count` and :func:`pack_job` both ask)."""
    twin = par.memory_twin(gpu, rate_precision, memo)
    return memo.scratch("training_packed_memory", (workload, twin, rate_precision, recompute),
                        lambda: pack_memory(workload, twin, rate_precision, recompute, memo))


def pack_memory(workload: Workload, gpu: GpuSpec, rate_precision: Precision,
                recompute: bool, memo: Memo) -> tuple[Array, Array]:
    """What a transformer job's splits and their memory need (:func:`_splits`): the job's
    scalars (those fields of :data:`_PARAMS`; the rest zero) and per TP degree its
    activations per sample and parameters per GPU (columns :data:`_ACT_GB`, :data:`_PARAMS_GB`;
    the others zero). The per-degree table depends on the GPU only through its fast domain's
    size: it is built once a request for every GPU of that size (read only)."""
    spec, model = workload.training, workload.model
    assert spec is not None and isinstance(model, TransformerModel)
    p = np.zeros(_PARAMS)
    p[_HEADS], p[_LAYERS], p[_BATCH] = model.attention_heads, model.layers, spec.batch_size
    states = mem.training_state_bytes(rate_precision, spec.optimizer)
    p[_STATE_W], p[_STATE_G], p[_STATE_O] = states.weights, states.gradients, states.optimizer
    p[_USABLE_GB], p[_OVERHEAD_GB] = mem.usable_gb(gpu), c.FRAMEWORK_OVERHEAD_GB
    domain = par.fast_domain_size(gpu)
    p[_DOMAIN], p[_PER_NODE] = domain, max(1, gpu.max_gpus_per_node)
    tps = memo.scratch("training_memory_tps", (workload, domain, rate_precision, recompute),
                       lambda: _memory_tps(workload, domain, rate_precision, recompute))
    return p, tps


def _memory_tps(workload: Workload, domain: int, rate_precision: Precision,
                recompute: bool) -> Array:
    """:func:`pack_memory`'s per-degree table for TP degrees up to ``domain``."""
    model = workload.model
    assert isinstance(model, TransformerModel)
    degrees = par.powers_of_two_upto(domain)
    tps = np.zeros((len(degrees), _TP_COLUMNS))
    for i, tp in enumerate(degrees):
        tps[i, _TP] = tp
        tps[i, _ACT_GB] = splits.activation_bytes(workload, tp, rate_precision, recompute) / c.GB
        tps[i, _PARAMS_GB] = model.params / tp / c.GB
    return tps


def pack_job(workload: Workload, gpu: GpuSpec, rate_precision: Precision, job: _Job, memo: Memo,
             tie: float, floor_flops: float) -> PackedJob:
    """The :class:`PackedJob` of ``job`` (a transformer's, at ``rate_precision``): ``tie`` is
    :data:`training.LAYOUT_TIE`, ``floor_flops`` :func:`training.training_floor_flops`."""
    spec, model = workload.training, workload.model
    assert spec is not None and isinstance(model, TransformerModel)
    micro = job.micro
    dev: Device = micro.dev
    act_b = micro.act_b
    seq = splits.seq_len(spec, model)
    degrees = tuple(par.powers_of_two_upto(par.fast_domain_size(gpu)))
    tables = _tables(model, dev, act_b, degrees, memo)
    first = tables.ops[0]
    # the memory columns, copied: the rest is this GPU's
    kept = packed_memory(workload, gpu, rate_precision, micro.recompute, memo)
    p, tps = kept[0].copy(), kept[1].copy()
    p[_SMS], p[_PER_FLOP], p[_TILES] = float(dev.sms), first.qkv.per_flop, len(c.GEMM_TILES)
    p[_BYTES_S], p[_ATTN_FLOPS_S], p[_KERNELS_S] = dev.bytes_s, dev.attention_flops_s, \
        first.kernels_s
    p[_ACT_B], p[_H], p[_SEQ] = act_b, model.hidden_size, seq
    p[_FLASH] = 1.0 if spec.flash_attention else 0.0
    # bytes per (query, key) pair per head of eager attention (training.attention_bytes)
    p[_FWD_SCORE_B] = c.EAGER_ATTENTION_FORWARD_PASSES * act_b + \
        c.EAGER_ATTENTION_DROPOUT_MASK_BYTES
    p[_BWD_SCORE_B] = c.EAGER_ATTENTION_BACKWARD_PASSES * act_b + \
        c.EAGER_ATTENTION_DROPOUT_MASK_BYTES
    p[_HEAD_FRACTION] = spec.lm_head_fraction
    p[_PAIRS] = mem.attention_pairs(model, seq, spec.flash_attention)
    p[_BWD_ATTN] = tops.backward_attention_factor(spec.flash_attention)
    p[_PASSES] = 2.0 if micro.recompute else 1.0
    p[_MOE] = 1.0 if first.moe else 0.0
    p[_EXPERTS], p[_TOP_K], p[_MAX_Z] = first.experts, first.top_k, first.max_z
    p[_MOE_ELEMENTWISE] = first.moe_elementwise
    p[_LOGIT_BYTES], p[_BWD_ELEMENTWISE] = c.LOGIT_BYTES, c.BACKWARD_ELEMENTWISE_FACTOR
    p[_BANDWIDTH], p[_GRAD_BYTES], p[_WEIGHT_BYTES] = job.bandwidth, job.grad_bytes, \
        job.weight_bytes
    p[_TP_BYTES], p[_TP_PER_LAYER] = job.tp_bytes, job.tp_per_layer
    # the vendor's collectives, as training.all_reduce_s takes them (the same floats)
    p[_OVERLAP], p[_GB] = c.BACKWARD_OVERLAP_FRACTION, c.GB
    p[_COLL_EFF] = c.COLLECTIVE_EFFICIENCY * job.vendor
    p[_COLL_LATENCY], p[_SPLIT_K_MIN] = c.COLLECTIVE_LATENCY_S / job.vendor, c.SPLIT_K_MIN
    p[_INPUT_SPS] = spec.input_samples_per_s_per_gpu or 0.0
    p[_TIE], p[_FLOOR_RATE], p[_FLOOR_FLOPS] = tie, job.floor_rate, floor_flops
    p[_FAST_LINK], p[_PCIE_LINK] = par.fast_link_gb_s(gpu), par.pcie_gb_s(gpu)
    p[_NETWORK_LINK] = par.network_gb_s(gpu)
    for i, (tp, ops) in enumerate(zip(degrees, tables.ops, strict=True)):
        tps[i, _ELEMENTWISE] = ops.elementwise
        tps[i, _TP_LINK] = par.group_link(gpu, tp, spans_nodes=False)[1]
        tps[i, _VOCAB] = model.vocab_size / tp
    return PackedJob(p, tps, tables.rows)


def with_batch(job: PackedJob, batch_size: int, floor_flops: float) -> PackedJob:
    """``job`` for a global batch of ``batch_size`` samples and a step of ``floor_flops``
    floor FLOPs (:func:`training.training_floor_flops`): its scalars copied with those two
    written over them; its per-degree figures and GEMM tables shared (the walk reads them
    only). Nothing else :func:`pack_job` writes depends on the batch or the job's length."""
    p = job.params.copy()
    p[_BATCH], p[_FLOOR_FLOPS] = batch_size, floor_flops
    return PackedJob(p, job.tps, job.tables)


@_jit
def _wgrad(p: Array, g: Array, wi: int, k: float, row: Array, groups: float
           ) -> tuple[float, float]:
    """:func:`kernels.gemm` of ``groups`` weight gradients ``wi`` (m x ``k``) @ (``k`` x n):
    the shape built as :class:`kernels.GemmShape` builds it, into the scratch ``row``."""
    m, n = g[wi, _K], g[wi, _WEIGHT_S]
    if m <= 0.0 or n <= 0.0 or k <= 0.0:
        return 0.0, 0.0
    n_tiles = int(p[_TILES])
    act_b = p[_ACT_B]
    row[0, _K] = k
    row[0, _WEIGHT_S] = k * n * act_b / p[_BYTES_S]
    row[0, _ROW_S] = (k * act_b + n * act_b) / p[_BYTES_S]
    row[0, _LIVE] = 1.0 if g[wi, _TILE_TABLES + n_tiles] != 0.0 else 0.0
    cap = max(1.0, float(int(k // p[_SPLIT_K_MIN])))
    for t in range(n_tiles):
        row[0, _TILE_TABLES + t] = g[wi, _TILE_TABLES + t]
        row[0, _TILE_TABLES + n_tiles + t] = g[wi, _TILE_TABLES + n_tiles + t]
        row[0, _TILE_TABLES + 2 * n_tiles + t] = cap
        row[0, _TILE_TABLES + 3 * n_tiles + t] = g[wi, _TILE_TABLES + 3 * n_tiles + t]
    if groups != 1.0:
        return gemm_row(p[_SMS], p[_PER_FLOP], n_tiles, row, 0, m, groups, True)
    return gemm_row(p[_SMS], p[_PER_FLOP], n_tiles, row, 0, m, 1.0, False)


@_jit
def _expert_rows(p: Array, tokens: float) -> tuple[float, float, float]:
    """(experts, mean rows per expert, the busiest expert's rows) of an MoE layer over
    ``tokens`` tokens, every expert touched (:meth:`LayerOps.busiest_expert_rows`)."""
    groups = max(1.0, p[_EXPERTS] * 1.0)
    rows = tokens * p[_TOP_K] / groups
    pr = p[_TOP_K] / p[_EXPERTS]
    mean = tokens * pr
    busiest = max(rows, min(tokens, mean + p[_MAX_Z] * math.sqrt(tokens * pr * (1.0 - pr))))
    return groups, rows, busiest


@_jit
def _expert_gemm(sms: float, per_flop: float, n_tiles: int, g: Array, gi: int, groups: float,
                 rows: float, busiest: float) -> tuple[float, float]:
    """GEMM ``gi`` of every expert (:func:`transformer_ops.per_expert`): the busiest at its own rows
    and the others at the mean, or all at the mean."""
    if groups > 1.0 and busiest > rows:
        a0, a1 = gemm_row(sms, per_flop, n_tiles, g, gi, rows, groups - 1.0, True)
        b0, b1 = gemm_row(sms, per_flop, n_tiles, g, gi, busiest, 1.0, False)
        return a0 + b0, a1 + b1
    return gemm_row(sms, per_flop, n_tiles, g, gi, rows, groups, True)


@_jit
def _expert_wgrad(p: Array, g: Array, wi: int, groups: float, rows: float, busiest: float,
                  row: Array) -> tuple[float, float]:
    """Weight gradient ``wi`` of every expert, as :func:`_expert_gemm` splits them."""
    if groups > 1.0 and busiest > rows:
        a0, a1 = _wgrad(p, g, wi, rows, row, groups - 1.0)
        b0, b1 = _wgrad(p, g, wi, busiest, row, 1.0)
        return a0 + b0, a1 + b1
    return _wgrad(p, g, wi, rows, row, groups)


@_jit
def _forward(p: Array, g: Array, elementwise: float, tokens: float, attn: float,
             attn_bytes: float) -> tuple[float, float, float]:
    """:meth:`LayerOps.forward` (every expert touched)."""
    sms, per_flop, n_tiles = p[_SMS], p[_PER_FLOP], int(p[_TILES])
    c0, m0 = gemm_row(sms, per_flop, n_tiles, g, 0, tokens, 1.0, False)
    c1, m1 = gemm_row(sms, per_flop, n_tiles, g, 1, tokens, 1.0, False)
    if p[_MOE] > 0.0:
        groups, rows, busiest = _expert_rows(p, tokens)
        c2, m2 = _expert_gemm(sms, per_flop, n_tiles, g, 2, groups, rows, busiest)
        c3, m3 = _expert_gemm(sms, per_flop, n_tiles, g, 3, groups, rows, busiest)
        mem_bytes = elementwise * tokens * p[_MOE_ELEMENTWISE]
    else:
        c2, m2 = gemm_row(sms, per_flop, n_tiles, g, 2, tokens, 1.0, False)
        c3, m3 = gemm_row(sms, per_flop, n_tiles, g, 3, tokens, 1.0, False)
        mem_bytes = elementwise * tokens
    ac, am = attn / p[_ATTN_FLOPS_S], attn_bytes / p[_BYTES_S]
    compute = c0 + c1 + c2 + c3 + ac
    memory = m0 + m1 + m2 + m3 + am
    total = max(c0, m0) + max(c1, m1) + max(c2, m2) + max(c3, m3) + max(ac, am)
    mem_s = mem_bytes / p[_BYTES_S]
    return compute, memory + mem_s, total + mem_s + p[_KERNELS_S]


@_jit
def _backward(p: Array, g: Array, elementwise: float, tokens: float, attn: float,
              attn_bytes: float, row: Array) -> tuple[float, float, float]:
    """:meth:`LayerOps.backward`: each GEMM's data gradient, then its weight gradient (MoE
    MLP GEMMs per expert, the busiest at its own load); ``attn`` and ``attn_bytes``: the
    attention backward's own FLOPs and bytes."""
    sms, per_flop, n_tiles = p[_SMS], p[_PER_FLOP], int(p[_TILES])
    moe = p[_MOE] > 0.0
    groups = rows = busiest = 0.0
    if moe:
        groups, rows, busiest = _expert_rows(p, tokens)
    compute = memory = total = 0.0
    for w in range(4):
        if moe and w >= 2:  # the MLP's up and down GEMMs, per expert
            k0, k1 = _expert_gemm(sms, per_flop, n_tiles, g, _DATA_GRADS + w, groups, rows,
                                  busiest)
        else:
            k0, k1 = gemm_row(sms, per_flop, n_tiles, g, _DATA_GRADS + w, tokens, 1.0, False)
        compute += k0
        memory += k1
        total += k0 if k0 > k1 else k1
        if moe and w >= 2:
            k0, k1 = _expert_wgrad(p, g, _WEIGHT_GRADS + w, groups, rows, busiest, row)
        else:
            k0, k1 = _wgrad(p, g, _WEIGHT_GRADS + w, tokens, row, 1.0)
        compute += k0
        memory += k1
        total += k0 if k0 > k1 else k1
    k0, k1 = attn / p[_ATTN_FLOPS_S], attn_bytes / p[_BYTES_S]
    compute += k0
    memory += k1
    total += k0 if k0 > k1 else k1
    # the MoE factor is 1 for dense layers (an exact product)
    mem_s = p[_BWD_ELEMENTWISE] * elementwise * tokens * p[_MOE_ELEMENTWISE] / p[_BYTES_S]
    return compute, memory + mem_s, total + mem_s + 2.0 * p[_KERNELS_S]


@_jit
def _micro_step(p: Array, tps: Array, tables: Array, ti: int, micro: float,
                row: Array) -> tuple[float, float, float]:
    """:meth:`training.MicroStep._transformer`: (compute_s, memory_s, total_s) of one
    micro-step of ``micro`` samples on one GPU of TP degree ``tps[ti]``."""
    g = tables[ti]
    tp = tps[ti, _TP]
    seq, h, act_b = p[_SEQ], p[_H], p[_ACT_B]
    tokens = micro * seq
    pairs = p[_PAIRS] * micro
    attn = 4.0 * pairs * h / tp
    qkvo = 4.0 * tokens * h * act_b / tp
    fwd_bytes, bwd_bytes = qkvo, 2.0 * qkvo
    if p[_FLASH] == 0.0:
        scores = p[_HEADS] / tp * seq * seq * micro
        fwd_bytes += scores * p[_FWD_SCORE_B]
        bwd_bytes += scores * p[_BWD_SCORE_B]
    elementwise = tps[ti, _ELEMENTWISE]
    fc, fm, ft = _forward(p, g, elementwise, tokens, attn, fwd_bytes)
    bc, bm, bt = _backward(p, g, elementwise, tokens, p[_BWD_ATTN] * attn, bwd_bytes, row)
    passes, layers = p[_PASSES], p[_LAYERS]
    compute = (passes * fc + bc) * layers
    memory = (passes * fm + bm) * layers
    total = (passes * ft + bt) * layers
    rows = tokens * p[_HEAD_FRACTION]
    if rows <= 0.0:
        return compute, memory, total
    vocab = tps[ti, _VOCAB]
    sms, per_flop, n_tiles = p[_SMS], p[_PER_FLOP], int(p[_TILES])
    k0, k1 = gemm_row(sms, per_flop, n_tiles, g, _HEAD, rows, 1.0, False)
    compute, memory, total = compute + k0, memory + k1, total + max(k0, k1)
    k0, k1 = gemm_row(sms, per_flop, n_tiles, g, _HEAD_GRAD, rows, 1.0, False)
    compute, memory, total = compute + k0, memory + k1, total + max(k0, k1)
    k0, k1 = _wgrad(p, g, _HEAD_WEIGHT_GRAD, rows, row, 1.0)
    compute, memory, total = compute + k0, memory + k1, total + max(k0, k1)
    loss = 3.0 * rows * vocab * p[_LOGIT_BYTES] / p[_BYTES_S]
    return compute, memory + loss, total + loss


_MEMO_SLOTS = 64
"""Micro-batches remembered per TP degree in one :func:`_plans` call (direct-mapped by
micro-batch: a call's counts and shardings ask for a few dozen distinct ones)."""


@_jit
def _micro_step_memo(p: Array, tps: Array, tables: Array, ti: int, micro: float, row: Array,
                     keys: Array, values: Array) -> tuple[float, float, float]:
    """:func:`_micro_step`, remembered per (TP degree, micro-batch) for one :func:`_plans`
    call: a micro-step's figures depend on nothing else (the sharding changes the memory
    and the collectives, not the step), and a call's counts and shardings ask for the same
    few again and again (about five times each on varied training requests)."""
    slot = int(micro) % _MEMO_SLOTS
    if keys[ti, slot] == micro:
        return values[ti, slot, 0], values[ti, slot, 1], values[ti, slot, 2]
    kc, km, kt = _micro_step(p, tps, tables, ti, micro, row)
    keys[ti, slot] = micro
    values[ti, slot, 0], values[ti, slot, 1], values[ti, slot, 2] = kc, km, kt
    return kc, km, kt


@_jit
def _all_reduce(p: Array, nbytes: float, ranks: float, link: float) -> float:
    """:func:`performance.all_reduce_s`."""
    if ranks <= 1.0 or nbytes <= 0.0:
        return 0.0
    volume = 2.0 * (ranks - 1.0) / ranks * nbytes
    s: float = volume / (link * p[_GB] * p[_COLL_EFF]) + p[_COLL_LATENCY]
    return s


@_jit
def _all_gather(p: Array, nbytes: float, ranks: float, link: float) -> float:
    """:func:`performance.all_gather_s`."""
    if ranks <= 1.0 or nbytes <= 0.0:
        return 0.0
    volume = (ranks - 1.0) / ranks * nbytes
    s: float = volume / (link * p[_GB] * p[_COLL_EFF]) + p[_COLL_LATENCY]
    return s


@_jit
def _dp_comm(p: Array, dp: float, sharding: float, grad_bytes: float, weight_bytes: float,
             accumulation: float, link: float) -> float:
    """:func:`training._dp_comm_s` (``sharding``: its index in SHARDING_ORDER)."""
    if sharding == 3.0:
        gather = _all_gather(p, weight_bytes, dp, link)
        z3: float = accumulation * (2.0 * gather + _all_gather(p, grad_bytes, dp, link))
        return z3
    if sharding == 2.0:
        z2: float = accumulation * _all_gather(p, grad_bytes, dp, link) + _all_gather(
            p, weight_bytes, dp, link)
        return z2
    if sharding == 1.0:
        z1: float = _all_gather(p, grad_bytes, dp, link) + _all_gather(p, weight_bytes, dp, link)
        return z1
    return _all_reduce(p, grad_bytes, dp, link)


_exposed_comm = _jit(exposed_comm_s)
_even_micro = _jit(splits.even_micro)
_exact_micro = _jit(splits.exact_micro)


@_jit
def _micro_choices(p: Array, s: Array, i: int) -> tuple[float, float]:
    """:meth:`Split.micro_choices` as (exact, even): even 0 when none fits, exact 0 when
    there is one choice."""
    fixed = s[i, _S_WEIGHTS] + s[i, _S_GRADS] + s[i, _S_OPTIM] + p[_OVERHEAD_GB]
    room = p[_USABLE_GB] - fixed
    act = s[i, _S_ACT]
    if room < act:
        return 0.0, 0.0
    limit = room / act if act > 0.0 else math.inf
    batch: float = s[i, _S_BATCH]
    if batch <= limit:
        return 0.0, batch
    whole, most = int(batch), int(np.floor(limit))
    even = _even_micro(whole, most)
    exact = _exact_micro(whole, most)
    return (float(exact) if exact != 0 and exact != even else 0.0), float(even)


@_jit
def _walk(p: Array, tps: Array, tables: Array, s: Array, n: int, dp_link: float, out: Array,
          row: Array, keys: Array, values: Array) -> int:
    """:func:`training.fastest_scalar` over the first ``n`` packed splits ``s``: each walked
    split's micro-batch and step into ``out`` (NaN: not walked); returns the chosen split's
    index (-1: none fits)."""
    least = math.inf
    for i in range(n):
        ratio = s[i, _S_BATCH] / s[i, _S_TP]
        if ratio < least:
            least = ratio
    stop_at = p[_FLOOR_FLOPS] * least / p[_BATCH] / p[_FLOOR_RATE] * p[_TIE]
    settled = 0  # bit ti: TP degree tps[ti] settled
    best = math.inf
    for i in range(n):
        out[i, _O_MICRO] = math.nan
    for i in range(n):
        ti = int(s[i, _S_TI])
        if settled & (1 << ti):
            continue
        exact, even = _micro_choices(p, s, i)
        if even == 0.0:
            continue
        tp, dp, batch = s[i, _S_TP], s[i, _S_DP], s[i, _S_BATCH]
        state_gb = s[i, _S_WEIGHTS] + s[i, _S_GRADS] + s[i, _S_OPTIM]
        optimizer_s = 2.0 * state_gb / p[_BANDWIDTH]
        step_total = math.inf
        for pick in range(2):  # Split.micro_choices: exact (when there is one), then even
            micro = exact if pick == 0 else even
            if micro == 0.0:
                continue
            accumulation = np.ceil(batch / micro)
            kc, km, kt = _micro_step_memo(p, tps, tables, ti, micro, row, keys, values)
            compute_s = accumulation * kc
            memory_s = accumulation * km + optimizer_s
            total = accumulation * kt + optimizer_s
            dp_comm = _dp_comm(p, dp, s[i, _S_SHARDING], p[_GRAD_BYTES] / tp,
                               p[_WEIGHT_BYTES] / tp, accumulation, dp_link)
            tp_comm = 0.0
            if tp > 1.0 and p[_LAYERS] != 0.0:
                per_layer = p[_TP_PER_LAYER] * _all_reduce(p, p[_TP_BYTES] * micro, tp,
                                                           tps[ti, _TP_LINK])
                tp_comm = per_layer * p[_LAYERS] * accumulation
            # the shardings' codes: none 0, zero1 1 (training.ONCE_PER_STEP)
            exposed = _exposed_comm(s[i, _S_SHARDING] <= 1.0, accumulation, kc, tp_comm,
                                    dp_comm, p[_OVERLAP])
            busy = max(compute_s, memory_s)
            stall = max(0.0, total - busy)
            fed = micro * accumulation / tp / p[_INPUT_SPS] if p[_INPUT_SPS] != 0.0 else 0.0
            stall += max(0.0, fed - (busy + stall + exposed))
            timed = busy + stall + exposed
            if timed >= step_total:
                continue
            step_total = timed
            out[i, _O_MICRO] = micro
            out[i, _O_STEP] = compute_s
            out[i, _O_STEP + 1] = memory_s
            out[i, _O_STEP + 2] = tp_comm
            out[i, _O_STEP + 3] = dp_comm
            out[i, _O_STEP + 4] = exposed
            out[i, _O_STEP + 5] = stall
        micro = out[i, _O_MICRO]
        memory_s = out[i, _O_STEP + 1]
        compute_s = out[i, _O_STEP]
        if step_total < best:
            best = step_total
        if step_total <= stop_at:
            break
        if micro == batch and memory_s <= compute_s:
            settled |= 1 << ti
    limit = best * p[_TIE]
    for i in range(n):
        if not math.isnan(out[i, _O_MICRO]):
            total_i = max(out[i, _O_STEP], out[i, _O_STEP + 1]) + out[i, _O_STEP + 5] \
                + out[i, _O_STEP + 4]
            if total_i <= limit:
                return i
    return -1


@_jit
def _dp_link(p: Array, count: int) -> float:
    """The data-parallel link of ``count`` GPUs [GB/s]: :func:`parallelism.group_link` of the
    GPUs of one node (:func:`parallelism.node_layout`), across nodes when they span several."""
    nodes, in_node = node_layout(int(p[_PER_NODE]), count)
    rate: float = group_link(int(p[_DOMAIN]), p[_FAST_LINK], p[_PCIE_LINK], p[_NETWORK_LINK],
                             in_node, nodes > 1)[1]
    return rate


@_jit
def _splits(p: Array, tps: Array, count: int, wanted: float, s: Array) -> int:
    """:func:`training_splits.splits` of ``count`` GPUs into the rows of ``s`` (``wanted``:
    the sharding's index in SHARDING_ORDER, :data:`_AUTO` for all); returns how many."""
    limit = min(int(p[_DOMAIN]), count)
    heads, batch = int(p[_HEADS]), int(p[_BATCH])
    bounded = False  # some degree leaves every data-parallel rank a sample
    for ti in range(tps.shape[0]):
        tp = int(tps[ti, _TP])
        if tp > limit:
            break
        if heads % tp == 0 and count // tp <= batch:
            bounded = True
    layers = p[_LAYERS]
    n = 0
    for ti in range(tps.shape[0]):
        tp = int(tps[ti, _TP])
        if tp > limit:
            break
        if heads % tp != 0 or (bounded and count // tp > batch):
            continue
        dp = max(1, count // tp)
        params = tps[ti, _PARAMS_GB]
        first, last = (0, 3) if wanted == _AUTO else (int(wanted), int(wanted))
        if dp <= 1:
            first, last = 0, 0  # a single data-parallel rank has nothing to shard over
        for eff in range(first, last + 1):
            w_div = g_div = o_div = 1
            if dp > 1 and eff >= 1:
                o_div = dp
                if eff >= 2:
                    g_div = dp
                if eff >= 3:
                    w_div = dp
            weights = params * p[_STATE_W] / w_div
            if w_div > 1 and layers != 0.0:
                weights += 2.0 * params / layers * p[_STATE_W]
            s[n, _S_TI] = ti
            s[n, _S_TP] = tp
            s[n, _S_DP] = dp
            s[n, _S_SHARDING] = eff
            s[n, _S_BATCH] = max(1.0, np.ceil(batch / dp))
            s[n, _S_WEIGHTS] = weights
            s[n, _S_GRADS] = params * p[_STATE_G] / g_div
            s[n, _S_OPTIM] = params * p[_STATE_O] / o_div
            s[n, _S_ACT] = tps[ti, _ACT_GB]
            n += 1
    return n


@_jit
def _plans(p: Array, tps: Array, tables: Array, counts: Array, wanted: float,
           res: Array) -> None:
    """The plan of each of ``counts`` into the rows of ``res`` (columns :data:`P_MICRO` ...):
    its splits, then the walk over them."""
    s = np.empty((4 * tps.shape[0], _SPLIT_COLUMNS))
    out = np.empty((s.shape[0], _OUT_COLUMNS))
    row = np.empty((1, tables.shape[2]))
    keys = np.full((tps.shape[0], _MEMO_SLOTS), -1.0)
    values = np.empty((tps.shape[0], _MEMO_SLOTS, 3))
    for k in range(counts.shape[0]):
        count = int(counts[k])
        n = _splits(p, tps, count, wanted, s)
        i = _walk(p, tps, tables, s, n, _dp_link(p, count), out, row, keys, values)
        res[k, P_MICRO] = math.nan
        if i >= 0:
            for j in range(_SPLIT_COLUMNS):
                res[k, j] = s[i, j]
            for j in range(_OUT_COLUMNS):
                res[k, P_MICRO + j] = out[i, j]
            # training._total, in its order
            res[k, P_TOTAL] = max(out[i, _O_STEP], out[i, _O_STEP + 1]) + out[i, _O_STEP + 5] \
                + out[i, _O_STEP + 4]


@_jit
def _fits(p: Array, tps: Array, count: int, wanted: float, s: Array) -> bool:
    """:func:`training.fits`: some split's memory at micro-batch 1 (the least of
    :func:`training_splits.least_gb`, summed in its order) within the usable memory."""
    n = _splits(p, tps, count, wanted, s)
    least = math.inf
    for i in range(n):
        total = s[i, _S_WEIGHTS] + s[i, _S_GRADS] + s[i, _S_OPTIM] + p[_OVERHEAD_GB] \
            + s[i, _S_ACT]
        if total < least:
            least = total
    fits: bool = least <= p[_USABLE_GB]
    return fits


@_jit
def _least_fitting(p: Array, tps: Array, counts: Array, wanted: float) -> int:
    """:func:`parallelism.least_count` of :func:`_fits`: the index of the least of ``counts``
    that fits (-1: none), probing the same counts (the first, the last, then a bisection)."""
    s = np.empty((4 * tps.shape[0], _SPLIT_COLUMNS))
    last: int = counts.shape[0] - 1
    if _fits(p, tps, int(counts[0]), wanted, s):
        return 0
    if not _fits(p, tps, int(counts[last]), wanted, s):
        return -1
    lo, hi = 1, last
    while lo < hi:
        mid = (lo + hi) // 2
        if _fits(p, tps, int(counts[mid]), wanted, s):
            hi = mid
        else:
            lo = mid + 1
    return hi


def least_fitting(packed: tuple[Array, Array], counts: tuple[int, ...], wanted: Sharding) -> int:
    """The index of the least of ``counts`` (ascending) at which some split of the job packed
    by :func:`pack_memory` fits memory (-1: none), compiled."""
    code = _AUTO if wanted == "auto" else SHARDING_CODES[wanted]
    return int(_least_fitting(packed[0], packed[1], np.array(counts, dtype=np.float64), code))


def plans(job: PackedJob, counts: list[int], wanted: Sharding) -> list[list[float]]:
    """The chosen split, micro-batch, step and step time of each of ``counts``, compiled: a
    row each (columns :data:`_S_TI` ... of the split, :data:`P_MICRO`, the step's six figures,
    :data:`P_TOTAL`; a NaN micro-batch: no split fits)."""
    res = np.empty((len(counts), _PLAN_COLUMNS))
    code = _AUTO if wanted == "auto" else SHARDING_CODES[wanted]
    _plans(job.params, job.tps, job.tables, np.array(counts, dtype=np.float64), code, res)
    rows: list[list[float]] = res.tolist()
    return rows


def chosen(row: list[float]) -> tuple[splits.Split, int, tuple[
        float, float, float, float, float, float]] | None:
    """A row of :func:`plans` as (split, micro-batch, step figures); None: no split fits."""
    micro = row[P_MICRO]
    if math.isnan(micro):
        return None
    split = splits.Split(int(row[_S_TP]), int(row[_S_DP]),
                         splits.SHARDING_ORDER[int(row[_S_SHARDING])], int(row[_S_BATCH]),
                         row[_S_WEIGHTS], row[_S_GRADS], row[_S_OPTIM], row[_S_ACT])
    s = _P_STEP
    return split, int(micro), (row[s], row[s + 1], row[s + 2], row[s + 3], row[s + 4],
                               row[s + 5])


def warm_up() -> None:
    """Compile (or load from numba's cache) the walk; MoE, so every branch is compiled."""
    p = np.ones(_PARAMS)
    p[_TILES], p[_BATCH], p[_DOMAIN], p[_PER_NODE] = 1.0, 4.0, 2.0, 2.0
    tps = np.ones((2, 6))
    tps[1, _TP] = 2.0
    tables = np.ones((2, _ROWS, _TILE_TABLES + 4))
    _plans(p, tps, tables, np.array([1.0, 2.0, 4.0]), _AUTO, np.empty((3, _PLAN_COLUMNS)))
    _least_fitting(p, tps, np.array([1.0, 2.0, 4.0]), _AUTO)
