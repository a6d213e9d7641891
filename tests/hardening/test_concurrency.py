"""Concurrency on PostgreSQL, over real HTTP with real threads and two real server processes.

- 20 concurrent PATCHes with the same If-Match: exactly one 200, nineteen 412.
- Concurrent all-or-nothing imports never leave a half-written catalog.
- Two `gpu-advisor serve` processes on one database stay consistent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import PG_URL
from tests.hardening.live import concurrently, serve, stop

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(
        not PG_URL, reason="SQLite serializes writers; concurrency is tested on PostgreSQL"
    ),
]

ADMIN_KEY = "gpa_hardening01_" + "c" * 43
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}
GPU = "nvidia-a100-sxm4-80gb"


@pytest.fixture(scope="module")
def servers(fresh_url: str) -> Iterator[tuple[str, str]]:
    """Two service processes sharing one fresh (migrated, seeded) database."""
    a, base_a = serve(fresh_url, admin_key=ADMIN_KEY)  # in turn: both `migrate` at start-up
    b, base_b = serve(fresh_url, admin_key=ADMIN_KEY)
    yield base_a, base_b
    for proc in (a, b):
        stop(proc)


def _etag(base: str, slug: str) -> str:
    r = httpx.get(f"{base}/v1/gpus/{slug}")
    assert r.status_code == 200
    return r.headers["etag"]


def test_same_if_match_has_exactly_one_winner(servers: tuple[str, str]) -> None:
    base, _ = servers
    etag = _etag(base, GPU)

    def patch(i: int) -> int:
        r = httpx.patch(f"{base}/v1/gpus/{GPU}", json={"tdp_w": 500 + i},
                        headers={**AUTH, "If-Match": etag}, timeout=30)
        return r.status_code

    codes = Counter(concurrently(20, patch))
    assert codes == {200: 1, 412: 19}, codes
    assert _etag(base, GPU) == f'"{int(etag.strip(chr(34))) + 1}"'


def test_two_processes_share_one_database(servers: tuple[str, str]) -> None:
    base_a, base_b = servers
    # A write through one is read through the other.
    etag = _etag(base_a, GPU)
    r = httpx.patch(f"{base_a}/v1/gpus/{GPU}", json={"notes": "written through A"},
                    headers={**AUTH, "If-Match": etag})
    assert r.status_code == 200, r.text
    r = httpx.get(f"{base_b}/v1/gpus/{GPU}")
    assert r.json()["notes"] == "written through A"
    assert r.headers["etag"] == _etag(base_a, GPU)
    # Conflicting writes through both, with the same If-Match: one winner in all.
    etag = _etag(base_b, GPU)

    def patch(i: int) -> int:
        base = (base_a, base_b)[i % 2]
        r = httpx.patch(f"{base}/v1/gpus/{GPU}", json={"notes": f"writer {i}"},
                        headers={**AUTH, "If-Match": etag}, timeout=30)
        return r.status_code

    codes = Counter(concurrently(20, patch))
    assert codes == {200: 1, 412: 19}, codes
    assert httpx.get(f"{base_a}/v1/gpus/{GPU}").json() == httpx.get(
        f"{base_b}/v1/gpus/{GPU}").json()


def _quotes(provider: str, n: int, *, bad_last: bool = False) -> list[dict[str, Any]]:
    rows = [
        {"gpu_slug": GPU, "provider": provider, "region": f"r-{i % 5}",
         "instance_type": f"type-{i}", "gpu_count": 1 + i % 8, "pricing": "on_demand",
         "price_usd_per_hour": 1.0 + i / 100, "source": "hardening test",
         "captured_at": "2026-11-01T00:00:00Z"}
        for i in range(n)
    ]
    if bad_last:
        rows[-1]["price_usd_per_hour"] = -5  # invalid: the whole import must be rejected
    return rows


def _count(base: str, provider: str) -> int:
    r = httpx.get(f"{base}/v1/quotes", params={"provider": provider, "limit": 1})
    assert r.status_code == 200, r.text
    return int(r.json()["total"])


def test_concurrent_imports_are_all_or_nothing(servers: tuple[str, str]) -> None:
    base_a, base_b = servers
    n_rows, n_imports = 40, 12

    def run(i: int) -> int:
        base = (base_a, base_b)[i % 2]
        bad = i % 3 == 2
        r = httpx.post(f"{base}/v1/quotes/import", params={"format": "generic"},
                       json=_quotes(f"conc-{i}", n_rows, bad_last=bad), headers=AUTH, timeout=60)
        return r.status_code

    codes = concurrently(n_imports, run)
    for i, code in enumerate(codes):
        expected = 422 if i % 3 == 2 else 200
        assert code == expected, (i, code)
        assert _count(base_a, f"conc-{i}") == (0 if i % 3 == 2 else n_rows), i


def test_concurrent_imports_of_the_same_rows(servers: tuple[str, str]) -> None:
    """The same new rows imported 8 times at once: never a 5xx, never a duplicate."""
    base_a, base_b = servers
    rows = _quotes("conc-same", 30)

    def run(i: int) -> int:
        r = httpx.post(f"{(base_a, base_b)[i % 2]}/v1/quotes/import",
                       params={"format": "generic"}, json=rows, headers=AUTH, timeout=60)
        return r.status_code

    codes = Counter(concurrently(8, run))
    assert set(codes) <= {200, 409}, codes
    assert codes[200] >= 1, codes
    assert _count(base_b, "conc-same") == 30


def test_concurrent_quote_patches_have_one_winner_and_one_history_row(
    servers: tuple[str, str],
) -> None:
    base_a, base_b = servers
    quote = httpx.get(f"{base_a}/v1/quotes", params={"gpu": GPU, "limit": 1}).json()["data"][0]
    etag = f'"{quote["version"]}"'

    def patch(i: int) -> int:
        base = base_a if i % 2 else base_b
        r = httpx.patch(f"{base}/v1/quotes/{quote['id']}",
                        json={"price_usd_per_hour": 100.0 + i},
                        headers={**AUTH, "If-Match": etag}, timeout=30)
        return r.status_code

    codes = Counter(concurrently(16, patch))
    assert codes == {200: 1, 412: 15}, codes
    history = httpx.get(f"{base_a}/v1/quotes/{quote['id']}/history").json()
    rows = history["data"] if isinstance(history, dict) else history
    assert len(rows) == 1


def test_concurrent_creates_of_one_slug_are_409_not_500(servers: tuple[str, str]) -> None:
    base_a, base_b = servers
    body = {"slug": "race-gpu", "name": "Race", "vendor": "NVIDIA", "form_factor": "pcie",
            "memory_gb": 24, "memory_bandwidth_gb_s": 600, "tdp_w": 300,
            "interconnect": "pcie", "source": "test"}

    def create(i: int) -> int:
        base = base_a if i % 2 else base_b
        return httpx.post(f"{base}/v1/gpus", json=body, headers=AUTH, timeout=30).status_code

    codes = Counter(concurrently(16, create))
    assert codes[201] == 1 and codes[409] == 15, codes


def test_replicas_starting_together_on_an_empty_database(fresh_url: str) -> None:
    """Both run migrate + seed at start-up; the advisory lock serializes them."""
    from sqlalchemy import create_engine, text

    from tests.conftest import create_pg_database, drop_pg_database

    assert PG_URL
    url = create_pg_database(PG_URL, prefix="gpu_advisor_race")
    try:
        started = concurrently(3, lambda i: serve(url, admin_key=ADMIN_KEY))
        try:
            assert all(isinstance(s, tuple) for s in started), started
            engine = create_engine(url)
            with engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM gpus")).scalar() == 33
            engine.dispose()
        finally:
            for s in started:
                if isinstance(s, tuple):
                    stop(s[0])
    finally:
        drop_pg_database(PG_URL, url)
