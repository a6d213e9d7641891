"""Overload: 100 concurrent recommendation clients against `gpu-advisor serve --workers 2`.

Issue 10, finding 1: the server must answer only 200 or 503 (bounded admission, Retry-After),
never 500, and `/healthz` must stay fast (p99 < 1 s) while it is saturated. Loopback only,
bounded (BENCH_OVERLOAD_SECONDS, default 20 s of load). Results: bench/results/overload.json.

`python -m bench.bench_overload [ROOT] [WORKERS]` runs the server from another source tree
(e.g. an exported older commit, for before/after figures).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench import server
from bench.bench_http import WORKLOADS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SECONDS = float(os.environ.get("BENCH_OVERLOAD_SECONDS", "20"))
CLIENTS = int(os.environ.get("BENCH_OVERLOAD_CLIENTS", "100"))
WORKERS = 2
BODY = {**WORKLOADS["llm-training-llama-2-70b"], "limit": 100}
TARGET_HEALTHZ_P99_MS = 1000.0
"""The load test's bound (issue 10, Tests and CI); the finding itself asks < 100 ms, reported
as ``healthz_p99_under_100_ms``."""
LOADGEN_NICE = int(os.environ.get("BENCH_LOADGEN_NICE", "10"))
"""OS niceness of the load-generator process. Server, load generator and probe share this
machine's CPUs; at the server's priority the 100-client generator (parsing every answer) takes a
CPU from the server, which a real client on another machine would not. 0 reproduces that."""


def _start(root: Path, db_url: str, workers: int,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """`gpu-advisor serve` with JSON logs, its stderr kept in the temp directory."""
    return server.start(db_url=db_url, workers=workers, root=root,
                        env={"GPU_ADVISOR_LOG_JSON": "true", **(env or {})},
                        log_name=f"gpu-advisor-overload-{os.getpid()}-{time.monotonic_ns()}.log")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _probe_healthz(base: str, seconds: float) -> list[float]:
    """GET /healthz every 100 ms for ``seconds``; latencies in ms (one connection, kept alive)."""
    out: list[float] = []
    stop_at = time.monotonic() + seconds
    with httpx.Client(base_url=base, timeout=120) as client:
        while time.monotonic() < stop_at:
            start = time.perf_counter()
            if client.get("/healthz").status_code == 200:
                out.append((time.perf_counter() - start) * 1e3)
            time.sleep(0.1)
    return out


async def _recommenders(base: str, seconds: float, clients: int) -> dict[str, Any]:
    codes: Counter[str] = Counter()
    ok_ms: list[float] = []
    retry_after_missing = 0
    errors: list[str] = []
    t0 = time.monotonic()
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients + 8, max_keepalive_connections=clients + 8)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:

        async def recommender() -> None:
            nonlocal retry_after_missing
            while time.monotonic() < stop_at:
                start = time.perf_counter()
                try:
                    r = await client.post("/v1/recommendations", json=BODY)
                except httpx.HTTPError as exc:
                    codes[type(exc).__name__] += 1
                    errors.append(f"{time.monotonic() - t0:.1f}s {exc!r}")
                    await asyncio.sleep(0.1)
                    continue
                codes[str(r.status_code)] += 1
                if r.status_code == 200:
                    ok_ms.append((time.perf_counter() - start) * 1e3)
                elif r.status_code == 503:
                    if "retry-after" not in r.headers:
                        retry_after_missing += 1
                    await asyncio.sleep(0.05)  # a polite client would honour Retry-After

        await asyncio.gather(*(recommender() for _ in range(clients)))
    return {
        "status_counts": dict(sorted(codes.items())),
        "only_200_and_503": set(codes) <= {"200", "503"},
        "retry_after_missing_on_503": retry_after_missing,
        "client_errors": errors[:10],
        "ok_p50_ms": round(_pct(ok_ms, 0.5), 1), "ok_p99_ms": round(_pct(ok_ms, 0.99), 1),
    }


def _load_process(base: str, seconds: float, clients: int, nice: int) -> dict[str, Any]:
    """The load generator, in its own process at ``nice`` (see :data:`LOADGEN_NICE`)."""
    if nice:
        os.nice(nice)
    return asyncio.run(_recommenders(base, seconds, clients))


def _load(base: str, seconds: float, clients: int, nice: int) -> dict[str, Any]:
    # The 100 clients run in another process, so their event loop does not add to the /healthz
    # latency measured here; this process probes /healthz at normal priority meanwhile.
    with ProcessPoolExecutor(1) as pool:
        load = pool.submit(_load_process, base, seconds, clients, nice)
        health_ms = _probe_healthz(base, seconds)
        result = load.result()
    return {
        **result,
        "healthz_samples": len(health_ms),
        "healthz_p50_ms": round(_pct(health_ms, 0.5), 1),
        "healthz_p99_ms": round(_pct(health_ms, 0.99), 1),
        "healthz_max_ms": round(max(health_ms, default=float("nan")), 1),
        "healthz_mean_ms": round(statistics.fmean(health_ms), 1) if health_ms else None,
    }


def run(root: Path = ROOT, workers: int = WORKERS, seconds: float = SECONDS,
        clients: int = CLIENTS) -> dict[str, Any]:
    db_url = f"sqlite:///{tempfile.mkdtemp(prefix='gpu-advisor-overload-')}/overload.db"
    proc, base = _start(root, db_url, workers)
    try:
        result = _load(base, seconds, clients, LOADGEN_NICE)
    finally:
        server.stop(proc)
    result.update(workers=workers, clients=clients, seconds=seconds, cpus=os.cpu_count(),
                  database="sqlite", workload="llm-training-llama-2-70b, limit 100",
                  loadgen_nice=LOADGEN_NICE)
    result["healthz_p99_target_met"] = result["healthz_p99_ms"] < TARGET_HEALTHZ_P99_MS
    result["healthz_p99_under_100_ms"] = result["healthz_p99_ms"] < 100.0
    return result


def summary_lines(result: dict[str, Any]) -> list[str]:
    codes = ", ".join(f"{n}x{code}" for code, n in result["status_counts"].items())
    met = "met" if result["only_200_and_503"] and result["healthz_p99_target_met"] else (
        "**missed**")
    return [
        f"Overload ({result['clients']} concurrent `POST /v1/recommendations` clients, "
        f"{result['seconds']:g} s, `serve --workers {result['workers']}`, {result['database']}): "
        f"{codes}; 200s p50 {result['ok_p50_ms']} ms; `/healthz` p50 {result['healthz_p50_ms']}"
        f" ms, p99 {result['healthz_p99_ms']} ms (target: only 200/503 and p99 < "
        f"{TARGET_HEALTHZ_P99_MS:g} ms: {met}; p99 < 100 ms: "
        f"{'met' if result['healthz_p99_under_100_ms'] else '**missed**'}; load generator at "
        f"nice {result['loadgen_nice']}).",
    ]


def main() -> dict[str, Any]:
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = run()
    (RESULTS / "overload.json").write_text(json.dumps(result, indent=2) + "\n")
    print("  " + json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else WORKERS
    print(json.dumps(run(root, workers), indent=2))
