"""Measure one large quote import through a live `gpu-advisor serve` (one worker): wall time of
the POST and the server process's peak RSS (VmHWM), before and after.

Run: ``.venv/bin/python -m bench.measure_import_rss [MB] [--format=skypilot|generic|json]``
(default 60 MB, SkyPilot; PostgreSQL when TEST_DATABASE_URL is set, else a fresh SQLite file).
Prints one JSON line; the file is bench_import's synthetic SkyPilot catalog (the real AWS rows'
shapes with synthetic names) or the same rows as our generic CSV.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.bench_import import synthesize
from tests.hardening.live import serve, stop

ADMIN_KEY = "gpa_importrss01_" + "a" * 43


def _rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def generic_csv(target_bytes: int) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["gpu_slug", "provider", "region", "instance_type", "gpu_count", "pricing",
                     "price_usd_per_hour", "source", "captured_at", "observed_at"])
    i = 0
    while out.tell() < target_bytes:
        writer.writerow(["nvidia-h100-sxm5-80gb", "bigcloud", f"region-{i % 50}",
                         f"instance-type-{i:09d}.xlarge", 8, "on_demand",
                         f"{20 + i % 997 / 100:.4f}",
                         "https://example.com/prices/2026-11-30", "2026-11-30T00:00:00Z",
                         "2026-11-30"])
        i += 1
    return out.getvalue().encode()


def generic_json(target_bytes: int) -> bytes:
    """The generic CSV's rows as a JSON list of quote objects, about ``target_bytes`` long."""
    rows = list(csv.DictReader(io.StringIO(generic_csv(int(target_bytes * 0.49)).decode())))
    return json.dumps(rows).encode()


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    as_json = "--format=json" in sys.argv[1:]
    fmt = "generic" if as_json or "--format=generic" in sys.argv[1:] else "skypilot"
    megabytes = float(args[0]) if args else 60.0
    target = int(megabytes * 1_000_000)
    if fmt == "skypilot":
        rows = int(100_000 * target / len(synthesize(100_000)))
        body = synthesize(rows)
    else:
        body = generic_json(target) if as_json else generic_csv(target)
    pg = os.environ.get("TEST_DATABASE_URL")
    with tempfile.TemporaryDirectory() as tmp:
        if pg:
            from tests.conftest import create_pg_database, drop_pg_database
            url = create_pg_database(pg, prefix="gpu_advisor_bench")
        else:
            url = f"sqlite:///{tmp}/import.db"
        env = {"GPU_ADVISOR_MAX_IMPORT_BYTES": str(max(len(body) + 1024, 64 * 1024 * 1024)),
               "GPU_ADVISOR_BODY_READ_TIMEOUT_S": "600", "GPU_ADVISOR_DB_DEADLINE_S": "600"}
        proc, base = serve(url, admin_key=ADMIN_KEY, env=env)
        try:
            before = _rss_kb(proc.pid, "VmRSS")
            start = time.perf_counter()
            resp = httpx.post(f"{base}/v1/quotes/import", content=body,
                              params={"format": fmt, "provider": "bigcloud" if fmt == "generic"
                                      else "aws", "source": "measure"},
                              headers={"Authorization": f"Bearer {ADMIN_KEY}",
                                       "Content-Type": "application/json" if as_json
                                       else "text/csv"}, timeout=900)
            seconds = time.perf_counter() - start
            peak = _rss_kb(proc.pid, "VmHWM")
            out = resp.json() if resp.status_code == 200 else {}
            print(json.dumps({
                "format": "generic-json" if as_json else fmt,
                "database": "postgresql" if pg else "sqlite",
                "body_mb": round(len(body) / 1e6, 1), "status": resp.status_code,
                "seconds": round(seconds, 1), "rss_before_mb": round(before / 1024),
                "rss_peak_mb": round(peak / 1024), "response_mb": round(len(resp.content) / 1e6, 1),
                "rows_read": out.get("rows_read"), "added": out.get("added"),
            }))
        finally:
            stop(proc)
            if pg:
                drop_pg_database(pg, url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
