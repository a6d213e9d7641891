"""Odd inputs get the right status, never a 500: odd If-Match values, a missing GPU (404 before
428), out-of-range datetimes, search wildcards taken literally, unhandled errors as problems
with a request id, and a revoked bootstrap key that stays revoked after a restart."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.app.factory import create_app
from service.core.config import Settings
from service.core.migrate import upgrade
from service.core.security import revoke_key
from tests.helpers import assert_problem, new_gpu, new_quote

T4 = "nvidia-t4"


def test_odd_if_match_values(client: TestClient, admin_headers: dict[str, str]) -> None:
    for tag in ('"99999999999999999999"', '"abc"', "W/", '"\u00b2"'.encode("latin-1")):
        headers = {**admin_headers, "If-Match": tag}  # type: ignore[dict-item]
        assert_problem(client.patch(f"/v1/gpus/{T4}", json={"tdp_w": 71}, headers=headers), 412)
    star = client.patch(f"/v1/gpus/{T4}", json={"tdp_w": 71},
                        headers={**admin_headers, "If-Match": "*"})
    assert star.status_code == 200 and star.json()["tdp_w"] == 71  # RFC 9110: * = any


def test_missing_gpu_is_404_before_428(client: TestClient, admin_headers: dict[str, str]) -> None:
    assert_problem(client.patch("/v1/gpus/nope", json={"tdp_w": 1}, headers=admin_headers), 404)


def test_out_of_range_datetimes_are_422(client: TestClient,
                                        admin_headers: dict[str, str]) -> None:
    for value in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "1900-01-01"):
        resp = client.post("/v1/quotes", json=new_quote(captured_at=value),
                           headers=admin_headers)
        assert_problem(resp, 422, "body.captured_at")


def test_search_wildcards_are_literal(client: TestClient) -> None:
    assert client.get("/v1/gpus", params={"q": "%"}).json()["total"] == 0
    underscore = client.get("/v1/gpus", params={"q": "_"}).json()["data"]
    # only the rows that really hold an underscore (Lambda instance names among the aliases)
    assert {g["slug"] for g in underscore} == {"nvidia-h100-pcie-80gb", "nvidia-a100-pcie-40gb"}
    assert client.get("/v1/gpus", params={"q": "h100"}).json()["total"] >= 3


def test_unhandled_errors_are_problems_with_a_request_id(app: FastAPI) -> None:
    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret detail")

    with TestClient(app, raise_server_exceptions=False) as c:
        resp = c.get("/boom", headers={"X-Request-ID": "trace-123"})
    problem = assert_problem(resp, 500)
    assert resp.headers["x-request-id"] == "trace-123"
    assert "secret" not in resp.text and problem["title"] == "Internal error"


def test_revoked_bootstrap_key_stays_revoked_after_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boot.db'}"
    upgrade(url)
    key = "gpa_bootstrap2_" + "k" * 40
    settings = Settings(database_url=url, bootstrap_admin_key=key)
    first = create_app(settings)
    with TestClient(first):
        pass
    from sqlmodel import Session

    with Session(first.state.engine) as session:
        assert revoke_key(session, prefix_or_name="bootstrap-admin") == 1
        session.commit()
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        resp = c.post("/v1/gpus", json=new_gpu(), headers={"Authorization": f"Bearer {key}"})
        assert_problem(resp, 401)
