"""Request ids, structured JSON logs, Prometheus metrics, and the request-size limit (pure ASGI)."""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.core.errors import PROBLEM_BASE, PROBLEM_JSON

log = logging.getLogger("gpu_advisor.access")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
GC_PAUSE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                    0.25, 0.5, 1.0, 2.5)
"""Collector pauses run from ~10 us (a young collection) to seconds (a full one over a large
heap); the pauses that matter to a request's latency are the ones near 10 ms, so the buckets
are fine below it."""
GENERATIONS = ("0", "1", "2")


MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's multiprocess mode: set (by ``gpu-advisor serve``, to a directory of its
own) before the metrics are created, every process writes its counters and histograms to
memory-mapped files there, and a scrape of any worker adds up the files of all of them."""


def multiprocess_dir() -> str | None:
    """The multiprocess metrics directory when this process runs in that mode, else None."""
    return os.environ.get(MULTIPROC_ENV) or None


class Metrics:
    """One registry per app, so several apps (tests) never collide. Under ``gpu-advisor
    serve`` (multiprocess mode, :data:`MULTIPROC_ENV`) the same metrics write to that
    directory's files, and :meth:`exposition` reads back the sum over every worker."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "gpu_advisor_http_requests_total", "HTTP requests by route, method and status",
            ["route", "method", "status"], registry=self.registry,
        )
        self.latency = Histogram(
            "gpu_advisor_http_request_duration_seconds", "HTTP request latency by route",
            ["route", "method"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.recommendation_seconds = Histogram(
            "gpu_advisor_recommendation_compute_seconds",
            "Time spent ranking GPUs for one recommendation (engine + offer selection)",
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.gc_pause = Histogram(
            "gpu_advisor_gc_pause_seconds",
            "Garbage-collector pauses of the serving process, by generation collected",
            ["generation"], buckets=GC_PAUSE_BUCKETS, registry=self.registry,
        )
        self.gc_pause_max = Gauge(
            "gpu_advisor_gc_pause_max_seconds",
            "Longest garbage-collector pause since the process began serving, by generation",
            ["generation"], multiprocess_mode="max", registry=self.registry,
        )
        self._process_collectors: list[Collector] = []
        self.gc_pauses = GcPauses(self)

    def exposition(self) -> bytes:
        """The Prometheus text of these metrics: the server's totals over all its workers in
        multiprocess mode (counters of exited workers included, so totals never go back),
        plus this process's own collectors (the engine cache gauges)."""
        path = multiprocess_dir()
        if path is None:
            return generate_latest(self.registry) + _scope(merged=False)
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path=path)  # type: ignore[no-untyped-call]
        # the metric families above come from the files; the custom collectors from here
        for collector in self._process_collectors:
            merged.register(collector)
        return generate_latest(merged) + _scope(merged=True)

    def register_process_collector(self, collector: Collector) -> None:
        """A collector of this process's state (computed at scrape time, not added up)."""
        self._process_collectors.append(collector)
        self.registry.register(collector)


class _Scope(Collector):
    def __init__(self, merged: bool) -> None:
        self.merged = merged

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "gpu_advisor_metrics_workers_merged",
            "1: the HTTP and GC metrics of this scrape are the sum over every worker process "
            "of the server (multiprocess mode); 0: they are the answering process's own",
            value=1.0 if self.merged else 0.0)


def _scope(*, merged: bool) -> bytes:
    """The exposition of ``gpu_advisor_metrics_workers_merged`` (what the scrape covers)."""
    registry = CollectorRegistry()
    registry.register(_Scope(merged))
    return generate_latest(registry)


def mark_worker_exit() -> None:
    """Multiprocess bookkeeping when a worker stops (prometheus_client drops its live gauges;
    its counters stay, as a Prometheus counter must not go back)."""
    path = multiprocess_dir()
    if path is not None and os.path.isdir(path):
        multiprocess.mark_process_dead(os.getpid(), path)  # type: ignore[no-untyped-call]


class GcPauses:
    """Times every pause of the garbage collector (``gc.callbacks``: a ``start`` and a
    ``stop`` call around each collection, in the thread that triggered it) while the app
    serves, into ``gpu_advisor_gc_pause_seconds`` and ``..._max_seconds``.

    The callback only appends (generation, seconds) to a bounded deque; :meth:`flush` moves
    them into the metrics, at the start of every request (so before a /metrics scrape). A
    collection can start inside any allocation, including one made while a metric holds its
    lock (in prometheus_client's multiprocess mode, one lock for every metric of the process),
    so observing from the callback itself could deadlock the thread on that lock."""

    PENDING_MAX = 10_000
    """Pauses kept between two flushes; beyond, the oldest are dropped (a process that
    collects 10,000 times between two requests is idle, and its pauses matter to no one)."""

    def __init__(self, metrics: Metrics) -> None:
        self._pending: deque[tuple[int, float]] = deque(maxlen=self.PENDING_MAX)
        self._started = 0.0
        self._hist = [metrics.gc_pause.labels(g) for g in GENERATIONS]
        self._max_gauge = [metrics.gc_pause_max.labels(g) for g in GENERATIONS]
        self._max = [0.0 for _ in GENERATIONS]

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self._pending.append((info["generation"], time.perf_counter() - self._started))

    def start(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def stop(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
        self.flush()

    def flush(self) -> None:
        pending = self._pending
        while pending:
            try:
                generation, seconds = pending.popleft()
            except IndexError:  # another thread took the last one
                return
            self._hist[generation].observe(seconds)
            if seconds > self._max[generation]:
                self._max[generation] = seconds
                self._max_gauge[generation].set(seconds)


class CacheCollector(Collector):
    """The engine cache's tables at scrape time: entries and estimated bytes per table
    (``stats``: the cache's :meth:`~service.engine.cache.EngineCache.stats`)."""

    def __init__(self, stats: Callable[[], Mapping[str, tuple[int, int]]]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        entries = GaugeMetricFamily(
            "gpu_advisor_engine_cache_entries",
            "Entries in each table of this process's shared engine cache", labels=["table"])
        size = GaugeMetricFamily(
            "gpu_advisor_engine_cache_bytes",
            "Estimated bytes held by each table of this process's shared engine cache",
            labels=["table"])
        for table, (count, nbytes) in sorted(self._stats().items()):
            entries.add_metric([table], count)
            size.add_metric([table], nbytes)
        yield entries
        yield size


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        payload.update(getattr(record, "fields", {}))
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


def configure_logging(json_logs: bool) -> None:
    root = logging.getLogger("gpu_advisor")
    if getattr(root, "_configured", False):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if json_logs else logging.Formatter("%(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False
    root._configured = True  # type: ignore[attr-defined]


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


class ObservabilityMiddleware:
    """Give every response an X-Request-ID, log one JSON line, record metrics."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.metrics.gc_pauses.flush()
        incoming = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        started = False
        start = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except Exception:
            # Unhandled: answer here (the outer ServerErrorMiddleware would answer without the
            # request id) and log with the id; never leak the exception text to the caller.
            log.exception("unhandled error", extra={"fields": {"request_id": request_id}})
            if started:
                raise
            body = json.dumps({"type": PROBLEM_BASE + "internal-error", "title": "Internal error",
                               "status": 500, "instance": scope["path"]}).encode()
            await send_wrapper({"type": "http.response.start", "status": 500, "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(body)).encode()),
            ]})
            await send_wrapper({"type": "http.response.body", "body": body})
        finally:
            elapsed = time.perf_counter() - start
            route = _route_template(scope)
            method = scope["method"]
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.latency.labels(route, method).observe(elapsed)
            log.info(
                "request",
                extra={"fields": {
                    "request_id": request_id, "method": method, "route": route,
                    "path": scope["path"], "status": status,
                    "duration_ms": round(elapsed * 1000, 3),
                }},
            )


class BodySizeLimitMiddleware:
    """413 problem+json for bodies above the limit, by Content-Length or while streaming."""

    def __init__(self, app: ASGIApp, max_bytes: int,
                 path_limits: dict[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.path_limits = path_limits or {}
        """Per-path limits (exact path) that replace max_bytes, e.g. for bulk imports."""

    async def _reject(self, send: Send, limit: int) -> None:
        body = json.dumps({
            "type": PROBLEM_BASE + "payload-too-large",
            "title": "Request body too large",
            "status": 413,
            "detail": f"The body exceeds {limit} bytes (GPU_ADVISOR_MAX_BODY_BYTES / "
                      "GPU_ADVISOR_MAX_IMPORT_BYTES)",
        }).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(body)).encode()),
        ]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.path_limits.get(scope["path"], self.max_bytes)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await self._reject(send, limit)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # An HTTPException, so FastAPI's body reader re-raises it untouched and the
                    # problem+json handler renders the 413.
                    raise HTTPException(413, f"The body exceeds {limit} bytes")
            return message

        await self.app(scope, limited_receive, send)
