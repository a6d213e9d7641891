"""Benchmark: import a synthetic 100,000-row SkyPilot catalog.

Run: ``.venv/bin/python -m bench.bench_import`` (``TEST_DATABASE_URL`` set: PostgreSQL too).
Writes bench/results/import.json: rows, seconds (median of 3 imports, each into a freshly
migrated and seeded database), rows/s, and the time of a re-import where every price changed
(bulk UPDATE + price history).

The file is built in memory from the shapes of the real AWS rows in tests/data/skypilot/ (GPU
and non-GPU accelerators, AZ duplicates, empty spot prices) with synthetic region and
instance-type names, so it exercises the same paths as a real catalog.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlmodel import Session

from service.app.seeding import seed
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.quotes.imports import run_import

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "data" / "skypilot" / "aws_vms_gpu.csv"
RESULTS = Path(__file__).resolve().parent / "results" / "import.json"
ROWS = 100_000
RUNS = 3


def synthesize(rows: int = ROWS, price_factor: float = 1.0) -> bytes:
    """A SkyPilot CSV with ``rows`` data rows: the real rows' shapes, synthetic names."""
    with SOURCE.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header = list(reader.fieldnames or [])
        shapes = list(reader)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    n = 0
    copy = 0
    while n < rows:
        for shape in shapes:
            if n >= rows:
                break
            row = dict(shape)
            row["Region"] = f"syn-{copy % 40}-{shape['Region']}"
            row["AvailabilityZone"] = f"{row['Region']}-{shape['AvailabilityZone']}"
            row["InstanceType"] = f"{shape['InstanceType']}.v{copy // 40}"
            for col in ("Price", "SpotPrice"):
                if row[col]:
                    row[col] = f"{float(row[col]) * price_factor:.6f}"
            writer.writerow(row)
            n += 1
        copy += 1
    return out.getvalue().encode()


def fresh_database(kind: str, server_url: str | None, tmp: Path, i: int) -> tuple[str, Any]:
    if kind == "sqlite":
        url = f"sqlite:///{tmp / f'bench{i}.db'}"
        cleanup = None
    else:
        from tests.conftest import create_pg_database, drop_pg_database

        assert server_url
        url = create_pg_database(server_url, prefix="gpu_advisor_bench")

        def cleanup() -> None:
            drop_pg_database(server_url, url)
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    return url, (engine, cleanup)


def timed_import(engine: Any, body: bytes) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    with Session(engine, expire_on_commit=False) as session:
        result = run_import(session, body=body, content_type="text/csv", fmt="skypilot",
                            provider="aws", dry_run=False, source="bench", captured_at=None,
                            who="bench")
        session.commit()
    seconds = time.perf_counter() - start
    return seconds, {"quotes": result.quotes_in_file, "added": result.added,
                     "updated": len(result.updated), "unmatched": len(result.unmatched)}


def bench(kind: str, server_url: str | None, body: bytes, changed: bytes) -> dict[str, Any]:
    runs: list[float] = []
    counts: dict[str, Any] = {}
    reimport: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(RUNS):
            _, (engine, cleanup) = fresh_database(kind, server_url, Path(tmp), i)
            try:
                seconds, counts = timed_import(engine, body)
                runs.append(seconds)
                if i == RUNS - 1:
                    re_s, re_counts = timed_import(engine, changed)
                    reimport = {"seconds": round(re_s, 3), **re_counts}
            finally:
                engine.dispose()
                if cleanup:
                    cleanup()
    median = statistics.median(runs)
    return {"rows": ROWS, "seconds": round(median, 3), "rows_per_s": round(ROWS / median),
            "runs_s": [round(r, 3) for r in runs], **counts,
            "reimport_all_prices_changed": reimport}


def main() -> int:
    import os

    body = synthesize()
    changed = synthesize(price_factor=1.1)
    results: dict[str, Any] = {"rows": ROWS, "bytes": len(body), "python": sys.version.split()[0]}
    results["sqlite"] = bench("sqlite", None, body, changed)
    print("sqlite", json.dumps(results["sqlite"]))
    pg = os.environ.get("TEST_DATABASE_URL")
    if pg:
        results["postgresql"] = bench("postgresql", pg, body, changed)
        print("postgresql", json.dumps(results["postgresql"]))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
