"""How `gpu-advisor serve` runs uvicorn: the app factory, timeouts and limits on slow or huge heads.

uvicorn has an idle keep-alive timeout but no timeout on reading a request head: a client that
connects and sends one header line every few seconds (slowloris) holds its connection forever,
and the httptools parser buffers a head of any size (a 64 MB header made RSS grow by 1.3 GB).
``GuardedHttpToolsProtocol`` adds both bounds at the protocol level, before anything reaches
the app: a head not complete within ``GPU_ADVISOR_HEADER_READ_TIMEOUT_S`` closes the connection,
and a head over ``GPU_ADVISOR_MAX_HEADER_BYTES`` (plus room for the request line) gets 431 and
is dropped without being buffered further. With the pure-Python h11 parser (no httptools),
uvicorn's own ``h11_max_incomplete_event_size`` bounds the head instead. Slow bodies are timed by
BodyTimeoutMiddleware (service/guards.py), idle keep-alive connections by uvicorn.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from fastapi import FastAPI

from service.config import Settings
from service.errors import PROBLEM_BASE, PROBLEM_JSON

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


def app_factory() -> FastAPI:
    """The app for uvicorn (``--workers`` imports it in every worker process)."""
    from service.main import create_app
    from service.workloads.service import warm_up

    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    app = create_app(Settings())
    # before uvicorn accepts a request
    warm_up(app.state.engine, app.state.settings, app.state.caches)
    return app


def _reply_431(max_bytes: int) -> bytes:
    body = json.dumps({"type": PROBLEM_BASE + "headers-too-large",
                       "title": "Request header fields too large", "status": 431,
                       "detail": f"The request head exceeds {max_bytes} bytes "
                                 "(GPU_ADVISOR_MAX_HEADER_BYTES)."}).encode()
    return (b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: " + PROBLEM_JSON.encode() + b"\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
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
