"""CPU time per varied recommendation, in process, for LLM serving, training and FP64 jobs.

Run: ``.venv/bin/python -m bench.cpu_per_request [-n N] [--seed S]``; results:
bench/results/cpu_per_request.json (also written by ``make bench``'s ``seeded`` section).

Every body is new (no answer can be reused across requests), drawn from a seeded generator per
kind, and goes through the service as a POST does (:func:`bench.profile_request.request_by_stage`:
parse, engine inputs, snapshots, ranking, answer, serialization) on a freshly migrated and seeded
SQLite catalog, after ``warm_up`` and two warm-up bodies per kind. Time is this process's CPU
time (``time.process_time``), which a busy shared machine disturbs far less than wall time;
beside the figures, ``yardstick_ms`` (:func:`yardstick_ms`, before and after the run,
averaged) says how fast the machine ran plain Python, for comparing runs.

* ``llm-serving``: bench/varied.py's bodies (4 presets, prompt 256-4,096, output 32-1,024,
  1-97 requests/s, TTFT 500 ms / TPOT 50 ms, objective cost);
* ``training``: one of 6 transformer presets, bf16, global batch 64-2,048 sequences of
  1,024-8,192 tokens, 1e9-1e12 training tokens, objective balanced;
* ``fp64``: 1e3-1e8 TFLOP of FP64 work, 1e2-1e7 GB moved, a 1-2,000 GB working set, objective
  time.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from typing import Any

from bench import varied
from bench.profile_request import request_by_stage, seeded_catalog
from bench.record import stamped, varied_args, write_result

TRAINING_PRESETS = ("llama-3.1-8b", "mistral-7b", "llama-2-13b", "llama-2-70b",
                    "llama-3.1-70b", "gpt-j-6b")
KINDS = ("llm-serving", "training", "fp64")


def _log(r: random.Random, lo: float, hi: float) -> float:
    return float(f"{lo * (hi / lo) ** r.random():.3g}")


def training_body(r: random.Random) -> str:
    body = {"kind": "training", "model": {"preset": r.choice(TRAINING_PRESETS)},
            "precision": "bf16", "objective": "balanced",
            "training": {"batch_size": int(_log(r, 64, 2048)),
                         "seq_len": r.choice((1024, 2048, 4096, 8192)),
                         "tokens": _log(r, 1e9, 1e12)}}
    return json.dumps(body)


def fp64_body(r: random.Random) -> str:
    body = {"kind": "compute", "precision": "fp64", "objective": "time",
            "compute": {"total_tflop": _log(r, 1e3, 1e8), "total_gb_moved": _log(r, 1e2, 1e7),
                        "memory_gb": _log(r, 1, 2000)}}
    return json.dumps(body)


def bodies(kind: str, seed: int, n: int) -> list[str]:
    if kind == "llm-serving":
        return varied.VariedBodies(seed, 1).take(n)
    r = random.Random(f"{kind}-{seed}")
    make = training_body if kind == "training" else fp64_body
    return [make(r) for _ in range(n)]


YARDSTICK_SQUARES = 10**6


def yardstick_ms() -> float:
    """This machine's speed at plain Python: CPU ms of a loop summing 10^6 squares (median of
    5). Shared machines drift by tens of percent between runs; the figures of two runs compare
    in proportion to their yardsticks, not as they stand."""
    times = []
    for _ in range(5):
        started, total = time.process_time(), 0
        for i in range(YARDSTICK_SQUARES):
            total += i * i
        times.append((time.process_time() - started) * 1e3)
    return round(statistics.median(times), 1)


def measure(n: int, seed: int) -> dict[str, Any]:
    engine, settings, caches = seeded_catalog()
    out: dict[str, Any] = {}
    for kind in KINDS:
        for text in bodies(kind, seed + 99, 2):  # warm-up: another stream
            request_by_stage(engine, text, settings, caches, lambda stage: None)
        cpu: list[float] = []
        for text in bodies(kind, seed, n):
            started = time.process_time()
            request_by_stage(engine, text, settings, caches, lambda stage: None)
            cpu.append((time.process_time() - started) * 1e3)
        out[kind] = {"bodies": n, "cpu_ms_p50": round(statistics.median(cpu), 3),
                     "cpu_ms_p90": round(statistics.quantiles(cpu, n=10)[-1], 3),
                     "cpu_ms_max": round(max(cpu), 3)}
    engine.dispose()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = varied_args(__doc__.split("\n\n")[0], argv, 60)
    before = yardstick_ms()
    kinds = measure(args.n, args.seed)
    result = stamped(clock="process CPU time", seed=args.seed,
                     yardstick_ms=round((before + yardstick_ms()) / 2, 1), kinds=kinds)
    write_result("cpu_per_request.json", result)
    for kind, row in result["kinds"].items():
        print(f"{kind:12s} CPU p50 {row['cpu_ms_p50']:8.2f} ms  p90 {row['cpu_ms_p90']:8.2f}"
              f"  max {row['cpu_ms_max']:8.2f}  ({row['bodies']} bodies)")
    return result


if __name__ == "__main__":
    main()
