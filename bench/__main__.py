"""`make bench`: every benchmark, results as JSON plus bench/results/SUMMARY.md.

Environment: BENCH_ONLY (comma list of sections to run: seeded, http, scale, import, overload,
soak, fleet; default all, e.g. ``BENCH_ONLY=seeded,http make bench``; the other JSON files are
left as they were, and SUMMARY.md shows their tables read back from them, marked as from earlier
runs), BENCH_SECONDS (per HTTP route,
default 8), BENCH_CONNECTIONS (16), BENCH_THREADS (wrk threads, 2), BENCH_SEED (the varied
route's bodies, 14), BENCH_SCALE_SIZES (50,500,5000), BENCH_SCALE_RUNS (3),
BENCH_OVERLOAD_SECONDS (20), BENCH_OVERLOAD_CLIENTS (100), BENCH_OVERLOAD_CASE_SECONDS (10; 0
skips the slow-upload and read-flood cases), BENCH_SOAK_SECONDS (600; 0 skips
the soak), BENCH_SOAK_WARMUP_SECONDS (20), BENCH_SOAK_SAMPLE_SECONDS (30),
BENCH_SOAK_CLIENTS (4), BENCH_SOAK_FLOOD_EVERY_SECONDS (60), BENCH_FLEET_RUNS (7).

Targets ("A fast engine"): the varied-body recommendation route (bench/varied.py, a different
LLM-inference workload in every POST) at >= 0.10 x /healthz's req/s in the same run on the same
server, with p99 <= 50 ms; in-process CPU per varied request p50 <= 2 ms for LLM serving,
training and FP64 each (bench/cpu_per_request.py, in the ``seeded`` section); p50 <= 100 ms at
5,000 GPUs x 200,000 quotes; the comparison page's answer for each named example <= 300 ms
server time (bench/page_examples.py, ``seeded``); the collector's pause p99 < 10 ms and a flat
RSS over the 10-minute soak (bench/bench_soak.py). Earlier: p50 server time <= 3 ms on the
seeded catalog for each of the four bench workloads, the same body repeated (a rankings-cache
hit after the first). The mixed-fleet optimiser solves 64 buckets x 33 GPU types x their offers
in <= 1 s p50 (bench/bench_fleet.py; the capacity tables and the end-to-end time are reported
beside it).
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from bench import bench_fleet, bench_http, bench_overload, bench_scale, bench_soak

RESULTS = Path(__file__).resolve().parent / "results"
TARGET_REC_P50_MS = 3.0
TARGET_REC_RATIO = 0.10
TARGET_REC_P99_MS = 50.0
TARGET_CPU_P50_MS = 2.0
TARGET_SCALE_P50_MS = 100.0
SECTIONS = ("seeded", "http", "scale", "import", "overload", "soak", "fleet")


def selected_sections(value: str | None) -> tuple[str, ...]:
    """The sections named by BENCH_ONLY (all when unset or empty), in run order."""
    if not value or not value.strip():
        return SECTIONS
    names = {v.strip() for v in value.split(",") if v.strip()}
    unknown = names - set(SECTIONS)
    if unknown:
        raise SystemExit(f"BENCH_ONLY: unknown section(s) {', '.join(sorted(unknown))}; "
                         f"choose from {', '.join(SECTIONS)}")
    return tuple(s for s in SECTIONS if s in names)


def _ok(flag: bool) -> str:
    return "met" if flag else "**missed**"


def _http_lines(http: dict[str, Any]) -> list[str]:
    routes = http["routes"]
    headline = http.get("headline_route", bench_http.VARIED_ROUTE)
    lines: list[str] = []
    row = routes.get(headline)
    if row is not None:
        healthz = routes["GET /healthz"]["requests_per_s"]
        verdict = ("**invalid: non-2xx answers**" if row.get("flag_non_2xx")
                   else _ok(row["ratio_to_healthz"] >= TARGET_REC_RATIO))
        lines += [f"**Recommendation throughput** (`{headline}`, a different workload in every "
                  f"POST): {row['requests_per_s']:.1f} req/s = {row['ratio_to_healthz']:.3f} x "
                  f"`/healthz` ({healthz:.1f} req/s, same run, same server); target >= "
                  f"{TARGET_REC_RATIO:.2f}: {verdict}; p99 {row['p99_ms']:.0f} ms under that "
                  f"load, target <= {TARGET_REC_P99_MS:g} ms: "
                  f"{_ok(row['p99_ms'] <= TARGET_REC_P99_MS)}.", ""]
    lines += [f"HTTP: {http['server']}; load generator {http['load_generator']}, "
              f"{http['connections']} connections, {http['seconds_per_route']:g} s per route, "
              f"{http['cpus']} CPUs shared by server and load generator.", "",
              "| route | req/s | p50 ms | p99 ms | x /healthz | non-2xx | target |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for label, r in routes.items():
        target = ""
        if label.startswith("POST /v1/recommendations"):
            target = f">= {TARGET_REC_RATIO:.0%} of /healthz: " + (
                "**invalid (non-2xx)**" if r.get("flag_non_2xx")
                else _ok(r["ratio_to_healthz"] >= TARGET_REC_RATIO))
        non_2xx = r.get("non_2xx")  # absent from older http.json files
        flag = "n/a" if non_2xx is None else (
            f"**{non_2xx}**" if r.get("flag_non_2xx") else str(non_2xx))
        lines.append(f"| {label} | {r['requests_per_s']:.1f} | {r['p50_ms']:.2f} | "
                     f"{r['p99_ms']:.2f} | {r['ratio_to_healthz']:.3f} | {flag} | {target} |")
    flagged = [k for k, r in routes.items() if r.get("flag_non_2xx")]
    if flagged:
        lines += ["", f"**Warning: non-2xx answers on {', '.join(flagged)}**: their req/s count "
                      "failures, not answers (see http.json: non_2xx, server_statuses)."]
    lines += _floor_lines(http.get("floor"))
    mean = http.get("server_recommendation_compute_mean_ms_from_metrics")
    if mean is not None:
        lines += ["", f"Server-side recommendation compute time under load (mean, from the "
                      f"/metrics histogram): {mean:.1f} ms"
                  + (f"; varied route {row['server_compute_mean_ms']:.1f} ms."
                     if row is not None and row.get("server_compute_mean_ms") else ".")]
    return lines


def _floor_lines(floor: dict[str, Any] | None) -> list[str]:
    """The floor server's table (bench/floor_app.py): how far any engine could take the
    headline ratio on this stack (absent from http.json files before the floor was measured)."""
    if not floor:
        return []
    rows = floor["routes"]
    lines = ["", "Floor (" + floor["server"] + "; same varied bodies, ratios to that server's "
             "own /healthz in the same run): the most any engine could reach on this stack.",
             "", "| floor route | req/s | p50 ms | x /healthz | answer bytes |",
             "|---|---:|---:|---:|---:|"]
    for label, r in rows.items():
        size = r.get("response_bytes")
        lines.append(f"| {label} | {r['requests_per_s']:.1f} | {r['p50_ms']:.2f} | "
                     f"{r['ratio_to_healthz']:.3f} | {'' if size is None else size} |")
    return lines


def _cpu_lines(cpu: dict[str, Any]) -> list[str]:
    lines = [f"CPU per varied recommendation (in process, every body new, "
             f"`bench.cpu_per_request`), target p50 <= {TARGET_CPU_P50_MS:g} ms per kind:"]
    for kind, row in cpu["kinds"].items():
        lines.append(f"- {kind}: p50 {row['cpu_ms_p50']:.1f} ms, p90 {row['cpu_ms_p90']:.1f} "
                     f"ms ({row['bodies']} bodies), {_ok(row['cpu_ms_p50'] <= TARGET_CPU_P50_MS)}")
    if cpu.get("yardstick_ms"):
        lines.append(f"- this machine's yardstick (`cpu_per_request.yardstick_ms`, CPU of a "
                     f"Python loop summing 10^6 squares): {cpu['yardstick_ms']:g} ms; another "
                     "run's figures compare in proportion to its yardstick")
    return lines


def _seeded_lines(seeded: dict[str, float]) -> list[str]:
    lines = [f"Target p50 <= {TARGET_REC_P50_MS:g} ms on the seeded catalog "
             "(33 GPUs, 155 quotes; in-process `recommend_for`, the same body repeated, so "
             "every run after the first is answered from the rankings cache; a first "
             "answer's time: the page examples below and the CPU per varied request):"]
    for name, ms in seeded.items():
        lines.append(f"- {name}: {ms:.1f} ms, {_ok(ms <= TARGET_REC_P50_MS)}")
    return lines


def _page_lines(page: dict[str, Any]) -> list[str]:
    lines = [f"Target <= {page['target_ms']:g} ms server time for the comparison page's answer "
             "(`view=compact`, limit 10) per named example, a first answer (no rankings-cache "
             f"hit; median of {page['runs']}):"]
    for name, row in page["examples"].items():
        lines.append(f"- {name}: {row['wall_ms_p50']:.0f} ms wall, {row['cpu_ms_p50']:.0f} ms "
                     f"CPU, {row['answer_bytes']:,} B, {_ok(row['within_target'])}")
    return lines


def _scale_lines(scale: dict[str, Any]) -> list[str]:
    first = scale["sizes"][0]
    lines = ["Recommendation server time at scale (in process, what `POST /v1/recommendations` "
             "does after parsing: `rank_for` and the default summary view's bytes; median of "
             f"{scale['runs_per_point']} runs, SQLite):", "",
             "| GPUs | quotes | " + " | ".join(first["median_ms"]) + " | peak MB (tracemalloc) |",
             "|---:|---:|" + "---:|" * len(first["median_ms"]) + "---:|"]
    for row in scale["sizes"]:
        lines.append(f"| {row['gpus']} | {row['quotes']} | "
                     + " | ".join(f"{v:.1f}" for v in row["median_ms"].values())
                     + f" | {row['tracemalloc_peak_mb']} |")
    big = scale["sizes"][-1]
    lines += ["", f"Target p50 <= {TARGET_SCALE_P50_MS:g} ms at {big['gpus']} GPUs / "
                  f"{big['quotes']} quotes:"]
    for name, ms in big["median_ms"].items():
        growth = scale["growth"].get(name)
        line = f"- {name}: {ms:.0f} ms, {_ok(ms <= TARGET_SCALE_P50_MS)}"
        if growth:  # only with two sizes or more (BENCH_SCALE_SIZES)
            shape = "linear or better" if growth["linear_or_better"] else "worse than linear"
            line += (f"; x{growth['time_ratio']} time for x{growth['size_ratio']:g} GPUs "
                     f"({shape})")
        lines.append(line)
    full = big.get("full_view_median_ms")
    if full:
        lines += ["", "The same with `view=full` (reasons and provisioning built): " + ", ".join(
            f"{name} {ms:.0f} ms" for name, ms in full.items())]
    return lines


def summary(http: dict[str, Any] | None, scale: dict[str, Any] | None,
            extra: dict[str, Any], sections: tuple[str, ...] = SECTIONS) -> str:
    """SUMMARY.md from the sections that ran (any of them may be missing)."""
    lines = ["# Benchmark summary", ""]
    missing = [s for s in SECTIONS if s not in sections]
    if missing:
        lines += [f"Sections run: {', '.join(sections)} (BENCH_ONLY); not run: "
                  f"{', '.join(missing)}: their tables below are read from their JSON files, "
                  "from earlier runs (each file's `generated_at`, where it has one, says when; "
                  "compare ratios, not absolute figures, across runs).", ""]
    blocks: list[list[str]] = []
    if http is not None:
        blocks.append(_http_lines(http))
    if extra.get("seeded_median_ms"):
        blocks.append(_seeded_lines(extra["seeded_median_ms"]))
    if extra.get("cpu_per_request"):
        blocks.append(_cpu_lines(extra["cpu_per_request"]))
    if extra.get("page_examples"):
        blocks.append(_page_lines(extra["page_examples"]))
    if scale is not None and scale.get("sizes"):
        blocks.append(_scale_lines(scale))
    if "import" in extra:
        blocks.append(["Import benchmark: see import.json."])
    if "overload" in extra:
        blocks.append(bench_overload.summary_lines(extra["overload"]))
    if "soak" in extra:
        blocks.append(bench_soak.summary_lines(extra["soak"]))
    if "fleet" in extra:
        blocks.append(bench_fleet.summary_lines(extra["fleet"]))
    for block in blocks:
        lines += [*block, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


EARLIER_FILES: dict[str, tuple[tuple[str, str], ...]] = {
    "seeded": (("seeded.json", "seeded_median_ms"), ("cpu_per_request.json", "cpu_per_request"),
               ("page_examples.json", "page_examples")),
    "http": (("http.json", "http"),),
    "scale": (("scale.json", "scale"),),
    "overload": (("overload.json", "overload"),),
    "soak": (("soak.json", "soak"),),
    "fleet": (("fleet.json", "fleet"),),
}
"""Per section, the JSON files it writes and the summary entry each one fills."""


def earlier_results(sections: tuple[str, ...],
                    results: Path = RESULTS) -> dict[str, Any]:
    """The summary entries of the sections not in ``sections``, read from the JSON files an
    earlier run wrote (absent files are left out), so that a partial run's SUMMARY.md still
    shows every table: ``{"seeded_median_ms": ..., "http": ..., "import": True, ...}``."""
    out: dict[str, Any] = {}
    for section, files in EARLIER_FILES.items():
        if section in sections:
            continue
        for name, entry in files:
            path = results / name
            if path.is_file():
                out[entry] = json.loads(path.read_text())
    if "import" not in sections and (results / "import.json").is_file():
        out["import"] = True
    return out


def _seeded_medians() -> dict[str, float]:
    """recommend_for on the seeded catalog, median of 15 runs per workload."""
    import statistics
    import time
    from datetime import UTC, datetime

    from sqlmodel import Session

    from bench.bench_http import WORKLOADS
    from bench.profile_request import seeded_catalog
    from service.workloads.models import RecommendationQuery
    from service.workloads.service import recommend_for

    engine, settings, caches = seeded_catalog()
    out: dict[str, float] = {}
    for name, body in WORKLOADS.items():
        q = RecommendationQuery.model_validate(body)
        times = []
        with Session(engine) as session:
            for _ in range(16):
                start = time.perf_counter()
                recommend_for(session, submission=q, objective=q.objective, limit=q.limit,
                              settings=settings, caches=caches, now=datetime.now(UTC))
                times.append(time.perf_counter() - start)
        out[name] = round(statistics.median(times[1:]) * 1e3, 2)
    return out


def main() -> int:
    sections = selected_sections(os.environ.get("BENCH_ONLY"))
    RESULTS.mkdir(parents=True, exist_ok=True)
    extra: dict[str, Any] = {}
    http: dict[str, Any] | None = None
    scale: dict[str, Any] | None = None
    if "seeded" in sections:
        print("== recommendation server time, seeded catalog", flush=True)
        extra["seeded_median_ms"] = _seeded_medians()
        print("  " + json.dumps(extra["seeded_median_ms"]), flush=True)
        (RESULTS / "seeded.json").write_text(json.dumps(extra["seeded_median_ms"], indent=2)
                                             + "\n")
        print("== CPU per varied recommendation (LLM serving, training, FP64)", flush=True)
        from bench import cpu_per_request

        # writes bench/results/cpu_per_request.json
        extra["cpu_per_request"] = cpu_per_request.main([])
        print("== the comparison page's answer per named example (first answer)", flush=True)
        from bench import page_examples

        extra["page_examples"] = page_examples.main([])  # bench/results/page_examples.json
    if "http" in sections:
        print("== HTTP (real server, one worker)", flush=True)
        http = bench_http.main()
    if "scale" in sections:
        print("== scale (synthetic catalogs)", flush=True)
        scale = bench_scale.main()
    if "import" in sections and importlib.util.find_spec("bench.bench_import") is not None:
        print("== import", flush=True)
        from bench import bench_import

        bench_import.main()
        extra["import"] = True
    if "overload" in sections:
        print("== overload (100 concurrent recommendation clients, 2 workers)", flush=True)
        extra["overload"] = bench_overload.main()
    if "soak" in sections and bench_soak.SECONDS > 0:
        print(f"== soak ({bench_soak.SECONDS:g} s of mixed traffic, 2 workers)", flush=True)
        extra["soak"] = bench_soak.main()
    if "fleet" in sections:
        print("== mixed fleet (64 buckets x 33 GPU types, seeded catalog)", flush=True)
        extra["fleet"] = bench_fleet.main()
    earlier = earlier_results(sections)
    http = http if http is not None else earlier.pop("http", None)
    scale = scale if scale is not None else earlier.pop("scale", None)
    text = summary(http, scale, {**earlier, **extra}, sections)
    (RESULTS / "SUMMARY.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
