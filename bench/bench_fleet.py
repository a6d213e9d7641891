"""The mixed-fleet optimiser at the issue's size: 64 request-size buckets x the seeded
catalog's 33 GPU types x their offers (target <= 1 s p50).

Three timings, each the median (p50) of ``BENCH_FLEET_RUNS`` runs (default 7) on the seeded
catalog (Llama-3.1-8B, bf16, TTFT <= 2 s, TPOT <= 50 ms, 100 requests/s):

* ``solve``: the optimiser alone, given the capacity tables (the mixed program, the best
  single type and the greedy fallback: :func:`fleet.solve_options`) -- the target;
* ``capacities_cold``: building the capacity tables (every bucket x GPU type x count x
  layout through the engine's serving model) with an empty engine cache;
* ``end_to_end_cold`` / ``end_to_end_warm``: :func:`plan_fleet` (tables + solve + answer
  with provisioning), cache empty / cache kept from the previous run.

Wall times (``_s``) and this process's CPU times (``_cpu_``: on a shared machine, the work
itself; the load average at the end is recorded too). Results: bench/results/fleet.json.
``python -m bench.bench_fleet``.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session

from bench.profile_request import seeded_catalog
from service.catalog.service import catalog_snapshot
from service.engine.cache import EngineCache, Memo
from service.engine.choice import fleet as fl
from service.engine.recommend_types import Constraints, CostSettings
from service.engine.types import InferenceSpec, TrafficBucket, Workload
from service.presets.catalog import PRESETS
from service.quotes.service import offer_snapshot
from service.workloads.service import offers_at

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = int(os.environ.get("BENCH_FLEET_RUNS", "7"))
TARGET_SOLVE_P50_S = 1.0
PROMPTS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
OUTPUTS = (16, 32, 64, 128, 256, 512, 1024, 2048)
RATE = 100.0


def traffic() -> tuple[TrafficBucket, ...]:
    """An 8 x 8 grid of prompt and output sizes (64 buckets), shares falling off with size
    (weight 1 / (i + j + 1), normalised)."""
    weights = {(i, j): 1.0 / (i + j + 1) for i in range(8) for j in range(8)}
    total = sum(weights.values())
    return tuple(TrafficBucket(PROMPTS[i], OUTPUTS[j], w / total)
                 for (i, j), w in sorted(weights.items()))


def workload() -> Workload:
    return Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                    inference=InferenceSpec(prompt_tokens=1024, output_tokens=256,
                                            max_ttft_ms=2000, max_tpot_ms=50,
                                            target_requests_per_s=RATE, traffic=traffic()))


CHAT_RATES = (2.0, 10.0, 50.0, 200.0)
CHAT_MODELS = ("llama-3.1-8b", "llama-2-70b")


def chat_preset_table(gpus: Any, offers: Any) -> list[dict[str, Any]]:
    """The chat preset (azure-conversation-2023) at TTFT <= 1 s, TPOT <= 50 ms: the mixed
    fleet and the best single type side by side, per model and rate."""
    from service.presets.traffic import TRAFFIC_PRESETS

    rows = []
    cache = EngineCache()
    for model in CHAT_MODELS:
        for rate in CHAT_RATES:
            w = Workload(kind="inference", precision="bf16", model=PRESETS[model].model,
                         inference=InferenceSpec(
                             prompt_tokens=1155, output_tokens=211, max_ttft_ms=1000,
                             max_tpot_ms=50, target_requests_per_s=rate,
                             traffic=TRAFFIC_PRESETS["azure-conversation-2023"].buckets))
            cpu = time.process_time()
            f = fl.plan_fleet(w, gpus, offers, cache=cache)
            cpu = time.process_time() - cpu
            rows.append({
                "model": model, "requests_per_s": rate, "status": f.status,
                "mixed": [f"{p.gpu_slug} x{p.gpu_count}" for p in f.pools],
                "mixed_usd_per_hour": f.usd_per_hour,
                "single": [f"{p.gpu_slug} x{p.gpu_count}" for p in f.best_single_type],
                "single_usd_per_hour": f.single_usd_per_hour,
                "saving_fraction": (None if f.saving_fraction is None
                                    else round(f.saving_fraction, 4)),
                "usd_per_million_tokens": f.usd_per_million_tokens,
                "end_to_end_cpu_s": round(cpu, 3),  # the 6-bucket preset, tables + solve
            })
    return rows


def _p50(times: list[float]) -> float:
    return round(statistics.median(times), 4)


def main() -> dict[str, Any]:
    engine, settings, caches = seeded_catalog()
    now = datetime.now(UTC)
    with Session(engine) as session:
        catalog = catalog_snapshot(session, cache=caches.catalog)
        offers = offers_at(offer_snapshot(session, now=now, cache=caches.offers), now=now,
                           stale_days=settings.stale_quote_days, cache=caches.offer_lists)
    gpus, w = catalog.specs, workload()
    spec = w.inference
    assert spec is not None and spec.traffic is not None
    rates = [b.share * RATE for b in spec.traffic]
    c, cs = Constraints(), CostSettings()
    tables, tables_cpu, opts = [], [], []
    for _ in range(RUNS):
        start, cpu = time.perf_counter(), time.process_time()
        opts = fl.pool_options(w, gpus, offers, c, cs, Memo(EngineCache()))
        tables.append(time.perf_counter() - start)
        tables_cpu.append(time.process_time() - cpu)
    solves, solves_cpu = [], []
    mixed = single = None
    for _ in range(RUNS):
        start, cpu = time.perf_counter(), time.process_time()
        mixed, single = fl.solve_options(rates, opts, None, fl.fm.TIME_LIMIT_S)
        solves.append(time.perf_counter() - start)
        solves_cpu.append(time.process_time() - cpu)
    cold, cold_cpu, warm = [], [], []
    shared = EngineCache()
    fleet = None
    for _ in range(RUNS):
        start, cpu = time.perf_counter(), time.process_time()
        fl.plan_fleet(w, gpus, offers, cache=EngineCache())
        cold.append(time.perf_counter() - start)
        cold_cpu.append(time.process_time() - cpu)
        start = time.perf_counter()
        fleet = fl.plan_fleet(w, gpus, offers, cache=shared)
        warm.append(time.perf_counter() - start)
    assert fleet is not None and mixed is not None
    out = {
        "workload": "llama-3.1-8b bf16, TTFT <= 2000 ms, TPOT <= 50 ms, 100 requests/s",
        "buckets": len(rates),
        "gpu_types": len({g.slug for g in gpus}),
        "gpu_types_with_options": len({o.gpu.slug for o in opts}),
        "offers": len(offers),
        "pool_options": len(opts),
        "runs": RUNS,
        "solve_p50_s": _p50(solves),
        "solve_max_s": round(max(solves), 4),
        "solve_cpu_p50_s": _p50(solves_cpu),
        "target_solve_p50_s": TARGET_SOLVE_P50_S,
        "target_met": _p50(solves) <= TARGET_SOLVE_P50_S,
        "capacities_cold_p50_s": _p50(tables),
        "capacities_cold_cpu_p50_s": _p50(tables_cpu),
        "end_to_end_cold_p50_s": _p50(cold),
        "end_to_end_cold_cpu_p50_s": _p50(cold_cpu),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "end_to_end_warm_p50_s": _p50(warm),
        "status": fleet.status,
        "mip_gap": fleet.mip_gap,
        "usd_per_hour": fleet.usd_per_hour,
        "single_type_usd_per_hour": fleet.single_usd_per_hour,
        "saving_fraction": fleet.saving_fraction,
        "pools": [f"{p.gpu_slug} x{p.gpu_count}" for p in fleet.pools],
        "cpus": os.cpu_count(),
        "chat_preset": chat_preset_table(gpus, offers),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "fleet.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return out


def summary_lines(r: dict[str, Any]) -> list[str]:
    verdict = "met" if r["target_met"] else "**missed**"
    return [f"**Mixed fleet** ({r['buckets']} buckets x {r['gpu_types']} GPU types, "
            f"{r['pool_options']} pool options): optimiser p50 {r['solve_p50_s']:.3f} s "
            f"(target <= {r['target_solve_p50_s']:g} s: {verdict}; CPU "
            f"{r.get('solve_cpu_p50_s', float('nan')):.3f} s); capacity tables "
            f"{r['capacities_cold_p50_s']:.2f} s cold; end to end {r['end_to_end_cold_p50_s']:.2f}"
            f" s cold, {r['end_to_end_warm_p50_s']:.2f} s warm; the 6-bucket chat preset end to "
            f"end, CPU median "
            f"{statistics.median(x.get('end_to_end_cpu_s', 0.0) for x in r['chat_preset']):.2f}"
            f" s (fleet.json)."]


if __name__ == "__main__":
    main()
