"""Training layout choice (TP x ZeRO x micro-batch) and its properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.engine import constants as c
from service.engine import estimate, min_gpus_to_fit
from service.engine.cache import Memo
from service.engine.physics import memory as mem
from service.engine.physics import training as tr
from service.engine.physics.kernels import sustained_clock_fraction
from service.engine.physics.performance import PeakRate, peak_rate
from service.engine.types import GpuSpec, Sharding, TrainingSpec, Workload
from service.presets import PRESETS
from tests.unit.gpus import (
    A100_PCIE_40,
    A100_SXM,
    A100_SXM_40,
    H100_SXM,
    H200,
    L4,
    L40S,
    MI300X,
    RTX_4090,
    RTX_A6000,
    V100,
)

SHARD_RANK = {s: i for i, s in enumerate(tr.SHARDING_ORDER)}


def _pretrain_70b(checkpointing: bool = False) -> Workload:
    # Llama 2 70B pre-training setup: 4M-token global batch (1024 x 4096), bf16, AdamW
    return Workload(
        kind="training",
        precision="bf16",
        model=PRESETS["llama-2-70b"].model,
        training=TrainingSpec(
            batch_size=1024, seq_len=4096, tokens=2e11, activation_checkpointing=checkpointing
        ),
    )


def _every_layout(w: Workload, gpu: GpuSpec, n: int, rate: PeakRate) -> tuple[int, float]:
    """(layouts that fit, the fastest one's step time [s]): the engine's own walk over every
    layout, without pruning or stopping, the reference ``plan_training``'s choice is held to."""
    ckpt, wanted = tr._resolve(w, None, None)
    found = tr._walk(w, gpu, n, rate, ckpt, wanted, -math.inf, prune=False)
    return len(found), min(tr._total(step) for _, _, step in found)


def _compute_only_hours(gpu: GpuSpec, n: int, flops_per_token: float = 6.0) -> float:
    # 6 N D / (n x training GEMM rate): what the GEMMs alone take at full waves
    rate = peak_rate(gpu, "bf16")
    assert rate is not None
    flops = flops_per_token * 70e9 * 2e11
    gemm = (rate.tflops * 1e12 * sustained_clock_fraction(gpu) * c.GEMM_EFFICIENCY
            * c.TRAINING_KERNEL_FACTOR)
    return flops / (n * gemm) / 3600


def test_70b_on_1024_h100_is_compute_bound_with_tp8_in_node() -> None:
    # Megatron practice (Narayanan et al. 2021; Llama 2/3 at ~40% MFU): TP = 8 inside the
    # NVLink node, ZeRO-1 / distributed optimizer across nodes. Was TP 2 + ZeRO-3 over the
    # network: 158 h, interconnect-bound.
    est = estimate(_pretrain_70b(), H100_SXM, 1024)
    p = est.parallelism
    assert est.fits and est.bound == "compute"
    # TP 8 in the NVLink node, sharding across nodes; ZeRO-2 when its freed memory buys a
    # larger micro-batch (fuller GEMM waves) than ZeRO-1
    assert (p.tensor_parallel, p.data_parallel) == (8, 128)
    assert p.sharding in ("zero1", "zero2")
    hours = est.time_to_complete_hours
    assert hours is not None
    # attention (~4% of the FLOPs, at a lower rate), memory-bound ops, the optimizer and
    # partial GEMM waves add 5-30% to the GEMMs' time
    ideal = _compute_only_hours(H100_SXM, 1024)
    assert 1.05 * ideal < hours < 1.3 * ideal


def test_70b_h200_only_a_little_ahead_of_h100() -> None:
    # the same chip and peak: the H200 gains only from its bandwidth (memory-bound ops) and
    # memory (larger micro-batches, fuller waves): a few percent to ~15%, not 2x
    h100 = estimate(_pretrain_70b(), H100_SXM, 1024).time_to_complete_hours
    h200 = estimate(_pretrain_70b(), H200, 1024).time_to_complete_hours
    assert h100 is not None and h200 is not None
    assert 1.02 * h200 < h100 < 1.2 * h200


def test_70b_on_pcie_l40s_nodes_pays_an_interconnect_penalty() -> None:
    # L40S: PCIe only (no TP across cards), 6.25 GB/s per GPU network in 8-GPU nodes. It only
    # fits with activation checkpointing (48 GB), so both run with it.
    w = _pretrain_70b(checkpointing=True)
    h100 = estimate(w, H100_SXM, 1024)
    l40s = estimate(w, L40S, 1024)
    assert h100.fits and l40s.fits
    assert l40s.parallelism.tensor_parallel == 1 and l40s.parallelism.gpus_per_node == 8
    assert l40s.bound == "interconnect" and h100.bound == "compute"
    h100_rate, l40s_rate = peak_rate(H100_SXM, "bf16"), peak_rate(L40S, "bf16")
    assert h100_rate is not None and l40s_rate is not None
    peak_ratio = h100_rate.tflops / l40s_rate.tflops  # 989.4 / 362 = 2.7
    assert h100.tokens_per_s is not None and l40s.tokens_per_s is not None
    assert h100.tokens_per_s / l40s.tokens_per_s > 2 * peak_ratio


def test_less_memory_gives_a_smaller_micro_batch_or_more_sharding() -> None:
    # Llama-2-13B, 8 GPUs, 64 x 2048: the H200 (141 GB) fits twice the micro-batch of the H100
    # (80 GB) at the same sharding; fuller GEMM waves make that a little faster, not 2x
    w = Workload(
        kind="training",
        precision="bf16",
        model=PRESETS["llama-2-13b"].model,
        training=TrainingSpec(batch_size=64, seq_len=2048, tokens=1e10),
    )
    roomy = estimate(w, H200, 8)
    tight = estimate(w, H100_SXM, 8)
    assert roomy.fits and tight.fits
    assert tight.micro_batch_size is not None and roomy.micro_batch_size is not None
    more_sharding = SHARD_RANK[tight.parallelism.sharding] > SHARD_RANK[roomy.parallelism.sharding]
    assert tight.micro_batch_size < roomy.micro_batch_size or more_sharding
    assert tight.step_time_ms is not None and roomy.step_time_ms is not None
    assert roomy.step_time_ms < tight.step_time_ms < 1.15 * roomy.step_time_ms
    rate = peak_rate(H100_SXM, "bf16")
    assert rate is not None
    _, fastest = _every_layout(w, H100_SXM, 8, rate)
    # the chosen layout is within the tie margin of the fastest that fits
    assert tight.step_time_ms / 1e3 <= fastest * tr.LAYOUT_TIE


def test_user_sharding_is_respected() -> None:
    w = Workload(
        kind="training",
        precision="bf16",
        model=PRESETS["llama-2-7b"].model,
        training=TrainingSpec(batch_size=64, seq_len=2048, tokens=1e9, sharding="zero3"),
    )
    est = estimate(w, H100_SXM, 16)
    assert est.parallelism.sharding == "zero3"


def test_chosen_layout_is_the_fastest_candidate() -> None:
    rate = peak_rate(A100_SXM, "bf16")
    assert rate is not None
    w = _pretrain_70b()
    layouts, fastest = _every_layout(w, A100_SXM, 256, rate)
    assert layouts > 1
    chosen = tr.plan_training(w, A100_SXM, 256, rate)
    assert chosen.step is not None
    assert chosen.step.total_s <= fastest * tr.LAYOUT_TIE


def test_min_gpus_to_fit_uses_every_layout() -> None:
    # 70B bf16 AdamW = 1.12 TB of states: 16 H100s (TP 8 x ZeRO-3 over 2) hold 70 GB each +
    # 11.5 GB of activations > 76 GB usable; 24 (3 nodes) fit
    w = _pretrain_70b()
    n = min_gpus_to_fit(w, H100_SXM)
    assert n == 24 and estimate(w, H100_SXM, n).fits
    smaller = [k for k in (1, 2, 4, 8, 16) if k < n]
    assert all(not estimate(w, H100_SXM, k).fits for k in smaller)


# ---------------------------------------------------------------- properties

PRESET_NAMES = ["llama-2-7b", "llama-2-13b", "llama-2-70b", "mixtral-8x7b", "gpt-2", "resnet-50"]
GPUS = [H100_SXM, A100_SXM, A100_PCIE_40, L40S, L4, MI300X, RTX_4090, RTX_A6000, V100]
counts = st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128])
shardings: st.SearchStrategy[Sharding] = st.sampled_from(["auto", "none", "zero1", "zero3"])


def _job(preset: str, batch: int, checkpointing: bool, sharding: Sharding) -> Workload:
    seq = None if preset == "resnet-50" else 1024
    return Workload(
        kind="training",
        precision="bf16",
        model=PRESETS[preset].model,
        training=TrainingSpec(
            batch_size=batch,
            seq_len=seq,
            samples=1e6,
            activation_checkpointing=checkpointing,
            sharding=sharding,
        ),
    )


@settings(max_examples=60, deadline=None)
@given(
    n=counts,
    preset=st.sampled_from(PRESET_NAMES),
    gpu=st.sampled_from(GPUS),
    batch=st.sampled_from([8, 64, 1024]),
    ckpt=st.booleans(),
    shard=shardings,
)
def test_fits_on_n_then_fits_on_2n(
    n: int, preset: str, gpu: GpuSpec, batch: int, ckpt: bool, shard: Sharding
) -> None:
    w = _job(preset, batch, ckpt, shard)
    if estimate(w, gpu, n).fits:
        twice = estimate(w, gpu, 2 * n)
        # memory fit is monotone; only the global batch (one sample per replica) can stop 2n
        assert twice.fits or (
            twice.parallelism.data_parallel > batch
            and any("global batch" in r for r in twice.infeasible_reasons))


@settings(max_examples=60, deadline=None)
@given(
    n=counts,
    preset=st.sampled_from(PRESET_NAMES),
    gpu=st.sampled_from(GPUS),
    ckpt=st.booleans(),
    shard=shardings,
)
def test_minimum_memory_layout_never_grows_with_gpus(
    n: int, preset: str, gpu: GpuSpec, ckpt: bool, shard: Sharding
) -> None:
    w = _job(preset, 64, ckpt, shard)
    a = tr.min_memory_plan(w, gpu, n, "bf16").memory.total
    b = tr.min_memory_plan(w, gpu, 2 * n, "bf16").memory.total
    assert b <= a + 1e-9


@settings(max_examples=60, deadline=None)
@given(
    n=counts,
    preset=st.sampled_from(PRESET_NAMES),
    gpu=st.sampled_from(GPUS),
    batch=st.sampled_from([8, 64, 1024]),
    ckpt=st.booleans(),
    shard=shardings,
)
def test_more_gpus_never_slow_a_step_whose_traffic_hides(
    n: int, preset: str, gpu: GpuSpec, batch: int, ckpt: bool, shard: Sharding
) -> None:
    # Not "more GPUs are never slower": a job whose collectives are exposed gets slower per
    # step as ring all-reduce volume 2(n-1)/n grows and compute per GPU shrinks (it already
    # was link-bound). When nothing is exposed at 2n, the step is never slower than at n.
    w = _job(preset, batch, ckpt, shard)
    rate = peak_rate(gpu, "bf16")
    assert rate is not None
    a = tr.plan_training(w, gpu, n, rate)
    b = tr.plan_training(w, gpu, 2 * n, rate)
    if a.fits and b.fits and b.step is not None and b.step.exposed_s == 0.0:
        assert a.step is not None
        assert b.step.total_s <= a.step.total_s * tr.LAYOUT_TIE


def test_min_gpus_to_fit_bisection_matches_a_linear_scan() -> None:
    """The bisection in min_gpus_to_fit relies on fitting being monotone in the count."""
    from service.engine.physics.estimate import _fits, gpu_count_candidates
    from service.engine.types import InferenceSpec
    from tests.unit.gpus import ALL

    workloads = [
        Workload(kind="training", precision="bf16", model=PRESETS[p].model,
                 training=TrainingSpec(batch_size=512, seq_len=4096, tokens=1e10))
        for p in ("llama-2-7b", "llama-2-70b", "llama-3.1-405b", "mixtral-8x7b")
    ] + [
        Workload(kind="inference", precision="bf16", model=PRESETS[p].model,
                 inference=InferenceSpec(prompt_tokens=2048, output_tokens=256))
        for p in ("llama-2-70b", "llama-3.1-405b")
    ] + [
        # inference starts its bisection at the weights' share of the room
        # (serving.least_gpus_for_weights): other weight widths, long contexts, fixed
        # batches, encoders and CNNs must still find the least count a scan finds
        Workload(kind="inference", precision=prec, model=PRESETS[p].model,
                 weight_precision=wp, kv_cache_precision=kv,
                 inference=InferenceSpec(prompt_tokens=prompt, output_tokens=out,
                                         batch_size=batch))
        for p, prec, wp, kv, prompt, out, batch in (
            ("llama-3.1-405b", "fp8", None, "fp8", 128_000, 1024, None),
            ("llama-3.1-70b", "bf16", "int4", None, 8192, 512, 64),
            ("llama-3.1-70b", "int8", None, None, 32_000, 2048, 256),
            ("mixtral-8x7b", "bf16", None, None, 4096, 512, None),
            ("gpt-3-175b", "fp16", None, None, 2048, 2048, 32),
            ("bert-large", "fp16", None, None, 512, 0, 4096),
            ("resnet-50", "int8", None, None, 1, 0, 4096),
            ("gpt-2", "bf16", None, None, 1024, 1024, None),
        )
    ] + [
        # a pinned split holds only from its own count: below it the engine's splits (8 x
        # TP 8 holds a 128k context that a pinned TP 1 x PP 16 cannot), so fitting is not
        # monotone and the least count is a scan (a bisection answered None on the L40S)
        Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-70b"].model,
                 inference=InferenceSpec(prompt_tokens=128_000, output_tokens=512,
                                         tensor_parallel=tp, pipeline_parallel=pp))
        for tp, pp in ((1, 16), (2, 8), (1, 32))
    ]
    for workload in workloads:
        for gpu in ALL:
            rate = peak_rate(gpu, workload.precision)
            linear = None
            if rate is not None:
                linear = next((n for n in gpu_count_candidates(gpu)
                               if _fits(workload, gpu, n, rate.precision_used, Memo())), None)
            assert min_gpus_to_fit(workload, gpu) == linear, (gpu.slug, workload.model)


def test_data_parallel_never_exceeds_the_global_batch() -> None:
    from tests.unit.catalog_data import gpus_by_slug

    gpu = gpus_by_slug()["nvidia-h100-sxm5-80gb"]
    w = _job("llama-2-7b", 64, True, "auto")
    for n in (8, 64, 128, 256, 512, 1024):
        e = estimate(w, gpu, n)
        if e.fits:
            assert e.parallelism.data_parallel <= 64
        else:  # beyond TP 8 x batch 64 = 512 GPUs: GPUs would idle, a fix names the count
            assert n > 512
            assert any(f.kind == "gpu_count" and f.value == 512 for f in e.fixes)


def test_goodput_falls_with_scale_and_is_kept_apart_from_the_step() -> None:
    # Llama 3 (sec. 3.3.4): 466 interruptions in 54 days on 16,384 H100, "higher than 90%
    # effective training time"; one node loses almost nothing; a job shorter than the loss per
    # interruption loses at most half itself per interruption
    assert 0.90 <= tr.goodput(16384, None) <= 0.92
    assert tr.goodput(8, None) > 0.9999
    assert tr.goodput(1024, 1000.0) == pytest.approx(1.0 / (1.0 + 2.19e-5 * 1024 * 0.28))
    assert tr.goodput(16384, 0.1) > tr.goodput(16384, 100.0)
    # the reported rate is the healthy step rate times the goodput; the step time is not
    est = estimate(_pretrain_70b(), H100_SXM, 1024)
    assert est.samples_per_s is not None and est.step_time_ms is not None
    healthy = 1024 / (est.step_time_ms / 1e3)
    assert est.samples_per_s / healthy == pytest.approx(tr.goodput(1024, None), rel=1e-3)


@given(st.integers(min_value=2, max_value=4096), st.integers(min_value=1, max_value=4095))
@settings(max_examples=300, deadline=None)
def test_even_micro_takes_the_fewest_steps_and_pads_less_than_one_sample_a_step(
        batch: int, most: int) -> None:
    from service.engine.physics.training_splits import even_micro

    most = min(most, batch - 1)
    micro = even_micro(batch, most)
    steps = math.ceil(batch / micro)
    assert 1 <= micro <= most  # memory holds it
    assert steps == math.ceil(batch / most)  # no fewer steps can hold the batch
    assert 0 <= steps * micro - batch < steps  # the samples paid for that do not exist


def test_a_per_gpu_batch_that_does_not_fit_runs_in_even_micro_steps() -> None:
    # MPT-13B, 8 x A100-80GB, 240 x 4096 with full checkpointing (llm-foundry's benchmark
    # setup): 30 sequences per GPU, about 14 fit at once. Even steps run 10 x 3 (llm-foundry's
    # own setting); the largest power of 2 ran 8 x 4 = 32 and paid for 2 sequences per GPU
    # that do not exist, plus a fourth micro-step's gathers
    w = Workload(
        kind="training",
        precision="bf16",
        model=PRESETS["llama-2-13b"].model,
        training=TrainingSpec(batch_size=240, seq_len=4096, tokens=1e10,
                              activation_checkpointing=True, sharding="zero3"),
    )
    est = estimate(w, A100_SXM, 8)
    assert est.fits and est.parallelism.data_parallel == 8
    micro, steps = est.micro_batch_size, est.gradient_accumulation_steps
    assert micro is not None and steps is not None and steps > 1
    assert micro * steps - 30 < steps and micro * (steps - 1) < 30
    assert micro & (micro - 1) != 0  # not the largest power of 2 (8 x 4)
    assert f"micro-batch {micro} x {steps}" in " ".join(est.warnings)


@given(st.integers(min_value=2, max_value=4096), st.integers(min_value=1, max_value=4095))
@settings(max_examples=300, deadline=None)
def test_exact_micro_is_the_largest_divisor_within_twice_the_fewest_steps(
        batch: int, most: int) -> None:
    from service.engine.physics.training_splits import exact_micro

    most = min(most, batch - 1)
    fewest = math.ceil(batch / most)
    divisors = [m for m in range(1, most + 1) if batch % m == 0 and batch // m <= 2 * fewest]
    assert exact_micro(batch, most) == (max(divisors) if divisors else 0)


def test_the_step_keeps_the_faster_of_the_exact_and_the_even_micro_batch() -> None:
    # a 13B model on 8 x A100-40GB, 256 x 4,608, full checkpointing (llm-foundry's MPT-13B
    # benchmark setup at 4,096 runs 2 x 16): 32 sequences per GPU and room for 3; the even
    # split pays for 33 in 11 steps, the exact one for 32 in 16. Both are timed, the faster
    # is kept
    from service.engine.cache import EngineCache
    from service.engine.physics import training_splits as sp

    w = Workload(
        kind="training", precision="bf16", model=PRESETS["llama-2-13b"].model,
        training=TrainingSpec(batch_size=256, seq_len=4608, tokens=1e10,
                              activation_checkpointing=True, sharding="zero3"),
    )
    gpu = A100_SXM_40
    rate = peak_rate(gpu, "bf16")
    assert rate is not None
    memo = Memo(EngineCache())
    option = next(o for o in sp.splits(w, gpu, 8, rate.precision_used, True, "zero3", memo)
                  if o.tp == 1)
    exact, even = option.micro_choices(mem.usable_gb(gpu))
    assert 32 % exact == 0 and 32 % even != 0 and exact < even
    timed = {}
    for micro in (exact, even):
        steps = math.ceil(32 / micro)
        state = option.weights + option.gradients + option.optimizer
        timed[micro] = tr._total(tr._step(
            w, tr._job(w, gpu, rate, True, memo), (1, 8, "zero3"), (micro, steps), state,
            (tr.par.group_link(gpu, 1, spans_nodes=False)[1],
             tr.par.group_link(gpu, 8, spans_nodes=False)[1])))
    found = tr.fastest_scalar(w, gpu, 8, rate, True, "zero3", memo)
    assert found is not None and found[0].tp == 1
    assert found[1] == min(timed, key=timed.__getitem__)
    assert tr._total(found[2]) == min(timed.values())
    assert repr(tr._fastest(w, gpu, 8, rate, True, "zero3", memo)) == repr(found)


def test_geforce_training_gemms_reach_their_inference_share_of_the_half_rate() -> None:
    # the catalog's GeForce tensor rate is half the array's full rate (FP32 accumulation): the
    # losses training_kernel_factor stands for hide under the slower math while factor x 2
    # >= 1, so the 4090's training GEMM rate is its inference one; the A6000 (the same
    # generation's professional card, full rate) keeps the factor
    w = _bert_large_fp16()
    for gpu, factor in ((RTX_4090, min(1.0, 2.0 * c.TRAINING_KERNEL_FACTOR)),
                        (RTX_A6000, c.TRAINING_KERNEL_FACTOR)):
        rate = peak_rate(gpu, "fp16")
        assert rate is not None
        inference = tr.kernels.device(gpu, rate)
        trained = tr.training_device(w, gpu, rate)
        assert trained.matrix_flops_s == pytest.approx(inference.matrix_flops_s * factor)
        assert trained.attention_flops_s == pytest.approx(inference.attention_flops_s * factor)
    assert tr.training_kernel_factor(RTX_4090) == 1.0
    assert tr.training_kernel_factor(RTX_A6000) == c.TRAINING_KERNEL_FACTOR
    # and the answer says which datasheet ratio it rests on, on the GeForce card only
    names = {a.name for a in estimate(w, RTX_4090, 1).assumptions}
    assert "geforce_fp16_accumulate_speedup" in names
    assert "geforce_fp16_accumulate_speedup" not in {
        a.name for a in estimate(w, RTX_A6000, 1).assumptions}


def _bert_large_fp16() -> Workload:
    return Workload(
        kind="training",
        precision="fp16",
        model=PRESETS["bert-large"].model,
        training=TrainingSpec(batch_size=28, seq_len=384, samples=100_000, optimizer="adamw"),
    )


def test_geforce_training_convolutions_reach_their_inference_share_of_the_half_rate() -> None:
    # cuDNN accumulates FP16 convolutions in FP32: on a GeForce card the catalog's half rate;
    # training's extra cost per FLOP (conv_efficiency / conv_inference_efficiency of the
    # inference rate) hides under the slower math, so its training convolutions run at the
    # inference share; the A6000 keeps the training share
    w = Workload(kind="training", precision="fp16", model=PRESETS["resnet-50"].model,
                 training=TrainingSpec(batch_size=256, samples=1e6, optimizer="sgd"))
    for gpu, trained_share in ((RTX_4090, c.CONV_INFERENCE_EFFICIENCY),
                               (RTX_A6000, c.CONV_EFFICIENCY)):
        rate = peak_rate(gpu, "fp16")
        assert rate is not None
        plain = tr.kernels.device(gpu, rate)
        trained = tr.training_device(w, gpu, rate)
        assert trained.conv_flops_s == pytest.approx(
            plain.conv_flops_s * trained_share / c.CONV_EFFICIENCY)
        assert trained.matrix_flops_s == plain.matrix_flops_s
    assert tr.half_rate_hides(c.CONV_EFFICIENCY / c.CONV_INFERENCE_EFFICIENCY) == 1.0
    assert tr.half_rate_hides(0.3) == pytest.approx(0.6)
    names = {a.name for a in estimate(w, RTX_4090, 1).assumptions}
    assert {"geforce_fp16_accumulate_speedup", "conv_inference_efficiency"} <= names


def test_eager_attention_traffic_counts_every_score_kernel() -> None:
    # without a fused kernel each layer writes and reads the (heads x s x s) scores in every
    # step NVIDIA's BERT runs: 10 passes forward, 11 backward, plus the 1-byte dropout mask
    model = PRESETS["bert-large"].model
    assert isinstance(model, tr.TransformerModel)
    seq, micro, act_b = 384, 4, 2.0
    qkvo = 4.0 * micro * seq * model.hidden_size * act_b
    fwd, bwd = tr.attention_bytes(model, seq, micro, 1, act_b, True)
    assert (fwd, bwd) == (pytest.approx(qkvo), pytest.approx(2.0 * qkvo))
    fwd, bwd = tr.attention_bytes(model, seq, micro, 1, act_b, False)
    scores = model.attention_heads * seq * seq * micro
    assert fwd - qkvo == pytest.approx(scores * (10 * 2.0 + 1))
    assert bwd - 2.0 * qkvo == pytest.approx(scores * (11 * 2.0 + 1))
    # split over TP ranks with the heads
    fwd2, _ = tr.attention_bytes(model, seq, micro, 2, act_b, False)
    assert fwd2 == pytest.approx(fwd / 2.0)
    # at BERT's fine-tuning length the attention traffic is ~12x Q, K, V and O's alone
    # (heads x s = 16 x 384 score elements per token against 4 x 1,024 hidden ones)
    assert 11.0 < (fwd + bwd) / (3.0 * qkvo) < 13.0


def test_lm_head_fraction_times_the_vocabulary_projection_on_its_tokens_only() -> None:
    # BERT pre-training in NVIDIA's code gathers the ~15% masked positions before the MLM head;
    # SQuAD fine-tuning has a 2-way span head instead: the vocabulary GEMMs and the logits'
    # traffic scale with the share of tokens that reach them
    model = PRESETS["bert-large"].model
    assert isinstance(model, tr.TransformerModel)
    memo = Memo()
    rate = peak_rate(A100_SXM, "fp16")
    assert rate is not None
    times = {}
    for frac in (1.0, 0.15, 0.0):
        w = Workload(kind="training", precision="fp16", model=model,
                     training=TrainingSpec(batch_size=32, seq_len=128, samples=1e6,
                                           lm_head_fraction=frac))
        dev = tr.training_device(w, A100_SXM, rate)
        times[frac] = tr.MicroStep(w, dev, False, memo).time(32, 1)[2]
    head_all = times[1.0] - times[0.0]
    # the head on every token: 6 x V x h per token of GEMM work and fp32 logits, a
    # tenth of BERT-large's step at length 128
    assert 0.06 < head_all / times[1.0] < 0.2
    # on 15% of the tokens: ~15% of that (row tiles round up)
    assert 0.1 < (times[0.15] - times[0.0]) / head_all < 0.25
    # and the answer's floor stays a lower bound: the floor FLOPs drop with the head
    full = tr.training_floor_flops(Workload(
        kind="training", precision="fp16", model=model,
        training=TrainingSpec(batch_size=32, seq_len=128, samples=1e6)))
    none = tr.training_floor_flops(Workload(
        kind="training", precision="fp16", model=model,
        training=TrainingSpec(batch_size=32, seq_len=128, samples=1e6, lm_head_fraction=0.0)))
    vh_tokens = model.vocab_size * model.hidden_size * 32 * 128
    assert full - none == pytest.approx(c.TRAIN_FLOPS_PER_PARAM_TOKEN * vh_tokens)


@pytest.mark.parametrize("frac", [-0.1, 1.5, math.nan])
def test_engine_rejects_an_lm_head_fraction_outside_0_1(frac: float) -> None:
    # the API's schema bounds it; direct engine callers get the same check (a NaN would
    # otherwise turn every step time into NaN)
    from service.engine.validate import validate_workload

    w = Workload(kind="training", precision="fp16", model=PRESETS["bert-large"].model,
                 training=TrainingSpec(batch_size=32, seq_len=128, samples=1e6,
                                       lm_head_fraction=frac))
    assert [f for f, _ in validate_workload(w)] == ["training.lm_head_fraction"]


def test_moe_backward_runs_every_routed_token_through_its_experts() -> None:
    # backward is two GEMMs per forward GEMM (data and weight gradients) over the same rows:
    # in an MoE layer the rows routed to each expert (top-k per token), as forward runs them
    from service.engine.physics import transformer_ops as tops

    model = PRESETS["mixtral-8x7b"].model
    assert isinstance(model, tr.TransformerModel) and model.experts_per_token == 2
    rate = peak_rate(H100_SXM, "bf16")
    assert rate is not None
    ops = tops.LayerOps(model, tr.kernels.device(H100_SXM, rate), 1, 2.0, 2.0)
    tokens = 8 * 4096.0
    forward, backward = ops.forward(tokens, 0.0, 0.0)[0], ops.backward(tokens, 0.0, 0.0)[0]
    assert 1.9 < backward / forward < 2.2


def test_training_attention_pairs_by_model_and_kernel() -> None:
    llama, bert = PRESETS["llama-2-7b"].model, PRESETS["bert-large"].model
    mistral = PRESETS["mistral-7b"].model
    assert isinstance(llama, tr.TransformerModel) and isinstance(bert, tr.TransformerModel)
    assert isinstance(mistral, tr.TransformerModel) and mistral.sliding_window
    # a fused causal kernel skips the masked half; eager matmuls compute every pair; an
    # encoder scores every pair either way; a window caps what a fused kernel scores
    assert mem.attention_pairs(llama, 4096) == 4096 * 4096 / 2
    assert mem.attention_pairs(llama, 4096, flash=False) == 4096 * 4096
    assert mem.attention_pairs(bert, 512) == mem.attention_pairs(bert, 512, flash=False) \
        == 512 * 512
    w = mistral.sliding_window
    assert mem.attention_pairs(mistral, 4 * w) == w * w / 2 + 3 * w * w


def test_once_per_step_gradient_sync_hides_under_the_last_micro_step_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # DDP / ZeRO-1 reduce the accumulated gradients once, beside the last micro-step's
    # backward: 4 micro-steps of 1 s hide 0.66 s of it, not 2.64 s; ZeRO-2/3 traffic runs in
    # every micro-step and shares every micro-step's budget
    from service.engine.physics.performance import exposed_comm_s

    f = c.BACKWARD_OVERLAP_FRACTION
    assert exposed_comm_s(True, 4, 1.0, 0.0, 2.0, f) == pytest.approx(2.0 - f)
    assert exposed_comm_s(False, 4, 1.0, 0.0, 2.0, f) == 0.0
    # TP traffic in every micro-step: 0.5 s each, hidden each time; the last one also carries
    # the reduction
    assert exposed_comm_s(True, 4, 1.0, 2.0, 1.0, f) == pytest.approx(0.5 + 1.0 - f)
    # one micro-step: the same either way
    assert exposed_comm_s(True, 1, 3.0, 0.5, 2.0, f) == exposed_comm_s(
        False, 1, 3.0, 0.5, 2.0, f)
    assert tr.ONCE_PER_STEP == ("none", "zero1")
    # in a layout walk: 32 L40S over their network, Llama-2-7B, ZeRO-1, a 512-sequence
    # step; the 13.5 GB gradient all-reduce beside one micro-step, not spread over all
    w = Workload(kind="training", precision="bf16", model=PRESETS["llama-2-7b"].model,
                 training=TrainingSpec(batch_size=512, seq_len=4096, tokens=1e10,
                                       sharding="zero1"))
    rate = peak_rate(L40S, "bf16")
    assert rate is not None

    def step_s() -> float:
        got = tr.fastest_scalar(w, L40S, 32, rate, True, "zero1", Memo())
        assert got is not None
        return tr._total(got[2])

    once = step_s()
    monkeypatch.setattr(tr, "ONCE_PER_STEP", ())
    spread = step_s()
    assert once > 1.04 * spread  # +5.9%: ~1.5 s of the all-reduce no longer hidden


def test_a_training_job_finishes_after_its_start_up() -> None:
    # the job's tokens at the sustained rate, then the launch and communicator set-up of its
    # GPUs (none on one GPU): 2.6 s + 12.3 ms a GPU (constants.JOB_STARTUP_*)
    w = Workload(kind="training", precision="bf16", model=PRESETS["gpt-2"].model,
                 training=TrainingSpec(batch_size=64, seq_len=1024, tokens=2e9))
    for n, startup in ((1, 0.0), (8, 2.6 + 8 * 0.0123), (64, 2.6 + 64 * 0.0123)):
        est = estimate(w, H100_SXM, n)
        assert est.fits and est.tokens_per_s and est.time_to_complete_hours
        assert est.startup_s == pytest.approx(startup, rel=1e-12)
        run_s = 2e9 / est.tokens_per_s
        assert est.time_to_complete_hours * 3600 == pytest.approx(run_s + startup, rel=1e-9)


def test_least_compute_count_matches_a_linear_scan() -> None:
    """A compute job's least count (what the screen asks once per memory configuration, on the
    usable memory and counts alone) is the first searched count that ``_fits``, at sizes on
    and one float either side of each count's exact room, and where nothing fits."""
    from service.engine.physics.estimate import _fits, gpu_count_candidates, least_compute_count
    from service.engine.types import ComputeSpec
    from tests.unit.gpus import ALL

    checked = 0
    for gpu in ALL:
        counts = gpu_count_candidates(gpu)
        room = mem.usable_gb(gpu) - c.FRAMEWORK_OVERHEAD_GB
        sizes = {0.0, 1.0, 1e6}
        for n in counts[:6] + counts[-2:]:
            exact = n * room
            sizes |= {exact, math.nextafter(exact, 0.0), math.nextafter(exact, math.inf)}
        for size in sorted(sizes):
            workload = Workload(kind="compute", precision="fp64", compute=ComputeSpec(
                total_tflop=1e3, total_gb_moved=1e2, memory_gb=size))
            linear = next((n for n in counts if _fits(workload, gpu, n, "fp64", Memo())), None)
            assert least_compute_count(size, mem.usable_gb(gpu), counts) == linear, (
                gpu.slug, size)
            if peak_rate(gpu, "fp64") is not None:
                assert min_gpus_to_fit(workload, gpu) == linear, (gpu.slug, size)
            checked += 1
    assert checked > 300
