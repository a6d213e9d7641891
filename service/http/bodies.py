"""Request bodies against hostile clients: authenticated before they are read, a per-worker budget
on the bytes held, and JSON parsed off the event loop with a bound on its shape.

- PreAuthMiddleware: a write to a route that needs a key is answered 401 before its body is read
  when the key is missing or unknown (300 anonymous 5 MB POSTs to /v1/gpus were buffered and
  parsed, 1.9 GB, only to be refused).
- BodyBudgetMiddleware: the request bodies a worker holds at once total at most
  GPU_ADVISOR_MAX_BUFFERED_BODY_BYTES; past it, 503 with Retry-After.
- GuardedRoute: the route class of every router; it parses a JSON body of more than
  :data:`OFF_LOOP_BYTES` in a worker thread (a 4.7 MB body took the event loop, and /healthz,
  for a second), and answers 422 at once for an object with more than :data:`MAX_OBJECT_KEYS`
  keys (each unknown key was one validation error: 480,000 keys, 16 s and a 43 MB answer).
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable, Coroutine, Sequence
from contextlib import contextmanager
from typing import Any

import anyio.to_thread
import orjson
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.core.db import get_session
from service.core.security import PREAUTH_STATE_KEY, ApiKey, authenticate
from service.http.guards import send_problem

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

OFF_LOOP_BYTES = 64 * 1024
"""JSON bodies above this are parsed in a worker thread. Below it a parse takes well under a
millisecond; a thread hop costs about as much."""
MAX_OBJECT_KEYS = 256
"""Most keys one JSON object of a request body may have. The widest request schema (a GPU) has
fewer than 40 fields; every key beyond them is an error anyway."""


# Authentication before the body.

RouteAccess = tuple[frozenset[str], re.Pattern[str], Sequence[str]]
"""(methods, compiled path pattern, callers the route lets through) per API route."""


def _bearer(scope: Scope) -> str | None:
    value = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
    scheme, _, credentials = value.partition(" ")
    return credentials.strip() or None if scheme.lower() == "bearer" else None


class PreAuthMiddleware:
    """401 before the body is read for a write to a route that needs a key, when the request has
    none or one that is unknown or revoked; 403 before it when the key's role is not one the
    route lets through. The route's access dependency checks again (it also guards reads); a
    key found here is handed to it in ``scope["state"]``."""

    def __init__(self, app: ASGIApp, *, routes: Sequence[RouteAccess], engine: Engine,
                 public_reads: bool) -> None:
        self.app = app
        self.routes = routes
        self.engine = engine
        self.public_reads = public_reads

    def _callers(self, method: str, path: str) -> Sequence[str] | None:
        """Who the route of ``method path`` lets through, when it needs a key; else None."""
        for methods, pattern, callers in self.routes:
            if method in methods and pattern.match(path):
                needs = not ("anyone" in callers or ("anonymous" in callers
                                                     and self.public_reads))
                return callers if needs else None
        return None

    def _lookup(self, key: str, app: Any) -> ApiKey | None:
        # The app's session dependency may be overridden (the test suite binds it to a
        # connection it rolls back): read the key where the routes would.
        override = getattr(app, "dependency_overrides", {}).get(get_session)
        opened = (contextmanager(override)() if inspect.isgeneratorfunction(override)
                  else Session(self.engine, expire_on_commit=False))
        with opened as session:
            row = authenticate(session, key)
            if row is not None:
                session.expunge(row)
            return row

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        callers = (self._callers(scope["method"], scope["path"])
                   if scope["type"] == "http" and scope["method"] in BODY_METHODS else None)
        if callers is None:
            await self.app(scope, receive, send)
            return
        key = _bearer(scope)
        if key is not None:
            try:
                row = await anyio.to_thread.run_sync(self._lookup, key, scope.get("app"))
            except SQLAlchemyError:
                # The database is down or busy: the route's own dependency meets the same error
                # and answers it (503), as it did before this middleware.
                await self.app(scope, receive, send)
                return
            if row is not None and row.role not in callers:
                # the role check too, before the body: a reader's key on an admin route
                roles = " or ".join(f"'{r}'" for r in callers if r != "anonymous")
                await send_problem(send, 403, "forbidden", "Forbidden",
                                   f"Key '{row.name}' has role '{row.role}'; this route needs "
                                   f"{roles}", scope["path"])
                return
            if row is not None:
                scope.setdefault("state", {})[PREAUTH_STATE_KEY] = (key, row)
                await self.app(scope, receive, send)
                return
        detail = ("Unknown or revoked API key" if key is not None
                  else "This route needs an API key")
        # The body is left unread: uvicorn discards it as it arrives, buffering none of it.
        await send_problem(send, 401, "unauthorized", "Authentication required", detail,
                           scope["path"], {"WWW-Authenticate": "Bearer"})


# The per-worker budget of buffered body bytes.

class BodyBudgetMiddleware:
    """At most ``max_bytes`` of request bodies held per worker at once, counted as their bytes
    arrive and released when the response is sent. A body whose next chunk would pass the
    budget gets 503 + Retry-After (and the connection closed); one whose announced length
    (Content-Length) cannot fit beside the bytes already held is refused before its first byte
    is read. Nothing is reserved for bytes not yet received: a client that announces a body and
    sends none holds no budget (only its connection, until the body timeout). A single event
    loop per worker: no lock needed (test clients each run their own loop, so the count may be
    shared across threads there; it stays approximate)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, retry_after_s: float = 1.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.retry_after = str(max(1, math.ceil(retry_after_s)))
        self.held = 0

    def _refusal(self) -> tuple[str, dict[str, str]]:
        return (f"The server holds too many request bodies ({self.max_bytes} bytes per worker, "
                "GPU_ADVISOR_MAX_BUFFERED_BODY_BYTES); retry after "
                f"{self.retry_after} s", {"Retry-After": self.retry_after})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length", b"")
        announced = int(length) if length.isdigit() else None
        if announced is not None and announced > 0 and self.held + announced > self.max_bytes:
            detail, headers = self._refusal()
            await send_problem(send, 503, "overloaded", "Server overloaded", detail,
                               scope["path"], headers)
            return
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            size = len(message.get("body", b"")) if message["type"] == "http.request" else 0
            if size:
                if self.held + size > self.max_bytes:
                    detail, headers = self._refusal()
                    raise HTTPException(503, detail, headers={**headers, "Connection": "close"})
                received += size
                self.held += size
            return message

        try:
            await self.app(scope, counted_receive, send)
        finally:
            self.held -= received


# JSON off the event loop, with a bounded shape.

def _widest_object(value: Any, path: tuple[str | int, ...] = ("body",),
                   ) -> tuple[tuple[str | int, ...], int] | None:
    """The location and key count of the first object with more than MAX_OBJECT_KEYS keys."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            if len(node) > MAX_OBJECT_KEYS:
                return where, len(node)
            stack.extend((v, (*where, k)) for k, v in node.items()
                         if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, (*where, i)) for i, v in enumerate(node)
                         if isinstance(v, dict | list))
    return None


def parse_json_body(body: bytes) -> Any:
    """The body as JSON, with Starlette's semantics (the stdlib parser accepts what orjson
    refuses, e.g. NaN, which validation then names); orjson first because it is several times
    faster on large bodies. Raises RequestValidationError like FastAPI for malformed JSON and
    for an object with more than MAX_OBJECT_KEYS keys."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            raise RequestValidationError([{
                "type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error",
                "input": {}, "ctx": {"error": exc.msg}}]) from None
        except (RecursionError, UnicodeDecodeError, ValueError):
            raise RequestValidationError([{
                "type": "json_invalid", "loc": ("body",),
                "msg": "JSON decode error: not UTF-8, or nested too deeply", "input": {}}],
            ) from None
    wide = _widest_object(value)
    if wide is not None:
        where, count = wide
        raise RequestValidationError([{
            "type": "too_many_keys", "loc": where,
            "msg": f"An object may have at most {MAX_OBJECT_KEYS} keys, not {count}",
            "input": {}}])
    return value


def _is_json(request: Request) -> bool:
    ctype = request.headers.get("content-type")
    if not ctype:
        return False  # FastAPI (strict content type, its default) does not parse it as JSON
    media = ctype.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/")
                                           and media.endswith("+json"))


class GuardedRoute(APIRoute):
    """APIRoute whose JSON body is parsed by :func:`parse_json_body` before FastAPI reads it
    (FastAPI then takes the parsed value from the request), in a worker thread when it is
    larger than :data:`OFF_LOOP_BYTES`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def guarded(request: Request) -> Response:
            if _is_json(request):
                body = await request.body()
                if body:
                    if len(body) > OFF_LOOP_BYTES:
                        parsed = await anyio.to_thread.run_sync(parse_json_body, body)
                    else:
                        parsed = parse_json_body(body)
                    request._json = parsed  # what Request.json() returns from now on
            return await handler(request)

        return guarded
