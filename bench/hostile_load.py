"""Hostile background load for the overload and soak runs: slow uploads and read
floods, with what the server answered them.

- :class:`SlowUploaders`: clients that announce a 1,000-byte JSON body and send one byte of it
  every ``every_s`` seconds, reconnecting when the server cuts them (408 after
  GPU_ADVISOR_BODY_READ_TIMEOUT_S). Each used to hold an admission slot meanwhile.
- :func:`read_flood`: ``clients`` concurrent GET /v1/quotes?limit=500 loops (list reads had no
  admission; 100 such clients exhausted the database pool), with a bystander probing
  GET /v1/gpus/{slug}.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections import Counter
from typing import Any

import httpx

BYSTANDER_SLUG = "nvidia-h100-sxm5-80gb"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1)


class SlowUploaders:
    """``n`` threads trickling POST /v1/recommendations bodies until :meth:`stop`."""

    def __init__(self, base: str, n: int, every_s: float = 2.0) -> None:
        self.port = int(base.rsplit(":", 1)[1])
        self.every_s = every_s
        self.answers: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]

    def start(self) -> SlowUploaders:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> dict[str, int]:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        return dict(sorted(self.answers.items()))

    def _count(self, what: str) -> None:
        with self._lock:
            self.answers[what] += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                    s.sendall(b"POST /v1/recommendations HTTP/1.1\r\nHost: x\r\n"
                              b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
                    s.settimeout(self.every_s)
                    answer = b""
                    while not self._stop.is_set():
                        s.sendall(b" ")
                        try:
                            answer = s.recv(65536)
                        except TimeoutError:
                            continue
                        break  # the server answered (408) or closed
                    if answer.startswith(b"HTTP/1.1 "):
                        self._count(answer.split(b" ", 2)[1].decode())
                    elif not self._stop.is_set():
                        self._count("closed")
            except OSError:
                if not self._stop.is_set():
                    self._count("closed")
                    time.sleep(0.2)


async def read_flood(base: str, seconds: float, clients: int) -> dict[str, Any]:
    """``clients`` loops of GET /v1/quotes?limit=500 for ``seconds``; a bystander GETs one GPU
    every 100 ms meanwhile. Status counts, latencies [ms]."""
    codes: Counter[str] = Counter()
    latency_ms: list[float] = []
    bystander_ms: list[float] = []
    bystander_codes: Counter[str] = Counter()
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client, \
            httpx.AsyncClient(base_url=base, timeout=120) as lone:

        async def flooder() -> None:
            while time.monotonic() < stop_at:
                start = time.perf_counter()
                try:
                    r = await client.get("/v1/quotes", params={"limit": 500})
                except httpx.HTTPError as exc:
                    codes[type(exc).__name__] += 1
                    await asyncio.sleep(0.1)
                    continue
                codes[str(r.status_code)] += 1
                latency_ms.append((time.perf_counter() - start) * 1e3)
                if r.status_code == 503:
                    await asyncio.sleep(0.05)  # a polite client would honour Retry-After

        async def bystander() -> None:
            while time.monotonic() < stop_at:
                start = time.perf_counter()
                try:
                    r = await lone.get(f"/v1/gpus/{BYSTANDER_SLUG}")
                    bystander_codes[str(r.status_code)] += 1
                except httpx.HTTPError as exc:
                    bystander_codes[type(exc).__name__] += 1
                bystander_ms.append((time.perf_counter() - start) * 1e3)
                await asyncio.sleep(0.1)

        await asyncio.gather(bystander(), *(flooder() for _ in range(clients)))
    return {
        "clients": clients, "seconds": seconds,
        "status_counts": dict(sorted(codes.items())),
        "p50_ms": pct(latency_ms, 0.5), "p99_ms": pct(latency_ms, 0.99),
        "bystander_status_counts": dict(sorted(bystander_codes.items())),
        "bystander_p50_ms": pct(bystander_ms, 0.5), "bystander_p99_ms": pct(bystander_ms, 0.99),
        "bystander_max_ms": pct(bystander_ms, 1.0),
    }


def count_500(*status_counts: dict[str, int]) -> int:
    """500s (any 5xx but 503) across status-count tables."""
    return sum(n for counts in status_counts for code, n in counts.items()
               if code.isdigit() and code.startswith("5") and code != "503")
