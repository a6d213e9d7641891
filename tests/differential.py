"""Differential test of the recommendation engine: ~300 seeded random `POST /v1/recommendations`
bodies and a digest of today's answer to each, so that a change meant to make the engine faster
can be shown to leave every answer byte-for-byte identical (tests/unit/test_differential.py).

    python -m tests.differential regenerate   # rewrite tests/data/differential/golden.json
    python -m tests.differential check [--order forward|reverse|shuffled] [--cold-each]
                                       [--with-oversized] [--golden PATH]

Regenerate only when an answer is meant to change, and say why in the commit.

Bodies: tests/differential_bodies.py draws them with ``random.Random(14)``: training
(pre-training and fine-tuning sized), LLM inference (prompt 1..8192 tokens, output absent, 0
or more, SLOs present or absent, 0.1..5,000 requests/s), encoder (BERT) and CNN/detector
inference, FP64 and FP32 compute, edge deployments, a few custom models, and one body per
engine consistency check (a 422); every objective, limits 1..20, random constraints. The golden
file stores the bodies, so the test does not depend on the generator staying the same.

Canonical answer: ``recommend_for`` on a freshly migrated and seeded SQLite catalog, at
:data:`NOW`, with :data:`SETTINGS` (the settings the ranking reads, pinned against the
environment), ``.model_dump(mode="json")`` without ``generated_at`` (the clock) and
``catalog_revision`` (a hash of each table's row count, max id, version sum and *latest
updated_at*: the seeding's wall-clock time, so it differs between two fresh catalogs with the
same rows), serialized by ``json.dumps(sort_keys=True, separators=(",", ":"))``. Floats are
written by ``repr``, so a 1-ulp change in any figure changes the digest. A 4xx is an answer
too: its problem details.

Oversized answers: a serving answer whose model spans several nodes carries a StatefulSet and a
headless Service per replica (engine/choice/provision.py, ``kubernetes_manifests``), and nothing
caps the replicas: GPT-3 175B at 1,860 requests/s is 23,000-100,000 replicas per candidate,
305,586 pod specs, a 393 MB answer, ~57 s and 5 GB of memory. Such cases (a canonical answer
over :data:`MAX_ANSWER_BYTES`; the others are at most ~0.3 MB) are stored under ``oversized``
with their digest and checked only by ``check --with-oversized``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy.engine import Engine
from sqlmodel import Session

from service.app.seeding import seed
from service.core.config import Settings
from service.core.db import make_engine
from service.core.errors import ProblemError
from service.core.migrate import upgrade
from service.workloads.caches import AppCaches
from service.workloads.models import RecommendationQuery
from service.workloads.service import recommend_for
from tests.differential_bodies import FAMILIES, REFUSED, SEED, Body, make_bodies

GOLDEN = Path(__file__).resolve().parent / "data" / "differential" / "golden.json"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SETTINGS: dict[str, float] = {
    "stale_quote_days": 30.0, "electricity_usd_per_kwh": 0.15, "amortization_years": 3.0,
}
DROPPED = ("generated_at", "catalog_revision")
NEWER_DEFAULTS: dict[str, Any] = {"fleet": None}
NEWER_CONSTRAINT_DEFAULTS: dict[str, Any] = {"max_gpu_types": None, "mix": True}
NEWER_ESTIMATE_DEFAULTS: dict[str, Any] = {"startup_s": None}
"""Answer fields added after the golden answers were written (the mixed fleet of a
traffic histogram, and its two constraints; an estimate's start-up, null for inference): left
out of the canonical answer while they hold their default, so the digests cover exactly what
the golden covers; any other value is kept (and would change the digest)."""
MAX_ANSWER_BYTES = 5_000_000
"""Larger canonical answers are kept apart (``oversized``): one such answer takes ~1 minute and
GBs of memory (see the module docstring), too slow for the unit test."""


# -- answers -----------------------------------------------------------------------------------

def seeded_catalog(directory: Path) -> tuple[Engine, Settings]:
    """A fresh SQLite catalog under ``directory``, built by the migrations and seeded."""
    url = f"sqlite:///{directory / 'differential.db'}"
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    return engine, Settings(
        database_url=url, stale_quote_days=SETTINGS["stale_quote_days"],
        electricity_usd_per_kwh=SETTINGS["electricity_usd_per_kwh"],
        amortization_years=SETTINGS["amortization_years"])


def canonical_answer(engine: Engine, settings: Settings, body: Body, *,
                     caches: AppCaches | None = None) -> dict[str, Any]:
    """The answer to ``body`` (a result, or a 4xx's problem details) without run-time fields,
    computed with ``caches`` (None: fresh ones, as a newly started app has)."""
    query = RecommendationQuery.model_validate(body)
    with Session(engine) as session:
        try:
            result = recommend_for(session, submission=query, objective=query.objective,
                                   limit=query.limit, settings=settings,
                                   caches=caches or AppCaches(), now=NOW)
        except ProblemError as exc:
            return {"error": {"status": exc.status, "type": exc.slug, "title": exc.title,
                              "detail": exc.detail,
                              "errors": [e.model_dump(mode="json") for e in exc.errors]}}
    answer = result.model_dump(mode="json")
    for field in DROPPED:
        del answer[field]
    for key, default in NEWER_DEFAULTS.items():
        if key in answer and answer[key] == default:
            del answer[key]
    constraints = answer.get("constraints") or {}
    for key, default in NEWER_CONSTRAINT_DEFAULTS.items():
        if key in constraints and constraints[key] == default:
            del constraints[key]
    for listed in ("recommendations", "rejected"):
        for item in answer.get(listed) or ():
            est = item.get("estimate") if isinstance(item, dict) else None
            for key, default in NEWER_ESTIMATE_DEFAULTS.items():
                if isinstance(est, dict) and key in est and est[key] == default:
                    del est[key]
    return answer


class Outcome(NamedTuple):
    sha256: str
    summary: dict[str, Any]
    answer_bytes: int


def outcome(answer: dict[str, Any]) -> Outcome:
    text = json.dumps(answer, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return Outcome(hashlib.sha256(text).hexdigest(), summary(answer), len(text))


def summary(answer: dict[str, Any]) -> dict[str, Any]:
    """For people reading a mismatch: top 3 [slug, GPUs, score], candidates, rejections."""
    if "error" in answer:
        err = answer["error"]
        return {"status": err["status"], "fields": [e["field"] for e in err["errors"]]}
    recs = answer["recommendations"]
    return {"top": [[c["gpu"]["slug"], c["gpu_count"], c["score"]] for c in recs[:3]],
            "candidates": len(recs), "rejected": len(answer["rejected"])}


def run_cases(engine: Engine, settings: Settings, cases: Iterable[dict[str, Any]], *,
              caches: AppCaches, cold_each: bool = False) -> dict[int, Outcome]:
    """Each case's outcome by its index, computed in the order given with ``caches``;
    ``cold_each`` empties the engine cache before every case."""
    out = {}
    for case in cases:
        if cold_each:
            caches.engine.clear()
        out[case["index"]] = outcome(canonical_answer(engine, settings, case["body"],
                                                      caches=caches))
    return out


def mismatches(golden: Sequence[dict[str, Any]], got: dict[int, Outcome]) -> list[str]:
    """One entry per case whose digest differs from the golden one, in golden order."""
    return [f"case {case['index']} {json.dumps(case['body'], sort_keys=True)}\n"
            f"    now:    {json.dumps(got[case['index']].summary, sort_keys=True)}\n"
            f"    golden: {json.dumps(case['summary'], sort_keys=True)}"
            for case in golden if got[case["index"]].sha256 != case["sha256"]]


def in_order(cases: Sequence[dict[str, Any]], order: str) -> list[dict[str, Any]]:
    """``cases`` forward, reversed, or shuffled (seeded: the same permutation every run)."""
    out = list(cases)
    if order == "reverse":
        out.reverse()
    elif order == "shuffled":
        random.Random(SEED + 1).shuffle(out)
    return out


# -- golden file -------------------------------------------------------------------------------

def load_golden(path: Path = GOLDEN) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def write_golden(path: Path, bodies: Sequence[Body], got: dict[int, Outcome]) -> None:
    """One case per line, so a regenerated file diffs case by case. An answer over
    :data:`MAX_ANSWER_BYTES` goes under ``oversized`` (with its size), not ``cases``."""
    head = {"generator": "python -m tests.differential regenerate", "seed": SEED,
            "now": NOW.isoformat(), "settings": SETTINGS, "dropped_fields": list(DROPPED),
            "families": {**{name: count for name, count, _ in FAMILIES}, "refused": len(REFUSED)},
            "max_answer_bytes": MAX_ANSWER_BYTES}
    parts: dict[str, list[str]] = {"cases": [], "oversized": []}
    for i, body in enumerate(bodies):
        case = {"index": i, "body": body, "sha256": got[i].sha256, "summary": got[i].summary}
        big = got[i].answer_bytes > MAX_ANSWER_BYTES
        if big:
            case["answer_bytes"] = got[i].answer_bytes
        parts["oversized" if big else "cases"].append(
            json.dumps(case, sort_keys=True, separators=(",", ":")))
    text = json.dumps(head, sort_keys=True)[:-1] + "".join(
        f',\n"{key}":[\n' + ",\n".join(lines) + "\n]" for key, lines in parts.items()) + "}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential")
    parser.add_argument("command", choices=["regenerate", "check"])
    parser.add_argument("--order", choices=["forward", "reverse", "shuffled"], default="forward")
    parser.add_argument("--cold-each", action="store_true",
                        help="empty the engine cache before every case")
    parser.add_argument("--with-oversized", action="store_true",
                        help="check: also the oversized answers (about a minute each)")
    parser.add_argument("--golden", type=Path, default=GOLDEN)
    args = parser.parse_args(argv)
    cases: list[dict[str, Any]]
    if args.command == "regenerate":
        cases = [{"index": i, "body": body} for i, body in enumerate(make_bodies())]
    else:
        golden = load_golden(args.golden)
        cases = golden["cases"] + (golden["oversized"] if args.with_oversized else [])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu-advisor-differential-") as tmp:
        engine, settings = seeded_catalog(Path(tmp))
        got = run_cases(engine, settings, in_order(cases, args.order), caches=AppCaches(),
                        cold_each=args.cold_each)
        engine.dispose()
    seconds = time.perf_counter() - started
    if args.command == "regenerate":
        write_golden(args.golden, [c["body"] for c in cases], got)
        print(f"wrote {len(cases)} cases to {args.golden} in {seconds:.1f} s")
        return 0
    bad = mismatches(cases, got)
    print("\n".join(bad[:10]))
    print(f"{len(cases) - len(bad)}/{len(cases)} identical ({args.order}"
          f"{', cold each' if args.cold_each else ''}) in {seconds:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
