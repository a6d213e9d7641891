"""Structured JSON access logs and Prometheus metrics."""

from __future__ import annotations

import gc
import io
import json
import logging
import re
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.http.observability import JsonFormatter

WORKLOAD = {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
            "inference": {"prompt_tokens": 512, "output_tokens": 128}}


@pytest.fixture
def access_log() -> Iterator[io.StringIO]:
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("gpu_advisor.access")
    logger.addHandler(handler)
    yield buf
    logger.removeHandler(handler)


def _lines(buf: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]


def test_access_log_is_one_json_line_per_request(client: TestClient,
                                                 access_log: io.StringIO) -> None:
    ok = client.get("/v1/gpus/nvidia-h100-sxm5-80gb", headers={"X-Request-ID": "trace-1"})
    missing = client.get("/v1/gpus/no-such-gpu")
    lines = _lines(access_log)
    assert len(lines) == 2
    first, second = lines
    assert first["request_id"] == "trace-1" == ok.headers["x-request-id"]
    assert first["route"] == "/v1/gpus/{slug}"  # the template, not the path
    assert first["path"] == "/v1/gpus/nvidia-h100-sxm5-80gb"
    assert first["method"] == "GET" and first["status"] == 200
    assert isinstance(first["duration_ms"], float) and first["duration_ms"] >= 0
    assert first["level"] == "info" and first["logger"] == "gpu_advisor.access"
    assert second["status"] == 404 and second["request_id"] == missing.headers["x-request-id"]


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name} {labels}")


def test_metrics_count_requests_and_latency_per_route(client: TestClient) -> None:
    for _ in range(3):
        assert client.get("/v1/gpus").status_code == 200
    client.get("/v1/gpus", params={"limit": 0})  # 422
    assert client.post("/v1/recommendations", json=WORKLOAD).status_code == 200
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=")  # exposition format
    text = r.text
    assert "# TYPE gpu_advisor_http_requests_total counter" in text
    assert "# TYPE gpu_advisor_http_request_duration_seconds histogram" in text
    assert _sample(text, "gpu_advisor_http_requests_total",
                   route="/v1/gpus", method="GET", status="200") == 3
    assert _sample(text, "gpu_advisor_http_requests_total",
                   route="/v1/gpus", method="GET", status="422") == 1
    assert _sample(text, "gpu_advisor_http_request_duration_seconds_count",
                   route="/v1/gpus", method="GET") == 4
    assert _sample(text, "gpu_advisor_http_request_duration_seconds_bucket",
                   route="/v1/gpus", method="GET", le="+Inf") == 4
    assert _sample(text, "gpu_advisor_http_request_duration_seconds_count",
                   route="/v1/recommendations", method="POST") == 1
    # The engine's own time, apart from HTTP: one observation per recommendation.
    assert "# TYPE gpu_advisor_recommendation_compute_seconds histogram" in text
    assert _sample(text, "gpu_advisor_recommendation_compute_seconds_count") == 1
    assert _sample(text, "gpu_advisor_recommendation_compute_seconds_sum") > 0
    # Unmatched paths are one label value, so random URLs cannot blow up the cardinality.
    client.get("/random/a")
    client.get("/random/b")
    text = client.get("/metrics").text
    assert _sample(text, "gpu_advisor_http_requests_total",
                   route="unmatched", method="GET", status="404") == 2
    assert not re.search(r'route="/random', text)


def test_metrics_report_the_engine_cache_and_it_keeps_no_workload_tables(
        client: TestClient) -> None:
    """After two different recommendations the shared engine cache holds only the tables
    keyed by GPUs, model shapes, offers and provisioning tasks (SHARED_TABLES), never one
    keyed by a whole workload, and /metrics reports each table's entries and bytes."""
    from service.engine.cache import SHARED_TABLES

    engine_cache = client.app.state.caches.engine  # type: ignore[attr-defined]
    engine_cache.clear()
    other = {**WORKLOAD, "inference": {**WORKLOAD["inference"], "prompt_tokens": 1234}}
    for body in (WORKLOAD, other):
        assert client.post("/v1/recommendations", json=body).status_code == 200
    tables = engine_cache.stats()
    assert set(tables) <= SHARED_TABLES, set(tables) - SHARED_TABLES
    assert tables["layer_ops"][0] > 0 and tables["layer_ops"][1] > 1000 * tables["layer_ops"][0]
    text = client.get("/metrics").text
    assert "# TYPE gpu_advisor_engine_cache_entries gauge" in text
    for table, (entries, _nbytes) in tables.items():
        assert _sample(text, "gpu_advisor_engine_cache_entries", table=table) == entries
        assert _sample(text, "gpu_advisor_engine_cache_bytes", table=table) > 0


def test_collector_pauses_are_timed_per_generation(app: FastAPI) -> None:
    """Every collection while the app serves is a sample of gpu_advisor_gc_pause_seconds (by
    generation), flushed into the metrics at the next request; the longest is a gauge; a
    stopped app leaves no callback behind."""
    with TestClient(app) as client:
        before = client.get("/metrics").text
        gc.collect(0)
        gc.collect(2)
        gc.collect(2)
        text = client.get("/metrics").text
    for generation, at_least in (("0", 1), ("2", 2)):
        name = "gpu_advisor_gc_pause_seconds_count"
        count = _sample(text, name, generation=generation)
        assert count - _sample(before, name, generation=generation) >= at_least
        assert _sample(text, "gpu_advisor_gc_pause_seconds_bucket", generation=generation,
                       le="+Inf") == count
    full_max = _sample(text, "gpu_advisor_gc_pause_max_seconds", generation="2")
    assert 0 < full_max < 60
    assert _sample(text, "gpu_advisor_gc_pause_seconds_sum", generation="2") >= full_max
    assert not any(getattr(cb, "__self__", None) is app.state.metrics.gc_pauses
                   for cb in gc.callbacks)
