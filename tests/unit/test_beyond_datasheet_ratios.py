"""Where GPUs compare otherwise than their datasheet peaks say, each on the seeded catalog:
small-model training bound by bandwidth, PCIe parts holding lower clocks than SXM ones, fixed
per-step costs of short requests and first tokens, padding-free encoders, which FP64 peak a
compute job gets, MI300X vs H200 serving, and decode attention kernels too small to fill the GPU.

Every assertion compares GPUs through the engine's own figures against a datasheet ratio, which
a model with one efficiency per model family would reproduce exactly.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from service.engine import estimate
from service.engine.physics import kernels
from service.engine.physics.performance import peak_rate
from service.engine.types import (
    ComputeSpec,
    GpuSpec,
    InferenceSpec,
    TrainingSpec,
    Workload,
)
from service.presets import PRESETS
from tests.unit.catalog_data import load_gpus

GPUS = {g.slug: g for g in load_gpus()}
H100 = GPUS["nvidia-h100-sxm5-80gb"]
H100_PCIE = GPUS["nvidia-h100-pcie-80gb"]
A100 = GPUS["nvidia-a100-sxm4-80gb"]
L4 = GPUS["nvidia-l4"]
L40S = GPUS["nvidia-l40s"]


def _peak_ratio(a: GpuSpec, b: GpuSpec, precision: str = "bf16") -> float:
    ra, rb = peak_rate(a, precision), peak_rate(b, precision)  # type: ignore[arg-type]
    assert ra is not None and rb is not None
    return ra.tflops / rb.tflops


def _sustained_ratio(a: GpuSpec, b: GpuSpec, precision: str = "bf16") -> float:
    ra, rb = peak_rate(a, precision), peak_rate(b, precision)  # type: ignore[arg-type]
    assert ra is not None and rb is not None
    return ra.tflops * kernels.peak_share(a, ra) / (rb.tflops * kernels.peak_share(b, rb))


def _train(preset: str, batch: int, seq: int | None = None) -> Workload:
    return Workload(kind="training", precision="bf16", model=PRESETS[preset].model,
                    training=TrainingSpec(batch_size=batch, seq_len=seq, samples=1e6))


def _samples(w: Workload, gpu: GpuSpec, n: int = 1) -> float:
    est = estimate(w, gpu, n)
    assert est.fits and est.samples_per_s
    return est.samples_per_s


@pytest.mark.parametrize(("preset", "batch", "seq"), [("resnet-50", 256, None),
                                                       ("bert-large", 32, 512)])
def test_small_model_training_scales_with_bandwidth_more_than_peak(
    preset: str, batch: int, seq: int | None
) -> None:
    # H100 SXM: 3.17x the A100's dense BF16 peak, each held at its quoted clock under GEMMs
    # (physics/power.py), 1.64x its bandwidth
    w = _train(preset, batch, seq)
    speedup = _samples(w, H100) / _samples(w, A100)
    bandwidth = H100.memory_bandwidth_gb_s / A100.memory_bandwidth_gb_s
    assert bandwidth < speedup < 0.9 * _sustained_ratio(H100, A100)


def test_pcie_and_sxm_variants_differ_beyond_their_datasheet_ratio() -> None:
    # the 350 W PCIe H100 holds a lower clock under load than the 700 W SXM part
    w = Workload(kind="inference", precision="int8", model=PRESETS["resnet-50"].model,
                 inference=InferenceSpec())
    ratio = _samples(w, H100) / _samples(w, H100_PCIE)
    assert ratio > 1.05 * _peak_ratio(H100, H100_PCIE, "int8")


def test_short_llm_requests_compress_the_gap_between_gpus() -> None:
    # per-step fixed costs do not shrink on a bigger GPU: a short request at batch 1 shows a
    # smaller H100-over-L4 advantage than the bandwidth ratio (11x) a long one approaches
    def latency(gpu: GpuSpec, prompt: int, out: int) -> float:
        w = Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                     inference=InferenceSpec(prompt_tokens=prompt, output_tokens=out,
                                             batch_size=1))
        est = estimate(w, gpu, 1)
        assert est.latency_ms is not None
        return est.latency_ms

    short = latency(L4, 32, 16) / latency(H100, 32, 16)
    long = latency(L4, 2048, 512) / latency(H100, 2048, 512)
    bandwidth = H100.memory_bandwidth_gb_s / L4.memory_bandwidth_gb_s
    assert short < long < bandwidth
    assert short < 0.9 * bandwidth


def test_first_token_of_a_short_prompt_has_a_floor_of_milliseconds() -> None:
    # reading 16 GB of weights takes 6.0 ms on an H100 and 2.5 ms on a B200 at 80% of peak
    # bandwidth; launches and scheduling add a floor that does not shrink with the GPU
    w = Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                 inference=InferenceSpec(prompt_tokens=64, output_tokens=64, batch_size=1))
    for gpu in (H100, GPUS["nvidia-b200-hgx"]):
        est = estimate(w, gpu, 1)
        weights_ms = 16.06e9 / (gpu.memory_bandwidth_gb_s * 1e9 * 0.8) * 1e3
        assert est.ttft_ms is not None and est.ttft_ms > max(3.0, 1.15 * weights_ms)


def test_effective_tokens_make_padding_free_encoders_faster() -> None:
    def w(effective: int | None) -> Workload:
        return Workload(kind="inference", precision="int8", model=PRESETS["bert-large"].model,
                        inference=InferenceSpec(prompt_tokens=384,
                                                effective_prompt_tokens=effective))

    padded, packed = _samples(w(None), H100), _samples(w(177), H100)
    assert 384 / 177 * 0.8 < packed / padded < 384 / 177 * 1.3


def test_fp64_units_decide_which_peak_a_compute_job_gets() -> None:
    def hours(gpu: GpuSpec, units: str) -> float:
        w = Workload(kind="compute", precision="fp64",
                     compute=ComputeSpec(total_tflop=1e5, fp64_units=units))  # type: ignore[arg-type]
        est = estimate(w, gpu, 1)
        assert est.time_to_complete_hours is not None
        return est.time_to_complete_hours

    # H100 has FP64 tensor cores (67 vs 34 TFLOPS); the L40S none (1.4 vector only)
    assert hours(H100, "vector") > 1.5 * hours(H100, "matrix")
    assert hours(L40S, "vector") == hours(L40S, "matrix")


def test_mi300x_is_not_predicted_above_h200_for_llm_serving() -> None:
    w = Workload(kind="inference", precision="fp8", kv_cache_precision="fp8",
                 model=PRESETS["llama-2-70b"].model,
                 inference=InferenceSpec(prompt_tokens=294, output_tokens=292))
    h200 = estimate(w, GPUS["nvidia-h200-sxm-141gb"], 8).tokens_per_s or 0.0
    mi300x = estimate(w, GPUS["amd-mi300x"], 8).tokens_per_s or 0.0
    assert mi300x < h200


def _llama8b_serving(prompt: int, tp: int) -> Any:
    """A :class:`serving.ServingModel` of Llama-3.1-8B bf16 on an H100, 256 output tokens."""
    from service.engine.physics import serving as inf
    from service.engine.physics.estimate import workload_rate

    w = Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                 inference=InferenceSpec(prompt_tokens=prompt, output_tokens=256))
    rate = workload_rate(w, H100)
    assert rate is not None
    return inf.ServingModel(w, H100, rate, tp, 450.0)


def test_small_decode_attention_kernels_reach_less_bandwidth() -> None:
    """Decode attention runs one block per (query head, sequence, 512-token partition): with
    fewer blocks than SMs, the KV read of a layer takes as long as a full wave would; past
    that it grows with the batch."""
    roof = _llama8b_serving(1000, 8)
    blocks = 32 / 8 * 3  # query heads per rank x partitions of a ~1,128-token context
    assert roof.kv_blocks == blocks
    sms = H100.sm_count or 0
    full = roof.ctx * roof.kv_layer  # one sequence's KV bytes in a layer
    # below a wave the time is flat: 1 sequence costs what sms / blocks of them do
    assert roof._kv_read(1) == pytest.approx(full * sms / blocks)
    assert roof._kv_read(5) == pytest.approx(roof._kv_read(1))
    many = math.ceil(sms / blocks) + 5
    assert roof._kv_read(many) == pytest.approx(many * full)


def test_per_sequence_runtime_work_grows_each_iteration_with_the_batch() -> None:
    """Each decoding sequence adds the runtime's per-sequence work (1.1 us) to an iteration,
    on top of its GPU work."""
    from service.engine import constants as c

    with_cost, without = _llama8b_serving(512, 1), _llama8b_serving(512, 1)
    without.per_seq_s = 0.0
    for batch in (1, 64, 256):
        extra = with_cost.timing(batch).decode.total_s - without.timing(batch).decode.total_s
        assert extra == pytest.approx(batch * c.SEQUENCE_STEP_OVERHEAD_S, rel=1e-6)


def _serving(model: str, precision: str, gpu: GpuSpec, tp: int, pp: int = 1) -> Any:
    from service.engine.physics import serving as inf
    from service.engine.physics.estimate import workload_rate

    w = Workload(kind="inference", precision=precision,  # type: ignore[arg-type]
                 model=PRESETS[model].model,
                 inference=InferenceSpec(prompt_tokens=1000, output_tokens=1000))
    rate = workload_rate(w, gpu)
    assert rate is not None
    return inf.ServingModel(w, gpu, rate, tp, 450.0, pp=pp, pp_link_gb_s=25.0)


def test_fp8_tp_all_reduce_moves_16_bit_activations() -> None:
    """vLLM / TensorRT-LLM all-reduce the GEMM's 16-bit output under FP8: the same bytes as
    bf16, not half of them."""
    fp8 = _serving("llama-3.1-70b", "fp8", H100, 4)
    bf16 = _serving("llama-3.1-70b", "bf16", H100, 4)
    assert fp8.act_b == 1.0
    assert fp8._comm(4096.0) == pytest.approx(bf16._comm(4096.0))


def test_busiest_expert_load_is_the_binomial_maximum() -> None:
    """k of E uniform routing: the busiest of Mixtral's 8 experts carries mean + 1.42 sd of a
    Binomial(T, 2/8); the excess over the mean shrinks as 1 / sqrt(T)."""
    ops = _serving("mixtral-8x7b", "fp8", H100, 4).ops
    mean, sd = 4096 * 0.25, math.sqrt(4096 * 0.25 * 0.75)
    assert ops.busiest_expert_rows(4096.0) == pytest.approx(mean + 1.43 * sd, rel=2e-3)
    assert ops.busiest_expert_rows(1.0) <= 1.0
    small, large = (ops.busiest_expert_rows(t) / (t * 0.25) for t in (64.0, 65536.0))
    assert small > 1.25 > 1.02 > large > 1.0


def test_pipeline_throughput_is_bound_by_its_busiest_stage() -> None:
    """PP8 of Llama-3.1-70B: the last stage runs 10 layers and the 128k-vocabulary LM head
    (~1.2 layers of weights), so 8 x its time exceeds the round trip and throughput falls
    below 8 x batch / round trip; PP1 is untouched."""
    from service.engine.physics import serving as inf

    roof = _serving("llama-3.1-70b", "bf16", H100, 1, pp=8)
    t = roof.timing(64)
    assert t.decode is not None
    ideal = 64 / (1000 * t.decode.total_s) * 8
    got = inf.requests_per_s(roof.spec, t, 8, 1)
    assert 0.85 * ideal < got < 0.95 * ideal
    flat = _serving("llama-3.1-70b", "bf16", H100, 1).timing(64)
    assert flat.stage_s == 0.0


def test_a_workload_can_pin_its_tp_pp_split() -> None:
    """The TensorRT-LLM table ran Llama-3.1-70B FP8 as one TP4 replica on 4 x H200; unpinned
    the engine serves 4 x TP1 (the model fits one H200). A count too small for the pin is
    judged on the engine's own splits."""
    spec = InferenceSpec(prompt_tokens=1000, output_tokens=1000)
    model = PRESETS["llama-3.1-70b"].model
    h200 = GPUS["nvidia-h200-sxm-141gb"]

    def run(n: int, tp: int | None, pp: int | None = None) -> Any:
        w = Workload(kind="inference", precision="fp8", kv_cache_precision="fp8", model=model,
                     inference=replace(spec, tensor_parallel=tp, pipeline_parallel=pp))
        return estimate(w, h200, n)

    free, pinned = run(4, None), run(4, 4)
    assert free.parallelism.tensor_parallel == 1 and free.parallelism.data_parallel == 4
    p = pinned.parallelism
    assert (p.tensor_parallel, p.pipeline_parallel, p.data_parallel) == (4, 1, 1)
    assert (pinned.tokens_per_s or 0) < (free.tokens_per_s or 0)
    assert run(8, 4).parallelism.data_parallel == 2
    assert run(2, 4).parallelism.tensor_parallel <= 2


def test_a_pinned_split_is_checked_against_the_model() -> None:
    from service.workloads.schemas import InferenceInput

    model = PRESETS["llama-3.1-70b"].model
    bad = InferenceInput(prompt_tokens=10, output_tokens=10, tensor_parallel=3,
                         pipeline_parallel=200)
    fields = {f for f, _ in bad.errors(model)}
    assert fields == {"inference.tensor_parallel", "inference.pipeline_parallel"}
    assert not InferenceInput(prompt_tokens=10, output_tokens=10, tensor_parallel=8).errors(model)
