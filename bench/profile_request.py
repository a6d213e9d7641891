"""Where one POST /v1/recommendations spends its time, by stage, in process, seeded catalog.

Run: ``.venv/bin/python -m bench.profile_request [-n N] [--seed S] [--clear-engine-cache]
[--cprofile FILE]``. Results: bench/results/profile_request.json.

The bodies are the varied route's (bench/varied.py, the stream of wrk's first thread): every
body new, so no answer is reused, as under ``make bench``'s headline load. The engine's shared
memo tables (``AppCaches.engine``) persist across requests as in a server process, unless
``--clear-engine-cache`` empties them before every request. Before timing, the database is
migrated and seeded and :func:`~service.app.serving.warm_up_and_freeze` runs, as ``gpu-advisor
serve`` does; two bodies from another stream then warm the code paths.

Stages of one request (medians over the N requests, [ms]), as :func:`request_by_stage` composes
them, which is ``recommend_for`` (service/workloads/service.py) with FastAPI's body parsing
before it and its response handling after:

* ``parse_validate``: ``RecommendationQuery.model_validate_json`` of the body text;
* ``engine_inputs``: ``to_engine_workload`` (presets resolved), constraints, cost settings;
* ``snapshots``: ``snapshots`` (service/workloads/service.py): one statement reading the
  catalog's and the quotes' revisions, the cached snapshots, the end of the read transaction
  (a read-only route's, in its own thread) and ``offers_at``;
* ``recommend``: the engine's ``recommend`` (service/engine/choice/ranking.py);
* ``result_out``: the catalog revision and the answer's plain data in ``--view`` (default
  ``summary``, the route's default; service/workloads/answers.py);
* ``response``: writing it (orjson, ``answers.to_json``); the route returns those bytes and
  FastAPI neither validates nor serializes the answer again;
* ``session_close``: the request session's close (the server's ``get_session``; the read
  already ended, so nothing is committed).

``--cprofile FILE``: after the timed loop, N further new bodies under cProfile (so the
timings above are not inflated by it); the stats go to FILE and the top 25 functions by
cumulative time are printed.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from bench import varied
from service.app.seeding import seed
from service.app.serving import warm_up_and_freeze
from service.catalog.service import catalog_snapshot
from service.core.config import Settings
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.core.times import utcnow
from service.engine.choice.ranking import recommend
from service.engine.recommend_types import CostSettings
from service.quotes.service import offer_snapshot
from service.workloads.answers import Answer, View, to_json
from service.workloads.caches import AppCaches
from service.workloads.convert import to_engine_workload
from service.workloads.models import RecommendationQuery
from service.workloads.results import stale_price_warnings
from service.workloads.service import _constraints, _revision, snapshots

RESULTS = Path(__file__).resolve().parent / "results"
STAGES = ("parse_validate", "engine_inputs", "snapshots", "recommend", "result_out",
          "response", "session_close")
WARMUP_STREAM = 99
"""The generator stream (wrk thread number) of the warm-up bodies: one wrk never sends."""

Lap = Callable[[str], None]


def request_by_stage(engine: Engine, text: str, settings: Settings, caches: AppCaches,
                     lap: Lap, view: View = "summary") -> bytes:
    """One POST /v1/recommendations body through the service, ``lap(stage)`` after each stage.

    Mirrors ``recommend_for`` (service/workloads/service.py) step for step: when that changes,
    change this, and only this."""
    now = utcnow()
    session = Session(engine, expire_on_commit=False)
    lap("start")
    body = RecommendationQuery.model_validate_json(text)
    lap("parse_validate")
    workload = to_engine_workload(body, prefix="body")
    constraints = _constraints(body.constraints)
    cost = CostSettings(electricity_usd_per_kwh=settings.electricity_usd_per_kwh,
                        amortization_years=settings.amortization_years)
    lap("engine_inputs")
    catalog, quotes, offers = snapshots(session, now=now, settings=settings, caches=caches,
                                        end_read=True)
    lap("snapshots")
    rec = recommend(workload, catalog.specs, offers, objective=body.objective,
                    constraints=constraints, settings=cost, limit=body.limit,
                    skypilot_names=catalog.skypilot_names, cache=caches.engine, validated=True,
                    explained=view != "summary")
    lap("recommend")
    data = Answer(rec=rec, constraints=body.constraints,
                  catalog_revision=_revision(catalog.fingerprint, quotes.fingerprint),
                  generated_at=now,
                  warnings=stale_price_warnings(rec.recommendations,
                                                stale_days=settings.stale_quote_days)
                  ).data(view)
    lap("result_out")
    payload = to_json(data)
    lap("response")
    session.close()
    lap("session_close")
    return payload


def seeded_catalog() -> tuple[Engine, Settings, AppCaches]:
    """A freshly migrated and seeded SQLite catalog, and one app's caches warmed up on it as
    ``gpu-advisor serve`` does."""
    url = f"sqlite:///{tempfile.mkdtemp(prefix='gpu-advisor-profile-')}/seeded.db"
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    settings = Settings(database_url=url)
    caches = AppCaches()
    warm_up_and_freeze(engine, settings, caches)
    return engine, settings, caches


def run(engine: Engine, settings: Settings, caches: AppCaches, texts: list[str],
        clear_engine_cache: bool, clock: Callable[[], float] = time.perf_counter,
        view: View = "summary") -> tuple[dict[str, list[float]], list[int]]:
    """Each body once: per-stage times [ms] by ``clock`` and response sizes [bytes]."""
    times: dict[str, list[float]] = {s: [] for s in (*STAGES, "total")}
    sizes: list[int] = []
    marks: list[tuple[str, float]] = []

    def lap(stage: str) -> None:
        marks.append((stage, clock()))

    for text in texts:
        if clear_engine_cache:
            caches.engine.clear()
        marks.clear()
        payload = request_by_stage(engine, text, settings, caches, lap, view)
        for (_, t0), (stage, t1) in zip(marks, marks[1:], strict=False):
            times[stage].append((t1 - t0) * 1e3)
        times["total"].append((marks[-1][1] - marks[0][1]) * 1e3)
        sizes.append(len(payload))
    return times, sizes


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=200, help="bodies to time (default 200)")
    p.add_argument("--seed", type=int, default=varied.SEED, help="generator seed (BENCH_SEED)")
    p.add_argument("--clear-engine-cache", action="store_true",
                   help="empty the engine's shared memo tables before every request")
    p.add_argument("--cpu", action="store_true",
                   help="time by this process's CPU time (time.process_time), not wall time: "
                        "steadier on a shared machine")
    p.add_argument("--view", choices=("summary", "compact", "full"), default="summary",
                   help="the answer's view (default summary, the route's default)")
    p.add_argument("--cprofile", metavar="FILE",
                   help="also profile N further bodies with cProfile; stats to FILE")
    args = p.parse_args(argv)
    engine, settings, caches = seeded_catalog()
    stream = varied.VariedBodies(args.seed, 1)
    texts = stream.take(args.n)
    run(engine, settings, caches, varied.VariedBodies(args.seed, WARMUP_STREAM).take(2), False)
    times, sizes = run(engine, settings, caches, texts, args.clear_engine_cache,
                       time.process_time if args.cpu else time.perf_counter, args.view)
    with Session(engine) as session:
        gpus = len(catalog_snapshot(session, cache=caches.catalog).specs)
        quotes = len(offer_snapshot(session, now=utcnow(), cache=caches.offers).rows)
    medians = {s: round(statistics.median(v), 3) for s, v in times.items()}
    out: dict[str, Any] = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "bodies": args.n, "distinct_bodies": len(set(texts)), "seed": args.seed,
        "stream": "bench/varied.py, wrk thread 1's bodies",
        "engine_cache": "cleared before every request" if args.clear_engine_cache
        else "shared across requests, as in a server process",
        "catalog": {"database": "SQLite, migrated and seeded", "gpus": gpus,
                    "usable_quotes": quotes},
        "clock": "process CPU time" if args.cpu else "wall time",
        "view": args.view,
        "median_ms": medians,
        "p90_ms": {s: round(statistics.quantiles(v, n=10)[-1], 3) for s, v in times.items()}
        if args.n >= 2 else None,
        "sum_of_stage_medians_ms": round(sum(medians[s] for s in STAGES), 3),
        "median_response_bytes": int(statistics.median(sizes)),
        "python": sys.version.split()[0],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "profile_request.json").write_text(json.dumps(out, indent=2) + "\n")
    width = max(map(len, medians))
    for stage, ms in medians.items():
        print(f"  {stage:{width}s} {ms:9.3f} ms (p90 {out['p90_ms'][stage]:.3f})"
              if out["p90_ms"] else f"  {stage:{width}s} {ms:9.3f} ms")
    if args.cprofile:
        more = stream.take(args.n)
        prof = cProfile.Profile()
        prof.enable()
        run(engine, settings, caches, more, args.clear_engine_cache, view=args.view)
        prof.disable()
        prof.dump_stats(args.cprofile)
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
    return out


if __name__ == "__main__":
    main()
