"""HTTP details every route shares: nosniff, HEAD on GET routes, redirects that never echo Host."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.helpers import H100


@pytest.mark.parametrize(("method", "path"), [
    ("GET", f"/v1/gpus/{H100}"), ("GET", "/v1/gpus?limit=0"), ("GET", "/no/such/route"),
    ("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/ui"), ("GET", "/static/ui.js"),
    ("POST", "/v1/recommendations"), ("DELETE", "/v1/gpus"),
])
def test_every_response_says_nosniff(client: TestClient, method: str, path: str) -> None:
    resp = client.request(method, path, content=b"{" if method == "POST" else None,
                          headers={"content-type": "application/json"})
    assert resp.headers.get("x-content-type-options") == "nosniff", (resp.status_code, path)


@pytest.mark.parametrize("path", [f"/v1/gpus/{H100}", "/v1/gpus?limit=2", "/v1/quotes",
                                  "/healthz", "/ui", "/openapi.json", "/static/ui.js"])
def test_head_answers_like_get_without_a_body(client: TestClient, path: str) -> None:
    get = client.get(path)
    head = client.head(path)
    assert head.status_code == get.status_code == 200, head.status_code
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers.get("etag") == get.headers.get("etag")
    assert head.headers["content-length"] == get.headers["content-length"]


def test_head_on_a_post_only_route_is_405_not_a_post(client: TestClient) -> None:
    resp = client.head("/v1/recommendations")
    assert resp.status_code == 405 and resp.content == b""


def test_trailing_slash_redirect_does_not_reflect_the_host(client: TestClient) -> None:
    resp = client.get("/v1/gpus/?limit=2", headers={"Host": "evil.example"},
                      follow_redirects=False)
    assert resp.status_code in (307, 308)
    location = resp.headers["location"]
    assert "evil.example" not in location and location == "/v1/gpus?limit=2"
    assert client.get(location).status_code == 200
