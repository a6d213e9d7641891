"""Lower bounds on a GPU type's best score, known before estimating any of its counts.

Branch and bound in :func:`service.engine.choice.ranking.recommend` evaluates GPU types in ascending
bound order and stops once no remaining type can reach the top ``limit``; these bounds must
never exceed the score the full search would find. Every figure is derived from the same
functions and constants the estimate uses, dropping only terms that can only add time:

* Ideal scaling: n GPUs at best divide the work by n (communication, stalls, pipeline bubbles
  and the compute job's serial fraction and exchanges, :mod:`~service.engine.physics.scaling`,
  only add), so the GPU-hours
  ``H`` of any option are at least those of one GPU running at the efficiency the estimate
  applies, and its time is at least ``H / max usable GPUs``.
* Money is ``usd_per_gpu_hour x GPU-hours`` exactly (:func:`cost.usd_per_gpu_hour`), so
  cost >= cheapest usable per-GPU-hour rate x ``H``; energy is ``tdp x POWER_UTILIZATION``
  per GPU-hour, so energy >= ``tdp x POWER_UTILIZATION / 1000 x H``.
* Inference: a request costs at least the one-GPU compute of its prompt and every decode
  token (linear layers + attention, at the estimate's efficiencies) plus, for attention, at
  least the time to read its KV cache once per token; per GPU no split, batch or replica
  count beats that, and with a target the paid GPUs are whole, at least the smallest fitting
  count and at least the GPUs the target keeps busy at that floor, while the work served is
  at most the target. Transformers' latency is at least, at the
  smallest batch, the TTFT and TPOT iterations with every kernel at the larger of its FLOPs
  at its rate and its bytes at bandwidth, at the best TP degree the count holds (PP stages
  run in sequence; latency grows with the batch: :mod:`inference_floors`, for every GPU type
  at once); CNNs' the batch-1 no-comm latency on one GPU divided by the largest TP degree.
  With a target and no fixed batch, a count's options are also bounded at the load their
  copies leave each replica (the batch it settles at is at least the load times the floor
  of a request's time on the replica: :mod:`load_floors`), as (cost, time) pairs per range of
  copies (:func:`count_pairs`), which the balanced search takes.

Where no bound is proven (no rate for the precision) the bound is 0: no pruning.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from service.engine import constants as c
from service.engine.cache import Memo, memo_of
from service.engine.choice import cost as co
from service.engine.choice import inference_floors as ifl
from service.engine.choice import load_floors
from service.engine.physics import compiled_scaling, scaling
from service.engine.physics import serving as inf
from service.engine.physics import training as tr
from service.engine.physics.estimate import (
    compute_job_seconds,
    packed_compute_job,
    training_hours,
    workload_rate,
)
from service.engine.physics.performance import PeakRate
from service.engine.recommend_types import Offer
from service.engine.types import GpuSpec, TransformerModel, Workload

BOUND_SLACK = 1e-9
"""Relative amount every bound is lowered by, so float rounding (the estimate multiplies the
same figures in another order) can never lift a bound above the exact score it bounds."""
SECONDS_PER_HOUR = 3600.0
PRUNE_MARGIN = 1e-6
"""Relative margin a bound must clear before a count (or a GPU type) is skipped: far above
float noise and the 1e-9 relative rounding of scores (``ranking._round_rel``), so a skipped
option could never have tied or won."""
BALANCED_WEIGHT = 0.5
"""``ranking.BALANCED_COST_WEIGHT``: the balanced score's weight of normalized cost."""
BALANCED_RECHECK = 8
"""Balanced: after a failed stop test, evaluate 1/8 of the GPUs evaluated so far before the
next one (each test is O(evaluated + remaining)), keeping the search O(n) overall."""


def balanced_floor(cost: Any, time: Any, c_min: float, t_min: float) -> Any:
    """The balanced score of a (cost, time) floor at the minima (C, T) > 0:
    ``w cost / C + (1 - w) time / T`` (floats or arrays alike)."""
    return BALANCED_WEIGHT * cost / c_min + (1 - BALANCED_WEIGHT) * time / t_min


INF = math.inf


def pareto(pairs: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (cost, time) floor pairs of ``pairs`` that no other is at or below in both figures
    (one of equal pairs), by cost: :func:`balanced_floor` rises with either figure (floats
    round monotonically), so its least over them is its least over ``pairs``, and a GPU's
    bound, taken again at each stop test, reads fewer pairs. ``pairs`` as given where a
    figure is NaN (no order)."""
    if len(pairs) < 2 or any(math.isnan(x) or math.isnan(y) for x, y in pairs):
        return pairs
    out: list[tuple[float, float]] = []
    best = INF
    for cost, time in sorted(pairs):
        if time < best or not out:
            out.append((cost, time))
            best = time
    return out


def ratio_to_min(x: float, lo: float) -> float:
    """``x`` over its minimum ``lo`` in a balanced score: inf for a non-finite ``x``, 1 when
    the minimum is not finite or underflowed to 0 (the ranking's score and the explanation of
    it both use this)."""
    if not math.isfinite(x) or not math.isfinite(lo):
        return INF if not math.isfinite(x) else 1.0
    return x / lo if lo > 0 else 1.0


@dataclass(frozen=True)
class Minima:
    """What a balanced score divides by (:func:`ratio_to_min`): the least figures over the
    feasible options found so far. Priced options are scored against the priced minima;
    unpriced ones (ranked after every priced one) against the unpriced minima. INF: no such
    option (yet)."""

    money: float = INF
    """Least cost of a priced option (USD to finish; inference: USD per unit of work)."""
    time: float = INF
    """Least time of a priced option (hours; inference: latency [ms])."""
    proxy: float = INF
    """Least GPU-hours (inference: per unit of work) of an unpriced option."""
    time_unpriced: float = INF
    """Least time of an unpriced option."""


NO_MINIMA = Minima()
"""The minima of no options: what the objectives other than balanced are scored with (they
never read them)."""


@dataclass(frozen=True)
class Floors:
    """Objective-independent lower bounds for one GPU type (0 = none proven)."""

    gpu_hours: float
    """Training/compute: GPU-hours to finish (GPUs, without a length: usd_per_hour is then
    the cost); inference: GPU-hours per million output tokens / per 1000 requests."""
    time_hours: float = 0.0
    """Training/compute: time to finish [hours]; 0 for inference."""
    latency_ms: float = 0.0
    """Inference: latency of a request [ms]; 0 for training/compute."""
    serial_fraction: float = 0.0
    """Compute jobs: the serial fraction ``f`` :func:`scaling.scaled_time` applies (0: none
    proven, ideal scaling)."""
    weak_scaling: bool = False
    """Compute jobs without a working set: :func:`scaling.scaled_time`'s scaled-speedup form."""
    paid_per_gpu: float = 0.0
    """Inference with a target: GPU-hours per unit of work that each GPU paid for adds at
    least (the work served is at most the target, :func:`cost.unit_rates`), so an option on
    ``n`` GPUs costs at least ``n x paid_per_gpu`` per unit (:func:`count_floors`); 0 for
    no target and for training/compute."""
    gpus_needed: float = 0.0
    """Inference with a target: GPUs the target keeps busy at the request floor (target x
    GPU-seconds per request, lowered by :data:`BOUND_SLACK`): an option's GPUs (a count
    times its whole replicas) are an integer at least this, so ``n`` GPUs per replica pay for
    at least ``n x ceil(gpus_needed / n)`` (:func:`count_floors`); 0 otherwise."""

    def replicas_at(self, n: int) -> int:
        """Replicas of ``n`` GPUs an option cannot go below: enough to keep
        :attr:`gpus_needed` busy, at least one."""
        return max(1, math.ceil(self.gpus_needed / n)) if self.gpus_needed > 0 else 1

    def time_at(self, n: int) -> float:
        """Training/compute: hours no option on ``n`` GPUs beats: the one-GPU hours ``H``
        over ``n`` (ideal scaling), and for compute jobs the serial part too:
        ``f H + (1 - f) H / n``, or ``H / (n - f (n - 1))`` without a working set
        (:func:`compute_time_floor`); then the job's start-up on ``n`` GPUs
        (:func:`scaling.job_startup_s`)."""
        return (compute_time_floor(self.gpu_hours, n, self.serial_fraction, self.weak_scaling)
                + scaling.job_startup_s(n) / SECONDS_PER_HOUR * (1 - BOUND_SLACK))


def compute_time_floor(one_gpu: float, n: int, f: float, weak: bool) -> float:
    """:func:`scaling.scaled_time` on ``n`` GPUs without its exchanges (transfers and
    latencies only add): the serial and parallel parts of the one-GPU time ``one_gpu``.
    Falls as ``n`` grows (both forms), so at ``cap`` it bounds every count up to ``cap``; at
    ``f`` = 0 it is ``one_gpu / n``."""
    if n <= 1:
        return one_gpu
    if weak:
        return one_gpu / (n - f * (n - 1))
    return f * one_gpu + (1.0 - f) * one_gpu / n


def least_job_times(one_gpu: NDArray[np.float64], first: NDArray[np.float64],
                    cap: int | NDArray[np.float64], f: float, weak: bool
                    ) -> NDArray[np.float64]:
    """Hours no option of a training or compute job on ``first`` to ``cap`` GPUs beats, per
    GPU type (``one_gpu``: its one-GPU hours ``H``): the least over those counts of
    :func:`compute_time_floor` plus the start-up (:func:`scaling.job_startup_s`, ``a + b n``
    on several GPUs). One GPU: ``H``. On several the parallel part is at least
    ``(1 - f) H / n`` (``H / n`` without a working set: ``n - f (n - 1) <= n``), the serial
    part ``f H`` (none taken without a working set), so the time is at least
    ``s + p / n + a + b n``, convex in ``n``: its least over the real interval
    [max(2, first), cap], at ``sqrt(p / b)`` clamped, bounds every count there. ``cap``: one
    for every type, or each type's (:func:`cost.count_reach`)."""
    hi = np.maximum(1.0, cap)
    lo = np.maximum(2.0, first)
    serial = np.zeros_like(one_gpu) if weak else f * one_gpu
    parallel = one_gpu if weak else (1.0 - f) * one_gpu
    fixed = c.JOB_STARTUP_FIXED_S / SECONDS_PER_HOUR
    per_gpu = c.JOB_STARTUP_S_PER_GPU / SECONDS_PER_HOUR
    n = np.minimum(hi, np.maximum(lo, np.sqrt(parallel / per_gpu)))
    several = np.where(lo <= hi, serial + parallel / n + fixed + per_gpu * n, np.inf)
    return np.minimum(np.where(first <= 1, one_gpu, np.inf), several)


def least_job_time(one_gpu: float, first: int, cap: int, f: float, weak: bool) -> float:
    """:func:`least_job_times` of one GPU type."""
    return float(least_job_times(np.array([one_gpu]), np.array([float(first)]), cap, f,
                                 weak)[0])


NO_FLOORS = Floors(0.0)


def floors(
    workload: Workload,
    gpu: GpuSpec,
    first: int,
    cap: int,
    throughput: bool = False,
    memo: Memo | None = None,
) -> Floors:
    """Lower bounds over every option of ``gpu`` from ``first`` (smallest count that fits
    memory) to ``cap`` GPUs per replica (see the module docstring; the ranking passes a
    training or compute job its :func:`cost.count_reach`, serving its count cap).
    ``throughput``: CNN inference options run at the throughput-optimal batch (every objective
    but time), which gives a much higher latency floor (:func:`_latency_floor`); transformers'
    floor (:mod:`inference_floors`) holds in either mode."""
    memo = memo_of(memo)
    if workload.kind == "compute":  # a few divisions: cheaper than any cache lookup
        return _floors(workload, gpu, first, cap, throughput, memo)
    key = (workload, gpu, first, cap, throughput)
    return memo.get("bound_floors", key,
                    lambda: _floors(workload, gpu, first, cap, throughput, memo))


def _floors(
    workload: Workload, gpu: GpuSpec, first: int, cap: int, throughput: bool, memo: Memo
) -> Floors:
    rate = workload_rate(workload, gpu)  # the rate estimate() uses
    if rate is None:
        return NO_FLOORS
    if workload.kind == "compute":
        out = _compute(workload, gpu, rate, cap, memo)
    elif workload.kind == "training":
        out = _training(workload, gpu, rate, first, cap, memo)
    else:
        out = _inference(workload, gpu, rate, first, cap, throughput, memo)
    return lowered(out)


def lowered(out: Floors) -> Floors:
    """``out`` lowered by :data:`BOUND_SLACK` (every figure but the scaling form's)."""
    low = 1 - BOUND_SLACK
    return Floors(out.gpu_hours * low, out.time_hours * low, out.latency_ms * low,
                  out.serial_fraction, out.weak_scaling, out.paid_per_gpu * low,
                  out.gpus_needed)


def _compute(workload: Workload, gpu: GpuSpec, rate: PeakRate, cap: int, memo: Memo) -> Floors:
    """``estimate._estimate_compute``: :func:`scaling.scaled_time` is the one-GPU time
    ``T1 = max(compute, memory)`` on one GPU and ``f T1 + (1 - f) T1 / n + exchanges`` on n
    (``T1 / (n - f (n - 1)) + exchanges`` without a working set), both >= T1 / n, so
    n x seconds >= T1; and seconds >= the serial and parallel parts at ``cap``
    (:func:`compute_time_floor`: they fall as n grows). The exchanges are left out: on the
    synthetic 5,000-GPU catalog they, not the serial part, keep the FP64 benchmark job off
    large counts, and this bound sits ~85x below its best time (see docs/performance.md)."""
    spec = workload.compute
    assert spec is not None
    one_gpu_s = max(compute_job_seconds(workload, gpu, rate, memo))
    hours = one_gpu_s / SECONDS_PER_HOUR
    f = scaling.serial_fraction(spec)
    weak = spec.memory_gb <= 0
    return Floors(hours, time_hours=least_job_time(hours, 1, cap, f, weak),
                  serial_fraction=f, weak_scaling=weak)


def _training(workload: Workload, gpu: GpuSpec, rate: PeakRate, first: int, cap: int,
              memo: Memo) -> Floors:
    """``training.step_time``: every micro-step runs its GEMM / attention / conv FLOPs (less
    the input-embedding lookup and the LM head on the tokens that skip it,
    :func:`training.training_floor_flops`) at no more than the
    fastest of those kernels' rates (:func:`training.training_floor_rate`), split over at
    most n GPUs; wave quantization, memory-bound ops, fixed costs, the optimizer update and
    exposed communication only add."""
    spec, model = workload.training, workload.model
    assert spec is not None and model is not None
    one_gpu_step_s = tr.training_floor_flops(workload) / tr.training_floor_rate(
        workload, gpu, rate, memo)  # the device kept in the shared cache
    seq = (spec.seq_len or 1) if isinstance(model, TransformerModel) else 1
    if not 0 < one_gpu_step_s < math.inf:
        return NO_FLOORS  # no finite floor: never prune on it
    hours = training_hours(workload, spec.batch_size / one_gpu_step_s, seq)
    if hours is None:
        # no length: the cost is usd_per_hour of >= first GPUs, the time unbounded
        return Floors(float(first))
    return Floors(hours, time_hours=least_job_time(hours, first, cap, 0.0, False))


def _latency_floor(
    workload: Workload, gpu: GpuSpec, rate: PeakRate, cap: int, memo: Memo | None
) -> float:
    """Least latency [ms] of any option on up to ``cap`` GPUs (no latency mode).

    ``estimate._estimate_inference`` runs a split (tp, pp) at a fixed ``batch_size``, else at
    a batch from 1 up to its capacity batch (the throughput-best batch meeting the limits,
    :meth:`serving.Context.capacity_batch`; with a target, the operating batch below it).
    Latency grows with the batch, so the least over the splits of ``cap`` GPUs (which hold
    those of every smaller count: :meth:`serving.Context.splits`) of the latency at batch 1
    (or the fixed batch) bounds every option from below; over the splits of one count ``n``
    it bounds that count's options (:func:`count_latency_floor`). The arithmetic is the
    estimate's own (:class:`serving.Context`, shared with it)."""
    spec, model = workload.inference, workload.model
    assert spec is not None and model is not None
    ctx = inf.context(workload, gpu, rate.precision_used, rate, memo)
    return ctx.least_latency_ms(max(1, cap), spec.batch_size or 1)


def count_latency_floor(workload: Workload, gpu: GpuSpec, n: int, memo: Memo | None) -> float:
    """Least latency [ms] of any option on ``n`` GPUs of ``gpu``: the request's floor table's
    least over the TP degrees ``n`` GPUs hold, where the screen built one
    (:func:`floor_table`), else the least batch-1 (or fixed-batch) latency over the splits of
    ``n`` GPUs (:func:`_latency_floor`); lowered by :data:`BOUND_SLACK`; 0 (no bound)
    without a rate. A small count cannot reach the latency of a TP degree only a larger one
    holds."""
    rate = workload_rate(workload, gpu)
    if rate is None or workload.inference is None:
        return 0.0
    memo = memo_of(memo)
    table = floor_table(workload, memo, n)
    found = table.least_latency_ms(gpu.slug, n) if table is not None else None
    if found is None:
        if ifl.supported(workload):
            found = _one_gpu_table(workload, gpu, rate, n, memo).least_latency_ms(gpu.slug, n)
            assert found is not None
        else:
            found = _latency_floor(workload, gpu, rate, n, memo)
    return found * (1 - BOUND_SLACK)


def count_latency_floors(workload: Workload, gpu: GpuSpec, counts: list[int],
                         memo: Memo | None) -> list[float]:
    """:func:`count_latency_floor` of each of ``counts`` (the same floats: the floor table
    looked up once)."""
    rate = workload_rate(workload, gpu)
    if rate is None or workload.inference is None or not counts:
        return [0.0] * len(counts)
    memo = memo_of(memo)
    table = floor_table(workload, memo, max(counts))
    found = table.least_latencies_ms(gpu.slug, counts) if table is not None else None
    if found is None:
        return [count_latency_floor(workload, gpu, n, memo) for n in counts]
    low = 1 - BOUND_SLACK
    return [v * low for v in found]


def _one_gpu_table(workload: Workload, gpu: GpuSpec, rate: PeakRate, cap: int,
                   memo: Memo) -> ifl.Table:
    """The :class:`inference_floors.Table` of ``gpu`` alone (the column screen's arithmetic,
    element for element), kept in the request's memo: a GPU's floors and its counts' latency
    floors above the screen's cap ask again."""
    spec = workload.inference
    assert spec is not None
    return memo.scratch(
        "one_gpu_floor_table", (workload, gpu, cap),
        lambda: load_floors.floor_table(workload, ifl.columns([gpu], [rate], spec.runtime, memo),
                                        cap, memo))


def floor_table(workload: Workload, memo: Memo, n: int,
                build: Callable[[], ifl.Table] | None = None) -> ifl.Table | None:
    """A request's :class:`inference_floors.Table` covering counts of ``n`` GPUs, kept in its
    memo: one built for a cap of ``n`` or more, else ``build``'s (kept; None without one: the
    per-GPU floors then apply)."""
    tables: dict[int, ifl.Table] = memo.scratch("inference_floor_tables", workload, dict)
    # most asks are for the cap a table was built for (the smallest cap >= n is then n's)
    found = tables.get(n)
    if found is None:
        found = next((tables[cap] for cap in sorted(tables) if cap >= n), None)
    if found is None and build is not None:
        found = tables[n] = build()
    return found


def _serving_units(workload: Workload) -> tuple[float, float]:
    """(units of work per request, units per scale): output tokens per million for LLM
    serving, else requests per thousand (:mod:`cost`)."""
    spec = workload.inference
    assert spec is not None
    llm = co.is_llm_serving(workload)
    units = float(spec.output_tokens) if llm else 1.0
    return units, co.TOKENS_PER_MILLION if llm else co.REQUESTS_PER_UNIT


def inference_floors(workload: Workload, request_s: np.ndarray, latency_ms: np.ndarray,
                     firsts: np.ndarray, low: bool = False) -> list[Floors]:
    """Inference :class:`Floors` (not yet :func:`lowered`) from per-GPU request floors
    [GPU-s], latency floors [ms] and smallest fitting counts, a GPU per element: a request
    costs at least its floor in GPU-time per unit of work; with a target, an option pays for
    whole GPUs (the count it rents, at least ``first``, times its whole replicas), at least
    the GPUs the target keeps busy at the request floor (target x floor,
    :attr:`Floors.gpus_needed`), while at most the target is served. The counts an option
    rents are its offers' instance multiples (a 3-GPU instance rents 3), not only the
    searched counts, so the type's floor rounds the GPUs up to a whole one, not to a multiple
    of a searched count. ``low``: each already :func:`lowered` (the same floats, multiplied
    as arrays: a screen of thousands of types builds each record once)."""
    spec = workload.inference
    assert spec is not None
    units, scale = _serving_units(workload)
    gpu_hours = request_s / (units * SECONDS_PER_HOUR) * scale
    paid = 0.0
    needed = np.zeros(len(request_s))
    target = spec.target_requests_per_s
    if target:
        paid = scale / (target * units * SECONDS_PER_HOUR)
        needed = request_s * target * (1.0 - 2.0 * BOUND_SLACK)
        gpu_hours = np.maximum(gpu_hours, np.maximum(np.ceil(needed), firsts) * paid)
    if low:  # lowered(): every figure but the scaling form's and the GPUs needed
        slack = 1 - BOUND_SLACK
        gpu_hours, latency_ms, paid = gpu_hours * slack, latency_ms * slack, paid * slack
    return [Floors(g, 0.0, lat, paid_per_gpu=paid, gpus_needed=x)
            for g, lat, x in zip(gpu_hours.tolist(), latency_ms.tolist(), needed.tolist(),
                                 strict=True)]


def _inference(
    workload: Workload,
    gpu: GpuSpec,
    rate: PeakRate,
    first: int,
    cap: int,
    throughput: bool,
    memo: Memo | None,
) -> Floors:
    spec, model = workload.inference, workload.model
    assert spec is not None and model is not None
    if ifl.supported(workload):  # transformers: the column screen's floors, for one GPU
        table = _one_gpu_table(workload, gpu, rate, cap, memo_of(memo))
        return inference_floors(workload, table.request_s, table.least_latency_column(cap),
                                np.array([float(first)]))[0]
    # CNNs, one GPU, TP 1: the serving model's own floors (ServingModel.request_floor_s)
    roof = inf.ServingModel(workload, gpu, rate, 1, 1.0, memo=memo)
    latency_ms = (_latency_floor(workload, gpu, rate, cap, memo) if throughput
                  else roof.latency_floor_ms())
    return inference_floors(workload, np.array([roof.request_floor_s()]),
                            np.array([latency_ms]), np.array([float(first)]))[0]


def cost_floor(floor: Floors, usd_per_gpu_hour: float | None) -> float:
    """Money (or GPU-hours without a usable quote) no option can beat."""
    return floor.gpu_hours if usd_per_gpu_hour is None else floor.gpu_hours * usd_per_gpu_hour


def energy_floor(floor: Floors, gpu: GpuSpec) -> float:
    """kWh (to finish, or per unit of work) no option can beat: the estimate draws
    ``tdp x POWER_UTILIZATION`` per GPU for every GPU-hour."""
    return floor.gpu_hours * gpu.tdp_w * c.POWER_UTILIZATION / 1000.0


@dataclass(frozen=True)
class Pending:
    """A GPU that passed the cheap checks, with what evaluating it needs and its bounds."""

    gpu: GpuSpec
    usable: tuple[Offer, ...]
    rent: float | None
    first: int
    counts: tuple[int, ...]
    cap: int
    tier: int
    """1: unpriced under cost/balanced (ranks after every priced GPU), else 0."""
    lb_cost: float
    lb_time: float
    """Bound of the ``time`` objective's score (:attr:`explain.Option.time`): hours to
    finish, or latency [ms] for inference."""
    lb: float
    """The objective's bound (cost, time or energy); balanced: the search order only."""
    floor: Floors = NO_FLOORS
    """The objective-independent floors behind the bounds (see :func:`count_floors`)."""
    usd_per_gpu_hour: float | None = None
    """The cheapest USD per GPU-hour of the offers its fitting counts can use (None: no
    usable quote): no count's offer costs less (``lb_cost`` is ``floor.gpu_hours`` at it)."""


def compute_count_hours(workload: Workload, gpu: GpuSpec, counts: list[int],
                        memo: Memo) -> list[float]:
    """A compute job's hours to finish on each of ``counts`` GPUs of ``gpu`` (the fastest
    network any offer gives: a slower one only lengthens the exchanges), exchanges included,
    as the estimate times them (:func:`compiled_scaling.hours`), lowered by
    :data:`BOUND_SLACK`; 0 (no bound) where it has no rate or memory does not hold the job."""
    spec = workload.compute
    rate = workload_rate(workload, gpu)
    if spec is None or rate is None:
        return [0.0] * len(counts)
    packed = packed_compute_job(workload, gpu, rate, memo)
    low = 1 - BOUND_SLACK
    return [0.0 if h is None else h * low for h in compiled_scaling.hours(packed, counts)]


def count_floors(kind: str, p: Pending, n: int, usd_per_gpu_hour: float | None,
                 latency_ms: float = 0.0, job_hours: float = 0.0) -> tuple[float, float]:
    """(cost, time) no option of ``p`` on ``n`` GPUs rented at ``usd_per_gpu_hour`` can
    beat: the GPU's floors with that count's rate (inference with a target: at least ``n``
    GPUs paid for the target's work, :attr:`Floors.paid_per_gpu`, in whole replicas of ``n``
    that keep :attr:`Floors.gpus_needed` busy); training/compute time >=
    H / n (ideal scaling of the one-GPU hours ``H``, as :func:`floors` derives its time at the cap;
    compute jobs with their serial part, :meth:`Floors.time_at`), or ``job_hours`` where
    known (a compute job's time on ``n`` GPUs, :func:`compute_count_hours`, for which its
    ``n`` GPUs are paid); inference: ``latency_ms``
    (:func:`count_latency_floor` of the count; 0: none known), at least the GPU's latency
    floor. No rate: 0 (no bound)."""
    f = p.floor
    hours = max(f.gpu_hours, n * f.replicas_at(n) * f.paid_per_gpu, n * job_hours)
    lbc = 0.0 if usd_per_gpu_hour is None else hours * usd_per_gpu_hour
    if kind != "inference":
        lbt = max(job_hours, f.time_at(n)) if f.time_hours > 0 else p.lb_time
    else:
        lbt = latency_ms
    return lbc, max(lbt, p.lb_time)


def type_pairs(pending: list[Pending], tps: NDArray[np.int64], per_node: NDArray[np.int64],
               latency_ms: NDArray[np.float64]) -> tuple[
                   NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Serving with a target: for each GPU of ``pending``, (cost, time) pairs of which every
    option of it is at or above one in both figures, from its load floors alone
    (``latency_ms`` [GPU, k, level]: :class:`load_floors.AllTables` rows of the pending GPUs,
    on the ``k``-th of ``tps`` each one's node holds (``per_node``)), with no count's offer:
    the balanced search's bound of a GPU between its own floors and its counts'
    (:func:`count_pairs`, which take each count's offer and copies).

    An option on TP degree ``t`` whose ``k`` copies of ``n`` GPUs share the target as ``m =
    k n / t`` TP groups, with ``2**(j-1) < m <= 2**j``, is no faster than the level-``j``
    floor and pays for ``k n > t 2**(j-1)`` GPUs (``k n >= n >= t`` at level 0), and at least
    :attr:`Pending.first` and :attr:`Floors.gpus_needed` (the count fits memory; its copies
    keep the target's GPUs busy), at no less than the cheapest offer's
    :attr:`Pending.usd_per_gpu_hour`. From a degree's first NaN level (the batch-1 floor from
    there) on, one pair: the GPUs paid for at that level, at :attr:`Pending.lb_time`.

    Returns (costs, times) [GPU, pair] (inf where a degree has no such pair) and whether a
    GPU has pairs at all (a price and a target's paid GPUs; False: no bound here)."""
    count, degrees, levels = latency_ms.shape
    f = [q.floor for q in pending]
    usd = np.array([q.usd_per_gpu_hour or 0.0 for q in pending])
    paid = np.array([x.paid_per_gpu for x in f])
    valid = np.array([q.usd_per_gpu_hour is not None for q in pending]) & (paid > 0)
    least = np.array([max(float(q.first), x.gpus_needed) for q, x in zip(pending, f,
                                                                            strict=True)])
    gpu_hours = np.array([x.gpu_hours for x in f])
    lb_time = np.array([q.lb_time for q in pending])
    # level j pays for t x 2**(j-1) GPUs (t at level 0); one level past the last
    per_level = np.concatenate(([1.0], 2.0 ** np.arange(levels)))
    gpus = np.maximum(tps.astype(np.float64)[None, :, None] * per_level[None, None, :],
                      least[:, None, None])
    costs = np.maximum(gpu_hours[:, None, None], gpus * paid[:, None, None]) * usd[:, None, None]
    # each degree's finite levels lead its row (NaN from the batch-1 level on): those, and
    # the first past them at the batch-1 floor
    finite = (~np.isnan(latency_ms)).sum(axis=2)[:, :, None]
    at = np.arange(levels + 1)[None, None, :]
    low = np.concatenate((latency_ms * (1 - BOUND_SLACK), np.zeros((count, degrees, 1))),
                         axis=2)
    floor = lb_time[:, None, None]
    times = np.where(at < finite, np.fmax(low, floor), floor)
    kept = (at <= finite) & (tps[None, :, None] <= per_node[:, None, None])
    costs = np.where(kept, costs, np.inf).reshape(count, -1)
    times = np.where(kept, times, np.inf).reshape(count, -1)
    return costs, times, valid


def count_pairs(p: Pending, n: int, usd_per_gpu_hour: float | None, latency_ms: float,
                ranges: list[float] | None) -> list[tuple[float, float]]:
    """Serving with a target: (cost, time) pairs of which every option of ``p`` on ``n`` GPUs
    is at or above one in both figures (:mod:`load_floors`): an option of ``k`` copies pays
    for ``n k`` GPUs and is no faster than the latency floor at the load ``k`` copies leave
    each replica, so the copies from :meth:`Floors.replicas_at` up are taken in ranges
    ``[k0, k0], [k0 + 1, 2 k0], [2 k0 + 1, 4 k0], ...`` (the range's least cost, the time
    at its most copies), then every larger number of copies at :func:`count_floors`' figures
    (the batch-1 latency floor ``latency_ms``). ``ranges``: the count's floors per range,
    :meth:`load_floors.LoadTable.ranges_of` from :meth:`Floors.replicas_at` copies. Without
    them or a price: that one pair."""
    base = count_floors("inference", p, n, usd_per_gpu_hour, latency_ms)
    f = p.floor
    if ranges is None or usd_per_gpu_hour is None or not f.paid_per_gpu > 0:
        return [base]
    low = 1 - BOUND_SLACK
    pairs = []
    lo = hi = f.replicas_at(n)
    for found in ranges:
        if not found * low > base[1]:
            break
        hours = max(f.gpu_hours, n * lo * f.paid_per_gpu)
        pairs.append((hours * usd_per_gpu_hour, found * low))
        lo, hi = hi + 1, 2 * hi
    hours = max(f.gpu_hours, n * lo * f.paid_per_gpu)
    pairs.append((hours * usd_per_gpu_hour, base[1]))
    return pairs
