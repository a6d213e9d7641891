"""A small asyncio + httpx load generator: N connections for T seconds against one URL.

Used by bench_http when `wrk` is not installed. It is slower than wrk (the client, in Python,
shares the CPU with the server), so its absolute figures are lower bounds; the ratios between
routes measured in the same run are what compares.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

import httpx


async def _run(
    url: str, method: str, body: Any, connections: int, seconds: float
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    content = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if body is not None else {}
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                try:
                    r = await client.request(method, url, content=content, headers=headers)
                    ok = r.status_code < 400
                except httpx.HTTPError:
                    ok = False
                latencies.append(time.perf_counter() - start)
                errors += not ok

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    n = len(latencies)
    return {
        "requests": n, "errors": errors, "seconds": elapsed,
        "requests_per_s": n / elapsed if elapsed else 0.0,
        "p50_ms": statistics.median(latencies) * 1e3 if n else None,
        "p99_ms": latencies[min(n - 1, int(n * 0.99))] * 1e3 if n else None,
    }


def run(url: str, *, method: str = "GET", body: Any = None, connections: int = 16,
        seconds: float = 5.0) -> dict[str, Any]:
    return asyncio.run(_run(url, method, body, connections, seconds))
