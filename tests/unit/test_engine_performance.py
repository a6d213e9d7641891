"""Roofline, precision fallback, parallelism and the seed documents' sound claims."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.engine import constants as c
from service.engine import estimate, min_gpus_to_fit
from service.engine.physics import kernels, serving
from service.engine.physics.performance import all_reduce_s, peak_rate
from service.engine.physics.training import training_flops_per_step
from service.engine.types import (
    ComputeSpec,
    GpuSpec,
    InferenceSpec,
    TrainingSpec,
    Workload,
)
from service.presets import PRESETS
from tests.unit.gpus import (
    A10G,
    A100_SXM,
    ALL,
    H100_SXM,
    JETSON_ORIN,
    L4,
    L40S,
    MI300X,
    RTX_4090,
    T4,
    V100,
)


def _decode(model: str, batch: int = 1, precision: str = "fp16", **kw: object) -> Workload:
    return Workload(
        kind="inference",
        precision=precision,  # type: ignore[arg-type]
        model=PRESETS[model].model,
        inference=InferenceSpec(prompt_tokens=128, output_tokens=128, batch_size=batch),
        **kw,  # type: ignore[arg-type]
    )


def _train(
    model: str, batch: int, seq: int | None, gpus_tokens: float = 1e9, **kw: object
) -> Workload:
    return Workload(
        kind="training",
        precision="bf16",
        model=PRESETS[model].model,
        training=TrainingSpec(batch_size=batch, seq_len=seq, tokens=gpus_tokens, **kw),  # type: ignore[arg-type]
    )


def test_decode_llama2_7b_h100_is_bandwidth_bound() -> None:
    # 13.48 GB of fp16 weights (+ tiny KV) / (3350 GB/s x 0.80) ~ 5.0 ms per token at batch 1,
    # plus the fixed costs of one iteration: 32 layers x 10 kernels x 3 us + 0.4 ms scheduling
    est = estimate(_decode("llama-2-7b"), H100_SXM, 1)
    weights_ms = 6.74e9 * 2 / (3350e9 * c.EFF_MEMORY_BW) * 1e3
    fixed_ms = (32 * c.TRANSFORMER_KERNELS_PER_LAYER * c.KERNEL_OVERHEAD_S
                + c.STEP_OVERHEAD_S) * 1e3
    assert est.bound == "memory_bandwidth"
    assert est.tpot_ms == pytest.approx(weights_ms + fixed_ms, rel=0.05)
    assert fixed_ms > 0.2 * weights_ms  # the floor that compresses gaps at batch 1


def _llamacpp(workload: Workload) -> Workload:
    assert workload.inference is not None
    return replace(workload, inference=replace(workload.inference, runtime="llama.cpp"))


def test_llamacpp_decode_on_hbm_streams_at_its_sm_rate() -> None:
    # llama.cpp's matrix-vector kernels: 132 SMs x 1,980 MHz x 6.8 B = 1.78 TB/s on the H100
    # SXM, under its 2.68 TB/s achieved bandwidth, so batch-1 decode reads the weights slower
    server = estimate(_decode("llama-2-7b"), H100_SXM, 1)
    local = estimate(_llamacpp(_decode("llama-2-7b")), H100_SXM, 1)
    assert server.tpot_ms is not None and local.tpot_ms is not None
    cap = 132 * 1980e6 * c.LLAMACPP_STREAM_BYTES_PER_SM_CYCLE
    weight_bytes = 6.74e9 * 2
    fixed_ms = (32 * c.TRANSFORMER_KERNELS_PER_LAYER * c.KERNEL_OVERHEAD_S
                + c.STEP_OVERHEAD_S) * 1e3
    assert local.tpot_ms == pytest.approx(weight_bytes / cap * 1e3 + fixed_ms, rel=0.05)
    assert local.tpot_ms > 1.3 * server.tpot_ms
    assert "llamacpp_stream_bytes_per_sm_cycle" in {a.name for a in local.assumptions}
    assert "llamacpp_stream_bytes_per_sm_cycle" not in {a.name for a in server.assumptions}


def test_llamacpp_serves_decoders_only() -> None:
    from service.engine.validate import validate_workload

    cnn = Workload(kind="inference", precision="int8", model=PRESETS["resnet-50"].model,
                   inference=InferenceSpec(batch_size=8, runtime="llama.cpp"))
    bert = Workload(kind="inference", precision="fp16", model=PRESETS["bert-large"].model,
                    inference=InferenceSpec(prompt_tokens=384, runtime="llama.cpp"))
    for w in (cnn, bert):
        assert ("inference.runtime", "llama.cpp serves generative (decoder) transformers "
                "only") in validate_workload(w)
    assert validate_workload(_llamacpp(_decode("llama-2-7b"))) == []


def test_llamacpp_decode_on_gddr_reaches_the_same_bandwidth() -> None:
    # the RTX 4090: 128 SMs x 2,520 MHz x 6.8 B = 2.19 TB/s, far above its 0.81 TB/s achieved
    # bandwidth: the cap does not bind, llama.cpp and a batching server read alike
    server = estimate(_decode("llama-2-7b"), RTX_4090, 1)
    local = estimate(_llamacpp(_decode("llama-2-7b")), RTX_4090, 1)
    assert local.tpot_ms == pytest.approx(server.tpot_ms, rel=1e-9)


def _prefill(model: str, precision: str = "fp16") -> Workload:
    return Workload(
        kind="inference",
        precision=precision,  # type: ignore[arg-type]
        model=PRESETS[model].model,
        inference=InferenceSpec(prompt_tokens=2048, output_tokens=1, batch_size=1),
    )


def _ttft(w: Workload, gpu: GpuSpec) -> float:
    est = estimate(w, gpu, 1)
    assert est.ttft_ms is not None
    return est.ttft_ms


def test_llamacpp_f16_prompts_accumulate_in_fp16_on_geforce_only() -> None:
    # cuBLAS with FP16 accumulation: twice the catalog's (FP32-accumulate) FP16 rate on a
    # GeForce card; BF16 is accumulated in FP32; a workstation/datacenter card runs both alike
    f16, bf16 = _llamacpp(_prefill("llama-2-7b")), _llamacpp(_prefill("llama-2-7b", "bf16"))
    geforce = _ttft(bf16, RTX_4090) / _ttft(f16, RTX_4090)
    assert 1.6 < geforce <= c.GEFORCE_FP16_ACCUMULATE_SPEEDUP + 1e-9
    assert _ttft(f16, L40S) == pytest.approx(_ttft(bf16, L40S), rel=0.02)


def test_llamacpp_prompts_run_at_its_share_of_a_serving_runtime() -> None:
    # the L40S (no FP16-accumulate doubling): llama.cpp's prompt GEMMs at 0.625 of the rate
    server = _ttft(_prefill("llama-2-7b"), L40S)
    local = _ttft(_llamacpp(_prefill("llama-2-7b")), L40S)
    assert local / server == pytest.approx(1 / c.LLAMACPP_PROMPT_EFFICIENCY, rel=0.08)


def test_int4_weights_speed_up_decode() -> None:
    fp16 = estimate(_decode("llama-2-7b"), L4, 1)
    int4 = estimate(_decode("llama-2-7b", weight_precision="int4"), L4, 1)
    assert int4.tpot_ms is not None and fp16.tpot_ms is not None
    # weights read drop 3.9x; the fixed per-step costs and the KV reads do not shrink
    assert fp16.tpot_ms / 3.9 < int4.tpot_ms < fp16.tpot_ms / 1.8


def test_training_flops_6nd() -> None:
    # Kaplan et al. 2020: 6 x N x tokens (+ attention 3 x 2*L*h*s^2 per sequence)
    w = _train("llama-2-7b", 8, 2048)
    flops = training_flops_per_step(w, recompute=False)
    dense = 6 * 6.74e9 * 8 * 2048
    attention = 3 * 2 * 32 * 4096 * 2048**2 * 8
    assert flops == pytest.approx(dense + attention)
    assert training_flops_per_step(w, recompute=True) > flops


def test_moe_uses_active_params_for_compute_total_for_memory() -> None:
    w = _decode("mixtral-8x7b", batch=64)
    est = estimate(w, H100_SXM, 2)
    assert est.memory.weights * 2 == pytest.approx(46.7e9 * 2 / 1e9, rel=1e-3)
    dense_like = estimate(_decode("llama-2-70b", batch=64), H100_SXM, 2)
    assert est.tokens_per_s is not None and dense_like.tokens_per_s is not None
    assert est.tokens_per_s > dense_like.tokens_per_s


def _long_prompt(model: str, batch: int) -> Workload:
    return Workload(kind="inference", precision="bf16", model=PRESETS[model].model,
                    inference=InferenceSpec(prompt_tokens=4000, output_tokens=100,
                                            batch_size=batch))


def test_a_prompt_rides_in_its_own_iteration_not_spread_over_every_one() -> None:
    """Chunked prefill puts a whole prompt (one chunk under the token budget) in one
    iteration; at small batches most iterations decode alone. Mixtral 8x7B on 2 x H100, 4,000
    prompt tokens, 100 out: at batch 1 the request's TPOT carries no prompt at all (its own ran
    in its TTFT), so it is the decode-only iteration's (the even spread gave every iteration
    40 prompt rows, touching every expert: 19.6 ms); the throughput counts the prompt once per
    request: 1 / requests/s = the chunk's iteration + 99 decode-only ones (~ TTFT + 99 x
    TPOT)."""
    long = estimate(_long_prompt("mixtral-8x7b", 1), H100_SXM, 2)
    short = estimate(replace(_long_prompt("mixtral-8x7b", 1), inference=InferenceSpec(
        prompt_tokens=100, output_tokens=100, batch_size=1)), H100_SXM, 2)
    assert long.tpot_ms is not None and short.tpot_ms is not None and long.ttft_ms is not None
    # the long context's KV reads add ~2% (4,050 vs 150 tokens of 128 KB over two GPUs)
    assert short.tpot_ms < long.tpot_ms < 1.05 * short.tpot_ms
    cycle_ms = 1e3 / long.requests_per_s
    assert cycle_ms == pytest.approx(long.ttft_ms + 99 * long.tpot_ms, rel=0.01)
    # at batch 4 the other three requests' prompts stall each request's decode: 3 chunk
    # iterations of ~89 ms in its 100
    four = estimate(_long_prompt("mixtral-8x7b", 4), H100_SXM, 2)
    assert four.tpot_ms is not None
    alone_ms = long.tpot_ms
    assert four.tpot_ms > alone_ms + 3 * 0.9 * long.ttft_ms / 100


def test_precision_fallback_bf16_on_v100_and_t4() -> None:
    for gpu in (V100, T4):
        rate = peak_rate(gpu, "bf16")
        assert rate is not None and rate.precision_used == "fp16" and rate.warning
        est = estimate(_decode("llama-2-7b", precision="bf16"), gpu, 1)
        assert est.precision_used == "fp16"
        assert any("bf16" in w for w in est.warnings)


def test_fp8_on_a100_falls_back() -> None:
    rate = peak_rate(A100_SXM, "fp8")
    assert rate is not None and rate.precision_used == "fp16" and rate.tflops == 312


def test_fp64_never_falls_back() -> None:
    assert peak_rate(JETSON_ORIN, "fp64") is None
    rate = peak_rate(L4, "fp64")
    assert rate is not None and rate.precision_used == "fp64" and rate.tflops == 0.47
    h100 = peak_rate(H100_SXM, "fp64")
    assert h100 is not None and h100.tflops == 67 and h100.tensor
    w = Workload(kind="compute", precision="fp64", compute=ComputeSpec(total_tflop=1e5))
    est = estimate(w, JETSON_ORIN, 1)
    assert not est.fits and est.infeasible_reasons


def test_fp64_compute_fastest_on_h100_a100_class() -> None:
    # Seed claim: FP64 belongs on H100/A100-class parts
    for units in ("vector", "matrix"):
        w = Workload(kind="compute", precision="fp64",
                     compute=ComputeSpec(total_tflop=1e5, fp64_units=units))  # type: ignore[arg-type]
        hours = {
            g.slug: estimate(w, g, 1).time_to_complete_hours
            for g in (H100_SXM, A100_SXM, L4, RTX_4090, MI300X)
        }
        assert all(h is not None for h in hours.values())
        fast = max(hours[H100_SXM.slug] or 0, hours[A100_SXM.slug] or 0)
        assert (hours[L4.slug] or 0) > 20 * fast
        assert (hours[RTX_4090.slug] or 0) > 5 * fast


def test_fp64_vector_codes_do_not_get_the_matrix_peak() -> None:
    # a stencil/CFD code runs on the FP64 vector units: H100 34 TFLOPS, not the 67 of DGEMM;
    # on a GPU without FP64 matrix units (L4) both run at the vector rate
    def hours(gpu: GpuSpec, units: str) -> float:
        w = Workload(kind="compute", precision="fp64",
                     compute=ComputeSpec(total_tflop=1e5, fp64_units=units))  # type: ignore[arg-type]
        return estimate(w, gpu, 1).time_to_complete_hours or 0.0

    ratio = hours(H100_SXM, "vector") / hours(H100_SXM, "matrix")
    assert ratio == pytest.approx(67 / 34 * c.EFF_FP64_TENSOR / c.EFF_NON_TENSOR, rel=1e-6)
    assert hours(L4, "vector") == hours(L4, "matrix")


def test_nvlink_beats_pcie_on_8_gpu_13b_training() -> None:
    # Seed claim: cards without NVLink lose on multi-GPU training. L40S has more dense BF16
    # (362 vs 312 TFLOPS) than the A100 SXM but only PCIe between cards.
    w = _train("llama-2-13b", 64, 2048)
    a100 = estimate(w, A100_SXM, 8)
    l40s = estimate(w, L40S, 8)
    assert a100.fits and l40s.fits
    assert a100.tokens_per_s is not None and l40s.tokens_per_s is not None
    assert a100.tokens_per_s > 1.5 * l40s.tokens_per_s
    assert l40s.parallelism.link == "pcie" and a100.parallelism.link == "nvlink"


def test_int8_inference_on_t4_l4_a10g_is_cost_effective() -> None:
    # Seed claim: INT8 inference on T4/L4/A10G class is cost-effective (images per joule)
    w = Workload(
        kind="inference",
        precision="int8",
        model=PRESETS["resnet-50"].model,
        inference=InferenceSpec(),
    )
    per_joule = {}
    for gpu in (T4, L4, A10G, H100_SXM):
        est = estimate(w, gpu, 1)
        assert est.samples_per_s and est.power_w
        per_joule[gpu.slug] = est.samples_per_s / est.power_w
    assert per_joule[L4.slug] > per_joule[A10G.slug]
    int8 = estimate(w, T4, 1).samples_per_s or 0
    fp16 = (
        estimate(
            Workload(
                kind="inference",
                precision="fp16",
                model=PRESETS["resnet-50"].model,
                inference=InferenceSpec(),
            ),
            T4,
            1,
        ).samples_per_s
        or 0
    )
    # 2x the peak at 8 bits, a smaller share of it (efficiency_8bit_gemm_factor 0.64), on a
    # clock the 70 W T4 holds higher on 8-bit work than on FP16 (physics/power.py)
    assert 1.2 * fp16 < int8 < 2.0 * fp16


def test_needs_n_gpus_fix() -> None:
    w = _decode("llama-2-70b")
    est = estimate(w, H100_SXM, 1)
    assert not est.fits
    kinds = {f.kind: f.value for f in est.fixes}
    assert kinds == {"gpu_count": 2, "weight_precision": "int8"}
    assert [f.detail for f in est.fixes] == ["fits with int8 weights", "needs 2 GPUs"]
    assert min_gpus_to_fit(w, H100_SXM) == 2


def test_pcie_splits_pay_pcie_collectives_and_the_faster_split_wins() -> None:
    # lowest latency on 4 NVLinked H100s: tensor parallel (PP stages run one after another)
    est = estimate(_decode("llama-2-70b"), H100_SXM, 4, latency_mode=True)
    assert est.parallelism.tensor_parallel >= 2 and est.parallelism.link == "nvlink"
    w = _decode("llama-2-70b")
    pcie = estimate(w, L40S, 4)
    assert pcie.parallelism.link == "pcie"
    rate = peak_rate(L40S, "fp16")
    assert rate is not None
    ctx = serving.context(w, L40S, "fp16", rate)
    # every split the model priced (TP over PCIe, PP stages), each at its best batch: the
    # chosen one serves the most requests/s
    by_split = {}
    for tp, pp in ctx.splits(4):
        if not ctx.fits(tp, pp, 1):
            continue
        batch = serving.clamp_batch(ctx.limit_batch(tp, pp),
                                    max(1, ctx.sizing(tp, pp).max_batch(ctx.usable)))
        assert batch is not None
        model = ctx.model(tp, pp)
        by_split[(tp, pp)] = model.requests_per_s(model.timing(batch), 4 // (tp * pp))
    assert {(4, 1), (1, 4)} <= set(by_split)
    chosen = (pcie.parallelism.tensor_parallel, pcie.parallelism.pipeline_parallel)
    assert by_split[chosen] == max(by_split.values())
    batch = 8
    # a PCIe TP group pays PCIe all-reduces: its decode step is slower than the same split
    # over an NVLink-class link
    tp4 = ctx.model(4, 1)
    nvlink = serving.ServingModel(w, L40S, rate, 4, 450.0)
    assert tp4.latency_ms(batch)[1] > 1.1 * (nvlink.latency_ms(batch)[1] or 0)


def test_multi_node_uses_network_link() -> None:
    est = estimate(_train("llama-2-7b", 256, 4096), H100_SXM, 16)
    assert est.parallelism.nodes == 2 and est.parallelism.link == "network"


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_estimates(preset: str) -> None:
    model = PRESETS[preset].model
    generic = not hasattr(model, "layers")
    encoder = getattr(model, "encoder_only", False)
    for gpu in (H100_SXM, L4, T4, MI300X):
        train = Workload(
            kind="training",
            precision="bf16",
            model=model,
            training=TrainingSpec(batch_size=32, seq_len=None if generic else 512, samples=1e6),
        )
        infer = Workload(
            kind="inference",
            precision="fp16",
            model=model,
            inference=InferenceSpec(
                prompt_tokens=0 if generic else 128, output_tokens=0 if generic or encoder else 64
            ),
        )
        for w in (train, infer):
            est = estimate(w, gpu, 8 if gpu.max_gpus_per_node >= 8 else 1)
            assert est.memory_per_gpu_gb > 0
            assert est.fits or est.infeasible_reasons


# ---------------------------------------------------------------- properties

def _scaled(gpu: GpuSpec, bw: float = 1.0, compute: float = 1.0) -> GpuSpec:
    from dataclasses import replace

    return replace(
        gpu,
        memory_bandwidth_gb_s=gpu.memory_bandwidth_gb_s * bw,
        fp16_tflops=(gpu.fp16_tflops or 0) * compute,
        bf16_tflops=(gpu.bf16_tflops or 0) * compute,
    )


@settings(max_examples=40, deadline=None)
@given(
    f=st.floats(1.0, 10.0),
    batch=st.sampled_from([1, 4, 32, 128]),
    gpu=st.sampled_from([H100_SXM, L4, A100_SXM]),
)
def test_more_bandwidth_never_slows_decode(f: float, batch: int, gpu: GpuSpec) -> None:
    w = _decode("llama-2-7b", batch=batch)
    base = estimate(w, gpu, 1).tpot_ms
    fast = estimate(w, _scaled(gpu, bw=f), 1).tpot_ms
    assert base is not None and fast is not None and fast <= base + 1e-12


@settings(max_examples=40, deadline=None)
@given(
    f=st.floats(1.0, 10.0),
    batch=st.sampled_from([1, 8, 64]),
    gpu=st.sampled_from([H100_SXM, L4, T4]),
)
def test_more_compute_never_slows_prefill(f: float, batch: int, gpu: GpuSpec) -> None:
    w = _decode("llama-2-7b", batch=batch)
    base = estimate(w, gpu, 1).ttft_ms
    fast = estimate(w, _scaled(gpu, compute=f), 1).ttft_ms
    assert base is not None and fast is not None and fast <= base + 1e-12


def test_all_fixture_gpus_run_llama_8b() -> None:
    w = Workload(
        kind="inference",
        precision="bf16",
        model=PRESETS["llama-3.1-8b"].model,
        inference=InferenceSpec(prompt_tokens=512, output_tokens=128, max_tpot_ms=100),
    )
    for gpu in ALL:
        est = estimate(w, gpu, 1)
        assert est.assumptions
        if est.fits:
            assert est.tokens_per_s and est.tokens_per_s > 0


def test_vendor_factor_scales_every_kernel_class_of_the_ml_stack() -> None:
    # the AMD stack reaches vendor_efficiency of NVIDIA's shares on its GEMMs, on the
    # bandwidth of its memory-bound kernels and on its collectives (bandwidth x factor,
    # latency / factor); NVIDIA's figures are the plain ones
    f = c.VENDOR_EFFICIENCY["amd"]
    assert kernels.vendor_factor(MI300X) == f and kernels.vendor_factor(H100_SXM) == 1.0
    for gpu, factor in ((MI300X, f), (H100_SXM, 1.0)):
        rate = peak_rate(gpu, "bf16")
        assert rate is not None
        dev = kernels.device(gpu, rate)
        assert dev.bytes_s == pytest.approx(
            gpu.memory_bandwidth_gb_s * c.GB * c.EFF_MEMORY_BW * factor, rel=1e-12)
    # serving: the TP all-reduce and the pipeline sends of a 2-stage TP4 split
    w = _decode("llama-2-70b")
    for gpu, factor in ((MI300X, f), (H100_SXM, 1.0)):
        rate = peak_rate(gpu, "fp16")
        assert rate is not None
        sm = serving.ServingModel(w, gpu, rate, 4, 400.0, pp=2, pp_link_gb_s=50.0)
        assert sm.link_s == pytest.approx(400.0 * c.GB * c.COLLECTIVE_EFFICIENCY * factor)
        assert sm.coll_latency == pytest.approx(c.COLLECTIVE_LATENCY_S / factor)
        assert sm.pp_link_s == pytest.approx(50.0 * c.GB * factor)
        assert sm.pp_latency == pytest.approx(c.PIPELINE_STAGE_LATENCY_S / factor)
    link, n, nbytes = 448.0, 8, 64e6
    plain = all_reduce_s(nbytes, n, link)
    assert plain == all_reduce_s(nbytes, n, link, 1.0)
    bandwidth = plain - c.COLLECTIVE_LATENCY_S
    assert all_reduce_s(nbytes, n, link, f) == pytest.approx(
        bandwidth / f + c.COLLECTIVE_LATENCY_S / f, rel=1e-12)


def test_a_memory_bound_decode_on_the_amd_stack_slows_by_its_factor() -> None:
    # batch-1 decode of Llama-2-70B at TP8 streams weights and all-reduces tiny messages: all
    # of it bandwidth and latency, so its time per token grows by ~1 / factor on MI300X when
    # the factor goes from 1 to its value (within the fixed per-step costs, which it leaves)
    w = replace(_decode("llama-2-70b"), inference=InferenceSpec(
        prompt_tokens=128, output_tokens=128, batch_size=1, tensor_parallel=8))
    f = c.VENDOR_EFFICIENCY["amd"]
    slow = estimate(w, MI300X, 8).tpot_ms
    c.VENDOR_EFFICIENCY["amd"] = 1.0
    try:
        fast = estimate(w, MI300X, 8).tpot_ms
    finally:
        c.VENDOR_EFFICIENCY["amd"] = f
    assert slow is not None and fast is not None
    assert 0.8 / f < slow / fast <= 1.0 / f + 1e-9


def test_inference_bound_is_the_phase_the_explanation_names() -> None:
    """An inference estimate's ``bound`` is the bound of the phase a request spends longer in,
    by the same rule the explanation words it with (output tokens x TPOT against TTFT): the
    request's own decode iterations (``Timing.tpot``) or its prompt. Near the crossover the
    throughput iteration (every arrival's prompt in it) once named another phase and bound:
    a 3-token answer called decode-bound at batch 1, an RTX 4090 decode called compute-bound
    where the iterations a request sees are memory-bound."""
    from service.engine.choice.explain import _phase

    seen = set()
    for gpu in (H100_SXM, RTX_4090):
        rate = peak_rate(gpu, "int8")
        assert rate is not None
        for out in (1, 2, 3, 8, 31, 35, 39, 64):
            w = Workload(kind="inference", model=PRESETS["llama-2-7b"].model, precision="int8",
                         inference=InferenceSpec(prompt_tokens=1500, output_tokens=out,
                                                 target_requests_per_s=30.0))
            est = estimate(w, gpu, 1)
            par = est.parallelism
            sm = serving.ServingModel(w, gpu, rate, par.tensor_parallel,
                                      pp=par.pipeline_parallel,
                                      **serving.links(gpu, par.tensor_parallel,
                                                      par.pipeline_parallel))
            t = sm.timing(est.batch_size)
            assert t.tpot is not None and t.decode is not None
            phase = _phase(w, est)
            want = t.tpot.bound if phase == "decode" else t.prefill.bound
            assert est.bound == want, (gpu.slug, out)
            old = t.decode.bound if out * t.decode.total_s > t.ttft_s else t.prefill.bound
            seen.add(old != want)
    assert seen == {False, True}  # the sweep crosses where the old rule disagreed
