"""Server time of the comparison page's answer for each named example (target <= 300 ms).

Run: ``.venv/bin/python -m bench.page_examples [-n RUNS]``; results:
bench/results/page_examples.json.

The page (service/web/static/ui.js) posts the named example's body
(``service.workloads.examples.submission_body(name, limit=10)``) to
``POST /v1/recommendations?view=compact``. Each run goes through the service as a POST does
(:func:`bench.profile_request.request_by_stage`, view ``compact``) on a freshly migrated and
seeded SQLite catalog after ``warm_up_and_freeze``, with the engine's shared tables warm (as on a
serving process) but the answer computed afresh: a first visitor's wait, not a rankings-cache
hit (the route serves repeated bodies from that cache). Wall time (``time.perf_counter``) and
process CPU time; medians of RUNS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.profile_request import RESULTS, request_by_stage, seeded_catalog
from service.workloads.examples import EXAMPLES, submission_body

TARGET_MS = 300.0


def measure(runs: int) -> dict[str, Any]:
    engine, settings, caches = seeded_catalog()
    out: dict[str, Any] = {}
    for name in EXAMPLES:
        text = json.dumps(submission_body(name, limit=10))
        wall: list[float] = []
        cpu: list[float] = []
        size = 0
        for _ in range(runs):
            w0, c0 = time.perf_counter(), time.process_time()
            size = len(request_by_stage(engine, text, settings, caches, lambda _: None,
                                        view="compact"))
            wall.append((time.perf_counter() - w0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
        out[name] = {"wall_ms_p50": round(statistics.median(wall), 1),
                     "cpu_ms_p50": round(statistics.median(cpu), 1),
                     "wall_ms_max": round(max(wall), 1), "answer_bytes": size,
                     "within_target": statistics.median(wall) <= TARGET_MS}
    engine.dispose()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=5, help="runs per example (default 5)")
    args = p.parse_args(argv)
    result = {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "view": "compact", "runs": args.n, "target_ms": TARGET_MS,
              "examples": measure(args.n)}
    RESULTS.mkdir(exist_ok=True)
    Path(RESULTS / "page_examples.json").write_text(json.dumps(result, indent=2) + "\n")
    for name, row in result["examples"].items():
        print(f"{name:16s} wall p50 {row['wall_ms_p50']:7.1f} ms  CPU p50 "
              f"{row['cpu_ms_p50']:7.1f} ms  {row['answer_bytes']:7d} B")
    return result


if __name__ == "__main__":
    main()
