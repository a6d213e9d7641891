"""The compiled array serving model (service/engine/physics/compiled.py) against the numpy one
(service/engine/physics/batched.py), which the reference tests hold to the scalar model: random
LLM (dense and MoE) and encoder workloads of the differential generator, every catalog GPU,
every TP/PP split the engine builds, random batches up to 4,096. Requests/s must be the same
floats, bit for bit: the engine's answers are checked to the last digit (tests/differential.py),
so a compiled form that rounded differently would change them.

``GPU_ADVISOR_BATCHED_CASES`` sets how many workloads (default 60; CI's longer run: more)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import pytest

from service.engine.cache import EngineCache, Memo
from service.engine.physics import batched, compiled
from service.engine.physics import serving as inf
from service.engine.physics.performance import peak_rate
from service.engine.types import GenericModel
from tests.unit.catalog_data import load_gpus
from tests.unit.test_batched import CASES, _workloads


def _models(index: int, seed: int, gpus: int | None = None
            ) -> Iterator[tuple[random.Random, inf.ServingModel]]:
    """(the draw's generator, a serving model) for every split of workload ``index`` on
    ``gpus`` GPUs drawn from the catalog (all of them when None); a GPU count of 1, 2, 8 or 16
    drawn per GPU, so TP and PP splits both come up."""
    workload = _workloads(CASES)[index]
    if isinstance(workload.model, GenericModel):
        pytest.skip("CNNs have no array form")
    r = random.Random(seed)
    cache = EngineCache()
    catalog = load_gpus()
    for gpu in catalog if gpus is None else r.sample(catalog, gpus):
        rate = peak_rate(gpu, workload.precision)
        if rate is None:
            continue
        ctx = inf.Context(workload, gpu, rate.precision_used, rate, Memo(cache))
        for tp, pp in ctx.splits(r.choice((1, 2, 8, 16))):
            yield r, ctx.model(tp, pp)


def _batches(r: random.Random, n: int) -> list[int]:
    return sorted({1, 2, *(r.randint(1, 4096) for _ in range(n))})


@pytest.mark.parametrize("index", range(CASES))
def test_compiled_model_is_the_numpy_model_bit_for_bit(index: int) -> None:
    checked = 0
    for r, roof in _models(index, index):
        batches = np.array(_batches(r, 20), dtype=np.float64)
        want = batched.requests_per_s(roof, batches)
        got = compiled.requests_per_s(roof, batches)
        assert got.tobytes() == want.tobytes(), (roof.tp, roof.pp, got - want)
        checked += 1
    assert checked > 0


def test_the_comparison_covers_moe_and_pipelines() -> None:
    """The draws above include MoE models and pipeline splits (else the bit-for-bit tests
    would say nothing about their branches)."""
    moe = pipelines = 0
    for index in range(CASES):
        if isinstance(_workloads(CASES)[index].model, GenericModel):
            continue
        for _, roof in _models(index, index):
            moe += roof.ops.moe
            pipelines += roof.pp > 1
    assert moe > 0 and pipelines > 0, (moe, pipelines)


@pytest.mark.parametrize("index", range(0, CASES, 2))
def test_compiled_check_is_the_scalar_check(index: int) -> None:
    """The latency check the limit-batch search probes (TTFT, TPOT, latency against the
    workload's limits): the compiled one returns the scalar reference's triple, bit for bit,
    at random batches of every split, including the early TPOT rejection."""
    checked = 0
    for r, roof in _models(index, 1000 + index, 12):
        for b in _batches(r, 10):
            want = roof.check_scalar(b)
            got = compiled.check(roof, b)
            assert repr(got) == repr(want), (roof.tp, roof.pp, b, got, want)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("index", range(1, CASES, 2))
def test_compiled_timing_is_the_scalar_timing(index: int) -> None:
    """The timing an estimate reports (prefill, decode and TPOT phases, the busiest pipeline
    stage): the compiled one is the scalar reference's, bit for bit."""
    checked = 0
    for r, roof in _models(index, 2000 + index, 12):
        for b in _batches(r, 6):
            want = roof.timing_scalar(b)
            pre, dec, tpot, stage = compiled.timing(roof, b)
            got = inf.Timing(inf.PhaseTime(*pre),
                             None if dec is None else inf.PhaseTime(*dec),
                             None if tpot is None else inf.PhaseTime(*tpot), b, stage)
            assert repr(got) == repr(want), (roof.tp, roof.pp, b)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("index", range(0, CASES, 3))
def test_compiled_limit_search_is_the_reference_search(index: int) -> None:
    """The largest batch meeting the latency limits: the compiled search finds the batch the
    Python search finds over the scalar checks, for every split and several caps."""
    checked = 0
    for r, roof in _models(index, 3000 + index, 10):
        for hi in (1, 2, r.randint(3, 300), 4096):
            want = inf.largest_meeting_scalar(_ScalarChecks(roof), hi)  # type: ignore[arg-type]
            assert compiled.largest_meeting(roof, hi, inf.NEAR_LIMIT) == want
            checked += 1
    assert checked > 0


class _ScalarChecks:
    """A serving model whose ``check`` is the scalar reference's."""

    def __init__(self, roof: inf.ServingModel) -> None:
        self.check = roof.check_scalar


def test_a_read_only_install_caches_the_loops_in_a_temporary_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An installed image's code is read-only and its user has no home: numba, told nothing,
    would refuse to import the module (no cache locator). The cache then goes to
    NUMBA_CACHE_DIR when set, else under the temporary directory."""
    import numba

    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.setattr(compiled.os, "access", lambda path, mode: False)
    compiled._cache_dir()
    assert numba.config.CACHE_DIR.endswith("gpu-advisor-numba")
    monkeypatch.setattr(numba.config, "CACHE_DIR", "/somewhere/set")
    compiled._cache_dir()
    assert numba.config.CACHE_DIR == "/somewhere/set"
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.setattr(compiled.os, "access", lambda path, mode: True)
    compiled._cache_dir()
    assert numba.config.CACHE_DIR == ""
