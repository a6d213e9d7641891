"""A/B of CPU per varied recommendation between this tree and another, in paired batches.

Run: ``python -m bench.ab_pairs OTHER_ROOT [BATCHES] [BODIES] [KINDS]`` (defaults 100, 30,
``fp64``; KINDS a comma-separated subset of ``llm-serving,training,fp64``). Results:
bench/results/ab_pairs.json.

:mod:`bench.ab_cpu` starts a process per tree and round, and this machine's speed moves by
tens of percent between its rounds, so it resolves differences of ~5% or more. Here each tree
keeps one process (a seeded SQLite catalog, warmed up as :mod:`bench.ab_cpu` does), and the
two take turns on batches of BODIES new bodies: both trees get the same bodies in each batch
(a new seed per batch), the order within a pair alternates, and only one process runs at a
time. A batch's figure is the median of its bodies' CPU time (``time.process_time``, as
:func:`bench.profile_request.request_by_stage` runs them); the output per kind is both trees'
median over batches and the median of the paired ratios (this / other), with the number of
pairs this tree won: drift between batches cancels within a pair, so ~1-2% shows.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.record import stamped, write_result

ROOT = Path(__file__).resolve().parent.parent
_WORKER = r'''
import statistics, sys, time
from bench import cpu_per_request as cpr
from bench.profile_request import request_by_stage, seeded_catalog
engine, settings, caches = seeded_catalog()
for kind in sys.argv[1].split(","):
    for text in cpr.bodies(kind, 113, 2):
        request_by_stage(engine, text, settings, caches, lambda stage: None)
print("ready", flush=True)
for line in sys.stdin:
    kind, seed, n = line.split()
    cpu = []
    for text in cpr.bodies(kind, int(seed), int(n)):
        started = time.process_time()
        request_by_stage(engine, text, settings, caches, lambda stage: None)
        cpu.append((time.process_time() - started) * 1e3)
    print(statistics.median(cpu), flush=True)
'''
SEED = 1000
"""The first batch's seed (the next batches count up from it)."""


def _start(tree: Path, kinds: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _WORKER, kinds], cwd=tree,
                            env={**os.environ, "PYTHONPATH": str(tree)}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"the worker in {tree} did not start")
    return proc


def _batch(proc: subprocess.Popen[str], kind: str, seed: int, bodies: int) -> float:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{kind} {seed} {bodies}\n")
    proc.stdin.flush()
    return float(proc.stdout.readline())


def main(argv: list[str]) -> dict[str, Any]:
    other = Path(argv[0]).resolve()
    batches = int(argv[1]) if len(argv) > 1 else 100
    bodies = int(argv[2]) if len(argv) > 2 else 30
    kinds = argv[3] if len(argv) > 3 else "fp64"
    procs = {"this": _start(ROOT, kinds), "other": _start(other, kinds)}
    seen: dict[str, dict[str, list[float]]] = {k: {"this": [], "other": []}
                                               for k in kinds.split(",")}
    try:
        for i in range(batches):
            for kind, figures in seen.items():
                for name in ("this", "other") if i % 2 == 0 else ("other", "this"):
                    figures[name].append(_batch(procs[name], kind, SEED + i, bodies))
    finally:
        for proc in procs.values():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait()
    out: dict[str, Any] = stamped(batches=batches, bodies=bodies, kinds={})
    for kind, figures in seen.items():
        ratios = [a / b for a, b in zip(figures["this"], figures["other"], strict=True)]
        row = {"this_median_ms": round(statistics.median(figures["this"]), 3),
               "other_median_ms": round(statistics.median(figures["other"]), 3),
               "paired_ratio_median": round(statistics.median(ratios), 3),
               "this_faster_pairs": sum(r < 1 for r in ratios)}
        out["kinds"][kind] = row
        print(f"{kind:12s} this {row['this_median_ms']:6.3f} ms  other "
              f"{row['other_median_ms']:6.3f} ms  paired this/other "
              f"{row['paired_ratio_median']:.3f}  (this faster in "
              f"{row['this_faster_pairs']}/{batches})")
    write_result("ab_pairs.json", out)
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
