"""How `gpu-advisor serve` runs uvicorn: the app factory, timeouts and limits on slow or huge heads.

uvicorn has an idle keep-alive timeout but no timeout on reading a request head: a client that
connects and sends one header line every few seconds (slowloris) holds its connection forever,
and the httptools parser buffers a head of any size (a 64 MB header made RSS grow by 1.3 GB).
``GuardedHttpToolsProtocol`` adds both bounds at the protocol level, before anything reaches
the app: a head not complete within ``GPU_ADVISOR_HEADER_READ_TIMEOUT_S`` closes the connection,
and a head over ``GPU_ADVISOR_MAX_HEADER_BYTES`` (plus room for the request line) gets 431 and
is dropped without being buffered further. With the pure-Python h11 parser (no httptools),
uvicorn's own ``h11_max_incomplete_event_size`` bounds the head instead. Slow bodies are timed by
BodyTimeoutMiddleware (service/http/guards.py), idle keep-alive connections by uvicorn.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from datetime import datetime
from typing import Any

from fastapi import FastAPI
from sqlalchemy.engine import Engine

from service.core.config import Settings
from service.core.errors import PROBLEM_BASE, PROBLEM_JSON
from service.workloads.caches import AppCaches

REQUEST_LINE_ROOM = 8_192
"""Head bytes allowed beyond the header limit: the request line (method, path, query)."""

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - uvicorn[standard] installs httptools
    HttpToolsProtocol = None  # type: ignore[assignment,misc]


GIL_SWITCH_INTERVAL_S = 0.001
"""How long a thread may hold the GIL before a waiting one is let in (CPython's default is
5 ms). Recommendations are CPU-bound Python in the thread pool; the event loop that answers
/healthz (and reads requests) waits for the GIL behind them, so a shorter interval keeps it
responsive under load at a cost of a few percent of throughput."""
GC_GENERATION2_THRESHOLD = 100
"""Middle-generation collections between full ones (CPython's default: 10). Measured with
bench/ab_scale.py's child at 5,000 GPUs (median CPU ms per recommendation, default -> 100):
training 381 -> 322, LLM inference 522 -> 425, ResNet-50 329 -> 260, FP64 370 -> 272; the
collector's time over the FP64 requests 890 -> 106 ms. Garbage cycles are still collected,
only later; a 10x larger young generation (10,000) was slower (cycles piled up)."""


def app_factory() -> FastAPI:
    """The app for uvicorn (``--workers`` imports it in every worker process)."""
    from service.app.factory import create_app

    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    app = create_app(Settings())
    # before uvicorn accepts a request
    warm_up_and_freeze(app.state.engine, app.state.settings, app.state.caches)
    return app


def warm_up_and_freeze(engine: Engine, settings: Settings, caches: AppCaches, *,
                       now: datetime | None = None) -> bool:
    """Build the catalog and offer snapshots into the app's ``caches`` before the first
    request, then move everything
    alive (modules, settings, those snapshots) into the collector's permanent generation once.

    A server process calls this at start-up, before it accepts a request, so no request's
    garbage is frozen (freezing on every snapshot write would leak it). What it
    buys: a full collection no longer re-walks the snapshots (hundreds of thousands of objects
    at 5,000 GPUs), which otherwise costs ~25% of a recommendation's CPU time at that scale.
    The snapshots are acyclic, so refcounting still frees them when they are replaced.
    Returns False (and freezes nothing) when the database cannot be read now: serving starts
    anyway and builds the snapshots on first use.

    It also sets the collector's oldest-generation threshold to
    :data:`GC_GENERATION2_THRESHOLD`: a ranking at that scale keeps tens of thousands of
    objects alive across young collections, which promotes them, so with CPython's default
    (10) a full collection ran every one or two requests and took a quarter of their CPU."""
    from service.workloads.service import warm_up

    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, GC_GENERATION2_THRESHOLD)
    if not warm_up(engine, settings, caches, now=now):
        return False
    gc.collect()
    gc.freeze()
    return True


def _reply_431(max_bytes: int) -> bytes:
    body = json.dumps({"type": PROBLEM_BASE + "headers-too-large",
                       "title": "Request header fields too large", "status": 431,
                       "detail": f"The request head exceeds {max_bytes} bytes "
                                 "(GPU_ADVISOR_MAX_HEADER_BYTES)."}).encode()
    return (b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: " + PROBLEM_JSON.encode() + b"\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"x-content-type-options: nosniff\r\n"
            b"connection: close\r\n\r\n" + body)


if HttpToolsProtocol is not None:

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol with a head size limit and a head read timeout.

        A module-level class (uvicorn pickles it by name into ``--workers`` processes); its
        limits come from the environment's settings, read once per process.
        """

        _limits: tuple[int, float] | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if GuardedHttpToolsProtocol._limits is None:
                settings = Settings()
                GuardedHttpToolsProtocol._limits = (
                    settings.max_header_bytes + REQUEST_LINE_ROOM, settings.header_read_timeout_s)
            self.max_head_bytes, self.head_timeout_s = GuardedHttpToolsProtocol._limits
            self._in_head = False
            self._head_bytes = 0
            self._head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._start_head()  # a client that connects and sends nothing is timed too

        def data_received(self, data: bytes) -> None:
            if not self._in_head and (self.cycle is None or self.cycle.response_complete):
                self._start_head()  # the first bytes of the next request on this connection
            if self._in_head:
                self._head_bytes += len(data)
            super().data_received(data)
            if self._in_head and self._head_bytes > self.max_head_bytes:
                self._end_head()
                if not self.transport.is_closing():
                    self.transport.write(_reply_431(self.max_head_bytes - REQUEST_LINE_ROOM))
                    self.transport.close()

        def on_headers_complete(self) -> None:
            self._end_head()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._end_head()
            super().connection_lost(exc)

        def _start_head(self) -> None:
            self._end_head()
            self._in_head, self._head_bytes = True, 0
            self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timeout)

        def _end_head(self) -> None:
            self._in_head = False
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timeout(self) -> None:
            self._head_timer = None
            if self._in_head and not self.transport.is_closing():
                self.transport.close()  # slowloris: no answer, the connection just goes


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for uvicorn.run / uvicorn.Config."""
    return {
        "http": "h11" if HttpToolsProtocol is None else GuardedHttpToolsProtocol,
        "h11_max_incomplete_event_size": settings.max_header_bytes + REQUEST_LINE_ROOM,
        "timeout_keep_alive": max(1, round(settings.keep_alive_timeout_s)),
        # A worker saturated by admitted requests answers the supervisor's ping late; uvicorn's
        # default (5 s) would kill it mid-request and reset every connection it holds.
        "timeout_worker_healthcheck": 30,
    }
