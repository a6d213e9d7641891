"""Concurrent answers equal single-threaded answers, byte for byte.

The engine's memo tables live in one EngineCache per app (``app.state.caches.engine``,
service/caches.py), shared by every request thread and holding immutable values only. This starts
one app under uvicorn in this process, computes every answer alone on a cold cache, then empties
the cache and sends the same requests from many threads at once, shuffled and repeated, so the
threads race to fill the same tables: every body must equal its single-threaded bytes.
"""

from __future__ import annotations

import gc
import random
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy.engine import Engine

from service.app.factory import create_app
from service.core.config import Settings
from service.core.snapshots import SnapshotCache
from tests.hardening.live import concurrently, free_port

WORKLOADS: list[dict[str, Any]] = [
    {"kind": "inference", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
     "inference": {"prompt_tokens": 1024, "output_tokens": 256, "max_ttft_ms": 500,
                   "max_tpot_ms": 50}},
    {"kind": "training", "model": {"preset": "llama-2-70b"}, "precision": "bf16",
     "training": {"batch_size": 1024, "seq_len": 4096, "tokens": 2e11}},
    {"kind": "inference", "model": {"preset": "mixtral-8x7b"}, "precision": "fp8",
     "inference": {"prompt_tokens": 2048, "output_tokens": 512, "target_requests_per_s": 5}},
    {"kind": "inference", "model": {"preset": "bert-large"}, "precision": "fp16",
     "inference": {"prompt_tokens": 512, "batch_size": 64, "max_latency_ms": 100}},
    {"kind": "training", "model": {"preset": "resnet-50"}, "precision": "bf16",
     "training": {"batch_size": 256, "samples": 1.28e8}},
    {"kind": "compute", "precision": "fp64",
     "compute": {"total_tflop": 500000, "total_gb_moved": 20000, "memory_gb": 60}},
    {"kind": "inference", "model": {"preset": "llama-3.1-70b"}, "precision": "bf16",
     "weight_precision": "int8", "inference": {"prompt_tokens": 4096, "output_tokens": 256}},
]
OBJECTIVES = ["cost", "time", "energy", "balanced"]
GPUS = ["nvidia-h100-sxm5-80gb", "nvidia-a100-sxm4-80gb", "nvidia-l4", "nvidia-t4"]
THREADS = 8
"""As many as the server admits at once by default: more would be queued, not raced."""
ROUNDS = 3
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _requests() -> list[tuple[str, dict[str, Any]]]:
    reqs: list[tuple[str, dict[str, Any]]] = []
    for i, workload in enumerate(WORKLOADS):
        for objective in OBJECTIVES:
            reqs.append(("/v1/recommendations",
                         {**workload, "objective": objective, "limit": 5 + i % 3}))
        for j, slug in enumerate(GPUS):
            reqs.append(("/v1/estimates",
                         {"workload": workload, "gpu_slug": slug, "gpu_count": 1 + (i + j) % 8}))
    return reqs


@pytest.fixture(scope="module")
def live_app(fresh_url: str, fresh_engine: Engine) -> FastAPI:
    return create_app(Settings(database_url=fresh_url), engine=fresh_engine)


@pytest.fixture(scope="module")
def base(live_app: FastAPI) -> Iterator[str]:
    app = live_app
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    yield url
    server.should_exit = True
    thread.join(timeout=10)


@pytest.mark.slow
def test_concurrent_answers_are_byte_identical_to_single_threaded(
    base: str, live_app: FastAPI, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One clock for every answer, so `generated_at` (and quote staleness) cannot differ.
    monkeypatch.setattr("service.workloads.routes.utcnow", lambda: NOW)
    reqs = _requests()
    engine_cache = live_app.state.caches.engine
    engine_cache.clear()
    with httpx.Client(base_url=base, timeout=120) as client:
        expected = []
        for path, body in reqs:
            r = client.post(path, json=body)
            assert r.status_code == 200, (path, body, r.text[:500])
            expected.append(r.content)
        again = [client.post(path, json=body).content for path, body in reqs]  # warm cache
    assert again == expected, "answers differ between a cold and a warm cache"

    engine_cache.clear()  # the threads race to fill the same tables
    order = [i for _ in range(ROUNDS) for i in range(len(reqs))]
    random.Random(10).shuffle(order)
    shares = [order[t::THREADS] for t in range(THREADS)]

    def worker(t: int) -> list[tuple[int, int, bytes]]:
        out = []
        with httpx.Client(base_url=base, timeout=120) as client:
            for i in shares[t]:
                path, body = reqs[i]
                r = client.post(path, json=body)
                out.append((i, r.status_code, r.content))
        return out

    results = concurrently(THREADS, worker)
    mismatches = []
    for result in results:
        assert not isinstance(result, Exception), result
        for i, status, content in result:
            assert status == 200, (reqs[i], content[:500])
            if content != expected[i]:
                mismatches.append(reqs[i])
    assert sum(len(r) for r in results) == len(order)
    assert mismatches == []
    assert engine_cache.sizes(), "the shared cache was not used"


def test_snapshot_writes_do_not_freeze_the_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshot writes do not call gc.freeze(): freezing on every write would keep in-flight
    garbage forever. Counted on this thread (the writes run here): a server another test left
    warming up in this worker may freeze its own heap meanwhile, which this test is not about
    (the process-wide freeze count made it flaky under the full suite)."""
    here = threading.get_ident()
    calls: list[int] = []
    real = gc.freeze

    def freeze() -> None:
        if threading.get_ident() == here:
            calls.append(1)
        real()

    monkeypatch.setattr(gc, "freeze", freeze)
    cache: SnapshotCache[int, tuple[int, ...]] = SnapshotCache(slots=2)
    for i in range(5):
        cache.put(i, tuple(range(i)))
    assert calls == []
    assert cache.get(4) == (0, 1, 2, 3) and cache.get(0) is None
