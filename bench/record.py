"""What the in-process benchmarks share: their command line over the varied bodies, and
writing a result to bench/results/."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import varied

RESULTS = Path(__file__).resolve().parent / "results"


def varied_args(description: str | None, argv: list[str] | None,
                default_n: int) -> argparse.Namespace:
    """``-n`` (bodies per kind) and ``--seed`` (bench/varied.py's by default)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("-n", type=int, default=default_n,
                   help=f"bodies per kind (default {default_n})")
    p.add_argument("--seed", type=int, default=varied.SEED)
    return p.parse_args(argv)


def stamped(**fields: Any) -> dict[str, Any]:
    """``fields`` after the time they were generated at."""
    return {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"), **fields}


def write_result(name: str, result: dict[str, Any]) -> Path:
    """``result`` as bench/results/``name``, indented JSON."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path
