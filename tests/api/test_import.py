"""POST /v1/quotes/import, GET /v1/quotes/imports, GET /v1/quotes/{id}/history."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session

from service.app.factory import create_app
from service.core.config import Settings
from service.core.db import get_session
from tests.helpers import CSV, assert_problem, do_import, t4_file

DATA = Path(__file__).resolve().parent.parent / "data" / "skypilot"
def all_quotes(client: TestClient, provider: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while True:
        page = client.get("/v1/quotes", params={"provider": provider, "limit": 500,
                                                "offset": len(rows)}).json()
        rows += page["data"]
        if len(rows) >= page["total"]:
            return rows


def snapshot(client: TestClient, provider: str) -> set[tuple[Any, ...]]:
    return {(q["region"], q["instance_type"], q["pricing"], q["gpu_slug"], q["gpu_count"],
             q["price_usd_per_hour"]) for q in all_quotes(client, provider)}


@pytest.mark.parametrize(("name", "provider", "rows", "quotes", "pricings", "unmatched"), [
    ("lambda_vms.csv", "lambda", 323, 306, {"on_demand": 306}, {}),
    ("aws_vms_gpu.csv", "aws", 537, 165, {"on_demand": 82, "spot": 83}, {
        "T4g": 42, "Inferentia": 36, "Radeon Pro V520": 35, "Inferentia2": 32,
        "Virtex UltraScale (VU9P)": 24, "Virtex UltraScale+ (VU47P)": 20, "Trainium": 11,
        "Gaudi HL-205": 2, "Qualcomm AI100": 1}),
])
def test_reference_file_twice_gives_the_same_catalog(
    client: TestClient, admin_headers: dict[str, str], name: str, provider: str, rows: int,
    quotes: int, pricings: dict[str, int], unmatched: dict[str, int],
) -> None:
    body = (DATA / name).read_bytes()
    first = do_import(client, admin_headers, body, provider=provider, source=name)
    assert (first["rows_read"], first["quotes_in_file"]) == (rows, quotes)
    assert first["added"] + len(first["updated"]) + first["unchanged"] == quotes
    assert Counter(u["accelerator_name"] for u in first["unmatched"]) == unmatched
    assert first["skipped"] == [] and first["import_id"] is not None
    after_first = snapshot(client, provider)
    assert Counter(p for _, _, p, *_ in after_first) >= Counter(pricings)

    second = do_import(client, admin_headers, body, provider=provider, source=name)
    assert (second["added"], second["updated"], second["unchanged"]) == (0, [], quotes)
    assert snapshot(client, provider) == after_first
    imports = client.get("/v1/quotes/imports", headers=admin_headers).json()["data"]
    assert [i["id"] for i in imports[:2]] == [second["import_id"], first["import_id"]]
    assert imports[0]["unchanged"] == quotes and imports[0]["api_key_name"].startswith("test-")


def test_dry_run_writes_nothing(client: TestClient, admin_headers: dict[str, str]) -> None:
    before = client.get("/v1/quotes/imports").json()["total"]
    out = do_import(client, admin_headers, t4_file("1.5", "1.2"), dry_run="true")
    assert out["import_id"] is None and out["dry_run"] and out["added"] == 2
    added = out["added_quotes"]
    assert sorted((q["row"], q["instance_type"], q["price_usd_per_hour"]) for q in added) == [
        (2, "t.0", 1.5), (3, "t.1", 1.2)]  # header is line 1
    assert {(q["gpu_slug"], q["pricing"]) for q in added} == {("nvidia-t4", "on_demand")}
    assert all_quotes(client, "testcloud") == []
    assert client.get("/v1/quotes/imports").json()["total"] == before


def test_bad_row_rejects_the_whole_file(client: TestClient,
                                        admin_headers: dict[str, str]) -> None:
    resp = client.post("/v1/quotes/import", content=t4_file("1.5", "oops", "-3"),
                       params={"format": "skypilot", "provider": "testcloud"},
                       headers={**admin_headers, **CSV})
    body = assert_problem(resp, 422, "row 3.Price")
    assert "row 4.Price" in [e["field"] for e in body["errors"]]
    assert all_quotes(client, "testcloud") == []
    neg = t4_file("1.5").replace(b"T4,1.0", b"T4,-2.0")
    assert_problem(client.post("/v1/quotes/import", content=neg,
                               params={"format": "skypilot", "provider": "testcloud"},
                               headers={**admin_headers, **CSV}), 422, "row 2.AcceleratorCount")


def test_price_change_is_updated_with_history(client: TestClient,
                                              admin_headers: dict[str, str]) -> None:
    do_import(client, admin_headers, t4_file("1.5"), captured_at="2026-01-01T00:00:00Z")
    out = do_import(client, admin_headers, t4_file("1.25"), source="v2")
    [upd] = out["updated"]
    assert (upd["old_price_usd_per_hour"], upd["new_price_usd_per_hour"]) == (1.5, 1.25)
    quote = client.get(f"/v1/quotes/{upd['quote_id']}").json()
    assert quote["price_usd_per_hour"] == 1.25 and quote["source"] == "v2"
    assert quote["version"] == 2 and not quote["stale"]

    patched = client.patch(f"/v1/quotes/{upd['quote_id']}", json={"price_usd_per_hour": 1.0},
                           headers={**admin_headers, "If-Match": f'"{quote["version"]}"'})
    assert patched.status_code == 200, patched.text
    hist = client.get(f"/v1/quotes/{upd['quote_id']}/history").json()
    moves = [(h["old_price_usd_per_hour"], h["new_price_usd_per_hour"], h["import_id"])
             for h in hist["data"]]
    assert moves == [(1.5, 1.25, out["import_id"]), (1.25, 1.0, None)]
    assert hist["data"][0]["old_captured_at"].startswith("2026-01-01")
    assert [h["changed_by"] for h in hist["data"]] == [None, None]  # anonymous: no key names
    as_admin = client.get(f"/v1/quotes/{upd['quote_id']}/history", headers=admin_headers).json()
    assert as_admin["data"][1]["changed_by"].startswith("test-admin")
    assert_problem(client.get("/v1/quotes/999999/history"), 404)


def test_import_list_shows_key_names_to_admins_only(
        client: TestClient, admin_headers: dict[str, str], reader_headers: dict[str, str]) -> None:
    """Who imported (an admin key's name) is the admins' business: an anonymous caller or a
    reader sees the import, its counts and its source, but api_key_name null."""
    out = do_import(client, admin_headers, t4_file("1.5"))
    for headers in ({}, reader_headers):
        [row] = [i for i in client.get("/v1/quotes/imports", headers=headers).json()["data"]
                 if i["id"] == out["import_id"]]
        assert row["api_key_name"] is None and row["added"] == 1
        assert "test-admin" not in client.get("/v1/quotes/imports", headers=headers).text
    [row] = [i for i in client.get("/v1/quotes/imports", headers=admin_headers).json()["data"]
             if i["id"] == out["import_id"]]
    assert row["api_key_name"].startswith("test-admin")


def test_captured_at_sets_freshness(client: TestClient, admin_headers: dict[str, str]) -> None:
    do_import(client, admin_headers, t4_file("1.5"), captured_at="2020-01-01T00:00:00")
    stale = client.get("/v1/quotes", params={"provider": "testcloud", "freshness": "stale"})
    [q] = stale.json()["data"]
    assert q["captured_at"].startswith("2020-01-01") and q["stale"]
    # A re-import at the same price moves captured_at forward: the price is fresh again.
    out = do_import(client, admin_headers, t4_file("1.5"))
    assert out["unchanged"] == 1
    fresh = client.get("/v1/quotes", params={"provider": "testcloud", "freshness": "fresh"})
    assert [x["id"] for x in fresh.json()["data"]] == [q["id"]]


def test_generic_csv_and_json(client: TestClient, admin_headers: dict[str, str]) -> None:
    header = ("gpu_slug,provider,region,instance_type,gpu_count,pricing,price_usd_per_hour,"
              "purchase_price_usd,source,captured_at,valid_until")
    text = (f"{header}\nnvidia-t4,testcloud,r1,g.1,1,on_demand,0.5,,s,2026-11-01,\n"
            "nvidia-rtx-4090,testcloud,global,card,1,purchase,,1599,msrp,2026-11-01,\n")
    out = do_import(client, admin_headers, text.encode(), format="generic")
    assert out["added"] == 2 and out["unmatched"] == []
    items = [{"gpu_slug": "nvidia-t4", "provider": "testcloud", "region": "r1",
              "instance_type": "g.1", "pricing": "on_demand", "price_usd_per_hour": 0.45},
             {"gpu_slug": "no-such-gpu", "provider": "testcloud", "instance_type": "x",
              "pricing": "spot", "price_usd_per_hour": 1}]
    out = do_import(client, admin_headers, json.dumps(items).encode(), format="generic",
                    provider=None, ctype={"Content-Type": "application/json"})
    assert [u["old_price_usd_per_hour"] for u in out["updated"]] == [0.5]
    assert [u["accelerator_name"] for u in out["unmatched"]] == ["no-such-gpu"]
    bad = do_import(client, admin_headers, b'[{"gpu_slug": "nvidia-t4"}]', status=422,
                    format="generic", ctype={"Content-Type": "application/json"})
    assert "row 1.instance_type" in [e["field"] for e in bad["errors"]]


def test_auth_validation_and_route_order(client: TestClient, admin_headers: dict[str, str],
                                         reader_headers: dict[str, str]) -> None:
    assert_problem(client.post("/v1/quotes/import", content=t4_file("1"),
                               params={"format": "skypilot", "provider": "x"}), 401)
    assert_problem(client.post("/v1/quotes/import", content=t4_file("1"),
                               params={"format": "skypilot", "provider": "x"},
                               headers=reader_headers), 403)
    assert_problem(client.post("/v1/quotes/import", content=t4_file("1"),
                               params={"format": "skypilot"}, headers=admin_headers),
                   422, "query.provider")
    assert_problem(client.post("/v1/quotes/import", content=t4_file("1"),
                               params={"format": "xml"}, headers=admin_headers),
                   422, "query.format")
    assert_problem(client.post("/v1/quotes/import", content=b"a,b\n1,2\n",
                               params={"format": "skypilot", "provider": "x"},
                               headers=admin_headers), 422, "header")
    assert client.get("/v1/quotes/imports").status_code == 200


@pytest.fixture
def small_limit_client(settings: Settings, engine: Engine,
                       connection: Connection) -> Iterator[TestClient]:
    app = create_app(settings.model_copy(update={"max_body_bytes": 2_000,
                                                 "max_import_bytes": 50_000}), engine=engine)

    def _session() -> Iterator[Session]:
        with Session(bind=connection, join_transaction_mode="create_savepoint",
                     expire_on_commit=False) as s:
            yield s
            s.commit()

    app.dependency_overrides[get_session] = _session
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def test_import_has_its_own_body_limit(small_limit_client: TestClient,
                                       admin_headers: dict[str, str]) -> None:
    body = t4_file(*["1.0"] * 60)  # ~5 kB: above max_body_bytes, below max_import_bytes
    assert len(body) > 2_000
    out = do_import(small_limit_client, admin_headers, body)
    assert out["quotes_in_file"] == 60
    assert_problem(small_limit_client.post("/v1/quotes", content=body,
                                           headers=admin_headers), 413)
    assert_problem(small_limit_client.post(
        "/v1/quotes/import", content=t4_file(*["1.0"] * 600),
        params={"format": "skypilot", "provider": "x"}, headers={**admin_headers, **CSV}), 413)


@pytest.mark.parametrize("fmt", ["skypilot", "generic"])
def test_duplicate_csv_header_column_is_a_422_naming_it(
        client: TestClient, admin_headers: dict[str, str], fmt: str) -> None:
    """Two columns with one name: which value wins was silent (the last); now the file is
    refused, naming the column, and nothing is written."""
    if fmt == "skypilot":
        body = t4_file("1.5").replace(b"Region,AvailabilityZone", b"Price,AvailabilityZone")
        column = "Price"
    else:
        body = (b"gpu_slug,provider,region,instance_type,gpu_count,pricing,price_usd_per_hour,"
                b"region\nnvidia-t4,testcloud,a,t.0,1,on_demand,1.5,b\n")
        column = "region"
    resp = client.post("/v1/quotes/import", content=body,
                       params={"format": fmt, "provider": "testcloud"},
                       headers={**admin_headers, **CSV})
    problem = assert_problem(resp, 422, f"header.{column}")
    assert column in problem["errors"][0]["message"]
    assert all_quotes(client, "testcloud") == []


def test_nfc_and_nfd_spellings_are_one_quote(client: TestClient,
                                             admin_headers: dict[str, str]) -> None:
    """"Zürich" precomposed (NFC) and as u + combining diaeresis (NFD) are one region: through
    POST /v1/quotes, an import, and a filter, there is one quote, stored in NFC."""
    nfc_region, nfd_region = "z\u00fcrich-1", "zu\u0308rich-1"
    quote = {"gpu_slug": "nvidia-t4", "provider": "testcloud", "region": nfd_region,
             "instance_type": "t.0", "gpu_count": 1, "pricing": "on_demand",
             "price_usd_per_hour": 1.5, "source": "test", "captured_at": "2026-11-30T00:00:00Z"}
    created = client.post("/v1/quotes", json=quote, headers=admin_headers)
    assert created.status_code == 201, created.text
    assert created.json()["region"] == nfc_region
    again = client.post("/v1/quotes", json={**quote, "region": nfc_region}, headers=admin_headers)
    assert_problem(again, 409)
    out = do_import(client, admin_headers, t4_file("1.25").replace(b"test-1", nfd_region.encode()))
    assert out["added"] == 0 and len(out["updated"]) == 1
    rows = all_quotes(client, "testcloud")
    assert [q["region"] for q in rows] == [nfc_region]
    for region in (nfc_region, nfd_region):
        found = client.get("/v1/quotes", params={"provider": "testcloud", "region": region})
        assert found.json()["total"] == 1, region
