"""Each app owns its caches (``app.state.caches``), and a request's workload is converted and
checked once."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from service.app.factory import create_app
from service.catalog.service import catalog_fingerprint
from service.core.config import Settings
from service.core.snapshots import database_key
from service.core.times import utcnow
from service.engine.validate import validate_workload
from service.quotes.service import quotes_fingerprint
from tests.helpers import LLAMA_8B_CHAT, api_key, new_quote, submit_workload

WORKLOAD = {k: v for k, v in LLAMA_8B_CHAT.items() if k not in ("name", "objective", "constraints")}
QUERY = {**WORKLOAD, "objective": "cost"}


def _engine_cache_samples(metrics: str) -> list[float]:
    return [float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
            if line.startswith("gpu_advisor_engine_cache_entries{")]


def test_two_apps_in_one_process_share_no_cache(
        app: FastAPI, client: TestClient, settings: Settings, engine: Engine,
        session: Session) -> None:
    other = create_app(settings, engine=engine)
    other.dependency_overrides.update(app.dependency_overrides)  # the same test transaction
    assert other.state.caches is not app.state.caches

    assert client.post("/v1/recommendations", json=QUERY).status_code == 200

    catalog_key = (database_key(session), *catalog_fingerprint(session))
    offers_key = (database_key(session), *quotes_fingerprint(session))
    mine, theirs = app.state.caches, other.state.caches
    assert mine.engine.sizes() and mine.catalog.get(catalog_key) is not None
    assert mine.offers.get(offers_key) is not None
    assert theirs.engine.sizes() == {}
    assert theirs.catalog.get(catalog_key) is None and theirs.offers.get(offers_key) is None
    assert any(_engine_cache_samples(client.get("/metrics").text))
    with TestClient(other) as other_client:
        assert not any(_engine_cache_samples(other_client.get("/metrics").text))
        assert other_client.post("/v1/recommendations", json=QUERY).status_code == 200
        assert theirs.engine.sizes()
    assert theirs.engine.sizes() == {}, "a stopped app keeps its caches"
    assert mine.engine.sizes(), "stopping one app cleared another's caches"


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every call of :func:`validate_workload`, wherever it was imported."""
    calls: list[Any] = []
    real = validate_workload

    def counted(workload: Any, **kwargs: Any) -> list[tuple[str, str]]:
        calls.append(workload)
        return real(workload, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "validate_workload", None) is real:
            monkeypatch.setattr(module, "validate_workload", counted)
    return calls


def test_each_request_validates_its_workload_once(
        client: TestClient, session: Session, validations: list[Any]) -> None:
    headers = api_key(session, "submitter")[0]
    workload_id = submit_workload(client, headers)
    assert len(validations) == 1, "POST /v1/workloads"
    requests: dict[str, Callable[[], Any]] = {
        "POST /v1/recommendations": lambda: client.post("/v1/recommendations", json=QUERY),
        "GET /v1/workloads/{id}/recommendations": lambda: client.get(
            f"/v1/workloads/{workload_id}/recommendations", headers=headers),
        "POST /v1/workloads/{id}/runs": lambda: client.post(
            f"/v1/workloads/{workload_id}/runs", headers=headers),
        "POST /v1/estimates": lambda: client.post("/v1/estimates", json={
            "workload": WORKLOAD, "gpu_slug": "nvidia-h100-sxm5-80gb", "gpu_count": 1}),
    }
    for name, send in requests.items():
        validations.clear()
        resp = send()
        assert resp.status_code in (200, 201), (name, resp.text[:300])
        assert len(validations) == 1, name


def test_an_invalid_workload_is_one_422_naming_its_fields(
        client: TestClient, validations: list[Any]) -> None:
    bad = {**QUERY, "model": {"params": 7e9, "layers": 32, "hidden_size": 4096,
                              "attention_heads": 30, "kv_heads": 7, "vocab_size": 32000,
                              "intermediate_size": 11008}}
    resp = client.post("/v1/recommendations", json=bad)
    assert resp.status_code == 422, resp.text
    fields = {e["field"] for e in resp.json()["errors"]}
    assert "body.model.hidden_size" in fields, fields
    assert len(validations) == 1


def test_a_repeated_query_is_ranked_once_until_the_quotes_change(
        client: TestClient, admin_headers: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The app keeps recent rankings keyed by everything they were computed from: the same
    query again (within the minute) is answered without ranking, with the same answer; a
    quote write changes the quotes' fingerprint, so the next query ranks again."""
    import service.workloads.service as ws

    calls: list[int] = []
    real = ws.recommend

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ws, "recommend", counting)
    for _ in range(2):  # the key holds the minute: retry a pair that straddled one
        calls.clear()
        # a retry must not find the straddling pair's second ranking (the new minute's key)
        client.app.state.caches.rankings.clear()  # type: ignore[attr-defined]
        minute = utcnow().replace(second=0, microsecond=0)
        first = client.post("/v1/recommendations", json=QUERY)
        again = client.post("/v1/recommendations", json=QUERY)
        if utcnow().replace(second=0, microsecond=0) == minute:
            break
    assert first.status_code == again.status_code == 200
    assert len(calls) == 1
    assert again.json()["recommendations"] == first.json()["recommendations"]
    other = client.post("/v1/recommendations", json={**QUERY, "objective": "time"})
    assert other.status_code == 200 and len(calls) == 2
    assert client.post("/v1/quotes", json=new_quote(), headers=admin_headers).status_code == 201
    assert client.post("/v1/recommendations", json=QUERY).status_code == 200
    assert len(calls) == 3
