"""SQLite's busy timeout follows the request deadline.

BEGIN is not under the deadline watchdog (a queued writer is not a dead database), so a write
waiting on another process's lock is bounded by the busy timeout alone: pysqlite's fixed 30 s
would outlast GPU_ADVISOR_DB_DEADLINE_S (5 s). The busy timeout is the deadline: 503
database-busy with Retry-After within it, and the same request succeeds once the lock is gone.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import PG_URL
from tests.hardening.live import serve, stop

pytestmark = pytest.mark.skipif(bool(PG_URL), reason="SQLite's file lock and busy timeout")
ADMIN_KEY = "gpa_sqlitebusy1_" + "c" * 43
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}
DEADLINE_S = 2.0
GPU = "nvidia-a100-sxm4-80gb"


@pytest.fixture(scope="module")
def live(fresh_url: str) -> Iterator[str]:
    proc, base = serve(fresh_url, admin_key=ADMIN_KEY,
                       env={"GPU_ADVISOR_DB_DEADLINE_S": str(DEADLINE_S)})
    yield base
    stop(proc)


def test_write_behind_another_process_lock_is_busy_within_the_deadline(
        live: str, fresh_url: str) -> None:
    path = make_url(fresh_url).database
    assert path
    etag = httpx.get(f"{live}/v1/gpus/{GPU}", timeout=30).headers["etag"]
    holder = sqlite3.connect(path, isolation_level=None)  # another process's long write
    try:
        holder.execute("BEGIN IMMEDIATE")
        start = time.monotonic()
        r = httpx.patch(f"{live}/v1/gpus/{GPU}", json={"notes": "blocked"},
                        headers={**AUTH, "If-Match": etag}, timeout=60)
        elapsed = time.monotonic() - start
        assert r.status_code == 503, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["type"].endswith("/database-busy")
        assert r.headers["retry-after"]
        assert elapsed < DEADLINE_S + 2, elapsed
        assert httpx.get(f"{live}/v1/gpus/{GPU}", timeout=30).status_code == 200  # WAL readers
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    ok = httpx.patch(f"{live}/v1/gpus/{GPU}", json={"notes": "blocked"},
                     headers={**AUTH, "If-Match": etag}, timeout=60)
    assert ok.status_code == 200, ok.text
