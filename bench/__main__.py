"""`make bench`: every benchmark, results as JSON plus bench/results/SUMMARY.md.

Environment: BENCH_SECONDS (per HTTP route, default 5), BENCH_CONNECTIONS (16),
BENCH_SCALE_SIZES (50,500,5000), BENCH_SCALE_RUNS (3), BENCH_OVERLOAD_SECONDS (20),
BENCH_OVERLOAD_CLIENTS (100), BENCH_SOAK_SECONDS (600; 0 skips the soak),
BENCH_SOAK_WARMUP_SECONDS (20), BENCH_SOAK_SAMPLE_SECONDS (30), BENCH_SOAK_CLIENTS (4).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from bench import bench_http, bench_overload, bench_scale, bench_soak

RESULTS = Path(__file__).resolve().parent / "results"
TARGET_REC_P50_MS = 10.0
TARGET_REC_RATIO = 0.30
TARGET_SCALE_P50_MS = 500.0


def _ok(flag: bool) -> str:
    return "met" if flag else "**missed**"


def summary(http: dict[str, Any], scale: dict[str, Any], extra: dict[str, Any]) -> str:
    lines = ["# Benchmark summary", "",
             f"HTTP: {http['server']}; load generator {http['load_generator']}, "
             f"{http['connections']} connections, {http['seconds_per_route']:g} s per route, "
             f"{http['cpus']} CPUs shared by server and load generator.", "",
             "| route | req/s | p50 ms | p99 ms | x /healthz | target |",
             "|---|---:|---:|---:|---:|---|"]
    for label, row in http["routes"].items():
        target = ""
        if label.startswith("POST /v1/recommendations"):
            target = f">= {TARGET_REC_RATIO:.0%} of /healthz: " + _ok(
                row["ratio_to_healthz"] >= TARGET_REC_RATIO)
        lines.append(f"| {label} | {row['requests_per_s']:.1f} | {row['p50_ms']:.2f} | "
                     f"{row['p99_ms']:.2f} | {row['ratio_to_healthz']:.3f} | {target} |")
    mean = http.get("server_recommendation_compute_mean_ms_from_metrics")
    if mean is not None:
        lines += ["", f"Server-side recommendation compute time under load (mean, from the "
                      f"/metrics histogram): {mean:.1f} ms."]
    first = scale["sizes"][0]
    lines += ["", "Recommendation server time on the seeded-size catalog and at scale "
                  "(in-process `recommend_for`, median of "
                  f"{scale['runs_per_point']} runs, SQLite):", "",
              "| GPUs | quotes | " + " | ".join(first["median_ms"]) + " | peak MB (tracemalloc) |",
              "|---:|---:|" + "---:|" * len(first["median_ms"]) + "---:|"]
    for row in scale["sizes"]:
        lines.append(f"| {row['gpus']} | {row['quotes']} | "
                     + " | ".join(f"{v:.1f}" for v in row["median_ms"].values())
                     + f" | {row['tracemalloc_peak_mb']} |")
    seeded = extra.get("seeded_median_ms", {})
    if seeded:
        lines += ["", f"Target p50 < {TARGET_REC_P50_MS:g} ms on the seeded catalog "
                      "(33 GPUs, 155 quotes):"]
        for name, ms in seeded.items():
            lines.append(f"- {name}: {ms:.1f} ms, {_ok(ms < TARGET_REC_P50_MS)}")
    big = scale["sizes"][-1]
    lines += ["", f"Target p50 < {TARGET_SCALE_P50_MS:g} ms at {big['gpus']} GPUs / "
                  f"{big['quotes']} quotes:"]
    for name, ms in big["median_ms"].items():
        growth = scale["growth"].get(name)
        line = f"- {name}: {ms:.0f} ms, {_ok(ms < TARGET_SCALE_P50_MS)}"
        if growth:  # only with two sizes or more (BENCH_SCALE_SIZES)
            shape = "linear or better" if growth["linear_or_better"] else "worse than linear"
            line += (f"; x{growth['time_ratio']} time for x{growth['size_ratio']:g} GPUs "
                     f"({shape})")
        lines.append(line)
    if "import" in extra:
        lines += ["", "Import benchmark: see import.json."]
    if "overload" in extra:
        lines += ["", *bench_overload.summary_lines(extra["overload"])]
    if "soak" in extra:
        lines += ["", *bench_soak.summary_lines(extra["soak"])]
    return "\n".join(lines) + "\n"


def _seeded_medians() -> dict[str, float]:
    """recommend_for on the seeded catalog, median of 15 runs per workload."""
    import statistics
    import tempfile
    import time
    from datetime import UTC, datetime

    from sqlmodel import Session

    from bench.bench_http import WORKLOADS
    from service.config import Settings
    from service.db import make_engine
    from service.migrate import upgrade
    from service.seeding import seed
    from service.workloads.models import RecommendationQuery
    from service.workloads.service import recommend_for

    url = f"sqlite:///{tempfile.mkdtemp(prefix='gpu-advisor-seeded-')}/seeded.db"
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    settings = Settings(database_url=url)
    out: dict[str, float] = {}
    for name, body in WORKLOADS.items():
        q = RecommendationQuery.model_validate(body)
        times = []
        with Session(engine) as session:
            for _ in range(16):
                start = time.perf_counter()
                recommend_for(session, submission=q, objective=q.objective, limit=q.limit,
                              settings=settings, now=datetime.now(UTC))
                times.append(time.perf_counter() - start)
        out[name] = round(statistics.median(times[1:]) * 1e3, 2)
    return out


def main() -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    extra: dict[str, Any] = {}
    print("== recommendation server time, seeded catalog", flush=True)
    extra["seeded_median_ms"] = _seeded_medians()
    print("  " + json.dumps(extra["seeded_median_ms"]), flush=True)
    (RESULTS / "seeded.json").write_text(json.dumps(extra["seeded_median_ms"], indent=2) + "\n")
    print("== HTTP (real server, one worker)", flush=True)
    http = bench_http.main()
    print("== scale (synthetic catalogs)", flush=True)
    scale = bench_scale.main()
    if importlib.util.find_spec("bench.bench_import") is not None:
        print("== import", flush=True)
        from bench import bench_import

        bench_import.main()
        extra["import"] = True
    print("== overload (100 concurrent recommendation clients, 2 workers)", flush=True)
    extra["overload"] = bench_overload.main()
    if bench_soak.SECONDS > 0:
        print(f"== soak ({bench_soak.SECONDS:g} s of mixed traffic, 2 workers)", flush=True)
        extra["soak"] = bench_soak.main()
    text = summary(http, scale, extra)
    (RESULTS / "SUMMARY.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
