"""A/B of CPU per varied recommendation (:mod:`bench.cpu_per_request`'s bodies and path) between
this tree and another, interleaved.

Run: ``python -m bench.ab_cpu OTHER_ROOT [ROUNDS] [KINDS]``, where OTHER_ROOT is another
checkout (``git worktree add DIR COMMIT``; it may share this tree's ``.venv``) and KINDS a
comma-separated subset of ``llm-serving,training,fp64`` (default all). Each round runs one
process per tree in turn (A, B, A, B, ...): a freshly seeded SQLite catalog, two warm-up bodies
per kind, then 40 new bodies per kind, this process's CPU time each; the round's figure is
their median. This machine's speed drifts by tens of percent between minutes, so a single run
says little: the output is, per tree and kind, the median and the least of the rounds'
figures, and every round's. Results: bench/results/ab_cpu.json.
"""

from __future__ import annotations

import ast
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.record import stamped, write_result

ROOT = Path(__file__).resolve().parent.parent
BODIES = 40
_ONE_ROUND = r'''
import statistics, sys, time
from bench import cpu_per_request as cpr
from bench.profile_request import request_by_stage, seeded_catalog
engine, settings, caches = seeded_catalog()
out = {}
for kind in sys.argv[1].split(","):
    for text in cpr.bodies(kind, 113, 2):
        request_by_stage(engine, text, settings, caches, lambda stage: None)
    cpu = []
    for text in cpr.bodies(kind, 14, int(sys.argv[2])):
        started = time.process_time()
        request_by_stage(engine, text, settings, caches, lambda stage: None)
        cpu.append((time.process_time() - started) * 1e3)
    out[kind] = statistics.median(cpu)
print(repr(out))
'''


def _round(tree: Path, kinds: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _ONE_ROUND, kinds, str(BODIES)], cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True,
                          text=True, check=True)
    figures: dict[str, float] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str]) -> dict[str, Any]:
    other = Path(argv[0]).resolve()
    rounds = int(argv[1]) if len(argv) > 1 else 4
    kinds = argv[2] if len(argv) > 2 else "llm-serving,training,fp64"
    trees = {"this": ROOT, "other": other}
    seen: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            for kind, value in _round(tree, kinds).items():
                seen[name].setdefault(kind, []).append(round(value, 3))
    out: dict[str, Any] = stamped(rounds=rounds, bodies=BODIES, trees={})
    for name, kinds_seen in seen.items():
        out["trees"][name] = {kind: {"median_ms": round(statistics.median(v), 2),
                                     "least_ms": min(v), "rounds_ms": v}
                              for kind, v in kinds_seen.items()}
        for kind, v in kinds_seen.items():
            print(f"{name:6s} {kind:12s} median {statistics.median(v):6.2f} ms  "
                  f"least {min(v):6.2f} ms  rounds {v}")
    write_result("ab_cpu.json", out)
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
