"""Database faults: with the database unreachable, /readyz and every data route answer 503
problem+json quickly (no hang), and the same app instance recovers by itself when it is back.

PostgreSQL: a TCP forwarder (tcp_proxy.py) sits between the app and the server; stopping it is
the outage. SQLite: a database file that cannot be opened.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from service.app.factory import create_app
from service.core.config import Settings
from service.core.db import make_engine
from tests.conftest import PG_URL
from tests.hardening.conftest import new_key
from tests.hardening.tcp_proxy import TcpProxy

BOUND_S = 5.0
WORKLOAD = {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
            "inference": {"prompt_tokens": 512, "output_tokens": 128}}
# Every route that reads or writes the database: (method, path, json body, needs admin key).
DATA_ROUTES: list[tuple[str, str, object, bool]] = [
    ("GET", "/readyz", None, False),
    ("GET", "/v1/gpus", None, False),
    ("GET", "/v1/gpus/nvidia-h100-sxm5-80gb", None, False),
    ("GET", "/v1/quotes", None, False),
    ("GET", "/v1/quotes/1", None, False),
    ("GET", "/v1/quotes/imports", None, False),
    ("GET", "/v1/workloads", None, True),
    ("POST", "/v1/estimates",
     {"gpu_slug": "nvidia-h100-sxm5-80gb", "gpu_count": 1, "workload": WORKLOAD}, False),
    ("POST", "/v1/recommendations", WORKLOAD, False),
    ("GET", "/v1/models", None, True),  # a key means a database lookup
    ("PATCH", "/v1/gpus/nvidia-h100-sxm5-80gb", {"tdp_w": 701}, True),
    ("POST", "/v1/workloads", WORKLOAD, True),
]


def _assert_unavailable(client: TestClient, headers: dict[str, str]) -> None:
    for method, path, body, keyed in DATA_ROUTES:
        start = time.monotonic()
        r = client.request(method, path, json=body, headers=headers if keyed else {})
        elapsed = time.monotonic() - start
        assert r.status_code == 503, (method, path, r.status_code, r.text[:300])
        assert r.headers["content-type"].startswith("application/problem+json"), (method, path)
        assert r.json()["status"] == 503
        assert r.headers.get("x-request-id"), (method, path)
        assert elapsed < BOUND_S, (method, path, elapsed)


def _assert_available(client: TestClient, headers: dict[str, str]) -> None:
    assert client.get("/readyz").status_code == 200
    assert client.get("/v1/gpus").status_code == 200
    assert client.get("/v1/models", headers=headers).status_code == 200
    r = client.post("/v1/recommendations", json=WORKLOAD)
    assert r.status_code == 200, r.text[:300]


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL, reason="needs TEST_DATABASE_URL (PostgreSQL) for a network outage")
class TestPostgresOutage:
    @pytest.fixture
    def proxied(self, fresh_url: str) -> Iterator[tuple[TestClient, TcpProxy, dict[str, str]]]:
        url = make_url(fresh_url)
        proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432).start()
        proxied_url = url.set(host="127.0.0.1", port=proxy.port).render_as_string(
            hide_password=False)
        settings = Settings(database_url=proxied_url, db_connect_timeout_s=1.0)
        engine = make_engine(proxied_url, connect_timeout_s=1.0)
        headers = {"Authorization": f"Bearer {new_key(engine, 'admin', 'faults')}"}
        with TestClient(create_app(settings, engine=engine),
                        raise_server_exceptions=False) as client:
            yield client, proxy, headers
        proxy.stop()
        engine.dispose()

    def test_outage_gives_503_then_recovers_without_restart(
        self, proxied: tuple[TestClient, TcpProxy, dict[str, str]]
    ) -> None:
        client, proxy, headers = proxied
        _assert_available(client, headers)  # the pool now holds live connections
        proxy.stop()
        _assert_unavailable(client, headers)
        assert client.get("/healthz").status_code == 200  # liveness does not need the database
        proxy.start()
        _assert_available(client, headers)

    def test_hung_network_is_bounded(
        self, proxied: tuple[TestClient, TcpProxy, dict[str, str]]
    ) -> None:
        """Connections accepted but never answered: the connect timeout bounds the wait."""
        client, proxy, headers = proxied
        proxy.stop()
        proxy.blackhole = True
        proxy.start()
        for path in ("/readyz", "/v1/gpus"):
            start = time.monotonic()
            r = client.get(path)
            assert r.status_code == 503, (path, r.text[:300])
            assert time.monotonic() - start < BOUND_S
        proxy.stop()
        proxy.blackhole = False
        proxy.start()
        _assert_available(client, headers)


def test_sqlite_unopenable_database_gives_503(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'no-such-dir' / 'gpu_advisor.db'}"
    app = create_app(Settings(database_url=url), engine=make_engine(url))
    with TestClient(app, raise_server_exceptions=False) as client:
        headers = {"Authorization": "Bearer gpa_0123456789ab_notarealkeybutwellformed"}
        _assert_unavailable(client, headers)
        assert client.get("/healthz").status_code == 200
