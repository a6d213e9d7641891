"""Overload and hostile-client guards, as pure ASGI middleware (any server, any worker count).

- AdmissionMiddleware: at most N expensive requests (or N list reads: a second instance) at once
  per worker, a short bounded queue, then 503 problem+json with Retry-After. The request body is
  received in full *before* a slot is taken, so a slow upload never holds one. Everything else
  (cheap reads, /healthz) is not held.
- HeaderLimitMiddleware: request headers above a total size get 431.
- BodyTimeoutMiddleware: a request body not received in time gets 408 (slow-body clients).
- MiddlewareProblemGuard: a refusal raised while a middleware reads the body (408, 413, 503 from
  the receive wrappers) is answered as problem+json, never as a 500.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import tempfile
import time
from collections.abc import Callable
from typing import IO

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.core.errors import PROBLEM_BASE, PROBLEM_JSON, status_slug_title

EXPENSIVE_ROUTES: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = (
    (frozenset({"POST"}), re.compile(r"^/v1/(recommendations|estimates|quotes/import)/?$")),
    (frozenset({"GET", "POST"}), re.compile(r"^/v1/workloads/[^/]+/(recommendations|runs)/?$")),
)
"""Routes that compute (the engine) or write in bulk; the ones a crowd can exhaust a worker on."""

LIST_ROUTES: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = (
    (frozenset({"GET", "HEAD"}),
     re.compile(r"^/v1/(gpus|quotes|quotes/imports|quotes/history|workloads|models)/?$")),
    (frozenset({"GET", "HEAD"}), re.compile(r"^/v1/quotes/[^/]+/history/?$")),
)
"""Collection reads: a page of up to GPU_ADVISOR_MAX_PAGE_SIZE rows each (GET /v1/quotes?limit=500
is ~45 ms of a thread and a database connection), admitted like the expensive routes
(unadmitted, 100 clients of them took every thread and connection from a bystander)."""


def _matcher(routes: tuple[tuple[frozenset[str], re.Pattern[str]], ...]
             ) -> Callable[[str, str], bool]:
    def matches(method: str, path: str) -> bool:
        return any(method in methods and pattern.match(path) for methods, pattern in routes)
    return matches


is_expensive = _matcher(EXPENSIVE_ROUTES)
is_list_read = _matcher(LIST_ROUTES)


async def send_problem(send: Send, status: int, slug: str, title: str, detail: str,
                       instance: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"type": PROBLEM_BASE + slug, "title": title, "status": status,
                       "detail": detail, "instance": instance}).encode()
    raw = [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class MiddlewareProblemGuard:
    """Answer an ``HTTPException`` raised below it, outside the app's own exception handlers, as
    problem+json with its status and headers.

    The receive wrappers (body size 413, body timeout 408, body budget 503) raise
    ``HTTPException`` so that FastAPI's body reader re-raises it to the app's handler; but a
    middleware that reads the body itself (admission) is outside those handlers, and the
    exception would escape as a 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked_send)
        except HTTPException as exc:
            if started:
                raise
            slug, title = status_slug_title(exc.status_code)
            await send_problem(send, exc.status_code, slug, title, str(exc.detail),
                               scope["path"], dict(exc.headers or {}))


class AdmissionMiddleware:
    """Bounded admission of the routes ``admits(method, path)`` picks: ``limit`` run, ``max_queued``
    wait up to ``queue_timeout_s``, the rest get 503 at once. Per process (each uvicorn worker has
    its own).

    The body is received in full before a slot is asked for (under the body size limit, the body
    budget and the body read timeout of the middleware outside this one), spooled (memory up to
    1 MB, then a temporary file), then replayed to the app chunk by chunk: a client trickling
    its upload used to hold a slot for the whole body timeout, and two such clients per worker
    made every other recommendation a 503.
    """

    def __init__(self, app: ASGIApp, *, limit: int, max_queued: int,
                 queue_timeout_s: float, admits: Callable[[str, str], bool] = is_expensive,
                 setting: str = "GPU_ADVISOR_MAX_CONCURRENT_REQUESTS") -> None:
        self.app = app
        self.limit = limit
        self.max_queued = max_queued
        self.queue_timeout_s = queue_timeout_s
        self.admits = admits
        self.setting = setting
        self.retry_after = str(max(1, math.ceil(queue_timeout_s)))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(limit)
        self._waiting = 0

    def _semaphore(self) -> asyncio.Semaphore:
        # A semaphore belongs to one event loop; test clients run one loop per client.
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._slots, self._waiting = loop, asyncio.Semaphore(self.limit), 0
        return self._slots

    async def _reject(self, scope: Scope, send: Send, why: str) -> None:
        await send_problem(
            send, 503, "overloaded", "Server overloaded",
            f"{why}; retry after {self.retry_after} s ({self.setting}).",
            scope["path"], {"Retry-After": self.retry_after},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.admits(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        body = await receive_body(receive)
        if body is None:
            return  # the client went away before its body was complete: no one to answer
        with body:
            await self._admit(scope, body, receive, send)

    async def _admit(self, scope: Scope, body: IO[bytes], receive: Receive, send: Send) -> None:
        slots = self._semaphore()
        if slots.locked():
            if self._waiting >= self.max_queued:
                await self._reject(scope, send, "Too many requests are waiting")
                return
            self._waiting += 1
            try:
                async with asyncio.timeout(self.queue_timeout_s):
                    await slots.acquire()
            except TimeoutError:
                await self._reject(scope, send, "No capacity freed in time")
                return
            finally:
                self._waiting -= 1
        else:
            await slots.acquire()
        try:
            await self.app(scope, replay(body, receive), send)
        finally:
            slots.release()


SPOOL_MEMORY_BYTES = 1 << 20
"""A body received before admission stays in memory up to this size, then goes to a temporary
file (a 60 MB quote import is not held in memory while it waits for a slot)."""
REPLAY_CHUNK_BYTES = 64 * 1024


async def receive_body(receive: Receive) -> IO[bytes] | None:
    """The whole body, spooled (rewound); None when the client disconnects first. Refusals
    raised by the receive wrappers (408, 413, 503) propagate as HTTPException."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)
    try:
        while True:
            message = await receive()
            if message["type"] != "http.request":
                spool.close()
                return None
            spool.write(message.get("body", b""))
            if not message.get("more_body", False):
                spool.seek(0)
                return spool
    except BaseException:
        spool.close()
        raise


def replay(spool: IO[bytes], receive: Receive) -> Receive:
    """A receive that gives the spooled body back in chunks, then the real one (which then only
    reports the disconnect)."""
    size = spool.seek(0, 2)
    spool.seek(0)
    done = False

    async def replayed() -> Message:
        nonlocal done
        if done:
            return await receive()
        chunk = spool.read(REPLAY_CHUNK_BYTES)
        done = spool.tell() >= size
        return {"type": "http.request", "body": chunk, "more_body": not done}

    return replayed


def headers_size(scope: Scope) -> int:
    """Bytes of the header section as sent (name, ': ', value, CRLF per field)."""
    return sum(len(name) + len(value) + 4 for name, value in scope["headers"])


class HeaderLimitMiddleware:
    """431 problem+json when the request headers total more than ``max_bytes``.

    `gpu-advisor serve` also stops reading a head past this size (service/app/serving.py), so the
    server never buffers a huge header; this middleware gives the same answer on any server.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and headers_size(scope) > self.max_bytes:
            await send_problem(
                send, 431, "headers-too-large", "Request header fields too large",
                f"The request headers exceed {self.max_bytes} bytes "
                "(GPU_ADVISOR_MAX_HEADER_BYTES).", scope["path"], {"Connection": "close"},
            )
            return
        await self.app(scope, receive, send)


_LIST_HEADERS = (b"if-match", b"if-none-match")


class MergeConditionalHeadersMiddleware:
    """Several If-Match / If-None-Match field lines become one comma-separated line, as RFC
    9110 5.3 says they mean. FastAPI's ``Header()`` reads only the first line, which made
    `If-Match: *` + `If-Match: "999"` a wildcard (the combined value is no `*`), hid a later
    line that matched, and echoed only part of what was sent in a 412."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = [name for name, _ in scope["headers"] if name in _LIST_HEADERS]
            if len(names) > len(set(names)):
                merged: dict[bytes, list[bytes]] = {}
                rest = []
                for name, value in scope["headers"]:
                    if name in _LIST_HEADERS:
                        merged.setdefault(name, []).append(value)
                    else:
                        rest.append((name, value))
                scope = {**scope, "headers": rest + [(name, b", ".join(values))
                                                     for name, values in merged.items()]}
        await self.app(scope, receive, send)


class BodyTimeoutMiddleware:
    """408 problem+json when the whole body has not arrived ``timeout_s`` after the first read."""

    def __init__(self, app: ASGIApp, *, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline: float | None = None
        done = False

        async def timed_receive() -> Message:
            nonlocal deadline, done
            if done:
                return await receive()  # after the body: http.disconnect waits are not timed
            if deadline is None:
                deadline = time.monotonic() + self.timeout_s
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                # An HTTPException, so FastAPI's body reader re-raises it and the problem+json
                # handler renders it; Connection: close drops the slow client.
                raise HTTPException(
                    408, f"The request body was not received within {self.timeout_s:g} s "
                         "(GPU_ADVISOR_BODY_READ_TIMEOUT_S)", headers={"Connection": "close"},
                ) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                done = True
            return message

        await self.app(scope, timed_receive, send)
