"""Limits (body size, page size, absurd numbers, long strings), API keys, CORS, request ids."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlmodel import Session

from service.app.factory import create_app
from service.core import security
from service.core.config import Settings
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.http.observability import JsonFormatter
from tests.conftest import REPO_ROOT

H100 = "nvidia-h100-sxm5-80gb"
WORKLOAD = {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
            "inference": {"prompt_tokens": 512, "output_tokens": 128}}


def _is_problem(r: object, status: int) -> None:
    assert r.status_code == status, (r.status_code, r.text[:300])  # type: ignore[attr-defined]
    assert r.headers["content-type"].startswith("application/problem+json")  # type: ignore[attr-defined]
    assert r.json()["status"] == status  # type: ignore[attr-defined]
    assert r.headers.get("x-request-id")  # type: ignore[attr-defined]


# -- body size ---------------------------------------------------------------------------------

@pytest.fixture
def small_body_client(settings: Settings, app: FastAPI) -> Iterator[TestClient]:
    """The test app, with a 2 kB body limit."""
    limited = create_app(settings.model_copy(update={"max_body_bytes": 2048}),
                         engine=app.state.engine)
    limited.dependency_overrides = app.dependency_overrides
    with TestClient(limited, raise_server_exceptions=False) as c:
        yield c


def test_body_over_limit_by_content_length_is_413(small_body_client: TestClient,
                                                   admin_headers: dict[str, str]) -> None:
    big = json.dumps({**WORKLOAD, "name": "x" * 4000})
    r = small_body_client.post("/v1/recommendations", content=big,
                               headers={"Content-Type": "application/json"})
    _is_problem(r, 413)
    r = small_body_client.post("/v1/gpus", content=big,
                               headers={**admin_headers, "Content-Type": "application/json"})
    _is_problem(r, 413)


def test_chunked_body_over_limit_is_413(small_body_client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"kind": "inference", "name": "'
        for _ in range(10):
            yield b"y" * 500
        yield b'"}'

    r = small_body_client.post("/v1/recommendations", content=chunks(),
                               headers={"Content-Type": "application/json"})
    assert "content-length" not in r.request.headers  # really sent chunked
    _is_problem(r, 413)


def test_body_under_limit_passes(small_body_client: TestClient) -> None:
    r = small_body_client.post("/v1/recommendations", json=WORKLOAD)
    assert r.status_code == 200, r.text[:300]


# -- page size, numbers, strings -------------------------------------------------------------

@pytest.mark.parametrize("path", ["/v1/gpus", "/v1/quotes", "/v1/workloads", "/v1/quotes/imports"])
def test_page_size_is_capped(client: TestClient, path: str,
                             admin_headers: dict[str, str]) -> None:
    h = admin_headers  # /v1/workloads needs a submitter or admin key
    _is_problem(client.get(path, params={"limit": 100_000}, headers=h), 422)
    _is_problem(client.get(path, params={"limit": 0}, headers=h), 422)
    assert client.get(path, params={"limit": 500}, headers=h).status_code == 200


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e308", "-1"])
def test_absurd_query_numbers_are_422(client: TestClient, value: str) -> None:
    _is_problem(client.get("/v1/gpus", params={"min_memory_gb": value}), 422)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e308", "-1e308"])
def test_absurd_body_numbers_are_422(client: TestClient, admin_headers: dict[str, str],
                                     value: str) -> None:
    json_headers = {"Content-Type": "application/json"}
    # Generic model size, GPU power, quote price: raw JSON, so NaN/Infinity reach the server.
    body = (f'{{"kind": "inference", "model": {{"params": {value}, "gflops_per_sample": 4}}, '
            '"inference": {"batch_size": 8}}')
    _is_problem(client.post("/v1/recommendations", content=body, headers=json_headers), 422)
    estimate = (f'{{"gpu_slug": "{H100}", "gpu_count": 1, "workload": {{"kind": "inference", '
                '"model": {"preset": "llama-3.1-8b"}, "inference": {"prompt_tokens": 512, '
                f'"output_tokens": 128, "max_ttft_ms": {value}}}}}}}')
    _is_problem(client.post("/v1/estimates", content=estimate, headers=json_headers), 422)
    etag = client.get(f"/v1/gpus/{H100}").headers["etag"]
    r = client.patch(f"/v1/gpus/{H100}", content=f'{{"tdp_w": {value}}}',
                     headers={**admin_headers, **json_headers, "If-Match": etag})
    _is_problem(r, 422)


def test_long_strings_are_422(client: TestClient, admin_headers: dict[str, str]) -> None:
    ten_kb = "n" * 10_240
    _is_problem(client.post("/v1/recommendations", json={**WORKLOAD, "name": ten_kb}), 422)
    _is_problem(client.post("/v1/workloads", json={**WORKLOAD, "name": ten_kb},
                            headers=admin_headers), 422)
    gpu = client.get(f"/v1/gpus/{H100}").json()
    new = {k: v for k, v in gpu.items() if k not in {"created_at", "updated_at", "version"}}
    _is_problem(client.post("/v1/gpus", json={**new, "slug": "long-name", "name": ten_kb},
                            headers=admin_headers), 422)
    _is_problem(client.get("/v1/gpus", params={"q": ten_kb}), 422)
    _is_problem(client.get(f"/v1/gpus/{ten_kb}"), 404)  # an unknown slug, not a crash


# -- keys --------------------------------------------------------------------------------------

def test_keys_are_stored_hashed(session: Session) -> None:
    row, key = security.create_key(session, name="hashed-check", role="reader")
    session.commit()
    stored = session.execute(text("SELECT * FROM api_keys WHERE id = :id"),
                             {"id": row.id}).one()
    secret = key.split("_", 2)[2]
    for value in stored:
        assert key not in str(value) and secret not in str(value)
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()


def test_keys_are_compared_in_constant_time(
    client: TestClient, admin_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    real = security.hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    assert client.get("/v1/models", headers=admin_headers).status_code == 200
    assert calls, "authenticate() must compare hashes with hmac.compare_digest"


def _cli(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", "--database-url", db_url, *args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )


def test_keys_cli_create_use_revoke(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    upgrade(url)
    created = _cli(url, "keys", "create", "--name", "ci-bot", "--role", "admin")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("gpa_")
    assert key not in created.stderr
    app = create_app(Settings(database_url=url, public_reads=False), engine=make_engine(url))
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.get("/v1/models", headers=auth).status_code == 200
        _is_problem(c.get("/v1/models"), 401)  # public reads off: a key is needed
        listed = _cli(url, "keys", "list")
        assert "ci-bot" in listed.stdout and "active" in listed.stdout
        assert key.split("_", 2)[2] not in listed.stdout
        revoked = _cli(url, "keys", "revoke", "ci-bot")
        assert revoked.returncode == 0 and "revoked 1" in revoked.stdout, revoked
        _is_problem(c.get("/v1/models", headers=auth), 401)
    assert _cli(url, "keys", "revoke", "ci-bot").returncode == 1  # nothing left to revoke


def test_keys_are_never_logged(client: TestClient, admin_headers: dict[str, str]) -> None:
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("gpu_advisor")
    root.addHandler(handler)
    try:
        key = admin_headers["Authorization"].split()[1]
        client.get("/v1/gpus", headers=admin_headers)
        client.patch(f"/v1/gpus/{H100}", json={"tdp_w": 1}, headers=admin_headers)  # 428
        client.get("/v1/gpus", headers={"Authorization": f"Bearer {key}x"})  # 401
        client.get(f"/v1/gpus?api_key={key}", headers=admin_headers)
    finally:
        root.removeHandler(handler)
    logged = buf.getvalue()
    assert logged.count('"request_id"') >= 4
    assert key not in logged
    assert key.split("_", 2)[2] not in logged


# -- CORS and request ids ----------------------------------------------------------------------

def test_cors_origins_are_configurable(settings: Settings, app: FastAPI) -> None:
    cors = create_app(settings.model_copy(update={"cors_origins": ["https://portal.example"]}),
                      engine=app.state.engine)
    cors.dependency_overrides = app.dependency_overrides
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    with TestClient(cors, raise_server_exceptions=False) as c:
        ok = c.options("/v1/recommendations",
                       headers={**preflight, "Origin": "https://portal.example"})
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == "https://portal.example"
        assert ok.headers.get("x-request-id")
        bad = c.options("/v1/recommendations",
                        headers={**preflight, "Origin": "https://evil.example"})
        assert bad.status_code == 400
        assert "access-control-allow-origin" not in bad.headers
        got = c.get("/v1/gpus", headers={"Origin": "https://portal.example"})
        assert got.headers["access-control-allow-origin"] == "https://portal.example"
        assert "x-request-id" in got.headers["access-control-expose-headers"].lower()
        assert "retry-after" in got.headers["access-control-expose-headers"].lower()
        # answers the middleware gives before the app (no key; a body over the limit) carry
        # CORS too, so the portal can read the problem instead of a network error
        origin = {"Origin": "https://portal.example"}
        refused = c.post("/v1/gpus", json={}, headers=origin)
        assert refused.status_code == 401
        assert refused.headers["access-control-allow-origin"] == "https://portal.example"
        huge = c.post("/v1/recommendations", content=b"{" + b" " * (6 * 1024 * 1024),
                      headers={**origin, "content-type": "application/json"})
        assert huge.status_code == 413
        assert huge.headers["access-control-allow-origin"] == "https://portal.example"
    # Not configured: no CORS headers at all.
    with TestClient(create_app(settings, engine=app.state.engine)) as c:
        r = c.options("/v1/recommendations",
                      headers={**preflight, "Origin": "https://portal.example"})
        assert "access-control-allow-origin" not in r.headers


def test_every_response_has_a_request_id(client: TestClient, small_body_client: TestClient,
                                         tmp_path: Path) -> None:
    for r in (
        client.get("/healthz"),
        client.get("/v1/gpus/no-such-gpu"),  # 404
        client.get("/no/such/route"),  # 404 unmatched
        client.get("/v1/gpus", params={"limit": 0}),  # 422
        client.delete("/healthz"),  # 405
        small_body_client.post("/v1/recommendations", content=b"x" * 4096),  # 413
    ):
        assert len(r.headers.get("x-request-id", "")) >= 16, (r.request.url, r.status_code)
    # 503: a database that cannot be opened.
    url = f"sqlite:///{tmp_path / 'missing' / 'db.sqlite'}"
    with TestClient(create_app(Settings(database_url=url), engine=make_engine(url)),
                    raise_server_exceptions=False) as down:
        r = down.get("/readyz")
        assert r.status_code == 503 and r.headers.get("x-request-id")
    # A well-formed incoming id is kept; a malformed one is replaced.
    assert client.get("/healthz", headers={"X-Request-ID": "abc-123"}).headers[
        "x-request-id"] == "abc-123"
    assert client.get("/healthz", headers={"X-Request-ID": "bad id\t<>"}).headers[
        "x-request-id"] != "bad id\t<>"
