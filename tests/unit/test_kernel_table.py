"""The throughput shortcuts of issue 14 give the same floats as the computations they replace.

* :meth:`GemmShape.time` looks a GEMM's tile arithmetic up per row block (ceil(m / 64)) instead
  of scanning the tiles: equal, to the bit, to the scan for every GPU of the catalog, several
  layer shapes, integer and fractional row counts, MoE groups, and block boundaries.
* With tile heights that are not one height times powers of two the table is not used.
* Layer operators and network-carrying GPU specs are shared through the engine cache (same
  object for the same key; a different device or rate gets its own).
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from service.engine import constants as c
from service.engine.cache import EngineCache, Memo
from service.engine.choice import cost as co
from service.engine.physics import kernels
from service.engine.physics import transformer_ops as tops
from service.engine.physics.performance import peak_rate
from service.engine.recommend_types import Offer
from service.engine.types import TransformerModel
from tests.unit.catalog_data import load_gpus


def _scan(shape: kernels.GemmShape, m: float, groups: float) -> tuple[float, float]:
    """The scan the table replaces (the pre-issue-14 body of GemmShape.time)."""
    memory = (shape.weight_s + m * shape.row_s) * groups
    enough = memory / shape.per_flop
    return shape._scan(m, groups, enough) * shape.per_flop, memory


def _shapes() -> list[kernels.GemmShape]:
    out = []
    for gpu in load_gpus():
        for precision in ("bf16", "fp8", "fp32"):
            rate = peak_rate(gpu, precision)  # type: ignore[arg-type]
            if rate is None:
                continue
            dev = kernels.device(gpu, rate)
            for n, k in ((4096, 4096), (1536, 8192), (128256, 4096), (14336, 512), (96, 300)):
                out.append(kernels.GemmShape(dev, n, k, in_bytes=2.0, weight_bytes=2.0,
                                             out_bytes=2.0))
    return out


def test_row_block_table_equals_the_tile_scan() -> None:
    rng = random.Random(14)
    shapes = _shapes()
    assert len(shapes) > 150
    rows = [1.0, 63.0, 64.0, 64.000001, 65.0, 127.5, 128.0, 129.0, 255.9, 256.0, 257.0, 8192.0]
    rows += [rng.uniform(1.0, 40_000.0) for _ in range(40)]
    rows += [float(rng.randint(1, 5_000)) for _ in range(40)]
    checked = 0
    for shape in shapes:
        for m in rows:
            for groups in (1.0, 2.0, 7.5, 64.0):
                # twice: the first fills the table, the second reads it
                assert shape.time(m, groups) == _scan(shape, m, groups), (m, groups)
                assert shape.time(m, groups) == _scan(shape, m, groups), (m, groups)
                checked += 1
    assert checked > 50_000
    # below one row the table is not used; the scan's answer is kept
    shape = shapes[0]
    assert shape.time(0.25) == _scan(shape, 0.25, 1.0)
    assert shape.time(0.0) == (0.0, 0.0)


def test_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "TILE_TABLE_MAX_ENTRIES", 5)
    shape = _shapes()[0]
    for m in range(1, 2000, 64):
        assert shape.time(float(m)) == _scan(shape, float(m), 1.0)
    assert len(shape._works) == 5


def test_tiles_not_powers_of_two_apart_use_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(c, "GEMM_TILES", ((128, 128), (192, 128), (64, 128)))
    assert kernels._tile_ratios() is None
    shape = _shapes()[0]
    assert shape._ratios is None
    for m in (1.0, 100.0, 191.0, 192.0, 193.0, 5000.0):
        assert shape.time(m) == _scan(shape, m, 1.0)
    assert not shape._works
    monkeypatch.setattr(c, "GEMM_TILES", ((96, 128), (192, 128), (384, 128)))
    assert kernels._tile_ratios() == (96, (1, 2, 4))


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
