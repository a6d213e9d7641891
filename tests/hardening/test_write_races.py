"""Racing writes give the same answers on SQLite as on PostgreSQL.

20 parallel PATCHes with one If-Match give one 200 and nineteen 412s, and 20 POSTs with one
Idempotency-Key create one workload, with no 503 for a merely locked database: SQLite writers
begin IMMEDIATE in WAL mode and wait on the busy timeout, and every update route needs If-Match
(428 without it).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from service.app.factory import create_app
from service.core.config import Settings
from service.core.db import make_engine
from tests.conftest import PG_URL
from tests.hardening.conftest import new_key
from tests.hardening.live import concurrently, serve, stop

ADMIN_KEY = "gpa_writerace01_" + "d" * 43
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}
GPU = "nvidia-a100-sxm4-80gb"
N = 20
WORKLOAD: dict[str, Any] = {
    "name": "race-8b", "objective": "cost", "kind": "inference",
    "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
    "inference": {"prompt_tokens": 512, "output_tokens": 128},
}
sqlite_only = pytest.mark.skipif(bool(PG_URL), reason="SQLite's locking and journal settings")


@pytest.fixture(scope="module")
def base(fresh_url: str) -> Iterator[str]:
    # Two server processes: on SQLite, writers queue per process and then on the file lock.
    proc, url = serve(fresh_url, admin_key=ADMIN_KEY, extra_args=("--workers", "2"))
    yield url
    stop(proc)


def _etag(base: str, path: str) -> str:
    r = httpx.get(f"{base}{path}", timeout=30)
    assert r.status_code == 200, r.text
    return r.headers["etag"]


@pytest.mark.slow
def test_same_if_match_on_a_gpu_has_one_winner(base: str) -> None:
    etag = _etag(base, f"/v1/gpus/{GPU}")

    def patch(i: int) -> int:
        return httpx.patch(f"{base}/v1/gpus/{GPU}", json={"tdp_w": 500 + i},
                           headers={**AUTH, "If-Match": etag}, timeout=60).status_code

    codes = Counter(concurrently(N, patch))
    assert codes == {200: 1, 412: N - 1}, codes
    assert _etag(base, f"/v1/gpus/{GPU}") == f'"{int(etag.strip(chr(34))) + 1}"'


@pytest.mark.slow
def test_one_idempotency_key_creates_one_workload(base: str) -> None:
    headers = {**AUTH, "Idempotency-Key": "race-key-1"}

    def post(_: int) -> tuple[int, str]:
        r = httpx.post(f"{base}/v1/workloads", json=WORKLOAD, headers=headers, timeout=60)
        return r.status_code, r.json().get("id", r.text)

    results = concurrently(N, post)
    codes = Counter(code for code, _ in results)
    assert codes == {201: 1, 200: N - 1}, results
    assert len({wid for _, wid in results}) == 1


@pytest.mark.slow
def test_quote_patches_need_if_match_and_have_one_winner(base: str) -> None:
    quote = httpx.get(f"{base}/v1/quotes", params={"gpu": GPU, "limit": 1}).json()["data"][0]
    path = f"{base}/v1/quotes/{quote['id']}"

    def blind(i: int) -> int:
        return httpx.patch(path, json={"price_usd_per_hour": 50.0 + i}, headers=AUTH,
                           timeout=60).status_code

    assert Counter(concurrently(N, blind)) == {428: N}  # no precondition sent: never a 412
    etag = _etag(base, f"/v1/quotes/{quote['id']}")

    def conditional(i: int) -> int:
        return httpx.patch(path, json={"price_usd_per_hour": 100.0 + i},
                           headers={**AUTH, "If-Match": etag}, timeout=60).status_code

    codes = Counter(concurrently(N, conditional))
    assert codes == {200: 1, 412: N - 1}, codes
    history = httpx.get(f"{path}/history").json()
    assert len(history["data"]) == 1


@pytest.mark.slow
def test_independent_writes_all_succeed(base: str) -> None:
    """Writers queue for SQLite's lock instead of failing: 20 different rows, 20 successes."""
    rows = httpx.get(f"{base}/v1/gpus", params={"limit": N}).json()["data"]
    assert len(rows) == N

    def patch(i: int) -> int:
        gpu = rows[i]
        return httpx.patch(f"{base}/v1/gpus/{gpu['slug']}", json={"notes": f"writer {i}"},
                           headers={**AUTH, "If-Match": f'"{gpu["version"]}"'},
                           timeout=60).status_code

    def create(i: int) -> int:
        body = {**WORKLOAD, "name": f"parallel-{i}"}
        return httpx.post(f"{base}/v1/workloads", json=body, headers=AUTH,
                          timeout=60).status_code

    assert Counter(concurrently(N, patch)) == {200: N}
    assert Counter(concurrently(N, create)) == {201: N}


@pytest.mark.slow
def test_racing_deletes_of_one_workload(base: str) -> None:
    wid = httpx.post(f"{base}/v1/workloads", json={**WORKLOAD, "name": "doomed"},
                     headers=AUTH, timeout=60).json()["id"]

    def delete(_: int) -> int:
        return httpx.delete(f"{base}/v1/workloads/{wid}", headers=AUTH, timeout=60).status_code

    assert Counter(concurrently(N, delete)) == {204: 1, 404: N - 1}


# SQLite specifics, in-process.

@sqlite_only
def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(fresh_engine: Engine) -> None:
    with fresh_engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert int(conn.exec_driver_sql("PRAGMA busy_timeout").scalar() or 0) >= 1000


@sqlite_only
def test_writes_begin_immediate_and_reads_stay_deferred(fresh_url: str) -> None:
    engine = make_engine(fresh_url)
    begins: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def _log(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        if statement.startswith("BEGIN"):
            begins.append(statement)

    app = create_app(Settings(database_url=fresh_url), engine=engine)
    auth = {"Authorization": f"Bearer {new_key(engine, 'admin', 'begin-probe')}"}

    def begins_of(method: str, path: str, headers: dict[str, str] | None = None,
                  **kwargs: Any) -> list[str]:
        begins.clear()
        r = client.request(method, path, headers=headers or auth, **kwargs)
        assert r.status_code < 500, r.text
        return sorted(set(begins))

    # A keyed write also reads its key in a (deferred) transaction of its own before its body
    # is read (service/http/bodies.py, PreAuthMiddleware); the request's session is the writer.
    keyed_write = ["BEGIN", "BEGIN IMMEDIATE"]
    with TestClient(app) as client:
        assert begins_of("GET", f"/v1/gpus/{GPU}") == ["BEGIN"]
        etag = client.get(f"/v1/gpus/{GPU}").headers["etag"]
        assert begins_of("PATCH", f"/v1/gpus/{GPU}", json={"notes": "x"},
                         headers={**auth, "If-Match": etag}) == keyed_write
        assert begins_of("POST", "/v1/workloads", json=WORKLOAD) == keyed_write
        # A POST that only computes stays a reader.
        assert begins_of("POST", "/v1/recommendations", json={**WORKLOAD, "limit": 1}) == [
            "BEGIN"]
        assert begins_of("POST", "/v1/estimates", json={
            "workload": WORKLOAD, "gpu_slug": GPU, "gpu_count": 1}) == ["BEGIN"]
        wid = client.post("/v1/workloads", json=WORKLOAD, headers=auth).json()["id"]
        # GETs never write: ranking a stored workload reads; storing a run is a POST.
        assert begins_of("GET", f"/v1/workloads/{wid}/recommendations?limit=1") == ["BEGIN"]
        assert begins_of("POST", f"/v1/workloads/{wid}/runs", json={"limit": 1}) == keyed_write
    engine.dispose()


@sqlite_only
def test_a_locked_database_is_busy_not_unavailable(fresh_url: str) -> None:
    """A writer that cannot get the lock within the busy timeout: 503 database-busy with
    Retry-After (overload), never "database unavailable"; readers are not blocked (WAL)."""
    engine = make_engine(fresh_url)

    @event.listens_for(engine, "connect")
    def _short_busy_timeout(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute("PRAGMA busy_timeout=200")

    app = create_app(Settings(database_url=fresh_url), engine=engine)
    auth = {"Authorization": f"Bearer {new_key(engine, 'admin', 'lock-probe')}"}
    path = make_url(fresh_url).database
    assert path
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            etag = client.get(f"/v1/gpus/{GPU}").headers["etag"]
            holder.execute("BEGIN IMMEDIATE")  # another process's long write
            r = client.patch(f"/v1/gpus/{GPU}", json={"notes": "blocked"},
                             headers={**auth, "If-Match": etag})
            assert r.status_code == 503, r.text
            assert r.headers["content-type"] == "application/problem+json"
            assert r.json()["type"].endswith("/database-busy")
            assert r.headers["retry-after"]
            assert client.get(f"/v1/gpus/{GPU}").status_code == 200
            holder.execute("ROLLBACK")
            ok = client.patch(f"/v1/gpus/{GPU}", json={"notes": "after"},
                              headers={**auth, "If-Match": etag})
            assert ok.status_code == 200, ok.text
    finally:
        holder.close()
        engine.dispose()


@pytest.mark.slow
def test_runs_racing_a_delete_of_their_workload_are_200_or_404(base: str) -> None:
    """A run stored while its workload is deleted: 200 before the delete, 404 after; never a
    409 from the foreign key (PostgreSQL, found by the live fuzz)."""
    for attempt in range(3):
        wid = httpx.post(f"{base}/v1/workloads", json={**WORKLOAD, "name": f"racing-{attempt}"},
                         headers=AUTH, timeout=60).json()["id"]

        def act(i: int, wid: str = wid) -> tuple[str, int]:
            if i == N // 2:
                r = httpx.delete(f"{base}/v1/workloads/{wid}", headers=AUTH, timeout=60)
                return "delete", r.status_code
            r = httpx.post(f"{base}/v1/workloads/{wid}/runs", json={"limit": 1},
                           headers=AUTH, timeout=60)
            return "run", r.status_code

        results = concurrently(N, act)
        assert ("delete", 204) in results, results
        assert {code for kind, code in results if kind == "run"} <= {201, 404}, results
