"""Median recommendation time per workload x objective: cold (engine caches cleared) / warm.

Usage: python -m bench.measure_recommend DATABASE_URL [RUNS]
(build a synthetic scale database with bench.bench_scale.build). Prints one line per workload,
each objective as cold/warm milliseconds, in-process through the service function.
"""

from __future__ import annotations

import statistics
import sys
import time

from sqlmodel import Session

from bench.profile_recommend import WORKLOADS, query
from service.core.config import Settings
from service.core.db import make_engine
from service.core.times import utcnow
from service.workloads.caches import AppCaches
from service.workloads.service import recommend_for

OBJECTIVES = ("cost", "time", "energy", "balanced")


def main(url: str, runs: int) -> None:
    settings = Settings(database_url=url)
    caches = AppCaches()  # one server process's
    with Session(make_engine(url)) as session:

        def once(name: str, objective: str) -> float:
            started = time.perf_counter()
            recommend_for(session, submission=query(name, objective), objective=objective,
                          limit=10, settings=settings, caches=caches, now=utcnow())
            return time.perf_counter() - started

        once(next(iter(WORKLOADS)), "cost")  # builds the catalog and offer snapshots
        for name in WORKLOADS:
            cells = []
            for objective in OBJECTIVES:
                cold, warm = [], []
                for _ in range(runs):
                    caches.engine.clear()
                    cold.append(once(name, objective))
                    warm.append(once(name, objective))
                cells.append(f"{objective} {statistics.median(cold) * 1000:.1f}/"
                             f"{statistics.median(warm) * 1000:.1f}")
            print(name, " | ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 7)
