"""Two live servers (`gpu-advisor serve --workers 2` each) on one database, as replicas behind a
load balancer: writes through either are seen by both, each server's caches follow the catalog
revision written by the other, and a mixed concurrent load through both loses no write and
duplicates none.

On PostgreSQL when TEST_DATABASE_URL is set (the production layout); otherwise both servers
share one SQLite file (WAL; their writers queue on the file lock), which the design supports
on one machine.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.hardening.live import concurrently, serve, server_errors, stop

ADMIN_KEY = "gpa_replicas001_" + "e" * 43
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}
GPU = "nvidia-l4"
WORKLOAD: dict[str, Any] = {
    "kind": "inference", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
    "inference": {"prompt_tokens": 512, "output_tokens": 128, "target_requests_per_s": 2},
    "objective": "cost", "constraints": {"gpu_slugs": [GPU], "max_gpus": 8}, "limit": 3,
}
LOAD = "loadcloud"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def servers(fresh_url: str) -> Iterator[tuple[str, str]]:
    a, base_a = serve(fresh_url, admin_key=ADMIN_KEY, extra_args=("--workers", "2"))
    try:
        b, base_b = serve(fresh_url, admin_key=ADMIN_KEY, extra_args=("--workers", "2"))
    except BaseException:
        stop(a)
        raise
    yield base_a, base_b
    errors = server_errors(a) + server_errors(b)
    stop(a)
    stop(b)
    assert "Traceback" not in errors, errors


def _get(url: str, **kw: Any) -> httpx.Response:
    with httpx.Client(timeout=60) as client:  # a new connection: any worker of that server
        return client.get(url, **kw)


def _quote(instance: str, price: float = 1.0, provider: str = "replicacloud") -> dict[str, Any]:
    return {"gpu_slug": GPU, "provider": provider, "region": "r-1",
            "instance_type": instance, "gpu_count": 1, "pricing": "on_demand",
            "price_usd_per_hour": price, "source": "test", "captured_at": "2026-11-30T00:00:00Z"}


def test_writes_through_either_are_seen_by_both(servers: tuple[str, str]) -> None:
    a, b = servers
    created = httpx.post(f"{a}/v1/quotes", json=_quote("seen.0"), headers=AUTH, timeout=60)
    assert created.status_code == 201, created.text
    qid = created.json()["id"]
    for base in (a, b):
        got = _get(f"{base}/v1/quotes/{qid}")
        assert got.status_code == 200 and got.json()["instance_type"] == "seen.0"
    patched = httpx.patch(f"{b}/v1/quotes/{qid}", json={"price_usd_per_hour": 2.5},
                          headers={**AUTH, "If-Match": created.headers["etag"]}, timeout=60)
    assert patched.status_code == 200, patched.text
    for base in (a, b):
        got = _get(f"{base}/v1/quotes/{qid}")
        assert got.json()["price_usd_per_hour"] == 2.5
        assert got.headers["etag"] == patched.headers["etag"]
    # the same unique key through the other server is a conflict, not a second quote
    again = httpx.post(f"{a}/v1/quotes", json=_quote("seen.0"), headers=AUTH, timeout=60)
    assert again.status_code == 409, again.text
    deleted = httpx.delete(f"{a}/v1/quotes/{qid}", headers=AUTH, timeout=60)
    assert deleted.status_code == 204
    assert _get(f"{b}/v1/quotes/{qid}").status_code == 404


def _answer(base: str) -> list[dict[str, Any]]:
    with httpx.Client(timeout=120) as client:
        resp = client.post(f"{base}/v1/recommendations", json=WORKLOAD)
    assert resp.status_code == 200, resp.text
    recs: list[dict[str, Any]] = resp.json()["recommendations"]
    assert recs and {r["gpu"]["slug"] for r in recs} == {GPU}
    return recs


def test_caches_follow_the_catalog_revision_across_servers(servers: tuple[str, str]) -> None:
    """B's answers come from its workers' snapshots of the catalog; a GPU changed through A
    changes B's very next answer, on every worker of B."""
    a, b = servers
    before = [_answer(b) for _ in range(6)]  # new connections: both of B's workers warm up
    assert all(x == before[0] for x in before)
    gpu = _get(f"{a}/v1/gpus/{GPU}")
    bandwidth = gpu.json()["memory_bandwidth_gb_s"]
    patched = httpx.patch(f"{a}/v1/gpus/{GPU}",
                          json={"memory_bandwidth_gb_s": round(bandwidth / 4, 1)},
                          headers={**AUTH, "If-Match": gpu.headers["etag"]}, timeout=60)
    assert patched.status_code == 200, patched.text
    after = [_answer(b) for _ in range(6)]
    assert all(x == after[0] for x in after), "a worker of B answered from a stale snapshot"
    assert after[0] != before[0]
    assert [r["estimate"] for r in after[0]] != [r["estimate"] for r in before[0]]
    assert after[0] == _answer(a)  # both servers agree on the new catalog
    # a price changed through B changes A's answer too (the offer snapshot)
    quote = httpx.post(f"{b}/v1/quotes", json=_quote("cheap.1", price=0.01), headers=AUTH,
                       timeout=60)
    assert quote.status_code == 201, quote.text
    cheapest = [_answer(a)[0]["cost"]["usd_per_hour"] for _ in range(4)]
    assert cheapest == [cheapest[0]] * 4 and cheapest[0] < after[0][0]["cost"]["usd_per_hour"]


def test_mixed_load_through_both_loses_and_duplicates_no_write(
        servers: tuple[str, str]) -> None:
    """Concurrently through both servers: distinct inserts, duplicate inserts of one key, If-Match
    updates of one quote, one Idempotency-Key, and recommendations. Afterwards every distinct
    insert exists once, the duplicate key once, the quote's version counts exactly its successful
    updates (each with its own history entry), and the idempotent workload exists once."""
    a, b = servers
    seed = httpx.post(f"{a}/v1/quotes", json=_quote("shared.0", provider=LOAD), headers=AUTH,
                      timeout=60)
    assert seed.status_code == 201, seed.text
    shared_id = seed.json()["id"]
    distinct, duplicates, updates, idempotent, reads = 40, 12, 24, 12, 12
    jobs = ([("insert", i) for i in range(distinct)] + [("dup", i) for i in range(duplicates)]
            + [("update", i) for i in range(updates)] + [("idem", i) for i in range(idempotent)]
            + [("read", i) for i in range(reads)])
    counter = itertools.count()
    workload = {"name": "replica-idem", "objective": "cost", "kind": "inference",
                "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
                "inference": {"prompt_tokens": 512, "output_tokens": 128}}

    def run(n: int) -> tuple[str, int]:
        kind, i = jobs[n]
        base = (a, b)[next(counter) % 2]
        with httpx.Client(base_url=base, timeout=120, headers=AUTH) as client:
            if kind in ("insert", "dup"):
                instance = f"load.{i}" if kind == "insert" else "dup.0"
                return kind, client.post("/v1/quotes",
                                         json=_quote(instance, provider=LOAD)).status_code
            if kind == "idem":
                return kind, client.post("/v1/workloads", json=workload,
                                         headers={"Idempotency-Key": "replicas-1"}).status_code
            if kind == "read":
                return kind, client.post("/v1/recommendations", json=WORKLOAD).status_code
            for _ in range(50):  # update: read the ETag, PATCH with it; a 412 retries
                current = client.get(f"/v1/quotes/{shared_id}")
                resp = client.patch(f"/v1/quotes/{shared_id}",
                                    json={"price_usd_per_hour": 1 + (i + 1) / 100},
                                    headers={"If-Match": current.headers["etag"]})
                if resp.status_code != 412:
                    return kind, resp.status_code
            return kind, 412

    results = concurrently(len(jobs), run)
    errors = [r for r in results if not isinstance(r, tuple)]
    assert not errors, errors
    by_kind: dict[str, Counter[int]] = {}
    for kind, status in results:
        by_kind.setdefault(kind, Counter())[status] += 1
    assert by_kind["insert"] == {201: distinct}, by_kind
    assert by_kind["dup"] == {201: 1, 409: duplicates - 1}, by_kind
    assert by_kind["update"] == {200: updates}, by_kind
    assert set(by_kind["idem"]) <= {200, 201} and by_kind["idem"][201] == 1, by_kind
    assert by_kind["read"] == {200: reads}, by_kind

    for base in (a, b):  # both servers see the same, complete state
        page = _get(f"{base}/v1/quotes", params={"provider": LOAD, "limit": 500})
        instances = Counter(q["instance_type"] for q in page.json()["data"])
        expected = Counter([f"load.{i}" for i in range(distinct)] + ["dup.0", "shared.0"])
        assert instances == expected, instances - expected or expected - instances
        shared = _get(f"{base}/v1/quotes/{shared_id}").json()
        assert shared["version"] == 1 + updates  # no update lost
        history = _get(f"{base}/v1/quotes/{shared_id}/history", params={"limit": 500}).json()
        assert history["total"] == updates
        workloads = _get(f"{base}/v1/workloads", params={"limit": 500}, headers=AUTH).json()
        assert [w["name"] for w in workloads["data"]].count("replica-idem") == 1
