"""Headers every response carries, HEAD on GET routes, and redirects that never echo Host.

- ``X-Content-Type-Options: nosniff`` on every response: a browser renders a JSON or text
  answer as what its Content-Type says, never as sniffed HTML or script.
- HEAD: FastAPI routes answer only the methods they declare, so HEAD on a GET route was a 405.
  HTTP (RFC 9110, 9.3.2) wants HEAD answered like GET without the body: the request is run as
  a GET and its body dropped; the headers (Content-Length, ETag, ...) are GET's.
- Starlette's trailing-slash redirect builds an absolute ``Location`` from the request's Host
  header, so a forged Host was reflected into the redirect (cache poisoning, open redirect
  through a shared cache). A ``Location`` on this server's own host is sent as a relative
  reference (path and query; RFC 9110, 10.2.2 allows it) instead.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NOSNIFF = (b"x-content-type-options", b"nosniff")


def _relative(location: bytes, host: bytes | None) -> bytes:
    """``location`` as a path (and query) when it is absolute on ``host`` (or on any host
    when the request had none); otherwise unchanged."""
    try:
        text = location.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        return location
    parts = urlsplit(text)
    if not parts.scheme or not parts.netloc:
        return location
    if host is not None and parts.netloc.lower() != host.decode("latin-1").lower():
        return location  # a deliberate redirect to another host is not ours to rewrite
    path = parts.path or "/"
    if path.startswith("//"):  # "//evil.example/x" would read as a host again
        path = "/" + path.lstrip("/")
    return (path + (f"?{parts.query}" if parts.query else "")).encode("latin-1")


class ResponseHeadersMiddleware:
    """nosniff on every response and a relative Location for this host's redirects (the
    outermost layer, so the error answers of the layers inside get them too)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = dict(scope["headers"]).get(b"host")

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != NOSNIFF[0]]
                headers.append(NOSNIFF)
                if 300 <= message["status"] < 400:
                    headers = [(k, _relative(v, host) if k.lower() == b"location" else v)
                               for k, v in headers]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_wrapper)


class HeadAsGetMiddleware:
    """HEAD runs as GET and its body is dropped (inside the access log, which records HEAD)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        inner = {**scope, "method": "GET"}
        try:
            await self.app(inner, receive, send_wrapper)
        finally:
            if "route" in inner:  # the access log and metrics label HEAD by its route too
                scope["route"] = inner["route"]
