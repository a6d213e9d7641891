"""HTTP throughput and latency of a real server (uvicorn, one worker) on loopback.

Load generator: `wrk` when installed, else bench/loadgen.py. Results: bench/results/http.json.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench import loadgen

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "16"))

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


_WRK_LUA = """
wrk.method = "{method}"
wrk.body = {body}
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
  io.write(string.format("JSON {{\\"requests\\": %d, \\"errors\\": %d, \\"seconds\\": %f, "
    .. "\\"p50_us\\": %f, \\"p99_us\\": %f}}\\n", summary.requests,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.status + summary.errors.timeout,
    summary.duration / 1e6, latency:percentile(50), latency:percentile(99)))
end
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(db_url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "--database-url", db_url, "serve",
         "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start")


def _wrk(url: str, method: str, body: Any) -> dict[str, Any]:
    lua_body = json.dumps(json.dumps(body)) if body is not None else "nil"
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(_WRK_LUA.format(method=method, body=lua_body))
        script = fh.name
    try:
        out = subprocess.run(
            ["wrk", "-t", "2", "-c", str(CONNECTIONS), "-d", f"{SECONDS:g}s", "--timeout", "30s",
             "-s", script, url],
            capture_output=True, text=True, check=True, timeout=SECONDS + 60,
        ).stdout
    finally:
        os.unlink(script)
    match = re.search(r"^JSON (.*)$", out, re.M)
    assert match, out
    raw = json.loads(match.group(1))
    return {
        "requests": raw["requests"], "errors": raw["errors"], "seconds": raw["seconds"],
        "requests_per_s": raw["requests"] / raw["seconds"],
        "p50_ms": raw["p50_us"] / 1e3, "p99_ms": raw["p99_us"] / 1e3,
    }


def _load(url: str, method: str = "GET", body: Any = None) -> dict[str, Any]:
    if shutil.which("wrk"):
        return _wrk(url, method, body)
    return loadgen.run(url, method=method, body=body, connections=CONNECTIONS, seconds=SECONDS)


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{name} ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def main() -> dict[str, Any]:
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gpu-advisor-bench-")
    proc, base = start_server(f"sqlite:///{tmp}/bench.db")
    routes: list[tuple[str, str, str, Any]] = [
        ("GET /healthz", "GET", "/healthz", None),
        ("GET /v1/gpus", "GET", "/v1/gpus", None),
        ("POST /v1/estimates", "POST", "/v1/estimates", {
            "gpu_slug": "nvidia-h100-sxm5-80gb", "gpu_count": 8,
            "workload": WORKLOADS["llm-inference-llama-3.1-8b"]}),
    ] + [(f"POST /v1/recommendations [{name}]", "POST", "/v1/recommendations", body)
         for name, body in WORKLOADS.items()]
    results: dict[str, Any] = {}
    try:
        for _, method, path, body in routes:  # warm up every route once
            r = httpx.request(method, base + path, json=body, timeout=60)
            assert r.status_code == 200, (path, r.status_code, r.text[:300])
        before = httpx.get(base + "/metrics").text
        for label, method, path, body in routes:
            results[label] = _load(base + path, method, body)
            print(f"  {label:55s} {results[label]['requests_per_s']:9.1f} req/s  "
                  f"p50 {results[label]['p50_ms']:8.2f} ms  p99 {results[label]['p99_ms']:8.2f} ms",
                  flush=True)
        after = httpx.get(base + "/metrics").text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    healthz = results["GET /healthz"]["requests_per_s"]
    for row in results.values():
        row["ratio_to_healthz"] = row["requests_per_s"] / healthz if healthz else None
    name = "gpu_advisor_recommendation_compute_seconds"
    count = _metric(after, f"{name}_count") - _metric(before, f"{name}_count")
    total = _metric(after, f"{name}_sum") - _metric(before, f"{name}_sum")
    out = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_generator": "wrk" if shutil.which("wrk") else "bench/loadgen.py (httpx asyncio)",
        "connections": CONNECTIONS, "seconds_per_route": SECONDS,
        "server": "uvicorn, 1 worker, SQLite, seeded catalog, JSON access logs on",
        "cpus": os.cpu_count(),
        "routes": results,
        "server_recommendation_compute_mean_ms_from_metrics":
            (total / count * 1e3) if count else None,
        "server_recommendations_counted": int(count),
    }
    (RESULTS / "http.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
