"""The compiled split loop of an inference estimate (service/engine/physics/compiled_serving.py,
``serving.Context.split_plan``) against the Python reference (``estimate.split_choice``):
random dense LLM and encoder workloads of the batched tests' generator, each also with its
target removed, with a fixed batch size, and in latency mode; every catalog GPU and every
searched count up to 64. The chosen split, its capacity batch, the batch at the load and the
replicas in the group must be the same; and the packed figures the loop reads (a split's
figures kept across requests, the request's entries rewritten) must be the packed serving
model's, bit for bit.

``GPU_ADVISOR_SPLIT_PLAN_CASES`` sets how many workloads (default 16)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import replace

import pytest

from service.engine.cache import EngineCache, Memo
from service.engine.physics import compiled
from service.engine.physics import compiled_serving as cs
from service.engine.physics import serving as inf
from service.engine.physics.estimate import split_choice
from service.engine.physics.parallelism import gpu_count_candidates
from service.engine.physics.performance import peak_rate
from service.engine.types import TransformerModel, Workload
from tests.unit.catalog_data import load_gpus
from tests.unit.test_batched import _workloads

CASES = int(os.environ.get("GPU_ADVISOR_SPLIT_PLAN_CASES", "16"))


def _dense(n: int) -> list[Workload]:
    """The first ``n`` dense transformer workloads of the batched tests' draw."""
    out = []
    for w in _workloads(4 * n + 20):
        if isinstance(w.model, TransformerModel) and w.model.experts <= 1:
            out.append(w)
        if len(out) == n:
            break
    return out


def _variants(workload: Workload) -> list[Workload]:
    spec = workload.inference
    assert spec is not None
    return [workload,
            replace(workload, inference=replace(spec, target_requests_per_s=None)),
            replace(workload, inference=replace(spec, batch_size=8)),
            replace(workload, inference=replace(spec, target_requests_per_s=(
                spec.target_requests_per_s or 5.0) * 37.0))]


def _contexts(workload: Workload) -> Iterator[tuple[inf.Context, inf.Context, int]]:
    """(a context, a second one with its own cache, a count) for every catalog GPU that runs
    ``workload``'s precision and every searched count up to 64 where some split fits."""
    spec = workload.inference
    assert spec is not None
    for gpu in load_gpus():
        rate = peak_rate(gpu, workload.precision)
        if rate is None:
            continue
        fast = inf.Context(workload, gpu, rate.precision_used, rate, Memo(EngineCache()))
        ref = inf.Context(workload, gpu, rate.precision_used, rate, Memo(EngineCache()))
        for n in gpu_count_candidates(gpu, 64):
            if any(ref.fits(tp, pp, spec.batch_size or 1) for tp, pp in ref.splits(n)):
                yield fast, ref, n


@pytest.mark.parametrize("index", range(CASES))
def test_compiled_split_plan_is_the_reference_choice(index: int) -> None:
    workload = _dense(CASES)[index]
    checked = found = 0
    for w in _variants(workload):
        for fast, ref, n in _contexts(w):
            assert fast.compiled_splits
            for latency_mode in (False, True):
                got = fast.split_plan(n, latency_mode, 1.001)
                want = split_choice(ref, n, latency_mode)
                assert got == want, (w.inference, fast.gpu.slug, n, latency_mode)
                checked += 1
                found += want is not None
    assert checked > 0 and found > 0


def test_the_comparison_covers_pipelines_and_replicas() -> None:
    """The draws above choose pipeline splits and groups of several replicas (else the test
    would say nothing about those branches)."""
    pipelines = groups = 0
    for workload in _dense(CASES):
        for fast, _, n in _contexts(workload):
            got = fast.split_plan(n, False, 1.001)
            if got is not None:
                pipelines += got[1] > 1
                groups += got[4] > 1
    assert pipelines > 0 and groups > 0, (pipelines, groups)


def test_packed_figures_kept_across_requests_are_the_models() -> None:
    """A split's packed figures come from the shared cache (built on an earlier request of
    the same model, GPU and split with other lengths and limits) with this request's entries
    rewritten: bit for bit the packed serving model of this request."""
    cache = EngineCache()
    gpus = load_gpus()
    checked = 0
    for workload in _dense(CASES):
        spec = workload.inference
        assert spec is not None
        other = replace(workload, inference=replace(
            spec, prompt_tokens=spec.prompt_tokens * 3 + 17, output_tokens=spec.output_tokens + 5,
            max_ttft_ms=None, max_tpot_ms=(spec.max_tpot_ms or 40.0) * 2))
        for gpu in gpus[::3]:
            rate = peak_rate(gpu, workload.precision)
            if rate is None:
                continue
            for first, second in ((other, workload), (workload, other)):
                for w in (first, second):
                    ctx = inf.Context(w, gpu, rate.precision_used, rate, Memo(cache))
                    for n in (1, 2, 8):
                        ctx.split_plan(n, False, 1.001)
                table = ctx._table
                assert table is not None
                for (tp, pp), row in table.rows.items():
                    want = compiled.pack(inf.ServingModel(
                        second, gpu, rate, tp, pp=pp, **inf.links(gpu, tp, pp)))
                    assert table.params[row].tobytes() == want.params.tobytes(), (tp, pp)
                    assert table.gemms[row].tobytes() == want.gemms.tobytes()
                    checked += 1
    assert checked > 0


def test_a_stack_grows_as_a_new_object_and_never_in_place() -> None:
    """A context's stack in the shared cache (``Context.split_stack``) is replaced, not
    changed, when a later request asks for a split it lacks: the stack an earlier table
    reads keeps its rows, byte for byte, and the new one holds them first, in the same rows,
    so a table reading either is right; a third request finds every split there and builds
    none."""
    cache = EngineCache()
    gpu = next(g for g in load_gpus() if g.max_gpus_per_node >= 8
               and peak_rate(g, "bf16") is not None)
    rate = peak_rate(gpu, "bf16")
    assert rate is not None
    for workload in _dense(4 * CASES):
        first = inf.Context(workload, gpu, rate.precision_used, rate, Memo(cache))
        if workload.precision == "bf16" and first.split_plan(1, False, 1.001) is not None:
            break
    else:
        pytest.fail("no drawn bf16 workload runs on one GPU")
    kept = cache.find("serving_stack", first._stack_key())
    assert isinstance(kept, cs.SplitStack) and kept.splits == ((1, 1),)
    before = (kept.params.tobytes(), kept.gemms.tobytes())
    second = inf.Context(workload, gpu, rate.precision_used, rate, Memo(cache))
    for n in (1, 2, 8):
        second.split_plan(n, False, 1.001)
    grown = cache.find("serving_stack", first._stack_key())
    assert grown is not kept and len(grown.splits) > 1 and grown.splits[0] == (1, 1)
    assert (kept.params.tobytes(), kept.gemms.tobytes()) == before
    assert grown.gemms[0].tobytes() == kept.gemms[0].tobytes()
    third = inf.Context(workload, gpu, rate.precision_used, rate, Memo(cache))
    for n in (1, 2, 8):
        third.split_plan(n, False, 1.001)
    assert cache.find("serving_stack", first._stack_key()) is grown
    assert third._table is not None and third._table.stack is grown


def _full_capacity(p: object, g: object, top: int, step: float) -> int:
    """serving.Context.capacity_batch's scan, every batch timed."""
    floor = max(1, math.ceil(top / step))
    grid = sorted(set(range(floor, top + 1)) | inf.batch_grid(floor))
    rates = [cs.rate(p, g, float(b), 1.0, 1.0) for b in grid]
    return grid[rates.index(max(rates))]


def _full_operating(p: object, g: object, capacity_batch: int, load: float) -> int:
    """estimate.operating_batch's scan, every batch timed."""
    if capacity_batch <= 1:
        return 1
    need = load * (1 - 1e-9)
    grid = sorted(inf.batch_grid(capacity_batch) | {1})
    if cs.rate(p, g, 1.0, 1.0, 1.0) >= need:
        return 1
    below = 1
    for top in grid[1:]:
        if cs.rate(p, g, float(top), 1.0, 1.0) >= need:
            return next((b for b in range(below + 1, top)
                         if cs.rate(p, g, float(b), 1.0, 1.0) >= need), top)
        below = top
    return capacity_batch


def test_batch_scans_skip_only_batches_that_cannot_win() -> None:
    """The compiled capacity and operating-batch scans skip a batch untimed when the cycle
    timed at a smaller batch already rules it out; that rests on a replica's cycle (batch /
    requests/s) never shrinking as the batch grows. Checked on every split row the split
    loop built for the draws (every batch up to the row's cap, at most 512): the cycle is
    monotone, and both scans give the full scans' batches for capacity tops and loads across
    the range."""
    rows = wiggles = 0
    for workload in _dense(CASES)[: max(4, CASES // 2)]:
        tables: dict[int, cs.SplitTable] = {}
        for fast, _, n in _contexts(workload):
            fast.split_plan(n, False, 1.001)
            assert fast._table is not None
            tables[id(fast)] = fast._table
        for table in tables.values():
            for row in table.rows.values():
                wiggles += _check_row(table.params[row], table.gemms[row],
                                      int(min(max(1, table.caps[row]), 512)))
                rows += 1
    # requests/s per batch does fall somewhere on some rows (tile waves): the skips must
    # not assume it grows, and the draws exercise that
    assert rows > 20 and wiggles > 0, (rows, wiggles)


def _check_row(p: object, g: object, top: int) -> bool:
    """Asserts the row's cycle is monotone and its scans are the full scans'; returns whether
    its requests/s falls somewhere below ``top``."""
    rates = [cs.rate(p, g, float(b), 1.0, 1.0) for b in range(1, top + 1)]
    cycles = [b / r for b, r in zip(range(1, top + 1), rates, strict=True)]
    assert all(y >= x for x, y in zip(cycles, cycles[1:], strict=False))
    for t in {top, max(1, top // 3), max(1, (2 * top) // 3 + 1)}:
        want = _full_capacity(p, g, t, inf.CAPACITY_GRID_STEP)
        assert cs._capacity(p, g, t, inf.CAPACITY_GRID_STEP) == want, t
        for share in (0.03, 0.31, 0.77, 0.999):
            load = rates[want - 1] * share
            got = cs._operating(p, g, want, load, inf.CAPACITY_GRID_STEP)
            assert got == _full_operating(p, g, want, load), (t, share)
    return any(y < x for x, y in zip(rates, rates[1:], strict=False))


def _point_figures(ctx: inf.Context, tp: int, pp: int, cap_b: int, load_b: int,
                   replicas: int) -> tuple[float, tuple[float, float | None, float], bool]:
    """``compiled_serving.point_figures`` of split (tp, pp)'s row in ``ctx``'s split table,
    as ``Context.split_point`` reads them (no TPOT for an encoder's row)."""
    table = ctx._table
    assert table is not None
    row = table.row(ctx, tp, pp)
    params = table.params[row]
    requests_s, ttft, tpot, latency, ok = cs.point_figures(params, table.gemms[row], cap_b,
                                                           load_b, replicas)
    decodes = params[compiled._DECODER] > 0.0
    return requests_s, (ttft, tpot if decodes else None, latency), bool(ok)


def test_point_figures_are_the_timings_figures() -> None:
    """``compiled_serving.point_figures`` (one compiled call on a split table's row) gives the
    floats ``serving.requests_per_s``, ``serving.latencies`` and ``serving.meets`` give from
    the two ``Timing`` of the capacity and load batches, bit for bit: every split the loop
    chooses on the draws (decoders and encoders, pipelines, groups of replicas, with and
    without limits), at the chosen batches and at a smaller load batch."""
    checked = pipelines = encoders = 0
    for workload in _dense(max(4, CASES // 2)):
        for w in (workload, replace(workload, inference=replace(
                workload.inference, max_ttft_ms=None, max_tpot_ms=None,
                max_latency_ms=None))):
            spec = w.inference
            assert spec is not None
            for fast, ref, n in _contexts(w):
                plan = fast.split_plan(n, False, 1.001)
                if plan is None:
                    continue
                tp, pp, cap_b, load_b, group = plan
                for load in {load_b, max(1, load_b // 3)}:
                    got = _point_figures(fast, tp, pp, cap_b, load, group)
                    timing = ref.timing(tp, pp, load)
                    want = (inf.requests_per_s(spec, ref.timing(tp, pp, cap_b), pp, group),
                            inf.latencies(spec, timing), inf.meets(spec, timing))
                    assert repr(got) == repr(want), (w.inference, fast.gpu.slug, n, load)
                    checked += 1
                    encoders += got[1][1] is None  # no TPOT: an encoder's row
                pipelines += pp > 1
    assert checked > 100 and pipelines > 0 and encoders > 0, (checked, pipelines, encoders)


def test_split_point_is_the_plan_and_its_timings() -> None:
    """``Context.split_point`` (the plan and its point in one compiled call) is the reference
    choice (``estimate.split_choice``) timed as ``estimate.serving_point`` times it: the
    chosen split at its capacity and load batches, or, where no split has a batch, the first
    fitting split at the smallest batch; in both modes, with limits no batch meets too; and
    the plan it keeps is :meth:`split_plan`'s."""
    checked = fallbacks = 0
    for workload in _dense(max(4, CASES // 2)):
        base = workload.inference
        assert base is not None
        for w in (workload, replace(workload, inference=replace(base, max_ttft_ms=1e-3)),
                  replace(workload, inference=replace(base, batch_size=4))):
            spec = w.inference
            assert spec is not None
            least = spec.batch_size or 1
            for fast, ref, n in _contexts(w):
                for latency_mode in (False, True):
                    got = fast.split_point(n, latency_mode, 1.001)
                    plan = split_choice(ref, n, latency_mode)
                    if plan is None:
                        tp, pp = ref.fitting(n, least)[0]
                        cap_b = load_b = least
                        group = max(1, n // (tp * pp))
                        fallbacks += 1
                    else:
                        tp, pp, cap_b, load_b, group = plan
                    timing = ref.timing(tp, pp, load_b)
                    want = (tp, pp, group,
                            inf.requests_per_s(spec, ref.timing(tp, pp, cap_b), pp, group),
                            inf.latencies(spec, timing), inf.meets(spec, timing))
                    assert repr(got) == repr(want), (w.inference, fast.gpu.slug, n)
                    assert fast.split_plan(n, latency_mode, 1.001) == plan
                    checked += 1
    assert checked > 100 and fallbacks > 0, (checked, fallbacks)
