"""/v1/gpus through the ASGI app, on the migrated and seeded database."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.helpers import H100, assert_problem, new_gpu


def test_list_is_seeded_sorted_and_paginated(client: TestClient) -> None:
    resp = client.get("/v1/gpus", params={"limit": 5})
    assert resp.status_code == 200
    page = resp.json()
    assert page["total"] >= 30
    slugs = [g["slug"] for g in page["data"]]
    assert slugs == sorted(slugs) and len(slugs) == 5
    second = client.get("/v1/gpus", params={"limit": 5, "offset": 5}).json()
    assert not set(slugs) & {g["slug"] for g in second["data"]}


def test_every_seeded_gpu_has_source_and_date(client: TestClient) -> None:
    rows = client.get("/v1/gpus", params={"limit": 500}).json()["data"]
    for row in rows:
        assert row["source"] and row["source_date"], row["slug"]


def test_filters(client: TestClient) -> None:
    amd = client.get("/v1/gpus", params={"vendor": "amd"}).json()["data"]
    assert amd and all(g["vendor"] == "AMD" for g in amd)
    edge = client.get("/v1/gpus", params={"form_factor": "edge"}).json()["data"]
    assert edge and all(g["form_factor"] == "edge" for g in edge)
    big = client.get("/v1/gpus", params={"min_memory_gb": 141}).json()["data"]
    assert big and all(g["memory_gb"] >= 141 for g in big)
    fp8 = client.get("/v1/gpus", params={"precision": "fp8", "limit": 500}).json()["data"]
    slugs = {g["slug"] for g in fp8}
    assert H100 in slugs and "nvidia-a100-sxm4-80gb" not in slugs and "nvidia-t4" not in slugs


def test_free_text_matches_aliases(client: TestClient) -> None:
    found = client.get("/v1/gpus", params={"q": "a10g"}).json()["data"]
    assert "nvidia-a10g" in {g["slug"] for g in found}


def test_free_text_searches_text_fields_not_json(client: TestClient) -> None:
    """q matches slug, name, architecture or one alias; never the aliases column's JSON text
    (brackets, quotes and commas matched every GPU)."""
    for q in ("[", '"', "\",\"", "]"):
        page = client.get("/v1/gpus", params={"q": q}).json()
        assert page["total"] == 0, (q, [g["slug"] for g in page["data"]])
    hopper = client.get("/v1/gpus", params={"q": "hopper", "limit": 500}).json()["data"]
    assert H100 in {g["slug"] for g in hopper}


def test_free_text_is_case_and_accent_insensitive(client: TestClient,
                                                  admin_headers: dict[str, str]) -> None:
    body = new_gpu(slug="test-tesla-e", name="Tésla Éxample", architecture="Straße")
    assert client.post("/v1/gpus", json=body, headers=admin_headers).status_code == 201
    for q in ("tés", "tes", "TÉS", "TES", "éxample", "EXAMPLE", "strasse", "STRASSE"):
        slugs = {g["slug"] for g in client.get("/v1/gpus", params={"q": q}).json()["data"]}
        assert "test-tesla-e" in slugs, q
    # NFD in the query (e + combining acute) matches the NFC name, and filters still apply
    nfd = client.get("/v1/gpus", params={"q": "te\u0301s", "vendor": "nvidia"}).json()
    assert "test-tesla-e" in {g["slug"] for g in nfd["data"]}
    none = client.get("/v1/gpus", params={"q": "tés", "vendor": "amd"}).json()
    assert "test-tesla-e" not in {g["slug"] for g in none["data"]}


def test_sort_descending_by_bandwidth(client: TestClient) -> None:
    rows = client.get("/v1/gpus", params={"sort": "-memory_bandwidth_gb_s", "limit": 3}).json()
    bw = [g["memory_bandwidth_gb_s"] for g in rows["data"]]
    assert bw == sorted(bw, reverse=True)


def test_bad_query_parameters_name_the_field(client: TestClient) -> None:
    assert_problem(client.get("/v1/gpus", params={"sort": "price"}), 422, "query.sort")
    assert_problem(client.get("/v1/gpus", params={"limit": 0}), 422, "query.limit")
    assert_problem(client.get("/v1/gpus", params={"limit": 100000}), 422, "query.limit")
    assert_problem(client.get("/v1/gpus", params={"precision": "fp4"}), 422, "query.precision")


def test_get_has_etag_and_404_is_problem(client: TestClient) -> None:
    resp = client.get(f"/v1/gpus/{H100}")
    assert resp.status_code == 200 and resp.headers["etag"] == f'"{resp.json()["version"]}"'
    h100 = resp.json()
    # Dense, not the sparse headline figure (ESTIMATION.md: peers listed 1979).
    assert h100["fp16_tflops"] == 989.4
    assert_problem(client.get("/v1/gpus/nope"), 404)


def test_writes_need_admin(client: TestClient, reader_headers: dict[str, str]) -> None:
    assert_problem(client.post("/v1/gpus", json=new_gpu()), 401)
    assert_problem(client.post("/v1/gpus", json=new_gpu(), headers=reader_headers), 403)
    bad = {"Authorization": "Bearer gpa_nope_nope"}
    assert_problem(client.post("/v1/gpus", json=new_gpu(), headers=bad), 401)


def test_create_get_patch_put_delete(client: TestClient, admin_headers: dict[str, str]) -> None:
    created = client.post("/v1/gpus", json=new_gpu(), headers=admin_headers)
    assert created.status_code == 201, created.text
    assert created.headers["location"] == "/v1/gpus/test-gpu-1"
    assert created.json()["version"] == 1

    patched = client.patch("/v1/gpus/test-gpu-1", json={"tdp_w": 300},
                           headers={**admin_headers, "If-Match": '"1"'})
    assert patched.status_code == 200, patched.text
    assert patched.json()["tdp_w"] == 300 and patched.json()["version"] == 2
    assert patched.json()["memory_gb"] == 48
    assert patched.headers["etag"] == '"2"'

    body = {k: v for k, v in new_gpu(memory_gb=96).items() if k != "slug"}
    replaced = client.put("/v1/gpus/test-gpu-1", json=body,
                          headers={**admin_headers, "If-Match": '"2"'})
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["memory_gb"] == 96 and replaced.json()["tdp_w"] == 350

    assert client.delete("/v1/gpus/test-gpu-1", headers=admin_headers).status_code == 204
    assert client.get("/v1/gpus/test-gpu-1").status_code == 404


def test_duplicate_slug_is_409(client: TestClient, admin_headers: dict[str, str]) -> None:
    assert_problem(client.post("/v1/gpus", json=new_gpu(slug=H100), headers=admin_headers),
                   409, "body.slug")


def test_if_match_required_and_checked(client: TestClient, admin_headers: dict[str, str]) -> None:
    assert_problem(client.patch(f"/v1/gpus/{H100}", json={"tdp_w": 1}, headers=admin_headers), 428)
    stale = {**admin_headers, "If-Match": '"999"'}
    assert_problem(client.patch(f"/v1/gpus/{H100}", json={"tdp_w": 1}, headers=stale), 412)
    assert client.get(f"/v1/gpus/{H100}").json()["tdp_w"] == 700


def test_validation_names_each_field(client: TestClient, admin_headers: dict[str, str]) -> None:
    body = new_gpu(memory_gb=-1, tdp_w=1e308, form_factor="tower", bogus=1, slug="Bad Slug")
    problem = assert_problem(client.post("/v1/gpus", json=body, headers=admin_headers), 422)
    fields = {e["field"] for e in problem["errors"]}
    assert {"body.memory_gb", "body.tdp_w", "body.form_factor", "body.bogus", "body.slug"} <= fields


def test_patch_cannot_null_required_fields(client: TestClient,
                                           admin_headers: dict[str, str]) -> None:
    resp = client.patch(f"/v1/gpus/{H100}", json={"memory_gb": None},
                        headers={**admin_headers, "If-Match": '"1"'})
    assert_problem(resp, 422, "body.memory_gb")


def test_nan_and_infinity_rejected(client: TestClient, admin_headers: dict[str, str]) -> None:
    raw = new_gpu()
    import json

    text = json.dumps(raw).replace('"memory_gb": 48', '"memory_gb": NaN')
    resp = client.post("/v1/gpus", content=text, headers={**admin_headers,
                                                         "content-type": "application/json"})
    assert_problem(resp, 422, "body.memory_gb")


def test_delete_with_quotes_is_409(client: TestClient, admin_headers: dict[str, str]) -> None:
    params = {"gpu": H100, "limit": 1, "include_expired": "true"}
    quotes = client.get("/v1/quotes", params=params).json()["total"]
    resp = client.delete(f"/v1/gpus/{H100}", headers=admin_headers)
    assert_problem(resp, 409)
    assert quotes > 0
    assert resp.json()["detail"] == f"GPU '{H100}' has {quotes} price quotes; delete them first"


def test_unknown_route_and_method_are_problems(client: TestClient) -> None:
    assert_problem(client.get("/v1/nothing"), 404)
    assert_problem(client.delete("/v1/gpus"), 405)


def test_malformed_json_is_422(client: TestClient, admin_headers: dict[str, str]) -> None:
    resp = client.post("/v1/gpus", content="{not json",
                       headers={**admin_headers, "content-type": "application/json"})
    assert_problem(resp, 422)
