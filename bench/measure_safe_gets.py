"""Measured: GETs of a stored workload's recommendations store nothing; runs
are POSTed and capped per workload.

    python -m bench.measure_safe_gets [SECONDS] [RUNS]

Serves a fresh seeded SQLite file (uvicorn in a thread), then: anonymous GETs (now 401), a
submitter's GETs for SECONDS (default 30), and RUNS POSTs of runs (default 60) with the default
retention (20 per workload). Prints request counts, stored runs and the database size (file +
WAL, after a checkpoint) before and after, as JSON.
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from sqlalchemy import text
from sqlmodel import Session

from service.app.factory import create_app
from service.app.seeding import seed
from service.core.config import Settings
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.core.security import create_key

WORKLOAD = {"name": "chat-8b", "objective": "cost", "kind": "inference",
            "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
            "inference": {"prompt_tokens": 1024, "output_tokens": 256, "max_tpot_ms": 60,
                          "target_requests_per_s": 10}}


def _size_mb(engine: Any, path: Path) -> float:
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    files = [path, path.with_name(path.name + "-wal")]
    return round(sum(f.stat().st_size for f in files if f.exists()) / 1e6, 3)


def _runs(engine: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM recommendation_runs")).scalar_one())


def main(seconds: float, posts: int) -> dict[str, Any]:
    path = Path(tempfile.mkdtemp()) / "safe_gets.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    with Session(engine) as session:
        _, key = create_key(session, name="portal", role="submitter")
        session.commit()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(Settings(database_url=url), engine=engine),
                                           host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    auth = {"Authorization": f"Bearer {key}"}
    out: dict[str, Any] = {"seconds": seconds}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
        wid = c.post("/v1/workloads", json=WORKLOAD, headers=auth).json()["id"]
        path_ = f"/v1/workloads/{wid}/recommendations"
        out["before"] = {"db_mb": _size_mb(engine, path), "runs": _runs(engine)}
        out["anonymous_gets"] = dict(Counter(c.get(path_).status_code for _ in range(20)))
        statuses: Counter[int] = Counter()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            statuses[c.get(path_, headers=auth).status_code] += 1
        out["submitter_gets"] = dict(statuses)
        out["after_gets"] = {"db_mb": _size_mb(engine, path), "runs": _runs(engine)}
        started = time.monotonic()
        posted = Counter(c.post(f"/v1/workloads/{wid}/runs", json={"limit": 10},
                                headers=auth).status_code for _ in range(posts))
        out["run_posts"] = dict(posted)
        out["run_posts_s"] = round(time.monotonic() - started, 1)
        out["after_posts"] = {"db_mb": _size_mb(engine, path), "runs": _runs(engine),
                              "runs_listed": c.get(f"/v1/workloads/{wid}/runs",
                                                   headers=auth).json()["total"]}
    server.should_exit = True
    engine.dispose()
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    result = main(float(args[0]) if args else 30.0, int(args[1]) if len(args) > 1 else 60)
    print(json.dumps(result, indent=2))
