"""The compiled compute-job scaling (service/engine/physics/compiled_scaling.py) against
:func:`scaling.scaled_time` (what the estimate reports): random compute jobs (FP64 and FP32,
stencil, all-reduce and no exchange, each with and without a working set, random steps and
serial fraction), every catalog GPU, every searched count to 4,096:
the same hours, bit for bit (``repr``), and None exactly where a GPU's memory cannot hold its
share of the working set."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterator

import numpy as np
import pytest

from service.engine import constants as c
from service.engine.cache import EngineCache, Memo
from service.engine.choice.ranking import recommend
from service.engine.physics import compiled_scaling, scaling
from service.engine.physics.estimate import (
    compute_job_seconds,
    exchange,
    packed_compute_job,
    workload_rate,
)
from service.engine.physics.memory import usable_memory_bytes
from service.engine.physics.parallelism import gpu_count_candidates
from service.engine.types import ComputeSpec, GpuSpec, Precision, Workload
from tests.unit.catalog_data import load_gpus, load_offers

CASES = 18
EXCHANGES = ("stencil", "allreduce", "none")


def _job(seed: int) -> Workload:
    """A random compute job; the exchange cycles through all three, and every fourth job has
    no working set (weak scaling)."""
    r = random.Random(seed)
    precision: Precision = r.choice(("fp64", "fp32"))
    spec = ComputeSpec(
        total_tflop=10 ** r.uniform(2, 8),
        total_gb_moved=r.choice((0.0, 10 ** r.uniform(1, 7))),
        memory_gb=0.0 if seed % 4 == 3 else 10 ** r.uniform(0, 3.5),
        fp64_units=r.choice(("vector", "matrix")),
        communication=EXCHANGES[seed % 3],
        steps=r.choice((None, 10 ** r.uniform(0, 5))),
        serial_fraction=r.choice((None, r.uniform(0.0, 0.05))),
    )
    return Workload(kind="compute", precision=precision, compute=spec)


def _gpus(workload: Workload) -> Iterator[tuple[GpuSpec, tuple[float, float], float,
                                                list[int], Memo]]:
    """Each catalog GPU with a rate for ``workload``: (GPU, its one-GPU (compute, memory)
    seconds, element bytes, searched counts, the memo)."""
    memo = Memo(EngineCache())
    for gpu in load_gpus():
        rate = workload_rate(workload, gpu)
        if rate is None:
            continue
        one = compute_job_seconds(workload, gpu, rate, memo)
        yield (gpu, one, c.BYTES_PER_ELEMENT[rate.precision_used],
               gpu_count_candidates(gpu, memo=memo), memo)


@pytest.mark.parametrize("seed", range(CASES))
def test_compiled_hours_are_the_scaled_time(seed: int) -> None:
    workload = _job(seed)
    spec = workload.compute
    assert spec is not None
    checked = held = 0
    for gpu, one, elem_b, counts, memo in _gpus(workload):
        rate = workload_rate(workload, gpu)
        assert rate is not None
        # the ranking's pack (its GPU row kept across requests) is this one
        kept = packed_compute_job(workload, gpu, rate, memo)
        assert not memo.get("compute_pack_gpu", gpu, lambda: None).flags.writeable
        assert repr(kept.tolist()) == repr(
            compiled_scaling.pack(spec, gpu, one, elem_b).tolist()), gpu.slug
        got = compiled_scaling.hours(kept, counts)
        for n, hours in zip(counts, got, strict=True):
            fits = spec.memory_gb / n + c.FRAMEWORK_OVERHEAD_GB <= (
                usable_memory_bytes(gpu) / c.GB)
            want = scaling.scaled_time(spec, gpu, n, one, elem_b,
                                       exchange(gpu, n, memo)).total_s / 3600.0
            assert repr(hours) == repr(want if fits else None), (gpu.slug, n)
            checked += 1
            held += fits
    assert checked > 300 and held > 0


def test_the_jobs_cover_every_exchange() -> None:
    jobs = [_job(seed).compute for seed in range(CASES)]
    kinds = {(j.communication, j.memory_gb > 0) for j in jobs if j is not None}
    assert kinds == {(e, has_set) for e in EXCHANGES for has_set in (True, False)}, kinds


@pytest.mark.parametrize("seed", range(0, CASES, 3))
def test_per_count_networks_are_the_network_gpus_hours(seed: int) -> None:
    """``hours(..., networks)``: a count given its offer's network rate gets the hours of the
    GPU carrying that rate (cost.network_gpu, which the estimate of the option runs), bit for
    bit; a count given None the GPU's own."""
    workload = _job(seed)
    spec = workload.compute
    assert spec is not None
    r = random.Random(seed)
    checked = 0
    for gpu, one, elem_b, counts, _ in _gpus(workload):
        nets = [r.choice((None, 3.125, 12.5, 25.0, r.uniform(1, 100))) for _ in counts]
        got = compiled_scaling.hours(compiled_scaling.pack(spec, gpu, one, elem_b), counts,
                                     nets)
        for n, net, hours in zip(counts, nets, got, strict=True):
            variant = gpu if net is None else dataclasses.replace(gpu, network_gb_s_per_gpu=net)
            want = compiled_scaling.hours(compiled_scaling.pack(spec, variant, one, elem_b),
                                          [n])[0]
            assert repr(hours) == repr(want), (gpu.slug, n, net)
            checked += 1
    assert checked > 100


def test_compiled_grid_and_block_are_the_reference() -> None:
    """The compiled process grid and node block (integers in registers, factors taken largest
    first) equal :func:`scaling.process_grid` and :func:`scaling.node_block` on every count to
    4,096 and every node size the catalog has."""
    for gpus in range(1, 4097):
        grid = compiled_scaling._grid(gpus)
        assert grid == scaling.process_grid(gpus), gpus
        for per_node in (1, 2, 4, 6, 8, 10, 16, 72):
            assert compiled_scaling._block(grid, per_node) == scaling.node_block(
                grid, per_node), (gpus, per_node)


@pytest.mark.parametrize("seed", range(0, CASES, 2))
def test_hours_in_order_are_the_hours_sorted_stably(seed: int) -> None:
    """The compiled order of the counts that run (a compute job's figures walk them fastest
    first) is numpy's stable argsort of the hours with the counts that do not run left out,
    ties (each count asked twice here) in count order; in count order without ``by_hours``;
    a single-module device runs none above one GPU. The hours are :func:`hours_array`'s."""
    workload = _job(seed)
    spec = workload.compute
    assert spec is not None
    for gpu, one, elem_b, counts, _ in _gpus(workload):
        packed = compiled_scaling.pack(spec, gpu, one, elem_b)
        ns = np.array(sorted(counts + counts[::3]), dtype=np.float64)
        nets = np.where(ns > 8, 12.5, 0.0)
        for one_module in (False, True):
            hours = compiled_scaling.hours_array(packed, ns, nets)
            if one_module:
                hours[ns > 1.0] = math.nan
            runs = ~np.isnan(hours)
            at = np.argsort(np.where(runs, hours, math.inf), kind="stable")
            for by_hours, want in ((True, at[runs[at]].tolist()),
                                   (False, np.flatnonzero(runs).tolist())):
                order, got = compiled_scaling.hours_in_order(packed, ns, nets, one_module,
                                                             by_hours)
                assert order == want, (gpu.slug, one_module, by_hours)
                assert repr(got) == repr(hours.tolist()), gpu.slug


def test_a_compute_ranking_compiles_nothing_after_the_warm_up() -> None:
    """The warm-up compiles (or loads) every argument type a compute ranking passes the loops
    (the offer index's read-only count and network arrays among them), so no request waits
    for a compilation: rankings after it add no signature."""
    loops = (compiled_scaling._hours, compiled_scaling._hours_in_order)
    compiled_scaling.warm_up()
    before = [set(loop.signatures) for loop in loops]
    workload = Workload(kind="compute", precision="fp64", compute=ComputeSpec(
        total_tflop=1e7, total_gb_moved=1e6, memory_gb=1500.0))
    for objective in ("time", "cost", "balanced"):
        got = recommend(workload, load_gpus(), load_offers(), objective=objective,
                        cache=EngineCache())
        assert got.recommendations
    assert [set(loop.signatures) for loop in loops] == before
