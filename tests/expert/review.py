"""Print the answers an infrastructure engineer reads first: the page's five named examples and
the review cases below, as one table each (``python -m tests.expert.review [--json]``).

Runs on a freshly migrated and seeded SQLite catalog in a temporary directory (nothing else is
read or written), at the differential test's pinned clock and settings."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from service.workloads.examples import EXAMPLES, submission_body
from tests.differential import canonical_answer, seeded_catalog

LLAMA8 = {"kind": "inference", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16"}
CASES: dict[str, dict[str, Any]] = {
    **{f"example {name}": submission_body(name, limit=5) for name in EXAMPLES},
    "8B at 5 req/s, cost, no SLO": {
        **LLAMA8, "objective": "cost", "limit": 5,
        "inference": {"prompt_tokens": 1024, "output_tokens": 256, "target_requests_per_s": 5}},
    "8B at 40 req/s, time, no SLO": {
        **LLAMA8, "objective": "time", "limit": 5,
        "inference": {"prompt_tokens": 1024, "output_tokens": 256, "target_requests_per_s": 40}},
    "llm-serving at 5 req/s, time": {
        **submission_body("llm-serving", limit=5), "objective": "time",
        "inference": {**EXAMPLES["llm-serving"]["workload"]["inference"],
                      "target_requests_per_s": 5}},
    "fp64-simulation, balanced": {**submission_body("fp64-simulation", limit=5),
                                  "objective": "balanced"},
}


def row(c: dict[str, Any]) -> str:
    est, cost = c["estimate"], c["cost"]
    par = est["parallelism"]
    layout = f"tp{par['tensor_parallel']} pp{par['pipeline_parallel']} dp{par['data_parallel']}"
    money = cost["total_usd"] or cost["usd_per_million_output_tokens"] or cost[
        "usd_per_1k_requests"]
    unit = "$" if cost["total_usd"] else ("$/Mtok" if cost["usd_per_million_output_tokens"]
                                          else "$/1k req")
    when = (f"{est['time_to_complete_hours']:.4g} h" if est["time_to_complete_hours"] is not None
            else f"{est['latency_ms']:.4g} ms")
    extra = ""
    if est.get("ttft_ms") is not None:
        tpot = est.get("tpot_ms")
        extra = (f" ttft {est['ttft_ms']:.0f} ms" + (f" tpot {tpot:.1f} ms" if tpot else "")
                 + f" batch {est['batch_size']}")
    eff = est.get("parallel_efficiency")
    if eff is not None:
        extra += f" eff {eff:.2f}"
    money_s = f"{money:.4g} {unit}" if money is not None else "-"
    per_h = f"{cost['usd_per_hour']:.4g}" if cost["usd_per_hour"] is not None else "-"
    return (f"| {c['rank']} | {c['gpu']['slug']} | {c['gpu_count']} | {cost['gpus']} | {layout} "
            f"| {per_h} | {money_s} | {when}{extra} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        engine, settings = seeded_catalog(Path(tmp))
        answers = {name: canonical_answer(engine, settings, body) for name, body in CASES.items()}
        engine.dispose()
    if args.json:
        json.dump(answers, sys.stdout, indent=1)
        return 0
    for name, ans in answers.items():
        print(f"\n### {name}\n")
        if "error" in ans:
            print(ans["error"])
            continue
        print("| # | GPU | gpu_count | cost.gpus | layout | $/h | cost | time/latency |")
        print("|---|---|---|---|---|---|---|---|")
        for c in ans["recommendations"]:
            print(row(c))
        rej = ans["rejected"][:4]
        for r in rej:
            print(f"- rejected {r['gpu']['slug']}: {r['reason'][:110]} -> {r['fix']['detail']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
