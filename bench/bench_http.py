"""HTTP throughput and latency of a real server (uvicorn, one worker) on loopback.

Load generator: `wrk` when installed (BENCH_THREADS threads, default 2), else bench/loadgen.py.
Results: bench/results/http.json.

The headline route, :data:`VARIED_ROUTE`, posts a different LLM-inference workload in every
request (bench/varied.py: wrk's ``request`` hook, seeded per thread from BENCH_SEED), so no
whole-answer cache can stand in for the ranking; the fixed-body routes are kept beside it.
Before the load, a handful of the generator's bodies (from streams wrk does not send) must
answer 200; after it, wrk's first body per thread must equal Python's. Every route records its
non-2xx answers twice: wrk's count (``summary.errors.status``: status >= 400; this API sends no
1xx or 3xx here) and the server's own, from the /metrics request counter.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench import floor_app, loadgen, server, varied

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "16"))
THREADS = int(os.environ.get("BENCH_THREADS", "2"))
VARIED_ROUTE = "POST /v1/recommendations [varied LLM inference]"
"""The headline route: its ratio to /healthz is the throughput target."""
VALIDITY_CHECK_BODIES = 4
"""Bodies per check stream posted with httpx before the load (each must answer 200)."""

# The four benchmark workloads (request bodies of POST /v1/recommendations).
WORKLOADS: dict[str, dict[str, Any]] = {
    "llm-training-llama-2-70b": {
        "kind": "training", "model": {"preset": "llama-2-70b"}, "precision": "bf16",
        "training": {"batch_size": 1024, "seq_len": 4096, "tokens": 2e11,
                     "activation_checkpointing": True, "sharding": "auto"},
    },
    "llm-inference-llama-3.1-8b": {
        "kind": "inference", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
        "inference": {"prompt_tokens": 1024, "output_tokens": 256, "max_ttft_ms": 500,
                      "max_tpot_ms": 50, "target_requests_per_s": 20},
    },
    "cnn-inference-resnet-50-int8": {
        "kind": "inference", "model": {"preset": "resnet-50"}, "precision": "int8",
        "inference": {"batch_size": 64, "max_latency_ms": 50, "target_requests_per_s": 2000},
    },
    "fp64-compute": {
        "kind": "compute", "precision": "fp64",
        "compute": {"total_tflop": 500000, "total_gb_moved": 20000, "memory_gb": 60},
    },
}


_FIXED_LUA = """
wrk.method = "{method}"
wrk.body = {body}
wrk.headers["Content-Type"] = "application/json"
"""

_DONE_LUA = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("JSON {\\"requests\\": %d, \\"connect\\": %d, \\"read\\": %d, "
    .. "\\"write\\": %d, \\"status\\": %d, \\"timeout\\": %d, \\"seconds\\": %f, "
    .. "\\"p50_us\\": %f, \\"p99_us\\": %f}\\n", summary.requests, e.connect, e.read, e.write,
    e.status, e.timeout, summary.duration / 1e6, latency:percentile(50),
    latency:percentile(99)))
end
"""


def start_server(db_url: str, *, floor: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    """`gpu-advisor serve` (one worker) on a free port; ``floor``: bench/floor_app.py's server
    (the same app, the engine's ranking replaced by a fixed answer) instead."""
    if floor:
        return server.start([sys.executable, "-m", "bench.floor_app", db_url, "{port}"])
    return server.start(db_url=db_url)


def _wrk(url: str, script_text: str) -> tuple[dict[str, Any], dict[int, str]]:
    """Run wrk with the script (plus the ``done`` hook); the route's figures and, for the varied
    script, each thread's first body (thread number -> JSON text)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(script_text + _DONE_LUA)
        script = fh.name
    try:
        out = subprocess.run(
            ["wrk", "-t", str(THREADS), "-c", str(CONNECTIONS), "-d", f"{SECONDS:g}s",
             "--timeout", "30s", "-s", script, url],
            capture_output=True, text=True, check=True, timeout=SECONDS + 60,
        ).stdout
    finally:
        os.unlink(script)
    match = re.search(r"^JSON (.*)$", out, re.M)
    assert match, out
    raw = json.loads(match.group(1))
    socket_errors = {k: raw[k] for k in ("connect", "read", "write", "timeout")}
    row = {
        "requests": raw["requests"], "errors": sum(socket_errors.values()) + raw["status"],
        "non_2xx": raw["status"], "socket_errors": socket_errors, "seconds": raw["seconds"],
        "requests_per_s": raw["requests"] / raw["seconds"],
        "p50_ms": raw["p50_us"] / 1e3, "p99_ms": raw["p99_us"] / 1e3,
    }
    firsts = {int(t): text for t, text in re.findall(r"^FIRST (\d+) (.*)$", out, re.M)}
    return row, firsts


def _load(url: str, method: str = "GET", body: Any = None) -> dict[str, Any]:
    if shutil.which("wrk"):
        lua_body = json.dumps(json.dumps(body)) if body is not None else "nil"
        return _wrk(url, _FIXED_LUA.format(method=method, body=lua_body))[0]
    return loadgen.run(url, method=method, body=body, connections=CONNECTIONS, seconds=SECONDS)


def _load_varied(url: str) -> dict[str, Any]:
    """The varied route: wrk's Lua generator, or loadgen with the same generator in Python."""
    if shutil.which("wrk"):
        row, firsts = _wrk(url, varied.wrk_script(varied.SEED))
        expected = {t: varied.VariedBodies(varied.SEED, t).next() for t in range(1, THREADS + 1)}
        # The Lua and the Python generator must be one generator: profile_request.py and the
        # validity check stand for what wrk sent only if they agree.
        assert firsts == expected, f"wrk's bodies differ from bench/varied.py's: {firsts}"
        return row
    stream = varied.VariedBodies(varied.SEED, 1)
    return loadgen.run(url, method="POST", body_factory=lambda: stream.next().encode(),
                       connections=CONNECTIONS, seconds=SECONDS)


def _check_varied(base: str) -> dict[str, Any]:
    """Post bodies of the varied generator (streams wrk does not send: no warm cache for it);
    each must answer 200. Returns the sizes of the first request and its answer [bytes]."""
    sample: dict[str, Any] = {}
    for thread in (THREADS + 1, THREADS + 2):
        for text in varied.VariedBodies(varied.SEED, thread).take(VALIDITY_CHECK_BODIES):
            r = httpx.post(base + "/v1/recommendations", content=text,
                           headers={"Content-Type": "application/json"}, timeout=60)
            assert r.status_code == 200, (text, r.status_code, r.text[:300])
            sample = sample or {"sample_request_bytes": len(text.encode()),
                                "sample_response_bytes": len(r.content),
                                "sample_request": json.loads(text)}
    return {**sample, "bodies_checked_200": 2 * VALIDITY_CHECK_BODIES}


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{name} ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


_COMPUTE = "gpu_advisor_recommendation_compute_seconds"


def _compute_mean_ms(before: str, after: str) -> float | None:
    """Mean engine time of the recommendations served between two /metrics texts [ms]."""
    count = _metric(after, f"{_COMPUTE}_count") - _metric(before, f"{_COMPUTE}_count")
    total = _metric(after, f"{_COMPUTE}_sum") - _metric(before, f"{_COMPUTE}_sum")
    return total / count * 1e3 if count else None


_REQUESTS_TOTAL = re.compile(r"^gpu_advisor_http_requests_total\{([^}]*)\} ([0-9.e+-]+)$", re.M)


def _status_counts(text: str, method: str, route: str) -> dict[str, float]:
    """The server's answers to ``method route`` by status, from its /metrics text."""
    out: dict[str, float] = {}
    for labels, value in _REQUESTS_TOTAL.findall(text):
        found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if found.get("method") == method and found.get("route") == route:
            out[found["status"]] = out.get(found["status"], 0.0) + float(value)
    return out


def _server_statuses(before: str, after: str, method: str, route: str) -> dict[str, int]:
    old, new = _status_counts(before, method, route), _status_counts(after, method, route)
    delta = {s: int(n - old.get(s, 0.0)) for s, n in sorted(new.items())}
    return {s: n for s, n in delta.items() if n}


def _settled_metrics(base: str, method: str, route: str) -> str:
    """/metrics once the server has answered what was in flight when the load stopped."""
    text = httpx.get(base + "/metrics").text
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.3)
        again = httpx.get(base + "/metrics").text
        if _status_counts(again, method, route) == _status_counts(text, method, route):
            return again
        text = again
    return text


def _server_side(row: dict[str, Any], before: str, after: str, method: str,
                 route: str) -> None:
    """Add the server's own counts to a route's row, and whether to flag it for non-2xx.

    The server also answers the requests in flight when the load generator closed its
    connections; nobody reads those answers, and a POST among them is a 422 (its body read
    finds the client gone: FastAPI's body error, which service/core/errors.py answers 422). So the
    server's non-2xx count flags the route only beyond those unread answers."""
    statuses = _server_statuses(before, after, method, route)
    row["server_statuses"] = statuses
    row["server_non_2xx"] = sum(n for s, n in statuses.items() if not s.startswith("2"))
    row["server_unread_at_stop"] = max(0, sum(statuses.values()) - row["requests"])
    row["server_compute_mean_ms"] = _compute_mean_ms(before, after)
    row["flag_non_2xx"] = bool(
        row["non_2xx"] or row["server_non_2xx"] > row["server_unread_at_stop"])


def floor(tmp: str) -> dict[str, Any]:
    """The floor server's routes (bench/floor_app.py) under the headline route's varied load,
    each as a ratio to that server's own /healthz in the same run: what the stack allows a
    recommendation route with a free engine, and any route with this body at all."""
    proc, base = start_server(f"sqlite:///{tmp}/floor.db", floor=True)
    rows: dict[str, Any] = {}
    try:
        _check_varied(base)  # ranks the first body: the answer the free engine then returns
        # every floor route answers a varied body with a 200
        sizes = {}
        for path in floor_app.FLOOR_ROUTES.values():
            text = varied.VariedBodies(varied.SEED, THREADS + 1).next()
            r = httpx.post(base + path, content=text,
                           headers={"Content-Type": "application/json"}, timeout=60)
            assert r.status_code == 200, (path, r.status_code, r.text[:300])
            sizes[path] = len(r.content)
        for label, path in {"GET /healthz": "/healthz", **floor_app.FLOOR_ROUTES}.items():
            row = _load(base + path) if path == "/healthz" else _load_varied(base + path)
            row["response_bytes"] = sizes.get(path)
            rows[label] = row
            print(f"  floor {label:49s} {row['requests_per_s']:9.1f} req/s  "
                  f"p50 {row['p50_ms']:8.2f} ms", flush=True)
    finally:
        server.stop(proc)
    healthz = rows["GET /healthz"]["requests_per_s"]
    for row in rows.values():
        row["ratio_to_healthz"] = row["requests_per_s"] / healthz if healthz else None
    return {"server": "bench/floor_app.py: the same app and uvicorn options, 1 worker, SQLite; "
                      "the ranking returns a fixed answer", "routes": rows}


def main() -> dict[str, Any]:
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gpu-advisor-bench-")
    proc, base = start_server(f"sqlite:///{tmp}/bench.db")
    routes: list[tuple[str, str, str, Any]] = [
        ("GET /healthz", "GET", "/healthz", None),
        (VARIED_ROUTE, "POST", "/v1/recommendations", None),
        ("GET /v1/gpus", "GET", "/v1/gpus", None),
        ("POST /v1/estimates", "POST", "/v1/estimates", {
            "gpu_slug": "nvidia-h100-sxm5-80gb", "gpu_count": 8,
            "workload": WORKLOADS["llm-inference-llama-3.1-8b"]}),
    ] + [(f"POST /v1/recommendations [{name}]", "POST", "/v1/recommendations", body)
         for name, body in WORKLOADS.items()]
    results: dict[str, Any] = {}
    try:
        for label, method, path, body in routes:  # warm up every fixed route once
            if label != VARIED_ROUTE:
                r = httpx.request(method, base + path, json=body, timeout=60)
                assert r.status_code == 200, (path, r.status_code, r.text[:300])
        sample = _check_varied(base)
        first = httpx.get(base + "/metrics").text
        for label, method, path, body in routes:
            before = httpx.get(base + "/metrics").text
            row = _load_varied(base + path) if label == VARIED_ROUTE else (
                _load(base + path, method, body))
            after = _settled_metrics(base, method, path)
            _server_side(row, before, after, method, path)
            results[label] = row
            flag = "  NON-2XX" if row["flag_non_2xx"] else ""
            print(f"  {label:55s} {row['requests_per_s']:9.1f} req/s  "
                  f"p50 {row['p50_ms']:8.2f} ms  p99 {row['p99_ms']:8.2f} ms{flag}", flush=True)
        last = httpx.get(base + "/metrics").text
    finally:
        server.stop(proc)
    healthz = results["GET /healthz"]["requests_per_s"]
    for row in results.values():
        row["ratio_to_healthz"] = row["requests_per_s"] / healthz if healthz else None
    wrk = shutil.which("wrk") is not None
    results[VARIED_ROUTE]["varied"] = {
        "generator": "bench/varied.py, " + ("in wrk's Lua request hook" if wrk
                                            else "loadgen body_factory"), "seed": varied.SEED,
        "presets": list(varied.PRESETS), "prompt_tokens": list(varied.PROMPT_TOKENS),
        "output_tokens": list(varied.OUTPUT_TOKENS),
        "target_requests_per_s": list(varied.TARGET_REQUESTS_PER_S), **sample,
    }
    out = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_generator": f"wrk, {THREADS} threads" if wrk
        else "bench/loadgen.py (httpx asyncio)",
        "connections": CONNECTIONS, "seconds_per_route": SECONDS,
        "server": "uvicorn, 1 worker, SQLite, seeded catalog, JSON access logs on",
        "cpus": os.cpu_count(),
        "headline_route": VARIED_ROUTE,
        "routes": results,
        "non_2xx_total": sum(r["non_2xx"] for r in results.values()),
        "routes_flagged_non_2xx": [k for k, r in results.items() if r["flag_non_2xx"]],
        "server_recommendation_compute_mean_ms_from_metrics": _compute_mean_ms(first, last),
        "server_recommendations_counted": int(_metric(last, f"{_COMPUTE}_count")
                                              - _metric(first, f"{_COMPUTE}_count")),
    }
    out["floor"] = floor(tmp)
    (RESULTS / "http.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
