"""Hand-worked memory figures (sources in comments)."""

from __future__ import annotations

import pytest

from service.engine import estimate
from service.engine.physics import memory
from service.engine.types import (
    InferenceSpec,
    Precision,
    TrainingSpec,
    TransformerModel,
    Workload,
)
from service.presets import PRESETS
from tests.unit.gpus import A100_SXM, H100_SXM

LLAMA2_7B = PRESETS["llama-2-7b"].model
LLAMA2_70B = PRESETS["llama-2-70b"].model
assert isinstance(LLAMA2_7B, TransformerModel) and isinstance(LLAMA2_70B, TransformerModel)


def test_llama2_7b_fp16_weights_13_5_gb() -> None:
    # 6.74e9 params x 2 B (HF config / Llama 2 paper) = 13.48 GB
    w = Workload(
        kind="inference",
        precision="fp16",
        model=LLAMA2_7B,
        inference=InferenceSpec(prompt_tokens=1, output_tokens=1, batch_size=1),
    )
    est = estimate(w, H100_SXM, 1)
    assert est.memory.weights == pytest.approx(13.48, rel=1e-3)


def test_kv_cache_per_token_llama2_7b_half_mib() -> None:
    # 2 (K,V) x 32 layers x 32 kv heads x 128 head dim x 2 B = 524,288 B
    assert memory.kv_bytes_per_token(LLAMA2_7B, "fp16") == 2 * 32 * 32 * 128 * 2 == 2**19


def test_kv_cache_per_token_llama2_70b_gqa() -> None:
    # GQA g=8: 2 x 80 x 8 x 128 x 2 = 327,680 B (not 8x that, the gpu_poor bug)
    assert memory.kv_bytes_per_token(LLAMA2_70B, "fp16") == 327_680
    assert memory.kv_bytes_per_token(LLAMA2_70B, "fp8") == 163_840


def test_mixed_precision_adam_16_bytes_per_param() -> None:
    # ZeRO paper §3: 2 (bf16 weights) + 2 (grads) + 4 (fp32 master) + 8 (moments) = 16
    states = memory.training_state_bytes("bf16", "adamw")
    assert (states.weights, states.gradients, states.optimizer) == (2, 2, 12)
    assert states.total == 16
    assert memory.training_state_bytes("fp32", "adamw").total == 16  # 4 + 4 + 8
    assert memory.training_state_bytes("bf16", "sgd").total == 12  # 2 + 2 + 4 + 4


def test_zero3_over_8_gpus_divides_states_by_8() -> None:
    assert memory.shard_divisors("zero3", 8) == (8, 8, 8)
    assert memory.shard_divisors("zero2", 8) == (1, 8, 8)
    assert memory.shard_divisors("zero1", 8) == (1, 1, 8)
    assert memory.shard_divisors("none", 8) == (1, 1, 1)
    w = Workload(
        kind="training",
        precision="bf16",
        model=LLAMA2_7B,
        training=TrainingSpec(batch_size=8, seq_len=2048, tokens=1e9, sharding="zero3"),
    )
    one = estimate(w, A100_SXM, 1)
    eight = estimate(w, A100_SXM, 8)
    assert eight.memory.optimizer_states == pytest.approx(one.memory.optimizer_states / 8)
    assert eight.memory.gradients == pytest.approx(one.memory.gradients / 8)
    # 6.74e9 x 12 B / 8 = 10.1 GB of optimizer state per GPU
    assert eight.memory.optimizer_states == pytest.approx(6.74e9 * 12 / 8 / 1e9)


def test_activations_korthikanti_eq1_for_a_gelu_mlp() -> None:
    # GPT-J 6B (GELU MLP, f = 4h): s*b*h*(34 + 5as/h) B per layer at 16-bit, no flash
    # attention, t=1 (+ fp32 logits), exactly Korthikanti et al. 2022 eq. 1
    gptj = PRESETS["gpt-j-6b"].model
    assert isinstance(gptj, TransformerModel)
    s, b = 2048, 1
    h, a, L, V = 4096, 16, 28, 50400
    expected = L * s * b * h * (34 + 5 * a * s / h) + s * b * V * 4
    got = memory.transformer_activation_bytes(
        gptj, s, b, 1, flash_attention=False, checkpointing=False, elem_bytes=2.0,
        lm_head_fraction=1.0,
    )
    assert got == pytest.approx(expected, rel=1e-12)


def test_activations_gated_mlp_llama2_7b() -> None:
    # Llama 2 7B, SwiGLU f = 11008: per token per layer at 16-bit, attention/norms 15h
    # (Korthikanti's 34h less its 19h GELU MLP) + MLP 2h input + 2f gate + 2f up + 2f SiLU
    # output + 2f product + h dropout mask = 15h + 3h + 8f = 161,792 B (the GELU rule gave
    # 34h = 139,264 B)
    s, b = 2048, 1
    h, f, a, L, V = 4096, 11008, 32, 32, 32000
    per_token = 15 * h + 3 * h + 8 * f
    assert per_token == 161_792
    assert memory.layer_activation_bytes_per_token(LLAMA2_7B) == per_token
    expected = L * s * b * (per_token + 5 * a * s) + s * b * V * 4
    got = memory.transformer_activation_bytes(
        LLAMA2_7B, s, b, 1, flash_attention=False, checkpointing=False, elem_bytes=2.0,
        lm_head_fraction=1.0,
    )
    assert got == pytest.approx(expected, rel=1e-12)
    # flash attention + t = 2: the per-token term alone, halved
    flash_tp2 = memory.transformer_activation_bytes(
        LLAMA2_7B, s, b, 2, flash_attention=True, checkpointing=False, elem_bytes=2.0,
        lm_head_fraction=0.0,
    )
    assert flash_tp2 == pytest.approx(L * s * b * per_token / 2, rel=1e-12)


def test_activations_moe_keeps_top_k_gated_mlps() -> None:
    # Mixtral 8x7B (top-2 SwiGLU experts, f = 14336): 15h + 2 x (3h + 8f) per token
    mixtral = PRESETS["mixtral-8x7b"].model
    assert isinstance(mixtral, TransformerModel)
    h, f = 4096, 14336
    assert memory.layer_activation_bytes_per_token(mixtral) == 15 * h + 2 * (3 * h + 8 * f)


def test_activations_checkpointing_and_masked_lm_head() -> None:
    s, b = 2048, 1
    got = memory.transformer_activation_bytes(
        LLAMA2_7B, s, b, 1, flash_attention=False, checkpointing=False, elem_bytes=2.0,
        lm_head_fraction=1.0,
    )
    h, L, V = 4096, 32, 32000
    flash = memory.transformer_activation_bytes(
        LLAMA2_7B, s, b, 1, flash_attention=True, checkpointing=False, elem_bytes=2.0,
        lm_head_fraction=1.0,
    )
    ckpt = memory.transformer_activation_bytes(
        LLAMA2_7B, s, b, 1, flash_attention=True, checkpointing=True, elem_bytes=2.0,
        lm_head_fraction=1.0,
    )
    assert ckpt < flash < got
    # full checkpointing: every layer's 2sbh input + one layer's working set + the logits
    per_layer = s * b * memory.layer_activation_bytes_per_token(LLAMA2_7B)
    assert ckpt == pytest.approx(L * 2 * s * b * h + per_layer + s * b * V * 4, rel=1e-12)
    # a masked-LM head on 15% of the tokens keeps 15% of the fp32 logits
    masked = memory.transformer_activation_bytes(
        LLAMA2_7B, s, b, 1, flash_attention=False, checkpointing=False, elem_bytes=2.0,
        lm_head_fraction=0.15,
    )
    assert got - masked == pytest.approx(0.85 * s * b * V * 4)


def test_int4_weights_half_byte_plus_scales() -> None:
    # int4: an fp16 scale per group of 128; int8: a scale per output channel, none counted
    assert memory.weight_bytes_per_param("fp16", "int4") == pytest.approx(0.5 * 1.03)
    assert memory.weight_bytes_per_param("fp16", "int8") == 1.0


def test_int4_and_int8_compute_store_quantized_weights() -> None:
    # int4 compute without weight_precision runs at the int8 rate on int4 weights:
    # Llama 2 7B, 6.74e9 x 0.5 B x 1.03 (group scales) = 3.47 GB, as with weight_precision
    # int4 (not 6.74 GB, the int8 rate's 1 B/param); int8 compute: 6.74e9 x 1 B = 6.74 GB
    def weights(precision: Precision, weight_precision: Precision | None) -> float:
        w = Workload(
            kind="inference", precision=precision, weight_precision=weight_precision,
            model=LLAMA2_7B,
            inference=InferenceSpec(prompt_tokens=1, output_tokens=1, batch_size=1),
        )
        return estimate(w, H100_SXM, 1).memory.weights

    assert weights("int4", None) == pytest.approx(6.74 * 0.5 * 1.03, rel=1e-3)
    assert weights("int4", None) == weights("fp16", "int4")
    assert weights("int8", None) == pytest.approx(6.74, rel=1e-3)
    assert weights("int8", None) == weights("fp16", "int8")
    assert memory.weight_bytes_per_param("int8", None) == 1.0
    assert memory.weight_bytes_per_param("bf16", None) == 2.0


def test_training_needs_far_more_memory_than_inference() -> None:
    # Seed claim: training keeps gradients, optimizer states and activations
    train = Workload(
        kind="training",
        precision="bf16",
        model=LLAMA2_7B,
        training=TrainingSpec(batch_size=1, seq_len=2048, tokens=1e9, sharding="none"),
    )
    infer = Workload(
        kind="inference",
        precision="bf16",
        model=LLAMA2_7B,
        inference=InferenceSpec(prompt_tokens=1024, output_tokens=1024, batch_size=1),
    )
    t = estimate(train, H100_SXM, 1)
    i = estimate(infer, H100_SXM, 1)
    assert t.memory_per_gpu_gb > 5 * i.memory_per_gpu_gb
    assert not t.fits and i.fits


def test_mistral_sliding_window_caps_kv_cache() -> None:
    # Mistral 7B: sliding_window 4096 (HF config); KV per token 2*32*8*128*2 = 131,072 B,
    # so 16k context holds 4096 tokens = 0.537 GB per sequence, not 2.1 GB
    mistral = PRESETS["mistral-7b"].model
    assert isinstance(mistral, TransformerModel) and mistral.sliding_window == 4096
    w = Workload(
        kind="inference",
        precision="fp16",
        model=mistral,
        inference=InferenceSpec(prompt_tokens=15_384, output_tokens=1_000, batch_size=4),
    )
    est = estimate(w, H100_SXM, 1)
    assert est.memory.kv_cache == pytest.approx(4 * 4096 * 131_072 / 1e9, rel=1e-6)
    assert memory.kv_tokens(mistral, 2_000) == 2_000
    assert memory.causal_attention_pairs(mistral, 8192) == 4096**2 / 2 + 4096 * 4096


def test_serving_activations_are_one_scheduler_budget_not_batch_x_prompt() -> None:
    # continuous batching: the engine reserves activations for max_num_batched_tokens tokens
    # per iteration (vLLM default 8192 on H100-class GPUs), whatever the batch:
    # 8192 x 4096 x 34 B = 1.14 GB for Llama 3.1 8B at 16-bit, not batch x 1024 prompt tokens
    # (one layer's forward working set, at the 34 B per token x hidden scale of training's
    # stored activations whatever the MLP: nothing is kept for a backward pass)
    from service.engine import constants as c

    model = PRESETS["llama-3.1-8b"].model
    assert isinstance(model, TransformerModel)
    w = Workload(
        kind="inference",
        precision="bf16",
        model=model,
        inference=InferenceSpec(prompt_tokens=1024, output_tokens=256),
    )
    expected = c.SCHEDULED_TOKENS_PER_ITERATION * model.hidden_size * 34 / 1e9
    big = estimate(w, H100_SXM, 1)
    assert big.batch_size is not None and big.batch_size > 300
    assert big.memory.activations == pytest.approx(expected)
    fixed = estimate(
        Workload(
            kind="inference",
            precision="bf16",
            model=model,
            inference=InferenceSpec(prompt_tokens=1024, output_tokens=256, batch_size=4),
        ),
        H100_SXM,
        1,
    )
    assert fixed.memory.activations == pytest.approx(expected)
    # the KV cache, not activations, bounds the batch: 1280 tokens x 131,072 B per sequence
    # (the runtime may settle below that bound where tile waves make a smaller batch faster)
    per_seq = 1280 * memory.kv_bytes_per_token(model, "bf16") / 1e9
    usable = 80 * (1 - c.MEMORY_RESERVE_FRACTION)
    room = usable - big.memory.weights - big.memory.overhead - expected
    assert big.batch_size <= int(room // per_seq)


def test_encoder_activations_still_scale_with_the_batch() -> None:
    bert = PRESETS["bert-large"].model
    w = Workload(
        kind="inference",
        precision="fp16",
        model=bert,
        inference=InferenceSpec(prompt_tokens=384, batch_size=8),
    )
    one = Workload(
        kind="inference",
        precision="fp16",
        model=bert,
        inference=InferenceSpec(prompt_tokens=384, batch_size=1),
    )
    a8 = estimate(w, H100_SXM, 1).memory.activations
    a1 = estimate(one, H100_SXM, 1).memory.activations
    assert a8 == pytest.approx(8 * a1)


def test_engine_cache_is_bounded_clearable_and_shared_only_through_it() -> None:
    import threading

    from service.engine.cache import EngineCache, Memo

    cache = EngineCache(max_entries=4, table_limits={"small": 2})
    calls: list[int] = []

    def value(i: int) -> int:
        calls.append(i)
        return i * i

    for i in range(10):
        assert cache.get("t", i, lambda i=i: value(i)) == i * i
        cache.get("small", i, lambda i=i: value(i))
    assert cache.sizes() == {"t": 4, "small": 2}
    assert cache.get("t", 9, lambda: -1) == 81  # hit: not recomputed
    assert cache.get("t", 0, lambda: -1) == -1  # evicted (oldest first)
    cache.clear()
    assert cache.sizes() == {}
    # concurrent readers and writers keep the bound
    def worker(offset: int) -> None:
        for i in range(200):
            cache.get("t", (offset, i), lambda i=i: i)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.sizes()["t"] == 4
    # a memo without a shared cache keeps nothing beyond itself
    memo = Memo()
    assert memo.get("t", 1, lambda: 5) == 5 and memo.get("t", 1, lambda: 6) == 5
    assert Memo().get("t", 1, lambda: 6) == 6


def test_no_module_global_caches_in_the_engine() -> None:
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "service" / "engine"
    text = "\n".join(p.read_text() for p in root.rglob("*.py"))
    assert "lru_cache" not in text and "functools.cache" not in text


@pytest.mark.parametrize("preset", ["llama-2-7b", "llama-2-70b", "resnet-50"])
@pytest.mark.parametrize("wanted", ["auto", "none", "zero3"])
def test_least_gb_is_the_least_split_exactly(preset: str, wanted: str) -> None:
    """training_splits.least_gb (the memory-fit check every GPU type of a catalog gets) equals
    the smallest fixed + activation figure of the split records the estimate uses, to the
    last bit, on every count: the two share one computation of the states."""
    from service.engine.physics import training_splits as ts

    w = Workload(kind="training", precision="bf16", model=PRESETS[preset].model,
                 training=TrainingSpec(batch_size=64, seq_len=4096, tokens=1e9,
                                       sharding=wanted))  # type: ignore[arg-type]
    for gpu in (A100_SXM, H100_SXM):
        for count in (1, 2, 8, 16, 64):
            records = ts.splits(w, gpu, count, "bf16", False, wanted)  # type: ignore[arg-type]
            least = ts.least_gb(w, gpu, count, "bf16", False, wanted)  # type: ignore[arg-type]
            assert least == min(o.fixed_gb + o.act_gb for o in records), (gpu.slug, count)
            assert [o.tp for o in records] == sorted(o.tp for o in records)


def test_gpu_memory_is_its_binary_size_less_ecc_on_datacenter_gddr() -> None:
    """A GPU's memory size is binary (nvidia-smi: A100 80GB 81,920 MiB, RTX A6000 49,140
    MiB of 48 GiB); NVIDIA's datacenter PCIe GDDR boards ship with ECC on, which keeps 1/16
    (L4 23,034 MiB, T4 15,360 MiB); a Jetson's memory, shared with its CPU, keeps the
    decimal reading."""
    from tests.unit.catalog_data import gpus_by_slug

    gpus = gpus_by_slug()
    gib = 2.0**30

    def mib(slug: str) -> float:
        return memory.capacity_bytes(gpus[slug]) / 2.0**20

    assert mib("nvidia-a100-sxm4-80gb") == 81920
    assert mib("nvidia-h100-sxm5-80gb") == 81920
    assert mib("nvidia-rtx-a6000") == 49152 and mib("nvidia-rtx-4090") == 24576
    assert mib("nvidia-l4") == 23040 and mib("nvidia-t4") == 15360
    assert mib("nvidia-l40s") == 46080 and mib("nvidia-a10g") == 23040
    assert not memory.ecc_reserved(gpus["nvidia-rtx-6000-ada"])
    assert memory.capacity_bytes(gpus["nvidia-jetson-orin-nx-16gb"]) == 16e9
    assert memory.usable_memory_bytes(gpus["nvidia-h100-sxm5-80gb"]) == pytest.approx(
        80 * gib * 0.95)
    # the estimate reports the capacity in the decimal GB its needs are counted in
    w = Workload(kind="inference", precision="bf16", model=LLAMA2_7B,
                 inference=InferenceSpec(prompt_tokens=1, output_tokens=1, batch_size=1))
    assert estimate(w, gpus["nvidia-h100-sxm5-80gb"], 1).memory_available_gb == pytest.approx(
        85.899, rel=1e-4)
