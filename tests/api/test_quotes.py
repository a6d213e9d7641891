"""/v1/quotes through the ASGI app."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.helpers import H100, assert_problem, new_quote


def test_seeded_quotes_cover_datacenter_gpus_and_purchases(client: TestClient) -> None:
    gpus = client.get("/v1/gpus", params={"limit": 500}).json()["data"]
    rows = client.get("/v1/quotes", params={"limit": 500}).json()["data"]
    assert len(rows) >= 150
    providers: dict[str, set[str]] = {}
    for q in rows:
        assert q["source"] and q["captured_at"]
        if q["pricing"] != "purchase":
            providers.setdefault(q["gpu_slug"], set()).add(q["provider"])
    assert {"aws", "lambda", "azure", "runpod"} <= set().union(*providers.values())
    datacenter = [g["slug"] for g in gpus if g["form_factor"] in {"sxm", "oam", "pcie"}]
    # service/data/README.md lists the GPUs with fewer than three providers and why.
    three = [s for s in datacenter if len(providers.get(s, ())) >= 3]
    assert len(three) >= 14, sorted(set(datacenter) - set(three))
    for slug in ("nvidia-h100-sxm5-80gb", "nvidia-a100-sxm4-80gb", "nvidia-l4", "nvidia-l40s"):
        assert len(providers[slug]) >= 3, slug
    purchase = {q["gpu_slug"] for q in rows if q["pricing"] == "purchase"}
    assert {"nvidia-rtx-4090", "nvidia-rtx-3090", "nvidia-rtx-4000-ada"} <= purchase
    assert all(q["price_usd_per_hour"] is None for q in rows if q["pricing"] == "purchase")


def test_create_list_filter_patch_delete(client: TestClient, admin_headers: dict[str, str]) -> None:
    resp = client.post("/v1/quotes", json=new_quote(), headers=admin_headers)
    assert resp.status_code == 201, resp.text
    quote = resp.json()
    assert quote["provider"] == "testcloud"  # normalized to lower case
    assert quote["price_usd_per_gpu_hour"] == 3.0
    assert quote["captured_at"].startswith("2026-11-29T12:00:00")  # naive taken as UTC
    qid = quote["id"]
    assert resp.headers["location"] == f"/v1/quotes/{qid}"

    listed = client.get("/v1/quotes", params={"provider": "testcloud"}).json()
    assert [q["id"] for q in listed["data"]] == [qid]
    every = client.get("/v1/quotes", params={"gpu": H100, "limit": 500}).json()["data"]
    limit = sorted(q["price_usd_per_hour"] for q in every if q["price_usd_per_hour"])[2]
    cheap = client.get("/v1/quotes", params={"gpu": H100, "max_price_usd_per_hour": limit,
                                             "limit": 500}).json()["data"]
    assert len(cheap) >= 3 and all(q["price_usd_per_hour"] <= limit for q in cheap)
    assert len(cheap) < len(every)

    assert resp.headers["etag"] == '"1"'
    assert_problem(client.patch(f"/v1/quotes/{qid}", json={"price_usd_per_hour": 20.0},
                                headers=admin_headers), 428)  # If-Match is required
    assert_problem(client.patch(f"/v1/quotes/{qid}", json={"price_usd_per_hour": 20.0},
                                headers={**admin_headers, "If-Match": '"7"'}), 412)
    patched = client.patch(f"/v1/quotes/{qid}", json={"price_usd_per_hour": 20.0},
                           headers={**admin_headers, "If-Match": resp.headers["etag"]})
    assert patched.status_code == 200 and patched.json()["price_usd_per_hour"] == 20.0
    assert patched.headers["etag"] == '"2"'
    assert client.delete(f"/v1/quotes/{qid}", headers=admin_headers).status_code == 204
    assert_problem(client.get(f"/v1/quotes/{qid}"), 404)


def test_duplicate_key_is_409(client: TestClient, admin_headers: dict[str, str]) -> None:
    assert client.post("/v1/quotes", json=new_quote(), headers=admin_headers).status_code == 201
    again = client.post("/v1/quotes", json=new_quote(price_usd_per_hour=1),
                        headers=admin_headers)
    assert_problem(again, 409)


def test_unknown_gpu_is_422(client: TestClient, admin_headers: dict[str, str]) -> None:
    resp = client.post("/v1/quotes", json=new_quote(gpu_slug="nope"), headers=admin_headers)
    assert_problem(resp, 422, "body.gpu_slug")


def test_price_shape_by_pricing(client: TestClient, admin_headers: dict[str, str]) -> None:
    purchase_with_hourly = new_quote(pricing="purchase", purchase_price_usd=30000)
    assert_problem(client.post("/v1/quotes", json=purchase_with_hourly, headers=admin_headers), 422)
    hourly_missing = new_quote(price_usd_per_hour=None)
    assert_problem(client.post("/v1/quotes", json=hourly_missing, headers=admin_headers), 422)
    ok = new_quote(pricing="purchase", price_usd_per_hour=None, purchase_price_usd=30000,
                   gpu_count=1)
    assert client.post("/v1/quotes", json=ok, headers=admin_headers).status_code == 201


def test_bounds(client: TestClient, admin_headers: dict[str, str]) -> None:
    resp = client.post("/v1/quotes", json=new_quote(price_usd_per_hour=-1, gpu_count=0),
                       headers=admin_headers)
    problem = assert_problem(resp, 422)
    assert {"body.price_usd_per_hour", "body.gpu_count"} <= {e["field"] for e in problem["errors"]}


def test_expired_hidden_unless_asked(client: TestClient, admin_headers: dict[str, str]) -> None:
    body = new_quote(instance_type="expired.x", valid_until="2020-01-01T00:00:00Z")
    assert client.post("/v1/quotes", json=body, headers=admin_headers).status_code == 201
    default = client.get("/v1/quotes", params={"provider": "testcloud"}).json()
    assert default["total"] == 0
    with_expired = client.get("/v1/quotes",
                              params={"provider": "testcloud", "include_expired": True}).json()
    assert with_expired["total"] == 1 and with_expired["data"][0]["expired"] is True


def test_freshness_filter(client: TestClient, admin_headers: dict[str, str]) -> None:
    old = new_quote(instance_type="old.x", captured_at="2020-01-01T00:00:00Z")
    assert client.post("/v1/quotes", json=old, headers=admin_headers).status_code == 201
    stale = client.get("/v1/quotes", params={"provider": "testcloud", "freshness": "stale"}).json()
    assert [q["instance_type"] for q in stale["data"]] == ["old.x"]
    assert stale["data"][0]["stale"] is True
    fresh = client.get("/v1/quotes", params={"provider": "testcloud", "freshness": "fresh"}).json()
    assert fresh["total"] == 0


def test_patch_into_duplicate_is_409(client: TestClient, admin_headers: dict[str, str]) -> None:
    a = client.post("/v1/quotes", json=new_quote(), headers=admin_headers).json()
    client.post("/v1/quotes", json=new_quote(instance_type="other"), headers=admin_headers)
    resp = client.patch(f"/v1/quotes/{a['id']}", json={"instance_type": "other"},
                        headers={**admin_headers, "If-Match": "*"})
    assert_problem(resp, 409)
