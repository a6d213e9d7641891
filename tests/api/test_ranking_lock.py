"""A worker process computes one ranking at a time (``AppCaches.ranking_lock``): the engine is
pure Python under the GIL, so two at once only interleave, each losing its caches' warmth; a
request that waited finds the ranking a twin request made meanwhile."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from service.workloads import service as workload_service
from service.workloads.caches import AppCaches
from tests.differential import canonical_answer, seeded_catalog

BODY = {"kind": "inference", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
        "objective": "cost",
        "inference": {"prompt_tokens": 1024, "output_tokens": 256, "max_ttft_ms": 500,
                      "target_requests_per_s": 5}}


def test_rankings_run_one_at_a_time_and_twins_share_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine, settings = seeded_catalog(tmp_path)
    caches = AppCaches()
    real = workload_service.recommend
    guard = threading.Lock()
    active, peak, limits = [0], [0], []

    def counted(*args: Any, **kwargs: Any) -> Any:
        with guard:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            limits.append(kwargs["limit"])
        try:
            time.sleep(0.05)  # long enough for the other threads to arrive meanwhile
            return real(*args, **kwargs)
        finally:
            with guard:
                active[0] -= 1

    monkeypatch.setattr(workload_service, "recommend", counted)
    bodies = [{**BODY, "limit": n} for n in (3, 4, 5, 3)]  # the last one a twin of the first
    try:
        with ThreadPoolExecutor(len(bodies)) as pool:
            answers = list(pool.map(
                lambda body: canonical_answer(engine, settings, body, caches=caches), bodies))
    finally:
        engine.dispose()
    assert all("recommendations" in a for a in answers)
    assert peak[0] == 1, "two rankings ran at once in one app"
    assert sorted(limits) == [3, 4, 5], "the twin request ranked again instead of waiting"
    assert answers[3] == answers[0]
