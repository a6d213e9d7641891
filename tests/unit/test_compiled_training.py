"""The compiled training walk (service/engine/physics/compiled_training.py) against the Python
one it replaces for transformers (:func:`training.fastest_scalar`): random pre-training and
fine-tuning jobs of the differential generator (dense and MoE, every sharding and
checkpointing choice, flash attention or not, some with an input ceiling), every catalog GPU,
every searched count up to 256. The chosen split, its micro-batch and its step's six figures
must be the reference's, bit for bit (``repr``), and so must the (data-parallel degree, step
time) a ranking reads without building the plan (:func:`training.fitted_steps`), and the least
count that fits memory (:func:`training.least_fitting_count`, every searched count to 4,096):
the engine's answers are checked to the last digit (tests/differential.py).

``GPU_ADVISOR_TRAINING_WALK_CASES`` sets how many jobs (default 24; CI's longer run: more)."""

from __future__ import annotations

import dataclasses
import os
import random

import numpy as np
import pytest

from service.engine.cache import EngineCache, Memo
from service.engine.physics import compiled_training as ct
from service.engine.physics import parallelism as par
from service.engine.physics import training as tr
from service.engine.physics.estimate import gpu_count_candidates
from service.engine.physics.performance import peak_rate
from service.engine.types import TransformerModel, Workload
from service.workloads.schemas import WorkloadSpec
from tests import differential_bodies as bodies
from tests.unit.catalog_data import load_gpus

CASES = int(os.environ.get("GPU_ADVISOR_TRAINING_WALK_CASES", "24"))
LARGEST_COUNT = 256


def _jobs(n: int, seed: int = 31) -> list[Workload]:
    """``n`` transformer training jobs; every third a Mixtral (MoE) one, every fifth with an
    input ceiling per GPU, every seventh without flash attention, every fourth with the LM
    head on 0% or 15% of the tokens."""
    r = random.Random(seed)
    out: list[Workload] = []
    while len(out) < n:
        body = bodies._pretraining(r) if r.random() < 0.6 else bodies._fine_tuning(r)
        if len(out) % 3 == 2:
            body["model"] = {"preset": "mixtral-8x7b"}
        if len(out) % 5 == 4:
            body["training"]["input_samples_per_s_per_gpu"] = bodies._log(r, 1, 1e4)
        if len(out) % 7 == 6:
            body["training"]["flash_attention"] = False
        if len(out) % 4 == 1:
            body["training"]["lm_head_fraction"] = (0.0, 0.15)[len(out) % 8 == 5]
        try:
            workload = WorkloadSpec.model_validate(body).to_engine(require_amount=False)
        except Exception:  # noqa: BLE001 - an inconsistent draw: the generator's, not ours
            continue
        if isinstance(workload.model, TransformerModel):
            out.append(workload)
    return out


@pytest.mark.parametrize("index", range(CASES))
def test_compiled_walk_is_the_python_walk_bit_for_bit(index: int) -> None:
    workload = _jobs(CASES)[index]
    spec = workload.training
    assert spec is not None
    cache = EngineCache()
    checked = fitted = 0
    for gpu in load_gpus():
        rate = peak_rate(gpu, workload.precision)
        if rate is None:
            continue
        memo = Memo(cache)
        # the least count that fits memory, as min_gpus_to_fit searches it
        counts = gpu_count_candidates(gpu, memo=memo)
        prec = rate.precision_used
        want_least = par.least_count(
            counts, lambda n: tr.fits(workload, gpu, n, prec, memo=memo))  # noqa: B023
        assert tr.least_fitting_count(workload, gpu, counts, prec, memo) == want_least, gpu.slug
        for n in gpu_count_candidates(gpu, LARGEST_COUNT, memo):
            for ckpt in (spec.activation_checkpointing, not spec.activation_checkpointing):
                args = (workload, gpu, n, rate, ckpt, spec.sharding, memo)
                want = tr.fastest_scalar(*args)
                got = tr._fastest(*args)
                assert repr(got) == repr(want), (gpu.slug, n, ckpt)
                if ckpt == spec.activation_checkpointing:
                    # what a ranking reads of the plan, without building it
                    light = tr.fitted_steps(workload, gpu, (n,), rate, memo)[0]
                    assert repr(light) == repr(
                        None if want is None else (want[0].dp, tr._total(want[2]))), (gpu.slug, n)
                checked += 1
                fitted += want is not None
    assert checked > 50 and fitted > 0, (checked, fitted)


def test_the_jobs_cover_moe_input_ceilings_and_every_sharding() -> None:
    """The draws above include MoE models, input ceilings and each sharding choice (else the
    bit-for-bit test would say nothing about those branches)."""
    jobs = _jobs(CASES)
    assert any(isinstance(j.model, TransformerModel) and j.model.experts > 1 for j in jobs)
    assert any(j.training and j.training.input_samples_per_s_per_gpu for j in jobs)
    assert any(j.training and not j.training.flash_attention for j in jobs)
    assert {0.0, 0.15} <= {j.training.lm_head_fraction for j in jobs if j.training}
    shardings = {j.training.sharding for j in jobs if j.training}
    assert "auto" in shardings and len(shardings) >= 3, shardings


def test_cnn_jobs_keep_the_python_walk() -> None:
    cnn = WorkloadSpec.model_validate({
        "kind": "training", "model": {"preset": "resnet-50"}, "precision": "bf16",
        "training": {"batch_size": 256, "samples": 1e6}}).to_engine()
    assert not ct.supported(cnn)


def test_plans_of_many_counts_at_once_are_each_counts_own() -> None:
    """One compiled call plans every count of a GPU type (a ranking's ``fitted_steps``) and
    remembers micro-steps across its counts and shardings: each count's plan is the one it
    gets alone (which the test above holds to the Python walk)."""
    checked = 0
    for workload in _jobs(max(6, CASES // 3)):
        cache = EngineCache()
        for gpu in load_gpus()[::2]:
            rate = peak_rate(gpu, workload.precision)
            if rate is None:
                continue
            counts = tuple(gpu_count_candidates(gpu, LARGEST_COUNT, Memo(cache)))
            together = tr.fitted_steps(workload, gpu, counts, rate, Memo(EngineCache()))
            alone = [tr.fitted_steps(workload, gpu, (n,), rate, Memo(EngineCache()))[0]
                     for n in counts]
            assert repr(together) == repr(alone), gpu.slug
            checked += sum(x is not None for x in alone)
    assert checked > 20


def test_micro_step_memo_tells_colliding_micro_batches_apart() -> None:
    """Micro-batches 64 apart share a memo slot: each still gets its own figures."""
    workload = _jobs(1)[0]
    gpu = next(g for g in load_gpus() if g.slug == "nvidia-h100-sxm5-80gb")
    rate = peak_rate(gpu, workload.precision)
    assert rate is not None
    memo = Memo(EngineCache())
    job = tr._job(workload, gpu, rate, True, memo)
    packed = ct.pack_job(workload, gpu, rate.precision_used, job, memo, tr.LAYOUT_TIE,
                         tr._floor_flops(workload, True, memo))
    p, tps, tables = packed.params, packed.tps, packed.tables
    row = np.empty((1, tables.shape[2]))
    keys = np.full((tps.shape[0], ct._MEMO_SLOTS), -1.0)
    values = np.empty((tps.shape[0], ct._MEMO_SLOTS, 3))
    assert tps.shape[0] >= 2  # several TP degrees share the memo's arrays, each its own row
    for micro in (1.0, 1.0 + ct._MEMO_SLOTS, 1.0, 2.0, 2.0 + 2 * ct._MEMO_SLOTS, 2.0):
        for ti in (0, 1, 0):
            got = ct._micro_step_memo(p, tps, tables, ti, micro, row, keys, values)
            assert got == ct._micro_step(p, tps, tables, ti, micro, row), (ti, micro)


def test_a_job_shape_packs_once_and_each_batch_gets_its_own_floats() -> None:
    """The packed walk figures are kept across requests per job shape (``training_packed``):
    jobs of one shape at other batches, lengths and shardings read the first job's entry with
    their own batch and floor FLOPs written in, the same floats as packing each afresh, and
    the shared table gains no entry for them."""
    checked = 0
    for workload in _jobs(max(6, CASES // 3), seed=57):
        spec = workload.training
        assert spec is not None
        variants = [workload] + [
            dataclasses.replace(workload, training=dataclasses.replace(
                spec, batch_size=max(1, spec.batch_size * k // 4 + k),
                tokens=(spec.tokens or 1e9) * k, sharding=sharding))
            for k, sharding in ((3, "auto"), (9, "zero1"), (1, "none"))]
        assert len({tr.job_shape(v) for v in variants}) == 1
        # and jobs of other shapes, each a field the packed figures read, get their own
        other = "sgd" if spec.optimizer != "sgd" else "adamw"
        variants += [dataclasses.replace(workload, training=dataclasses.replace(spec, **change))
                     for change in ({"optimizer": other},
                                    {"input_samples_per_s_per_gpu": 37.0},
                                    {"seq_len": (spec.seq_len or 512) * 2},
                                    {"lm_head_fraction": 0.5},
                                    {"flash_attention": not spec.flash_attention})]
        shapes = len({tr.job_shape(v) for v in variants})
        assert shapes == 6
        cache = EngineCache()
        gpus = [g for g in load_gpus()[::3] if peak_rate(g, workload.precision) is not None]
        for v in variants:
            v_spec = v.training
            assert v_spec is not None
            for gpu in gpus:
                rate = peak_rate(gpu, v.precision)
                assert rate is not None
                ckpt = v_spec.activation_checkpointing
                got = tr._packed_job(v, gpu, rate, ckpt, Memo(cache))
                fresh = Memo(EngineCache())
                want = ct.pack_job(v, gpu, rate.precision_used,
                                   tr._job(v, gpu, rate, ckpt, fresh), fresh, tr.LAYOUT_TIE,
                                   tr.training_floor_flops(v, ckpt))
                assert got.params.tobytes() == want.params.tobytes(), gpu.slug
                assert got.tps.tobytes() == want.tps.tobytes(), gpu.slug
                assert got.tables.tobytes() == want.tables.tobytes(), gpu.slug
                checked += 1
        assert cache.stats()["training_packed"][0] == len(gpus) * shapes
    assert checked > 40
