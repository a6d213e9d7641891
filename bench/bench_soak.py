"""Soak: mixed traffic for BENCH_SOAK_SECONDS (default 600) against `gpu-advisor serve --workers 2`.

A long-running server must not grow. The snapshot cache used to call
gc.freeze() on every rebuild, so every catalog write leaked the old snapshot; the soak is the
evidence that it no longer does. Traffic (loopback, BENCH_SOAK_CLIENTS concurrent clients, 4):
GETs of /v1/gpus and /v1/quotes with filters, POST /v1/estimates and /v1/recommendations with
varied bench_http.WORKLOADS, a few admin writes (GPU and quote PATCHes, which change the catalog
and so rebuild the snapshots, and workload create/delete) and occasional 404/422 requests.

Beside it, hostile background load: SOAK_SLOW_UPLOADERS clients trickling request
bodies the whole time (each cut by the body timeout, then back), and every
BENCH_SOAK_FLOOD_EVERY_SECONDS (60) a read flood of SOAK_FLOOD_CLIENTS clients of
GET /v1/quotes?limit=500 for SOAK_FLOOD_SECONDS; their answers count towards the 5xx check.

Recorded: the RSS of the server's worker processes (VmRSS summed over uvicorn's worker processes,
found through the process tree; the process itself with one worker) after a warm-up
(BENCH_SOAK_WARMUP_SECONDS, 20), every BENCH_SOAK_SAMPLE_SECONDS (30) and at the end; status
counts, which must be only 2xx/4xx/503 (5xx other than 503 counted apart); the garbage
collector's pauses (target p99 < 10 ms), from ``gpu_advisor_gc_pause_seconds`` and
``gpu_advisor_gc_pause_max_seconds`` in one /metrics scrape at the end: every pause since the
worker began serving (warm-up traffic included), p50/p99 as Prometheus' histogram_quantile
interpolates them and the bucket bound they fall under, the longest exactly; all workers' when
/metrics sums the processes (prometheus_client multiprocess mode, told by the server's
``gpu_advisor_metrics_workers_merged`` gauge), else the one worker that answered the scrape
(``gc_pauses.scope``). Results: bench/results/soak.json. BENCH_SOAK_SECONDS=0 skips it in
`python -m bench`.

`python -m bench.bench_soak [ROOT] [WORKERS]` runs the server from another source tree (e.g. an
exported older commit, WORKERS 1 when it has no --workers), for before/after figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench import server
from bench.bench_http import WORKLOADS
from bench.bench_overload import _start
from bench.hostile_load import SlowUploaders, count_500, read_flood

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SECONDS = float(os.environ.get("BENCH_SOAK_SECONDS", "600"))
WARMUP_SECONDS = float(os.environ.get("BENCH_SOAK_WARMUP_SECONDS", "20"))
SAMPLE_SECONDS = float(os.environ.get("BENCH_SOAK_SAMPLE_SECONDS", "30"))
CLIENTS = int(os.environ.get("BENCH_SOAK_CLIENTS", "4"))
FLOOD_EVERY_SECONDS = float(os.environ.get("BENCH_SOAK_FLOOD_EVERY_SECONDS", "60"))
SOAK_SLOW_UPLOADERS = 2
SOAK_FLOOD_CLIENTS = 50
SOAK_FLOOD_SECONDS = 3.0
WORKERS = 2
ADMIN_KEY = "gpa_benchsoak001_" + "b" * 42
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}
VENDORS = ["NVIDIA", "AMD", "Intel", "nvidia"]
FORM_FACTORS = ["sxm", "oam", "pcie", "workstation"]
PRECISIONS = ["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
SORTS = ["slug", "-slug", "name", "vendor", "-launch_year", "memory_gb", "-memory_gb"]
PRICINGS = ["on_demand", "spot", "reserved_1y", "reserved_3y", "purchase"]
LEAK_TOLERANCE = 0.10
"""End RSS above the mid-run RSS by more than this share reads as a leak (allocator noise and
the last bounded-cache fills are a few %)."""


# Collector pauses, from /metrics.

def _labels(text: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)="([^"]*)"', text))


def gc_pauses(metrics_text: str) -> dict[str, Any] | None:
    """p50, p99 and max of the collector's pauses [ms] in a /metrics text (None when the
    server does not export them)."""
    buckets: dict[float, float] = {}
    counts: dict[str, float] = {}
    longest = 0.0
    for line in metrics_text.splitlines():
        name, _, rest = line.partition("{")
        if not rest:
            continue
        labels_text, _, value = rest.rpartition("} ")
        labels = _labels(labels_text)
        if name == "gpu_advisor_gc_pause_seconds_bucket":
            le = float(labels["le"])  # "+Inf" -> inf
            buckets[le] = buckets.get(le, 0.0) + float(value)
        elif name == "gpu_advisor_gc_pause_seconds_count":
            counts[labels["generation"]] = counts.get(labels["generation"], 0.0) + float(value)
        elif name == "gpu_advisor_gc_pause_max_seconds":
            longest = max(longest, float(value))
    if not buckets:
        return None
    bounds = sorted(buckets)
    total = buckets[bounds[-1]]

    def quantile(q: float) -> tuple[float | None, float | None]:
        """(histogram_quantile's linear interpolation, the bucket bound) [ms]."""
        if not total:
            return None, None
        rank, below, lower = q * total, 0.0, 0.0
        for bound in bounds:
            if buckets[bound] >= rank:
                if bound == float("inf"):
                    return round(lower * 1e3, 3), None
                share = (rank - below) / (buckets[bound] - below) if buckets[bound] > below \
                    else 1.0
                return round((lower + (bound - lower) * share) * 1e3, 3), bound * 1e3
            below, lower = buckets[bound], bound
        return None, None

    (p50, p50_bound), (p99, p99_bound) = quantile(0.5), quantile(0.99)
    return {"pauses": int(total), "by_generation": {g: int(n) for g, n in sorted(counts.items())},
            "p50_ms": p50, "p50_at_most_ms": p50_bound, "p99_ms": p99,
            "p99_at_most_ms": p99_bound, "max_ms": round(longest * 1e3, 3)}


# Process tree and RSS.

def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses; split after the last ')'.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def worker_pids(server_pid: int) -> list[int]:
    """uvicorn's worker processes (children of the supervisor other than multiprocessing's
    resource tracker); the server process itself when it has none (one worker)."""
    kids = [p for p in _children(server_pid) if "resource_tracker" not in _cmdline(p)]
    return sorted(kids) or [server_pid]


def rss_sample(server_pid: int, t0: float) -> dict[str, Any]:
    workers = {pid: _rss_kb(pid) for pid in worker_pids(server_pid)}
    tree = [server_pid, *_children(server_pid)]
    return {
        "t_s": round(time.monotonic() - t0, 1),
        "workers_rss_mb": round(sum(workers.values()) / 1024, 1),
        "per_worker_rss_mb": {str(pid): round(kb / 1024, 1) for pid, kb in workers.items()},
        "tree_rss_mb": round(sum(_rss_kb(p) for p in tree) / 1024, 1),
    }


# Traffic.

def _workload(rng: random.Random) -> dict[str, Any]:
    """One of bench_http.WORKLOADS with its sizes varied, so caches see new keys."""
    name = rng.choice(list(WORKLOADS))
    body = json.loads(json.dumps(WORKLOADS[name]))
    if body["kind"] == "training":
        body["training"]["batch_size"] = rng.choice([256, 512, 1024, 2048])
        body["training"]["seq_len"] = rng.choice([2048, 4096, 8192])
        body["training"]["tokens"] = rng.choice([1e10, 5e10, 2e11])
    elif body.get("model", {}).get("preset") == "resnet-50":
        body["inference"]["batch_size"] = rng.choice([16, 32, 64, 128])
        body["inference"]["target_requests_per_s"] = rng.choice([500, 1000, 2000, 4000])
    elif body["kind"] == "inference":
        body["inference"]["prompt_tokens"] = rng.randint(64, 4096)
        body["inference"]["output_tokens"] = rng.randint(16, 1024)
        body["inference"]["target_requests_per_s"] = rng.choice([1, 5, 20, 50])
    else:
        body["compute"]["total_tflop"] = rng.choice([1e4, 1e5, 5e5, 1e6])
        body["compute"]["memory_gb"] = rng.choice([8, 24, 60, 120])
    return body


class Traffic:
    def __init__(self, client: httpx.AsyncClient, gpus: list[str], quotes: list[str],
                 seed: int) -> None:
        self.client, self.gpus, self.quotes = client, gpus, quotes
        self.rng = random.Random(seed)
        self.codes: Counter[str] = Counter()
        self.routes: Counter[str] = Counter()
        self.unexpected: list[str] = []
        self.admin_writes = 0

    async def _call(self, label: str, method: str, path: str,
                    **kwargs: Any) -> httpx.Response | None:
        self.routes[label] += 1
        try:
            r = await self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            self.codes[type(exc).__name__] += 1
            if len(self.unexpected) < 20:
                self.unexpected.append(f"{label}: {exc!r}")
            await asyncio.sleep(0.1)
            return None
        self.codes[str(r.status_code)] += 1
        if r.status_code >= 500 and r.status_code != 503 and len(self.unexpected) < 20:
            self.unexpected.append(f"{label}: {r.status_code} {r.text[:200]}")
        if r.status_code == 503:
            await asyncio.sleep(0.05)  # a polite client would honour Retry-After
        return r

    async def _admin_write(self) -> None:
        rng = self.rng
        self.admin_writes += 1
        kind = rng.random()
        if kind < 0.4:  # a catalog change: every worker's snapshots are rebuilt
            slug = rng.choice(self.gpus)
            got = await self._call("GET /v1/gpus/{slug}", "GET", f"/v1/gpus/{slug}")
            if got is not None and got.status_code == 200:
                await self._call("PATCH /v1/gpus/{slug}", "PATCH", f"/v1/gpus/{slug}",
                                 json={"notes": f"soak {rng.randrange(10**9)}"},
                                 headers={**AUTH, "If-Match": got.headers.get("etag", "*")})
        elif kind < 0.7:
            qid = rng.choice(self.quotes)
            got = await self._call("GET /v1/quotes/{id}", "GET", f"/v1/quotes/{qid}")
            if got is not None and got.status_code == 200:
                price = round(got.json()["price_usd_per_hour"] * rng.uniform(0.95, 1.05), 4)
                await self._call("PATCH /v1/quotes/{id}", "PATCH", f"/v1/quotes/{qid}",
                                 json={"price_usd_per_hour": max(price, 0.01)},
                                 headers={**AUTH, "If-Match": got.headers.get("etag", "*")})
        else:
            body = {**_workload(rng), "name": f"soak-{rng.randrange(10**9)}", "objective": "cost"}
            made = await self._call("POST /v1/workloads", "POST", "/v1/workloads", json=body,
                                    headers=AUTH)
            if made is not None and made.status_code in (200, 201):
                await self._call("DELETE /v1/workloads/{id}", "DELETE",
                                 f"/v1/workloads/{made.json()['id']}", headers=AUTH)

    async def one(self) -> None:
        rng = self.rng
        x = rng.random()
        if x < 0.25:
            params: dict[str, Any] = {"limit": rng.choice([5, 20, 100]),
                                      "sort": rng.choice(SORTS)}
            if rng.random() < 0.5:
                params["vendor"] = rng.choice(VENDORS)
            if rng.random() < 0.3:
                params["form_factor"] = rng.choice(FORM_FACTORS)
            if rng.random() < 0.3:
                params["precision"] = rng.choice(PRECISIONS)
            if rng.random() < 0.3:
                params["min_memory_gb"] = rng.choice([16, 40, 80, 141])
            if rng.random() < 0.2:
                params["q"] = rng.choice(["h100", "a100", "mi300", "hopper", "l4"])
            await self._call("GET /v1/gpus", "GET", "/v1/gpus", params=params)
        elif x < 0.45:
            params = {"limit": rng.choice([10, 50, 200]),
                      "freshness": rng.choice(["all", "fresh", "stale"])}
            if rng.random() < 0.5:
                params["gpu"] = rng.choice(self.gpus)
            if rng.random() < 0.4:
                params["pricing"] = rng.choice(PRICINGS)
            if rng.random() < 0.3:
                params["max_price_usd_per_hour"] = rng.choice([1, 2.5, 5, 20])
            await self._call("GET /v1/quotes", "GET", "/v1/quotes", params=params)
        elif x < 0.65:
            await self._call("POST /v1/estimates", "POST", "/v1/estimates", json={
                "workload": _workload(rng), "gpu_slug": rng.choice(self.gpus),
                "gpu_count": rng.choice([1, 2, 4, 8, 16])})
        elif x < 0.90:
            body = {**_workload(rng), "limit": rng.choice([1, 5, 20, 100]),
                    "objective": rng.choice(["cost", "time"])}
            await self._call("POST /v1/recommendations", "POST", "/v1/recommendations",
                             json=body)
        elif x < 0.94:
            await self._admin_write()
        elif x < 0.97:  # 404
            await self._call("GET /v1/gpus/{missing}", "GET",
                             f"/v1/gpus/no-such-gpu-{rng.randrange(10**6)}")
        else:  # 422
            if rng.random() < 0.5:
                await self._call("GET /v1/gpus?limit=0", "GET", "/v1/gpus", params={"limit": 0})
            else:
                await self._call("POST /v1/recommendations {bad}", "POST",
                                 "/v1/recommendations", json={"kind": "training"})


async def _soak(base: str, server_pid: int, seconds: float, warmup_s: float,
                sample_s: float, clients: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        gpus = [g["slug"] for g in (await client.get("/v1/gpus", params={"limit": 500})).json()[
            "data"]]
        quotes = [q["id"] for q in (await client.get("/v1/quotes", params={"limit": 500})).json()[
            "data"] if q.get("price_usd_per_hour") is not None]  # not purchase offers
        if not gpus or not quotes:
            raise RuntimeError("the seeded catalog is empty")

        async def drive(traffic: Traffic, stop_at: float) -> None:
            while time.monotonic() < stop_at:
                await traffic.one()

        t_start = time.monotonic()
        warm = Traffic(client, gpus, quotes, seed=-1)
        await asyncio.gather(*(drive(warm, t_start + warmup_s) for _ in range(clients)))

        t0 = time.monotonic()
        samples = [rss_sample(server_pid, t0)]
        traffic = Traffic(client, gpus, quotes, seed=10)
        stop_at = t0 + seconds

        async def sampler() -> None:
            while True:
                wait = min(sample_s, stop_at - time.monotonic())
                if wait <= 0.5:
                    return
                await asyncio.sleep(wait)
                if time.monotonic() < stop_at - 0.5:
                    samples.append(rss_sample(server_pid, t0))

        floods: list[dict[str, Any]] = []

        async def flooder() -> None:
            while time.monotonic() + FLOOD_EVERY_SECONDS < stop_at:
                await asyncio.sleep(FLOOD_EVERY_SECONDS)
                floods.append(await read_flood(base, SOAK_FLOOD_SECONDS, SOAK_FLOOD_CLIENTS))

        uploads = SlowUploaders(base, SOAK_SLOW_UPLOADERS).start()
        try:
            await asyncio.gather(sampler(), flooder(),
                                 *(drive(traffic, stop_at) for _ in range(clients)))
        finally:
            upload_answers = await asyncio.to_thread(uploads.stop)
        elapsed = time.monotonic() - t0
        samples.append(rss_sample(server_pid, t0))
        scrape = await client.get("/metrics", headers=AUTH)
        pauses = gc_pauses(scrape.text) if scrape.status_code == 200 else None
        if pauses is not None:
            merged = workers_merged(scrape.text)
            pauses["scope"] = ("every worker (summed)" if merged
                               else "the worker that answered the scrape" if merged is False
                               else "not reported by the server")
    codes = traffic.codes
    total = sum(codes.values())
    five_xx = {c: n for c, n in codes.items() if c.isdigit() and c[0] == "5" and c != "503"}
    other = {c: n for c, n in codes.items() if not c.isdigit()}
    hostile_500 = count_500(upload_answers, *(f["status_counts"] for f in floods),
                            *(f["bystander_status_counts"] for f in floods))
    start_mb, end_mb = samples[0]["workers_rss_mb"], samples[-1]["workers_rss_mb"]
    # the engine's bounded caches fill during the first minutes: a leak is growth that goes
    # on, so the second half of the run is judged on its own
    mid_t = samples[-1]["t_s"] / 2
    mid_mb = min(samples, key=lambda s: abs(s["t_s"] - mid_t))["workers_rss_mb"]
    return {
        "requests": total,
        "requests_per_s": round(total / elapsed, 1),
        "status_counts": dict(sorted(codes.items())),
        "count_2xx": sum(n for c, n in codes.items() if c.startswith("2")),
        "count_4xx": sum(n for c, n in codes.items() if c.startswith("4")),
        "count_503": codes.get("503", 0),
        "count_5xx_other": sum(five_xx.values()),
        "client_errors": sum(other.values()),
        "only_2xx_4xx_503": not five_xx and not other and not hostile_500,
        "slow_uploaders": SOAK_SLOW_UPLOADERS,
        "slow_upload_answers": upload_answers,
        "read_floods": floods,
        "hostile_count_500": hostile_500,
        "unexpected": traffic.unexpected,
        "routes": dict(sorted(traffic.routes.items())),
        "admin_write_rounds": traffic.admin_writes,
        "warmup_requests": sum(warm.codes.values()),
        "rss_start_mb": start_mb,
        "rss_end_mb": end_mb,
        "rss_growth_mb": round(end_mb - start_mb, 1),
        "rss_growth_pct": round(100 * (end_mb - start_mb) / start_mb, 1) if start_mb else None,
        "rss_max_mb": max(s["workers_rss_mb"] for s in samples),
        "rss_mid_mb": mid_mb,
        "rss_second_half_growth_pct": round(100 * (end_mb - mid_mb) / mid_mb, 1)
        if mid_mb else None,
        "rss_samples": samples,
        "gc_pauses": pauses,
    }


def workers_merged(scrape: str) -> bool | None:
    """Whether a /metrics scrape sums every worker (the server's
    ``gpu_advisor_metrics_workers_merged`` gauge); None when the server does not say (a tree
    older than the gauge)."""
    found = re.search(r"^gpu_advisor_metrics_workers_merged ([0-9.e+-]+)$", scrape, re.M)
    return None if found is None else float(found.group(1)) == 1.0


def run(root: Path = ROOT, workers: int = WORKERS, seconds: float = SECONDS,
        warmup_s: float = WARMUP_SECONDS, sample_s: float = SAMPLE_SECONDS,
        clients: int = CLIENTS) -> dict[str, Any]:
    db_url = f"sqlite:///{tempfile.mkdtemp(prefix='gpu-advisor-soak-')}/soak.db"
    proc, base = _start(root, db_url, workers, env={"GPU_ADVISOR_BOOTSTRAP_ADMIN_KEY": ADMIN_KEY})
    try:
        if workers > 1:  # the supervisor spawns its workers; wait until all are up
            deadline = time.monotonic() + 30
            while len(worker_pids(proc.pid)) < workers and time.monotonic() < deadline:
                time.sleep(0.2)
        result = asyncio.run(_soak(base, proc.pid, seconds, warmup_s, sample_s, clients))
        result["server_alive_at_end"] = proc.poll() is None
    finally:
        server.stop(proc)
    result.update(workers=workers, clients=clients, seconds=seconds, warmup_seconds=warmup_s,
                  sample_seconds=sample_s, cpus=os.cpu_count(), database="sqlite",
                  source="this tree" if root.resolve() == ROOT.resolve() else root.name)
    result["rss_growth_within_tolerance"] = (
        result["rss_second_half_growth_pct"] is not None
        and result["rss_second_half_growth_pct"] <= 100 * LEAK_TOLERANCE)
    return result


def summary_lines(result: dict[str, Any]) -> list[str]:
    codes = ", ".join(f"{n}x{code}" for code, n in result["status_counts"].items())
    met = "met" if result["only_2xx_4xx_503"] and result["server_alive_at_end"] else "**missed**"
    leak = "met" if result["rss_growth_within_tolerance"] else "**missed**"
    lines = [
        f"Soak ({result['seconds']:g} s of mixed traffic, {result['clients']} clients, "
        f"`serve --workers {result['workers']}`, {result['database']}; "
        f"{result['requests_per_s']} req/s): workers' RSS {result['rss_start_mb']} MB after "
        f"warm-up -> {result['rss_end_mb']} MB at the end ({result['rss_growth_mb']:+} MB, "
        f"{result['rss_growth_pct']:+}%; max {result['rss_max_mb']} MB; second half "
        f"{result['rss_mid_mb']} -> {result['rss_end_mb']} MB, "
        f"{result['rss_second_half_growth_pct']:+}%, leak tolerance "
        f"{100 * LEAK_TOLERANCE:g}%: {leak}); {codes} "
        f"(target: only 2xx/4xx/503: {met}; 5xx other than 503: "
        f"{result['count_5xx_other']}).",
        *gc_lines(result.get("gc_pauses")),
    ]
    if "slow_upload_answers" in result:
        floods = result["read_floods"]
        flood_codes: Counter[str] = Counter()
        for flood in floods:
            flood_codes.update(flood["status_counts"])
        lines.append(
            f"Beside it: {result['slow_uploaders']} slow uploads all along (answered "
            f"{dict(result['slow_upload_answers'])}) and {len(floods)} read floods of "
            f"{SOAK_FLOOD_CLIENTS} clients x {SOAK_FLOOD_SECONDS:g} s (answered "
            f"{dict(sorted(flood_codes.items()))}; bystander p99 "
            f"{max((f['bystander_p99_ms'] for f in floods), default=float('nan'))} ms); 500s: "
            f"{result['hostile_count_500']}.")
    return lines


def gc_lines(pauses: dict[str, Any] | None) -> list[str]:
    if not pauses:
        return ["Collector pauses: not exported by this server."]
    met = "met" if pauses["p99_ms"] is not None and pauses["p99_ms"] < 10 else "**missed**"
    return [f"Collector pauses ({pauses['scope']}, {pauses['pauses']} since it began serving, "
            f"by generation {pauses['by_generation']}): p50 {pauses['p50_ms']} ms, p99 "
            f"{pauses['p99_ms']} ms (bucket <= {pauses['p99_at_most_ms']} ms), max "
            f"{pauses['max_ms']} ms (target p99 < 10 ms: {met})."]


def main() -> dict[str, Any]:
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = run()
    (RESULTS / "soak.json").write_text(json.dumps(result, indent=2) + "\n")
    print("  " + json.dumps({k: v for k, v in result.items() if k != "rss_samples"}), flush=True)
    return result


if __name__ == "__main__":
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else WORKERS
    if root == ROOT and workers == WORKERS:
        main()  # this tree: recorded in bench/results/soak.json
    else:  # another tree or worker count (an A/B run): printed only
        print(json.dumps(run(root, workers), indent=2))
