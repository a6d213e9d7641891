"""Recommendation latency and memory against a synthetic catalog of 50, 500 and 5,000 GPUs.

The synthetic rows are derived from the seeded ones (perturbed figures, new slugs), with 40
quotes per GPU (5,000 GPUs -> 200,000 quotes), bulk-inserted into a fresh SQLite database.
Latency is the median over several in-process runs of what ``POST /v1/recommendations`` does
after parsing the body (service.workloads.service.rank_for: database reads, engine, answer
bytes), per workload, in the default summary view (``median_ms``) and in the full one
(``full_view_median_ms``), each run a new body (its amount varied: :func:`vary`), so none is
answered from the rankings cache. Memory: tracemalloc peak of one run (the
LLM-inference workload) and the process's peak RSS. Results: bench/results/scale.json.
"""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlmodel import Session

from bench.bench_http import WORKLOADS
from service.app.seeding import seed
from service.app.serving import warm_up_and_freeze
from service.catalog.models import Gpu
from service.core.config import Settings
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.quotes.models import Quote
from service.workloads.answers import View
from service.workloads.caches import AppCaches
from service.workloads.models import RecommendationQuery
from service.workloads.service import rank_for

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = tuple(int(s) for s in os.environ.get("BENCH_SCALE_SIZES", "50,500,5000").split(","))
QUOTES_PER_GPU = 40
RUNS = int(os.environ.get("BENCH_SCALE_RUNS", "3"))
_PERTURBED = ("memory_bandwidth_gb_s", "fp64_tflops", "fp64_tensor_tflops", "fp32_tflops",
              "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "int8_tops", "tdp_w",
              "interconnect_bandwidth_gb_s")


def build(n_gpus: int, directory: str) -> tuple[str, int]:
    """A fresh SQLite database holding n_gpus synthetic GPUs and 40 quotes each."""
    url = f"sqlite:///{directory}/scale-{n_gpus}.db"
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    rng = random.Random(n_gpus)
    with engine.begin() as conn:
        base_gpus = [dict(r._mapping) for r in conn.execute(select(Gpu.__table__))]
        base_quotes = [dict(r._mapping) for r in conn.execute(select(Quote.__table__))]
        conn.execute(Quote.__table__.delete())
        conn.execute(Gpu.__table__.delete())
        by_gpu: dict[str, list[dict[str, Any]]] = {}
        for q in base_quotes:
            by_gpu.setdefault(q["gpu_slug"], []).append(q)
        gpus, quotes = [], []
        for i in range(n_gpus):
            base = base_gpus[i % len(base_gpus)]
            g = {k: v for k, v in base.items() if k != "id"}
            g["slug"] = f"{base['slug'][:50]}-syn{i}"
            g["name"] = f"{base['name'][:100]} syn{i}"
            g["aliases"] = []
            for col in _PERTURBED:
                if g.get(col) is not None:
                    g[col] = g[col] * rng.uniform(0.8, 1.2)
            gpus.append(g)
            templates = by_gpu.get(base["slug"]) or base_quotes
            for j in range(QUOTES_PER_GPU):
                t = templates[j % len(templates)]
                q = {k: v for k, v in t.items() if k != "id"}
                q["gpu_slug"] = g["slug"]
                q["instance_type"] = f"{t['instance_type'][:60]}-syn{i}-{j}"
                if q.get("price_usd_per_hour") is not None:
                    q["price_usd_per_hour"] = q["price_usd_per_hour"] * rng.uniform(0.7, 1.3)
                if q.get("purchase_price_usd") is not None:
                    q["purchase_price_usd"] = q["purchase_price_usd"] * rng.uniform(0.7, 1.3)
                quotes.append(q)
        conn.execute(insert(Gpu.__table__), gpus)
        for start in range(0, len(quotes), 20_000):
            conn.execute(insert(Quote.__table__), quotes[start:start + 20_000])
    engine.dispose()
    return url, len(quotes)


def vary(body: dict[str, Any], i: int) -> dict[str, Any]:
    """``body`` with its amount scaled by 1 + i/100 (the load, the training tokens or the
    compute work): a new workload for each run, as a portal's stream of queries is, so no
    run is answered from the rankings cache or a memo of an earlier identical one."""
    out = json.loads(json.dumps(body))
    for section, field in (("inference", "target_requests_per_s"), ("training", "tokens"),
                           ("compute", "total_tflop")):
        part = out.get(section)
        if isinstance(part, dict) and part.get(field):
            part[field] = part[field] * (1 + i / 100)
            return out
    raise ValueError(f"no amount to vary in {sorted(out)}")


def _recommend(url_engine: Any, settings: Settings, caches: AppCaches,
               body: dict[str, Any], view: View = "summary") -> float:
    """Seconds to answer ``body`` as ``POST /v1/recommendations?view=...`` does after parsing
    it (:func:`service.workloads.routes.recommend_once`: rank, then the view's bytes)."""
    q = RecommendationQuery.model_validate(body)
    start = time.perf_counter()
    with Session(url_engine) as session:
        rank_for(session, submission=q, objective=q.objective, limit=q.limit,
                 settings=settings, caches=caches, now=datetime.now(UTC), end_read=True,
                 explained=view != "summary").response(view)
    return time.perf_counter() - start


def main() -> dict[str, Any]:
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gpu-advisor-scale-")
    rows: list[dict[str, Any]] = []
    for n in SIZES:
        t0 = time.perf_counter()
        url, n_quotes = build(n, tmp)
        build_s = time.perf_counter() - t0
        engine = make_engine(url)
        settings = Settings(database_url=url)
        caches = AppCaches()  # one server process's
        # as `gpu-advisor serve` does before its first request
        warm_up_and_freeze(engine, settings, caches)
        row: dict[str, Any] = {"gpus": n, "quotes": n_quotes, "build_s": round(build_s, 2),
                               "median_ms": {}}
        for name, body in WORKLOADS.items():
            if n < 5000:
                _recommend(engine, settings, caches, vary(body, 99))  # warm-up
            runs = [_recommend(engine, settings, caches, vary(body, i)) for i in range(RUNS)]
            row["median_ms"][name] = round(statistics.median(runs) * 1e3, 2)
            full = [_recommend(engine, settings, caches, vary(body, RUNS + i), "full")
                    for i in range(RUNS)]
            row.setdefault("full_view_median_ms", {})[name] = round(
                statistics.median(full) * 1e3, 2)
        tracemalloc.start()
        _recommend(engine, settings, caches, vary(WORKLOADS["llm-inference-llama-3.1-8b"], 50))
        row["tracemalloc_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
        rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        row["max_rss_mb_so_far"] = round(rss_kb / 1024, 1)
        engine.dispose()
        rows.append(row)
        print(f"  {n:5d} GPUs {n_quotes:7d} quotes: " + ", ".join(
            f"{k} {v:.1f} ms" for k, v in row["median_ms"].items())
            + f"; peak {row['tracemalloc_peak_mb']} MB", flush=True)
    growth: dict[str, Any] = {}
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        size_ratio = last["gpus"] / first["gpus"]
        for name in WORKLOADS:
            time_ratio = last["median_ms"][name] / first["median_ms"][name]
            growth[name] = {"size_ratio": size_ratio, "time_ratio": round(time_ratio, 1),
                            "per_gpu_ms": round(last["median_ms"][name] / last["gpus"], 3),
                            "linear_or_better": time_ratio <= size_ratio * 1.2}
    out = {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
           "runs_per_point": RUNS, "quotes_per_gpu": QUOTES_PER_GPU, "database": "SQLite",
           "sizes": rows, "growth": growth,
           "memory_growth": {"peak_mb_ratio": round(
               rows[-1]["tracemalloc_peak_mb"] / max(rows[0]["tracemalloc_peak_mb"], 0.1), 1)}
           if len(rows) >= 2 else None}
    (RESULTS / "scale.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
