"""Benchmark and profile the recommendation path; dump full outputs for before/after diffs.

Run: ``.venv/bin/python -m bench.profile_recommend [--dump FILE] [--profile NAME] [--scale]``

* Seeded catalog (SQLite, migrated + seeded): ``recommend_for`` server time for four workloads
  x four objectives, median of ``RUNS``; once with the engine's memo caches cleared before every
  request (cold, the figure that counts) and once warm.
* ``--scale``: the engine alone on synthetic 500- and 5,000-GPU catalogs, 40 quotes per GPU
  that has seeded quotes (the seeded GPUs cloned under new slugs with the seeded quotes' prices
  jittered): median ms of RUNS (caches cleared), tracemalloc peak of one run, GPUs skipped by
  branch and bound, per workload x objective. ``--exhaustive`` adds the unpruned search at 500.
* ``--dump FILE``: repr of every full ``recommend()`` result (4 x 4), for comparing versions.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import pstats
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from sqlmodel import Session

from service.app.seeding import seed
from service.catalog.service import all_gpus, to_spec
from service.core.config import Settings
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.core.times import utcnow
from service.engine.choice.ranking import recommend
from service.engine.physics import estimate as est_mod
from service.engine.recommend_types import Offer
from service.quotes.service import offer_snapshot
from service.workloads.caches import AppCaches
from service.workloads.convert import to_engine_workload
from service.workloads.models import RecommendationQuery
from service.workloads.service import recommend_for

RUNS = 5
SCALE_QUOTES_PER_GPU = 40
"""Quotes per synthetic GPU: 200,000 at 5,000 GPUs."""
OBJECTIVES = ("cost", "time", "energy", "balanced")
WORKLOADS: dict[str, dict[str, Any]] = {
    "llm-inference": {
        "kind": "inference", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
        "inference": {"prompt_tokens": 1024, "output_tokens": 256, "max_ttft_ms": 2000,
                      "max_tpot_ms": 60, "target_requests_per_s": 10},
    },
    "llm-training-70b": {
        "kind": "training", "model": {"preset": "llama-2-70b"}, "precision": "bf16",
        "training": {"batch_size": 1024, "seq_len": 4096, "tokens": 2e11},
    },
    "resnet50-int8": {
        "kind": "inference", "model": {"preset": "resnet-50"}, "precision": "int8",
        "inference": {"target_requests_per_s": 5000, "max_latency_ms": 10},
    },
    "fp64-compute": {
        "kind": "compute", "precision": "fp64",
        "compute": {"total_tflop": 5e6, "total_gb_moved": 2e6, "memory_gb": 60},
    },
}


def query(name: str, objective: str) -> RecommendationQuery:
    return RecommendationQuery.model_validate({**WORKLOADS[name], "objective": objective})


def seeded() -> tuple[str, Any]:
    path = Path(tempfile.mkdtemp()) / "bench.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    return url, engine


def time_server(engine: Any, url: str, cold: bool) -> dict[str, dict[str, float]]:
    settings = Settings(database_url=url)
    caches = AppCaches()  # one server process's
    out: dict[str, dict[str, float]] = {}
    with Session(engine) as session:
        for name in WORKLOADS:
            out[name] = {}
            for objective in OBJECTIVES:
                q = query(name, objective)
                samples = []
                for _ in range(RUNS):
                    if cold:
                        caches.engine.clear()  # no cross-request reuse
                    t0 = time.perf_counter()
                    recommend_for(session, submission=q, objective=objective, limit=10,
                                  settings=settings, caches=caches, now=utcnow())
                    samples.append((time.perf_counter() - t0) * 1e3)
                out[name][objective] = statistics.median(samples)
    return out


def engine_inputs(engine: Any) -> tuple[list[Any], list[Offer]]:
    with Session(engine) as session:
        gpus = [to_spec(g) for g in all_gpus(session)]
        offers = [
            Offer(quote_id=q.id or 0, gpu_slug=q.gpu_slug, provider=q.provider, region=q.region,
                  instance_type=q.instance_type, gpu_count=q.gpu_count, pricing=q.pricing,
                  price_usd_per_hour=q.price_usd_per_hour,
                  purchase_price_usd=q.purchase_price_usd, age_days=1.0, stale=False)
            for q in offer_snapshot(session, now=utcnow(), cache=AppCaches().offers).rows
        ]
    return gpus, offers


def dump(engine: Any, path: str) -> None:
    gpus, offers = engine_inputs(engine)
    lines = []
    for name in WORKLOADS:
        for objective in OBJECTIVES:
            w = to_engine_workload(query(name, objective), prefix="body")
            rec = recommend(w, gpus, offers, objective=objective, limit=100)  # type: ignore[arg-type]
            lines.append(f"## {name} {objective}\n{rec!r}\n")
    Path(path).write_text("".join(lines))


def synthetic_catalog(
    engine: Any, n_gpus: int, quotes_per_gpu: int
) -> tuple[list[Any], list[Offer]]:
    """The seeded GPUs cloned under new slugs up to ``n_gpus``; every clone of a GPU that has
    seeded quotes gets ``quotes_per_gpu`` of them (cycled) with prices jittered by 0-9.6%."""
    gpus, offers = engine_inputs(engine)
    per_gpu: dict[str, list[Offer]] = {}
    for o in offers:
        per_gpu.setdefault(o.gpu_slug, []).append(o)
    big_gpus = [
        dataclasses.replace(gpus[i % len(gpus)], slug=f"{gpus[i % len(gpus)].slug}-x{i}")
        for i in range(n_gpus)
    ]
    big_offers: list[Offer] = []
    for k, g in enumerate(big_gpus):
        base = per_gpu.get(g.slug.rsplit("-x", 1)[0], [])
        for j in range(quotes_per_gpu if base else 0):
            b = base[j % len(base)]
            jitter = 1.0 + ((k * 31 + j * 17) % 97) / 1000.0
            big_offers.append(dataclasses.replace(
                b, quote_id=len(big_offers) + 1, gpu_slug=g.slug,
                price_usd_per_hour=None if b.price_usd_per_hour is None
                else b.price_usd_per_hour * jitter))
    return big_gpus, big_offers


def scale(
    engine: Any, n_gpus: int, quotes_per_gpu: int, runs: int, exhaustive: bool
) -> dict[str, dict[str, dict[str, float]]]:
    """Engine-only ``recommend`` (limit 10) per workload x objective on a synthetic catalog:
    median ms of ``runs`` (no engine cache: each run's memo tables are its own) and the peak
    of one traced run [MiB]."""
    big_gpus, big_offers = synthetic_catalog(engine, n_gpus, quotes_per_gpu)
    out: dict[str, dict[str, dict[str, float]]] = {}
    print(f"scale {len(big_gpus)} GPUs / {len(big_offers)} quotes"
          f"{' (exhaustive)' if exhaustive else ''}: median ms / peak MiB / GPUs skipped")
    for name in WORKLOADS:
        out[name] = {}
        for objective in OBJECTIVES:
            w = to_engine_workload(query(name, objective), prefix="body")

            def run(w: Any = w, objective: Any = objective) -> Any:
                return recommend(w, big_gpus, big_offers, objective=objective, limit=10,
                                 exhaustive=exhaustive)

            samples = []
            for _ in range(runs):
                t0 = time.perf_counter()
                rec = run()
                samples.append((time.perf_counter() - t0) * 1e3)
            tracemalloc.start()
            run()
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            skipped = next((int(x.split()[0]) for x in rec.warnings
                            if "not evaluated in full" in x), 0)
            out[name][objective] = {"median_ms": statistics.median(samples),
                                    "peak_mib": peak, "skipped": skipped}
        print(f"  {name:18s} " + "  ".join(
            f"{o} {v['median_ms']:6.0f} / {v['peak_mib']:5.1f} / {v['skipped']:.0f}"
            for o, v in out[name].items()))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dump")
    p.add_argument("--profile")
    p.add_argument("--scale", action="store_true")
    p.add_argument("--exhaustive", action="store_true",
                   help="with --scale: also time the exhaustive search at 500 GPUs")
    p.add_argument("--no-seeded", action="store_true", help="skip the seeded-catalog timing")
    args = p.parse_args()
    url, engine = seeded()
    if args.dump:
        dump(engine, args.dump)
    if args.profile:
        settings = Settings(database_url=url)
        q = query(args.profile, "cost")
        caches = AppCaches()
        with Session(engine) as session:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(5):
                caches.engine.clear()
                recommend_for(session, submission=q, objective="cost", limit=10,
                              settings=settings, caches=caches, now=utcnow())
            prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(30)
        return
    for cold in (True, False) if not args.no_seeded else ():
        res = time_server(engine, url, cold)
        print(("cold (caches cleared)" if cold else "warm") + " median ms:")
        for name, per in res.items():
            print(f"  {name:18s} " + "  ".join(f"{o} {v:6.1f}" for o, v in per.items()))
    if args.scale:
        for n in (500, 5000):
            scale(engine, n, SCALE_QUOTES_PER_GPU, RUNS, exhaustive=False)
        if args.exhaustive:
            scale(engine, 500, SCALE_QUOTES_PER_GPU, 1, exhaustive=True)
    _ = est_mod


if __name__ == "__main__":
    main()
