"""`gpu-advisor recommend workload.json`: rank GPUs against the local database."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError
from sqlmodel import Session

from service.core.config import command_settings
from service.core.errors import ProblemError
from service.core.times import utcnow
from service.engine.recommend_types import Objective


def add_recommend_parser(sub: Any) -> None:
    p = sub.add_parser(
        "recommend", help="Rank GPUs for a workload JSON file (local database)",
        description="The file holds exactly the body of POST /v1/recommendations (a stored "
                    "workload's body, without `limit`, works too); options override its "
                    "`objective` and `limit`.")
    p.add_argument("workload", help="Path to a workload JSON file ('-' for standard input)")
    p.add_argument("--objective", choices=get_args(Objective),
                   help="Default: the body's objective")
    p.add_argument("--limit", type=int, default=None, help="Default: the body's limit (10)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_recommend)


SHOWN_REJECTIONS = 15
"""Rejected GPUs the table lists; the rest are counted (the JSON lists all)."""


def _fmt(value: float | None, unit: str = "", digits: int = 3) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}{unit}"
    return f"{value:.{digits}g}{unit}"


def render_table(result: dict[str, Any]) -> str:
    lines = [f"objective: {result['objective']}   catalog revision: {result['catalog_revision']}"]
    header = f"{'#':>2}  {'GPU':<34} {'GPUs':>5} {'layout':>9}  {'offer':<38} {'$/h':>9} " \
             f"{'cost':>14} {'time/latency':>14} {'bound':<16} P"
    lines += [header, "-" * len(header)]
    for c in result["recommendations"]:
        q = c["quote"]
        offer = f"{q['provider']} {q['instance_type']} {q['pricing']}" if q else "(no quote)"
        cost = c["cost"]
        if cost["total_usd"] is not None:
            money = _fmt(cost["total_usd"], " $")
        elif cost["usd_per_million_output_tokens"] is not None:
            money = _fmt(cost["usd_per_million_output_tokens"], " $/Mtok")
        elif cost["usd_per_1k_requests"] is not None:
            money = _fmt(cost["usd_per_1k_requests"], " $/1k")
        else:
            money = "-"
        est = c["estimate"]
        if est["time_to_complete_hours"] is not None:
            when = _fmt(est["time_to_complete_hours"], " h")
        else:
            when = _fmt(est["latency_ms"], " ms")
        lines.append(
            f"{c['rank']:>2}  {c['gpu']['slug'][:34]:<34} {c['gpu_count']:>5} "
            f"{str(c['replicas']) + 'x' + str(c['gpus_per_replica']):>9}  {offer[:38]:<38} "
            f"{_fmt(cost['usd_per_hour']):>9} {money:>14} {when:>14} {str(est['bound']):<16} "
            f"{'*' if c['pareto_optimal'] else ''}"
        )
    if result["recommendations"]:
        lines.append("")
        lines.append("why #1: " + " | ".join(result["recommendations"][0]["reasons"][:4]))
    if result["rejected"]:
        lines.append("")
        lines.append(f"ruled out ({len(result['rejected'])}):")
        for r in result["rejected"][:SHOWN_REJECTIONS]:
            lines.append(f"  {r['gpu']['slug']:<34} {r['reason'][:70]}  -> {r['fix']['detail']}")
        more = len(result["rejected"]) - SHOWN_REJECTIONS
        if more > 0:
            lines.append(f"  ... and {more} more (--format json lists every one)")
    for w in result["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def cmd_recommend(args: argparse.Namespace) -> int:
    from service.app.seeding import seed
    from service.core.db import make_engine
    from service.core.migrate import upgrade
    from service.workloads.answers import to_json
    from service.workloads.caches import AppCaches
    from service.workloads.models import RecommendationQuery
    from service.workloads.service import rank_for

    text = sys.stdin.read() if args.workload == "-" else Path(args.workload).read_text()
    try:
        submission = RecommendationQuery.model_validate_json(text)
        if args.limit is not None:
            submission = RecommendationQuery.model_validate(
                {**submission.model_dump(exclude_unset=True), "limit": args.limit})
    except ValidationError as exc:
        for detail in exc.errors():
            field = ".".join(str(p) for p in detail["loc"])
            print(f"error: {field}: {detail['msg']}", file=sys.stderr)
        return 2
    settings = command_settings(args.database_url)
    upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    seed(engine)
    with Session(engine) as session:
        try:
            answer = rank_for(
                session, submission=submission, objective=args.objective or submission.objective,
                limit=submission.limit, settings=settings, caches=AppCaches(), now=utcnow(),
            )
        except ProblemError as exc:
            for err in exc.errors:
                print(f"error: {err.field}: {err.message}", file=sys.stderr)
            print(f"error: {exc.detail or exc.title}", file=sys.stderr)
            return 2
    # JSON: the full answer (as a stored run keeps it); the table: the whole answer without
    # the constants (it shows the top pick's reasons and each rejected GPU's nearest fix)
    data = json.loads(to_json(answer.data("full" if args.format == "json" else "compact")))
    try:
        print(json.dumps(data, indent=2) if args.format == "json" else render_table(data))
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader left (`| head`): not an error; send what is still buffered nowhere so
        # that the interpreter's own flush at exit does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
