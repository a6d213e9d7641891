"""The throughput shortcuts (shared layer operators, memoized network GPUs, kept task text)
give the same results as what they replace.

* Layer operators and network-carrying GPU specs are shared through the engine cache (same
  object for the same key; a different device or rate gets its own).
* SkyPilot task text is kept per task content.
"""

from __future__ import annotations

import dataclasses

from service.engine.cache import EngineCache, Memo
from service.engine.choice import cost as co
from service.engine.physics import kernels
from service.engine.physics import parallelism as par
from service.engine.physics import transformer_ops as tops
from service.engine.physics.performance import peak_rate
from service.engine.recommend_types import Offer
from service.engine.types import TransformerModel
from tests.unit.catalog_data import load_gpus

MODEL = TransformerModel(name="m", params=8.0e9, layers=32, hidden_size=4096,
                         attention_heads=32, kv_heads=8, intermediate_size=14336,
                         vocab_size=128256)


def test_layer_ops_shared_per_key() -> None:
    gpus = load_gpus()
    memo = Memo(EngineCache())
    rate = peak_rate(gpus[0], "bf16")
    other = peak_rate(gpus[1], "bf16")
    assert rate is not None and other is not None
    dev, dev2 = kernels.device(gpus[0], rate), kernels.device(gpus[1], other)
    first = tops.layer_ops(MODEL, dev, 2, 2.0, 2.0, memo)
    assert tops.layer_ops(MODEL, dev, 2, 2.0, 2.0, memo) is first
    assert tops.layer_ops(MODEL, dev, 4, 2.0, 2.0, memo) is not first
    assert tops.layer_ops(MODEL, dev2, 2, 2.0, 2.0, memo) is not first
    assert tops.layer_ops(MODEL, dev, 2, 1.0, 2.0, memo) is not first
    fresh = tops.layer_ops(MODEL, dev, 2, 2.0, 2.0)
    assert fresh is not first
    assert fresh.forward(300.0, 1e9, 1e6) == first.forward(300.0, 1e9, 1e6)


def test_network_gpu_memoized_by_rate() -> None:
    gpu = next(g for g in load_gpus() if g.max_gpus_per_node == 8)
    offer = Offer(quote_id=1, gpu_slug=gpu.slug, provider="aws", region="us-east-1",
                  instance_type="p5.48xlarge", gpu_count=8, pricing="on_demand",
                  price_usd_per_hour=98.0, network_gbps=3200.0, fabric="efa", multi_node=True)
    memo = Memo(EngineCache())
    a = co.network_gpu(gpu, offer, 16, memo)
    assert a.network_gb_s_per_gpu == 3200.0 / 8 / 8
    assert co.network_gpu(gpu, offer, 32, memo) is a
    assert co.network_gpu(gpu, offer, 16) == a
    assert co.network_gpu(gpu, offer, 8, memo) is gpu  # one node: no network
    slower = dataclasses.replace(offer, quote_id=2, network_gbps=400.0)
    assert co.network_gpu(gpu, slower, 16, memo).network_gb_s_per_gpu == 400.0 / 8 / 8


def test_skypilot_text_kept_per_task_content() -> None:
    from service.engine.choice import provision as pv
    from service.engine.types import InferenceSpec, Workload

    gpu = next(g for g in load_gpus() if g.max_gpus_per_node == 8)
    offer = Offer(quote_id=1, gpu_slug=gpu.slug, provider="aws", region="us-east-1",
                  instance_type="p5.48xlarge", gpu_count=8, pricing="on_demand",
                  price_usd_per_hour=98.0, network_gbps=3200.0, fabric="efa", multi_node=True)
    serve = Workload(kind="inference", precision="bf16", model=MODEL,
                     inference=InferenceSpec(prompt_tokens=512, output_tokens=128))
    memo = Memo(EngineCache())
    names = {gpu.slug: "H100"}
    for replicas in (1, 2, 1):
        for spot in (False, True):
            o = dataclasses.replace(offer, pricing="spot" if spot else "on_demand")
            plain = pv.skypilot_task(serve, gpu, o, 1, replicas, False, names)
            kept = pv.skypilot_task(serve, gpu, o, 1, replicas, False, names, memo)
            assert kept == plain
            assert plain[0] is not None and f"replicas: {replicas}" in plain[0]
            assert ("use_spot: true" in plain[0]) is spot
    assert memo.shared is not None and memo.shared.sizes()["skypilot_yaml"] == 4


def test_replica_groups_beyond_the_cap_get_a_note_not_manifests() -> None:
    """A multi-node serving answer writes a StatefulSet + headless Service per replica group,
    up to MAX_REPLICA_GROUPS; beyond it none (an unbounded answer was 393 MB)."""
    from service.engine.choice import provision as pv
    from service.engine.physics.estimate import estimate
    from service.engine.types import InferenceSpec, Workload
    from service.presets.catalog import PRESETS

    gpu = next(g for g in load_gpus() if g.max_gpus_per_node == 8 and g.memory_gb <= 80)
    big = PRESETS["llama-3.1-405b"].model
    serve = Workload(kind="inference", precision="bf16", model=big,
                     inference=InferenceSpec(prompt_tokens=512, output_tokens=128))
    est = estimate(serve, gpu, 16)
    assert est.parallelism.nodes == 2
    at_cap = pv.provision(serve, gpu, est, None, instances_per_replica=2,
                          replicas=pv.MAX_REPLICA_GROUPS)
    assert len(at_cap.kubernetes) == 2 * pv.MAX_REPLICA_GROUPS
    over = pv.provision(serve, gpu, est, None, instances_per_replica=2,
                        replicas=pv.MAX_REPLICA_GROUPS + 1)
    assert over.kubernetes == ()
    assert over.kubernetes_note is not None
    assert f"{pv.MAX_REPLICA_GROUPS + 1} replica groups of 2 nodes" in over.kubernetes_note


def test_full_tables_evict_the_oldest_insertions() -> None:
    cache = EngineCache(max_entries=100)
    for i in range(350):
        assert cache.get("t", i, lambda i=i: i * 2) == i * 2  # type: ignore[misc]
    assert cache.sizes() == {"t": 100}
    calls: list[int] = []
    def compute(i: int) -> int:
        calls.append(i)
        return i * 2

    for i in (250, 349, 249):  # the oldest kept and the newest: hits; then an evicted one
        cache.get("t", i, lambda i=i: compute(i))  # type: ignore[misc]
    assert calls == [249]
    assert cache.sizes() == {"t": 100}


def test_training_tables_shared_by_model_not_workload() -> None:
    """Two transformer training jobs of one model and precision but another batch, token
    count reuse every training GEMM table of the first (keys
    hold the model and device, never a workload), and their rankings are the ones a fresh
    cache gives. Exhaustive rankings, so both
    evaluate every GPU type (branch and bound may evaluate other ones for another job)."""
    from service.engine.choice.ranking import recommend
    from service.engine.types import Workload
    from service.workloads.schemas import WorkloadSpec
    from tests.unit.catalog_data import load_offers

    def job(batch: int, tokens: float, seq: int) -> Workload:
        return WorkloadSpec.model_validate({
            "kind": "training", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
            "training": {"batch_size": batch, "seq_len": seq, "tokens": tokens},
        }).to_engine()

    gpus, offers, cache = load_gpus(), load_offers(), EngineCache()
    recommend(job(256, 1e10, 4096), gpus, offers, cache=cache, exhaustive=True)
    entries = cache.sizes()["training_tables"]
    assert entries > 5
    second = job(512, 3e11, 4096)
    got = recommend(second, gpus, offers, cache=cache, exhaustive=True)
    assert cache.sizes()["training_tables"] == entries
    assert got == recommend(second, gpus, offers, cache=EngineCache(), exhaustive=True)
    keys = list(cache._tables["training_tables"])
    assert not any(isinstance(part, Workload) for key in keys for part in key)


def test_cnn_micro_steps_shared_by_shape_not_workload() -> None:
    """CNN jobs keep the Python walk: two of one model, batch and precision but another
    sample count reuse every micro-step time of the first (keys hold the step's
    shape, never a workload), and their rankings are the ones a fresh cache gives; another
    precision adds its own entries. Exhaustive rankings, as above."""
    from service.engine.choice.ranking import recommend
    from service.engine.types import Workload
    from service.workloads.schemas import WorkloadSpec
    from tests.unit.catalog_data import load_offers

    def job(batch: int, samples: float, precision: str) -> Workload:
        return WorkloadSpec.model_validate({
            "kind": "training", "model": {"preset": "resnet-50"}, "precision": precision,
            "training": {"batch_size": batch, "samples": samples},
        }).to_engine()

    gpus, offers, cache = load_gpus(), load_offers(), EngineCache()
    recommend(job(256, 1e8, "bf16"), gpus, offers, cache=cache, exhaustive=True)
    entries = cache.sizes()["training_micro_step"]
    assert entries > 20
    second = job(256, 3e9, "bf16")
    got = recommend(second, gpus, offers, cache=cache, exhaustive=True)
    assert cache.sizes()["training_micro_step"] == entries
    assert got == recommend(second, gpus, offers, cache=EngineCache(), exhaustive=True)
    keys = list(cache._tables["training_micro_step"])
    assert not any(isinstance(part, Workload) for key in keys for part in key[0])
    recommend(job(256, 1e8, "fp32"), gpus, offers, cache=cache)
    assert cache.sizes()["training_micro_step"] > entries * 1.5


def test_layouts_kept_across_calls_are_the_records_made_afresh() -> None:
    """parallelism.layout keeps make_layout's record in the shared cache: the same record for
    every GPU, count, split and sharding asked, and the object itself on a second ask, in a
    later call's memo too."""
    cache = EngineCache()
    asked = [(g, n, tp, pp, sh) for g in load_gpus() for n in (1, 2, 8, 16, 64)
             for tp, pp in ((1, 1), (2, 1), (2, 2)) for sh in ("none", "zero3")
             if tp * pp <= n]
    first = {a: par.layout(*a, Memo(cache)) for a in asked}
    for a in asked:
        assert first[a] == par.make_layout(*a), a
        assert par.layout(*a, Memo(cache)) is first[a]
    assert cache.sizes()["layout"] == len(set(asked))
