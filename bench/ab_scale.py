"""A/B of recommendation CPU time at 5,000 GPUs x 200,000 quotes: this tree against another.

Run: ``python -m bench.ab_scale OTHER_ROOT [ROUNDS]`` where OTHER_ROOT is an exported older
commit (``git archive COMMIT | tar -x -C DIR``). Each round runs one process per tree, in
turn (A, B, A, B, ...), each on its own synthetic catalog built by that tree's
``bench.bench_scale.build`` (the same rows: the same seed, sizes and jitter), and measures
``recommend_for`` per bench workload: CPU time of the process (``time.process_time``, so other
load on a shared machine moves it far less than wall time), first request and the median of
the next ``BENCH_AB_RUNS`` (default 7), each run's amount varied (:func:`bench_scale.vary`;
in trees without it the same body, which a rankings cache then answers). A tree that has the
server's start-up warm-up (``warm_up_and_freeze``; in older trees ``warm_up``) gets it before
the first request, as ``gpu-advisor serve`` does. Output: per tree and workload, the median
over rounds of the per-round medians; bench/results/ab_scale.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
RUNS = int(os.environ.get("BENCH_AB_RUNS", "7"))
N_GPUS = int(os.environ.get("BENCH_AB_GPUS", "5000"))

_CHILD = r"""
import json, os, statistics, sys, time
from datetime import UTC, datetime
from sqlmodel import Session
from bench.bench_scale import build
from bench.bench_http import WORKLOADS
from service.workloads.models import RecommendationQuery
import service.workloads.service as ws
try:
    from service.core.config import Settings
    from service.core.db import make_engine
    from service.app.serving import warm_up_and_freeze as warm_up
except ImportError:  # a tree from before service/core/ and service/app/
    from service.config import Settings
    from service.db import make_engine
    warm_up = getattr(ws, "warm_up", None)
try:  # a tree whose caches are the app's: pass one set, as one server process has
    from service.workloads.caches import AppCaches
    app_caches = {"caches": AppCaches()}
except ImportError:
    try:
        from service.caches import AppCaches
        app_caches = {"caches": AppCaches()}
    except ImportError:
        app_caches = {}
directory, n_gpus, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
url = f"sqlite:///{directory}/scale-{n_gpus}.db"
if not os.path.exists(f"{directory}/scale-{n_gpus}.db"):
    build(n_gpus, directory)
engine = make_engine(url)
settings = Settings(database_url=url)
if warm_up is not None:
    warm_up(engine, settings, *app_caches.values())
out = {}
try:  # a new amount each run (bench_scale.vary), so no run is answered from a cache
    from bench.bench_scale import vary
except ImportError:
    vary = lambda body, i: body
for name, body in WORKLOADS.items():
    cpu = []
    for i in range(runs + 1):
        q = RecommendationQuery.model_validate(vary(body, i))
        c0 = time.process_time()
        with Session(engine) as session:
            ws.recommend_for(session, submission=q, objective=q.objective, limit=q.limit,
                             settings=settings, now=datetime.now(UTC), **app_caches)
        cpu.append((time.process_time() - c0) * 1e3)
    out[name] = {"first_ms": cpu[0], "median_ms": statistics.median(cpu[1:])}
print(json.dumps(out))
"""


def _one(root: Path, directory: str) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", _CHILD, directory, str(N_GPUS), str(RUNS)],
                          cwd=root, env=env, capture_output=True, text=True, check=True)
    result: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(other: Path, rounds: int) -> dict[str, Any]:
    trees = {"this": ROOT, "other": other.resolve()}
    dirs = {name: tempfile.mkdtemp(prefix=f"gpu-advisor-ab-{name}-") for name in trees}
    per_round: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, root in trees.items():
            per_round[name].append(_one(root, dirs[name]))
    summary: dict[str, Any] = {}
    for name, rows in per_round.items():
        summary[name] = {
            w: {"median_cpu_ms": round(statistics.median(r[w]["median_ms"] for r in rows), 1),
                "first_cpu_ms": round(statistics.median(r[w]["first_ms"] for r in rows), 1)}
            for w in rows[0]
        }
    ratios = {w: round(summary["this"][w]["median_cpu_ms"] / summary["other"][w]["median_cpu_ms"],
                       2)
              for w in summary["this"] if w in summary["other"]}
    return {"gpus": N_GPUS, "quotes": N_GPUS * 40, "rounds": rounds, "runs_per_round": RUNS,
            "other_root": other.name, "trees": summary, "this_over_other": ratios,
            "per_round": per_round}


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    result = run(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ab_scale.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "per_round"}, indent=2))


if __name__ == "__main__":
    main()
