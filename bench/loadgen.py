"""A small asyncio + httpx load generator: N connections for T seconds against one URL.

Used by bench_http when `wrk` is not installed. It is slower than wrk (the client, in Python,
shares the CPU with the server), so its absolute figures are lower bounds; the ratios between
routes measured in the same run are what compares.

``body`` is sent in every request; ``body_factory`` (bytes of JSON) is called once per request
instead, so each request may carry a different body (bench/varied.py). The result has wrk's
shape: ``errors`` counts both failed exchanges (``socket_errors``) and ``non_2xx`` answers.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx


async def _run(
    url: str, method: str, body: Any, body_factory: Callable[[], bytes] | None,
    connections: int, seconds: float,
) -> dict[str, Any]:
    latencies: list[float] = []
    failed = non_2xx = 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    fixed = json.dumps(body).encode() if body is not None else None
    has_body = fixed is not None or body_factory is not None
    headers = {"Content-Type": "application/json"} if has_body else {}
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal failed, non_2xx
            while time.perf_counter() < deadline:
                content = body_factory() if body_factory is not None else fixed
                start = time.perf_counter()
                try:
                    r = await client.request(method, url, content=content, headers=headers)
                    non_2xx += not 200 <= r.status_code < 300
                except httpx.HTTPError:
                    failed += 1
                latencies.append(time.perf_counter() - start)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    n = len(latencies)
    return {
        "requests": n, "errors": failed + non_2xx, "non_2xx": non_2xx,
        "socket_errors": {"failed": failed}, "seconds": elapsed,
        "requests_per_s": n / elapsed if elapsed else 0.0,
        "p50_ms": statistics.median(latencies) * 1e3 if n else None,
        "p99_ms": latencies[min(n - 1, int(n * 0.99))] * 1e3 if n else None,
    }


def run(url: str, *, method: str = "GET", body: Any = None,
        body_factory: Callable[[], bytes] | None = None, connections: int = 16,
        seconds: float = 5.0) -> dict[str, Any]:
    if body is not None and body_factory is not None:
        raise ValueError("give body or body_factory, not both")
    return asyncio.run(_run(url, method, body, body_factory, connections, seconds))
