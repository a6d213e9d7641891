"""The screen over a catalog's columns: every GPU type's cheap checks and bounds in one pass.

:func:`service.engine.choice.ranking._screen` checks one GPU type at a time and stays the
reference (tests/unit/test_screen_columns.py compares the two on every GPU of seeded and
perturbed catalogs, field by field, bit for bit). On a catalog of thousands of types that
walk cost ~25 us a type (~130 ms of a 5,000-type training ranking), most of it looking up,
per GPU and per request, facts that do not depend on the workload. Here they are columns:

* :class:`ScreenTable`, one per (GPU list, offer index, constraints, cost settings, count
  cap, precision), kept by the offer index (:attr:`cost.OfferIndex.screens`, dropped with
  it when the offer list changes): each GPU type's
  constraint, precision and quote failures, usable offers, counts, the fastest network its
  offers give, its rate and memory twin, the cheapest GPU-hour per smallest count, and the
  per-GPU figures the job floors read (:func:`bounds.training_floor_rate` column, a compute
  job's sustained rate and bandwidth), as numpy arrays.
* Per request, the memory search runs once per memory twin (a few dozen, not thousands), and
  the training and compute floors are array operations in the order the scalar bounds take
  them (IEEE operations on the same operands give the same bits). Transformer serving floors
  are columns too (:mod:`inference_floors`, the devices kept per table and runtime), and so
  are CNN serving floors where the model has a layer table (:mod:`cnn_floors`: each type's
  table gathered once per catalog and model, timed per request as arrays); detectors
  without one stay scalar (:func:`bounds.floors`).

Only the GPU types that pass become :class:`bounds.Pending` objects; failures are the same
:class:`explain.Failure` values the scalar screen returns.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from service.engine.cache import Memo
from service.engine.choice import bounds as bd
from service.engine.choice import cnn_floors as cnnf
from service.engine.choice import cost as co
from service.engine.choice import explain as ex
from service.engine.choice import inference_floors as ifl
from service.engine.choice import load_floors
from service.engine.choice.explain import Failure
from service.engine.physics import kernels, scaling
from service.engine.physics import memory as mem
from service.engine.physics import parallelism as par
from service.engine.physics import training as tr
from service.engine.physics.estimate import (
    compute_job_efficiency,
    gpu_count_candidates,
    least_compute_count,
    min_gpus_to_fit,
    training_samples,
)
from service.engine.physics.memory_only import memory_estimate
from service.engine.physics.performance import PeakRate, bandwidth_gb_s, peak_rate
from service.engine.recommend_types import Constraints, CostSettings, Objective, Offer
from service.engine.types import (
    Fix,
    GenericModel,
    GpuSpec,
    ServingRuntime,
    TransformerModel,
    Workload,
)

SCREENED_TOLERANCE = Constraints().time_tolerance
"""The time tolerance of the constraints a table is keyed by (the table never reads it)."""


@dataclass
class ScreenTable:
    """What the screen reads of one catalog that no workload changes (see the module
    docstring). Built once per key; its lazily filled parts (:meth:`cheapest`,
    :meth:`floor_rates`, :meth:`compute_columns`) are pure functions of the key, so two
    threads filling one store equal values."""

    gpus: tuple[GpuSpec, ...]
    """Every GPU type, in the ranking's order (:func:`cost.by_slug`)."""
    failure: tuple[Failure | None, ...]
    """Per GPU: its constraint, precision or (a price being needed) quote failure."""
    live: tuple[int, ...]
    """Indices of the GPUs without such a failure."""
    usable: tuple[tuple[Offer, ...], ...]
    counts: tuple[tuple[int, ...], ...]
    fast: tuple[GpuSpec, ...]
    """:meth:`cost.OfferIndex.fastest_network_gpu` of each live GPU."""
    rent: tuple[float | None, ...]
    rate: tuple[PeakRate | None, ...]
    """:func:`estimate.workload_rate` of each live GPU (None: no rate at the job's units)."""
    twin: tuple[int, ...]
    """Each live GPU's memory twin group (:func:`parallelism.memory_twin`'s key), numbered
    in order of first appearance; -1: no rate."""
    twins: tuple[int, ...]
    """Per twin group, its first live GPU's position in :attr:`live`."""
    reach: NDArray[np.float64]
    """:func:`cost.count_reach` of each live GPU: a bound of the GPUs its options can hold (a
    training or compute job's time floor is taken there, not at :attr:`cap`)."""
    index: co.OfferIndex
    constraints: Constraints
    settings: CostSettings
    cap: int
    _cheapest: dict[int, list[float | None]] = field(default_factory=dict)
    _floor_rates: dict[bool, np.ndarray] = field(default_factory=dict)
    _compute: dict[bool, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    _serving: dict[ServingRuntime, ifl.Columns] = field(default_factory=dict)
    _twin_memory: list[tuple[float, tuple[int, ...]]] = field(default_factory=list)

    def cheapest(self, i: int, smallest: int) -> float | None:
        """:meth:`cost.OfferIndex.cheapest_gpu_hour` of live GPU ``i`` from ``smallest``."""
        row = self._cheapest.get(i)
        if row is None:
            row = self._cheapest[i] = [None] * (len(self.counts[i]) + 1)
        k = bisect.bisect_left(self.counts[i], smallest)
        got = row[k]
        if got is None:
            got = self.index.cheapest_gpu_hour(self.gpus[self.live[i]], self.constraints,
                                               smallest, self.cap, self.settings)
            row[k] = got if got is not None else _NONE
        return None if got is _NONE else got

    def twin_memory(self, memo: Memo) -> list[tuple[float, tuple[int, ...]]]:
        """Per twin group, what a compute job's memory search reads of its GPUs
        (:func:`estimate.least_compute_count`): their usable memory [GB] and searched
        counts."""
        if not self._twin_memory and self.twins:
            self._twin_memory = [
                (mem.usable_gb(gpu), gpu_count_candidates(gpu, memo=memo))
                for gpu in (self.gpus[self.live[i]] for i in self.twins)]
        return self._twin_memory

    def floor_rates(self, workload: Workload, memo: Memo) -> np.ndarray:
        """:func:`training.training_floor_rate` of each live GPU's fastest-network variant
        (0 where it has no rate)."""
        transformer = isinstance(workload.model, TransformerModel)
        got = self._floor_rates.get(transformer)
        if got is None:
            got = np.array([
                tr.training_floor_rate(workload, fast, rate, memo) if rate is not None else 0.0
                for fast, rate in zip(self.fast, self.rate, strict=True)], dtype=np.float64)
            self._floor_rates[transformer] = got
        return got

    def serving_columns(self, runtime: ServingRuntime, memo: Memo) -> ifl.Columns:
        """The live GPUs with a rate (their fastest-network variants) as
        :class:`inference_floors.Columns` at ``runtime``."""
        got = self._serving.get(runtime)
        if got is None:
            live = [(fast, rate) for fast, rate in zip(self.fast, self.rate, strict=True)
                    if rate is not None]
            got = self._serving[runtime] = ifl.columns(
                [g for g, _ in live], [r for _, r in live], runtime, memo)
        return got

    def cnn_columns(self, workload: Workload, memo: Memo) -> cnnf.Columns | None:
        """Every GPU type of the catalog with a rate at the workload's precision as
        :class:`cnn_floors.Columns` of its CNN at its runtime and stored weight precision
        (None: some type's network has no layer table). Kept in the shared cache by catalog
        (the GPUs, not this table: the tables of other constraints, caps and offer lists
        share it, as the columns depend on the GPUs and rates only; a GPU's device, hence
        its table, is the same on any network), bounded there (``cnn_columns``)."""
        spec = workload.inference
        assert spec is not None
        key = (self.gpus, workload.precision, workload.model, spec.runtime,
               mem.stored_weight_precision(workload))

        def build() -> cnnf.Columns | None:
            rated = [(gpu, peak_rate(gpu, workload.precision)) for gpu in self.gpus]
            live = [(gpu, rate) for gpu, rate in rated if rate is not None]
            return cnnf.columns(workload, [g for g, _ in live], [r for _, r in live],
                                spec.runtime, memo)

        return memo.get("cnn_columns", key, build)

    def compute_columns(self, workload: Workload, memo: Memo) -> tuple[np.ndarray, np.ndarray]:
        """Per live GPU: the sustained compute rate x the job's efficiency (the divisor of
        :func:`estimate.compute_job_seconds`), and the achieved memory bandwidth (1 where
        it has no rate: never read)."""
        key = workload.precision == "fp64"
        got = self._compute.get(key)
        if got is None:
            rates, bws = [], []
            for fast, rate in zip(self.fast, self.rate, strict=True):
                if rate is None:
                    rates.append(1.0)
                    bws.append(1.0)
                    continue
                share = _peak_share(fast, rate, memo)
                sustained = rate.tflops * share * kernels.vendor_factor(fast)
                rates.append(sustained * compute_job_efficiency(workload, rate))
                bws.append(bandwidth_gb_s(fast))
            got = self._compute[key] = (np.array(rates, dtype=np.float64),
                                        np.array(bws, dtype=np.float64))
        return got


def _peak_share(gpu: GpuSpec, rate: PeakRate, memo: Memo) -> float:
    """:func:`kernels.peak_share`, from the shared cache as :func:`compute_job_seconds`
    takes it."""
    return memo.get("peak_share", (gpu, rate), lambda: kernels.peak_share(gpu, rate))


_NONE: float = float("nan")
"""Marks a cheapest GPU-hour looked up and found missing (a float, so rows stay floats)."""


def table(
    gpus: Sequence[GpuSpec], index: co.OfferIndex, workload: Workload, constraints: Constraints,
    settings: CostSettings, cap: int, needs_price: bool, memo: Memo,
) -> ScreenTable:
    """The :class:`ScreenTable` of ``gpus`` (kept in the shared cache for a tuple the caller
    passes again unchanged, as the service does with its catalog snapshot's)."""
    matmul = not (workload.kind == "compute" and workload.compute is not None
                  and workload.compute.fp64_units != "matrix")
    # only the fields the table reads: a new budget, deadline or max_gpus (its cap is
    # apart) shares the table
    read = replace(constraints, max_gpus=None, budget_usd=None, max_usd_per_hour=None,
                   deadline_hours=None, time_tolerance=SCREENED_TOLERANCE)
    args = (index, workload.precision, matmul, read, settings, cap, needs_price)
    if not isinstance(gpus, tuple):
        return _build(gpus, *args, memo)
    key = (id(gpus), len(gpus), *args[1:])
    found = index.screens.get(key)
    # the entry holds the tuple itself, so its id cannot be reused while the entry lives
    if found is not None and found[0] is gpus:
        held: ScreenTable = found[1]
        return held
    got = _build(gpus, *args, memo)
    if len(index.screens) >= index.MAX_SCREENS:
        index.screens.pop(next(iter(index.screens)), None)  # the oldest
    index.screens[key] = (gpus, got)
    return got


def _build(
    gpus: Iterable[GpuSpec], index: co.OfferIndex, precision: str, matmul: bool,
    constraints: Constraints, settings: CostSettings, cap: int, needs_price: bool, memo: Memo,
) -> ScreenTable:
    ordered = tuple(co.by_slug(gpus).values())
    failures: list[Failure | None] = []
    live: list[int] = []
    usable_l, counts_l, fast_l, rent_l, rate_l, twin_l, reach_l = [], [], [], [], [], [], []
    twin_ids: dict[tuple[object, ...], int] = {}
    twins: list[int] = []
    owns = co.owns(constraints)
    for j, gpu in enumerate(ordered):
        failure = ex.constraint_failure(gpu, constraints)
        if failure is None and peak_rate(gpu, precision) is None:  # type: ignore[arg-type]
            failure = ex.precision_failure(precision)
        usable = index.usable(gpu.slug, constraints) if failure is None else ()
        if failure is None and not usable and needs_price:
            failure = ex.no_quote_failure()
        failures.append(failure)
        if failure is not None:
            continue
        live.append(j)
        usable_l.append(usable)
        counts_l.append(gpu_count_candidates(gpu, cap, memo) or (1,))
        reach_l.append(co.count_reach(gpu, usable, cap))
        fast_l.append(index.fastest_network_gpu(gpu, constraints))
        rent_l.append(co.rental_usd_per_gpu_hour(index.groups.get(gpu.slug, ()), constraints)
                      if owns else None)
        rate = peak_rate(gpu, precision, matmul=matmul)  # type: ignore[arg-type]
        rate_l.append(rate)
        if rate is None:
            twin_l.append(-1)
            continue
        key = par.memory_twin_key(gpu, rate.precision_used)
        t = twin_ids.get(key)
        if t is None:
            t = twin_ids[key] = len(twins)
            twins.append(len(live) - 1)
        twin_l.append(t)
    return ScreenTable(ordered, tuple(failures), tuple(live), tuple(usable_l), tuple(counts_l),
                       tuple(fast_l), tuple(rent_l), tuple(rate_l), tuple(twin_l),
                       tuple(twins), np.array(reach_l, dtype=np.float64), index, constraints,
                       settings, cap)


def _floors_column(
    t: ScreenTable, workload: Workload, rows: list[int], firsts: list[int], memo: Memo,
    throughput: bool,
) -> list[bd.Floors]:
    """:func:`bounds.floors` at each of ``rows`` (live positions) with its smallest count:
    training and compute jobs as array operations, inference per GPU."""
    if not rows:
        return []
    low = 1 - bd.BOUND_SLACK
    if workload.kind == "inference":
        if ifl.supported(workload):
            return _serving_floors(t, workload, rows, firsts, memo)
        if isinstance(workload.model, GenericModel):
            got = _cnn_floors(t, workload, rows, firsts, memo, throughput)
            if got is not None:
                return got
        return [bd.floors(workload, t.fast[i], first, t.cap, throughput, memo)
                for i, first in zip(rows, firsts, strict=True)]
    at = np.array(rows, dtype=np.intp)
    reach = t.reach[at]
    has_rate = np.array([t.rate[i] is not None for i in rows], dtype=bool)
    if workload.kind == "compute":
        spec = workload.compute
        assert spec is not None
        rates, bws = t.compute_columns(workload, memo)
        comp = spec.total_tflop / rates[at]
        mem = spec.total_gb_moved / bws[at]
        hours = np.maximum(comp, mem) / bd.SECONDS_PER_HOUR
        f = scaling.serial_fraction(spec)
        weak = spec.memory_gb <= 0
        # bounds._compute's: every count from 1 to each type's reach, start-up included
        time_h = bd.least_job_times(hours, np.ones_like(hours), reach, f, weak)
        gh, th = (hours * low).tolist(), (time_h * low).tolist()
        return [bd.Floors(g, h, 0.0, f, weak) if ok else bd.NO_FLOORS
                for g, h, ok in zip(gh, th, has_rate.tolist(), strict=True)]
    spec_t, model = workload.training, workload.model
    assert spec_t is not None and model is not None
    seq = (spec_t.seq_len or 1) if isinstance(model, TransformerModel) else 1
    floor_rate = t.floor_rates(workload, memo)[at]
    with np.errstate(divide="ignore", invalid="ignore"):
        step = tr.training_floor_flops(workload) / floor_rate
    finite = has_rate & (step > 0) & (step < np.inf)
    samples = training_samples(workload, seq)
    if samples is None:  # no length: the cost is usd_per_hour of >= first GPUs
        return [bd.Floors(float(first) * low) if ok else bd.NO_FLOORS
                for first, ok in zip(firsts, finite.tolist(), strict=True)]
    with np.errstate(divide="ignore", invalid="ignore"):  # estimate.training_hours's order
        hours_t = samples / (spec_t.batch_size / step) / 3600.0
    with np.errstate(invalid="ignore"):  # bounds._training's, from each type's first count
        time_t = bd.least_job_times(hours_t, np.array(firsts, dtype=np.float64), reach, 0.0,
                                    False)
    gh, th = (hours_t * low).tolist(), (time_t * low).tolist()
    return [bd.Floors(g, h) if ok else bd.NO_FLOORS
            for g, h, ok in zip(gh, th, finite.tolist(), strict=True)]


def _serving_floors(t: ScreenTable, workload: Workload, rows: list[int], firsts: list[int],
                    memo: Memo) -> list[bd.Floors]:
    """:func:`bounds.floors` at each of ``rows`` (live positions) from the request's
    :class:`inference_floors.Table` over the catalog's columns (kept in the request's memo
    for its count floors, :func:`bounds.count_latency_floor`)."""
    spec = workload.inference
    assert spec is not None
    cols = t.serving_columns(spec.runtime, memo)
    table = bd.floor_table(workload, memo, t.cap,
                           lambda: load_floors.floor_table(workload, cols, t.cap, memo))
    assert table is not None
    return _floors_at(t, workload, rows, firsts, table.index, table.request_s,
                      table.least_latency_column(t.cap))


def _cnn_floors(t: ScreenTable, workload: Workload, rows: list[int], firsts: list[int],
                memo: Memo, throughput: bool) -> list[bd.Floors] | None:
    """:func:`bounds.floors` of a CNN at each of ``rows`` (live positions) from the catalog's
    layer-table columns (:mod:`cnn_floors`, kept in the shared cache); None where a type has
    no layer table (the scalar floors then apply)."""
    spec, model = workload.inference, workload.model
    assert spec is not None and isinstance(model, GenericModel)
    cols = t.cnn_columns(workload, memo)
    if cols is None:
        return None
    if throughput:
        latency = cols.latency_ms(spec.batch_size or 1, spec.input_samples_per_s_per_gpu)
    else:
        latency = cols.latency_floor_ms()
    return _floors_at(t, workload, rows, firsts, cols.index, cols.request_s, latency)


def _floors_at(t: ScreenTable, workload: Workload, rows: list[int], firsts: list[int],
               index: dict[str, int], request_s: np.ndarray, latency_ms: np.ndarray
               ) -> list[bd.Floors]:
    """:func:`bounds.inference_floors`, lowered, at each of ``rows`` (live positions) from
    per-GPU columns whose elements ``index`` names by slug (columns kept from another screen
    may order their GPUs otherwise); no floors where a row has no rate or no element."""
    at = np.array([index.get(t.fast[i].slug, -1) if t.rate[i] is not None else -1
                   for i in rows], dtype=np.intp)
    has = at >= 0
    at = np.where(has, at, 0)
    floors = bd.inference_floors(workload, request_s[at], latency_ms[at],
                                 np.array(firsts, dtype=np.float64), low=True)
    return [f if ok else bd.NO_FLOORS for f, ok in zip(floors, has.tolist(), strict=True)]


def screen(
    workload: Workload, gpus: Sequence[GpuSpec], index: co.OfferIndex, constraints: Constraints,
    settings: CostSettings, objective: Objective, needs_price: bool, cap: int, memo: Memo,
    explained: bool = True,
) -> tuple[list[bd.Pending], list[tuple[GpuSpec, Failure]]]:
    """:func:`ranking._screen` of every GPU of ``gpus``: the pending GPUs (in the catalog's
    order) and the failed ones with their failures (``explained`` False: a memory failure is
    :data:`explain.MEMORY_UNEXPLAINED`, no reason in words, for a ranked summary)."""
    t = table(gpus, index, workload, constraints, settings, cap, needs_price, memo)
    failed: list[tuple[GpuSpec, Failure]] = [
        (g, f) for g, f in zip(t.gpus, t.failure, strict=True) if f is not None]
    # the memory search once per twin group, on its first GPU (as memory_twin keys it); a
    # compute job's on the figures it reads (min_gpus_to_fit's, without its lookups)
    spec = workload.compute
    group_first = ([least_compute_count(spec.memory_gb, usable, counts)
                    for usable, counts in t.twin_memory(memo)] if spec is not None
                   else [min_gpus_to_fit(workload, t.gpus[t.live[i]], memo) for i in t.twins])
    rows: list[int] = []
    firsts: list[int] = []
    fits: list[tuple[int, ...]] = []
    rates: list[float | None] = []
    fitted: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}
    no_network: dict[tuple[int, int], Failure] = {}
    for i, j in enumerate(t.live):
        gpu, counts, g = t.gpus[j], t.counts[i], t.twin[i]
        first = group_first[g] if g >= 0 else None
        if first is None or first > counts[-1]:
            if not explained:
                failed.append((gpu, ex.MEMORY_UNEXPLAINED))
                continue
            # per GPU: the reason names the layout's links, which twins do not share
            est = memory_estimate(workload, gpu, counts[-1], memo)
            failed.append((gpu, ex.memory_failure(gpu, est, first, cap)))
            continue
        key = (counts, first)
        fitting = fitted.get(key)
        if fitting is None:
            fitting = fitted[key] = counts[bisect.bisect_left(counts, first):]
        rate = t.cheapest(i, fitting[0])
        if rate is None and needs_price:
            failed.append((gpu, ex.no_quote_failure(first)))
            continue
        per_node = max(1, gpu.max_gpus_per_node)
        if rate is None and first > per_node:
            key_n = (per_node, first)
            found = no_network.get(key_n)
            if found is None:
                found = no_network[key_n] = network_failure(gpu, first)
            failed.append((gpu, found))
            continue
        rows.append(i)
        firsts.append(first)
        fits.append(fitting)
        rates.append(rate)
    floors = _floors_column(t, workload, rows, firsts, memo, objective == "balanced")
    pending: list[bd.Pending] = []
    inference = workload.kind == "inference"
    for i, first, fitting, rate, floor in zip(rows, firsts, fits, rates, floors, strict=True):
        gpu = t.gpus[t.live[i]]
        lb_cost = bd.cost_floor(floor, rate)
        lb_time = floor.latency_ms if inference else floor.time_hours
        if objective == "cost":
            bound = lb_cost
        elif objective == "time":
            bound = lb_time
        elif objective == "energy":
            bound = bd.energy_floor(floor, gpu)
        else:
            bound = 0.0
        tier = 1 if rate is None and objective in ("cost", "balanced") else 0
        if tier and objective == "balanced":
            lb_cost = 0.0  # unpriced GPUs are scored among themselves: never pruned in tier 1
        pending.append(bd.Pending(gpu, t.usable[i], t.rent[i], first, fitting, cap, tier,
                                  lb_cost, lb_time, bound, floor, rate))
    return pending, failed


def network_failure(gpu: GpuSpec, first: int) -> Failure:
    """Memory needs more GPUs than one node holds, and no offer joins nodes (reads only the
    GPUs per node)."""
    per_node = max(1, gpu.max_gpus_per_node)
    return Failure(
        0, "network",
        f"needs {first} GPUs, more than one node holds ({per_node}), and no usable quote "
        "joins nodes over a known network (fabric and rate)",
        Fix("multi_node_offer", first,
            f"add a quote for an instance of whole nodes whose clusters are offered over a "
            f"known fabric (InfiniBand, EFA, RoCE, or ethernet with its rate) for {first}+ "
            "GPUs", "quotes"),
    )


__all__ = ["ScreenTable", "network_failure", "screen", "table"]
