"""Memory fit searched once per memory configuration (``parallelism.memory_twin``).

A ranking asks every GPU type for the least count that fits the workload's memory
(``min_gpus_to_fit``) and, for serving, for its model splits; both are computed once per
configuration (memory size, GPUs per node, form factor, fast-domain size, precision) and
reused for every GPU type that shares it. That is exact only if the fit reads nothing else
of the GPU. So: every catalog GPU, asked in catalog order through one call's memo (as the
ranking asks), must get the answer a fresh memo gives for a copy of it whose other figures
(compute rates, bandwidths, power, interconnect bandwidth, name) are scaled by 0.8-1.2, as
the synthetic 5,000-GPU benchmark catalog scales them, and each GPU with a fast link again
without it (the fit's TP degrees differ); for training jobs (transformers, MoE,
CNNs), for compute jobs, and for LLM and encoder serving, where the split lists must agree
too.

``GPU_ADVISOR_MEMORY_TWIN_CASES`` sets how many workloads of each kind (default 12)."""

from __future__ import annotations

import os
import random
from dataclasses import replace

import pytest

from service.engine.cache import Memo
from service.engine.physics import parallelism as par
from service.engine.physics import serving as inf
from service.engine.physics.estimate import min_gpus_to_fit, workload_rate
from service.engine.types import GpuSpec, Workload
from tests.unit.catalog_data import load_gpus
from tests.unit.test_batched import _workloads
from tests.unit.test_compiled_scaling import _job as compute_job
from tests.unit.test_compiled_training import _jobs
from tests.unit.test_figures import _training

CASES = int(os.environ.get("GPU_ADVISOR_MEMORY_TWIN_CASES", "12"))
_SCALED = ("memory_bandwidth_gb_s", "fp64_tflops", "fp64_tensor_tflops", "fp32_tflops",
           "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "int8_tops", "tdp_w",
           "interconnect_bandwidth_gb_s", "boost_clock_mhz", "base_clock_mhz")


def _other(gpu: GpuSpec, r: random.Random) -> GpuSpec:
    """``gpu`` with every figure the memory fit must not read scaled by 0.8-1.2 (zeros and
    absent figures stay: a rate's presence decides the precision, not its size)."""
    changes: dict[str, object] = {"slug": gpu.slug + "-other", "name": gpu.name + " other"}
    for name in _SCALED:
        value = getattr(gpu, name, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            changes[name] = type(value)(value * r.uniform(0.8, 1.2))
    return replace(gpu, **changes)


def _catalog() -> list[GpuSpec]:
    """The seeded GPUs, then each NVLink / Infinity Fabric one again without its fast link
    (same memory, node and form factor; fast domain 1): a configuration the key must tell
    apart, asked after its linked twin."""
    gpus = load_gpus()
    unlinked = [replace(g, slug=g.slug + "-unlinked", interconnect="pcie",
                        interconnect_bandwidth_gb_s=None)
                for g in gpus if par.fast_domain_size(g) > 1]
    return gpus + unlinked


def _training_jobs() -> list[Workload]:
    r = random.Random(41)
    return _jobs(CASES) + [_training(r) for _ in range(CASES)]


def test_twins_are_shared() -> None:
    """The seeded catalog has fewer memory configurations than GPU types (else the twin would
    save nothing there): 20 configurations for 33 types when this test was written."""
    memo = Memo()
    gpus = load_gpus()
    twins = {id(par.memory_twin(g, "bf16", memo)) for g in gpus}
    assert len(twins) < 0.75 * len(gpus)


@pytest.mark.parametrize("kind", ["training", "serving", "compute"])
def test_fit_reads_only_the_memory_configuration(kind: str) -> None:
    jobs = (_training_jobs() if kind == "training" else
            [compute_job(seed) for seed in range(2 * CASES)] if kind == "compute" else
            _workloads(2 * CASES, seed=43))
    r = random.Random(kind)
    gpus = _catalog()
    compared = fitted = 0
    for workload in jobs:
        shared = Memo()  # one ranking's: twins found in catalog order
        for gpu in gpus:
            got = min_gpus_to_fit(workload, gpu, shared)
            other = _other(gpu, r)
            want = min_gpus_to_fit(workload, other, Memo())
            assert got == want, (workload, gpu.slug)
            compared += 1
            fitted += got is not None
            rate = workload_rate(workload, gpu)
            if kind != "serving" or rate is None or got is None:
                continue
            ctx = inf.context(workload, gpu, rate.precision_used, rate, shared)
            fresh = inf.Context(workload, other, rate.precision_used, workload_rate(
                workload, other))
            for n in par.gpu_count_candidates(gpu, 64):
                assert ctx.splits(n) == fresh.splits(n), (workload, gpu.slug, n)
                batch = (workload.inference.batch_size if workload.inference else None) or 1
                assert [ctx.fits(t, p, batch) for t, p in ctx.splits(n)] == [
                    fresh.fits(t, p, batch) for t, p in fresh.splits(n)]
    # the draws reach both answers: fitting counts and GPUs that fit at no count
    assert fitted > compared // 4
    assert fitted < compared
