"""observed_at: the day a quote's source observed its price. Ages, staleness, the freshness
filter and recommendation warnings count from it; POST, PATCH and imports take it and refuse a
malformed or future date with a 422 naming the field."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.quotes.service import age_days, stale_before
from tests.helpers import CSV, H100, assert_problem, do_import, new_quote, t4_file

STALE_DAYS = 30.0  # the default GPU_ADVISOR_STALE_QUOTE_DAYS the test app runs with


def _today() -> date:
    return datetime.now(UTC).date()


def _seeded(client: TestClient, provider: str, instance_type: str,
            pricing: str = "on_demand") -> dict[str, Any]:
    rows = client.get("/v1/quotes", params={"provider": provider, "pricing": pricing,
                                            "limit": 500}).json()["data"]
    [row] = [q for q in rows if q["instance_type"] == instance_type]
    return row


def test_seeded_aws_catalog_prices_are_dated_before_the_cut_and_stale(
        client: TestClient) -> None:
    """AWS p5 on-demand at $98.32/h is the price before AWS's June 2025 cut: the seed dates it
    2025-05-31 (no new price), so it is hundreds of days old and stale; captured_at stays the
    day the file was read."""
    p5 = _seeded(client, "aws", "p5.48xlarge")
    assert p5["price_usd_per_hour"] == 98.32
    assert p5["observed_at"] == "2025-05-31"
    assert p5["captured_at"].startswith("2026-11-30")
    expected = (datetime.now(UTC) - datetime(2025, 5, 31, tzinfo=UTC)).total_seconds() / 86_400
    assert p5["age_days"] == pytest.approx(expected, abs=0.01)
    assert p5["age_days"] > 500 and p5["stale"] is True
    msrp = _seeded(client, "nvidia-msrp", "NVIDIA GeForce RTX 4090", "purchase")
    assert msrp["observed_at"] == "2022-10-12" and msrp["stale"] is True
    lam = _seeded(client, "lambda", "gpu_8x_h100_sxm5")
    assert lam["observed_at"] == "2026-11-30"  # fetch date unknown: the day read
    stale = client.get("/v1/quotes", params={"provider": "aws", "freshness": "stale",
                                             "limit": 500}).json()
    assert stale["total"] == 32  # every seeded AWS quote


def test_age_and_staleness_count_from_observed_at_not_captured_at(
        client: TestClient, admin_headers: dict[str, str]) -> None:
    now = datetime.now(UTC)
    old = (_today() - timedelta(days=40)).isoformat()
    body = new_quote(captured_at=now.isoformat(), observed_at=old)
    created = client.post("/v1/quotes", json=body, headers=admin_headers)
    assert created.status_code == 201, created.text
    quote = created.json()
    assert quote["observed_at"] == old
    assert 40 <= quote["age_days"] < 41.01 and quote["stale"] is True
    got = client.get(f"/v1/quotes/{quote['id']}").json()
    assert (got["observed_at"], got["stale"]) == (old, True)
    stale = client.get("/v1/quotes", params={"provider": "testcloud", "freshness": "stale"})
    assert [q["id"] for q in stale.json()["data"]] == [quote["id"]]
    fresh = client.get("/v1/quotes", params={"provider": "testcloud", "freshness": "fresh"})
    assert fresh.json()["total"] == 0

    # PATCH the observation date: fresh again (and listed as such)
    patched = client.patch(f"/v1/quotes/{quote['id']}", json={"observed_at": _today().isoformat()},
                           headers={**admin_headers, "If-Match": f'"{quote["version"]}"'})
    assert patched.status_code == 200, patched.text
    assert patched.json()["stale"] is False and patched.json()["age_days"] < 1.01
    fresh = client.get("/v1/quotes", params={"provider": "testcloud", "freshness": "fresh"})
    assert fresh.json()["total"] == 1


def test_observed_at_defaults_to_captured_at_day(client: TestClient,
                                                 admin_headers: dict[str, str]) -> None:
    body = new_quote(captured_at="2026-03-04T23:30:00-05:00")  # 2026-03-05 04:30 UTC
    quote = client.post("/v1/quotes", json=body, headers=admin_headers).json()
    assert quote["observed_at"] == "2026-03-05" and quote["stale"] is True


def test_a_future_captured_at_cannot_date_the_price(client: TestClient,
                                                    admin_headers: dict[str, str]) -> None:
    """Without observed_at, the captured_at day would date the price: a future one is refused
    (POST: the problem names both fields; import: query.captured_at)."""
    resp = client.post("/v1/quotes", json=new_quote(captured_at="2099-01-01T00:00:00Z"),
                       headers=admin_headers)
    body = assert_problem(resp, 422)
    assert any("captured_at" in e["message"] and "observed_at" in e["message"]
               for e in body["errors"])
    with_date = new_quote(captured_at="2099-01-01T00:00:00Z", observed_at="2026-01-01")
    assert client.post("/v1/quotes", json=with_date, headers=admin_headers).status_code == 201
    resp = client.post("/v1/quotes/import", content=t4_file("1.5"),
                       params={"format": "skypilot", "provider": "testcloud2",
                               "captured_at": "2099-01-01T00:00:00Z"},
                       headers={**admin_headers, **CSV})
    assert_problem(resp, 422, "query.captured_at")


def test_stale_boundary() -> None:
    """Stale means age_days > the limit, with the age counted from the start of the day; the
    list filter's date cut-off agrees with it on both sides of the boundary."""
    day = date(2026, 1, 1)
    at_limit = datetime(2026, 1, 31, tzinfo=UTC)  # exactly 30 days after the start of day
    assert age_days(day, at_limit) == 30.0
    assert not day < stale_before(at_limit, 30.0)  # 30.0 is not > 30: fresh
    later = at_limit + timedelta(seconds=1)
    assert age_days(day, later) > 30.0 and day < stale_before(later, 30.0)
    assert age_days(date(2026, 2, 1), at_limit) == 0.0  # never negative
    assert stale_before(datetime(2026, 1, 31, 12, tzinfo=UTC), 0.5) == date(2026, 1, 31)


@pytest.mark.parametrize("value", [
    "2099-01-01",             # the future
    "2025-13-01",             # no such month
    "31/05/2025",             # not YYYY-MM-DD
    "2025-05-31T10:00:00Z",   # a time, not a date
    1748649600,               # a number
    "1970-01-01",             # before 1990: a typo
])
def test_post_rejects_bad_observed_at(client: TestClient, admin_headers: dict[str, str],
                                      value: Any) -> None:
    resp = client.post("/v1/quotes", json=new_quote(observed_at=value), headers=admin_headers)
    body = assert_problem(resp, 422, "body.observed_at")
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert client.get("/v1/quotes", params={"provider": "testcloud"}).json()["total"] == 0
    if value == "2099-01-01":
        [err] = [e for e in body["errors"] if e["field"] == "body.observed_at"]
        assert "future" in err["message"]


def test_tomorrow_somewhere_is_accepted_the_day_after_is_not(
        client: TestClient, admin_headers: dict[str, str]) -> None:
    """A date is 'in the future' only when it is later than today everywhere (UTC+14)."""
    latest = (datetime.now(UTC) + timedelta(hours=14)).date()
    ok = client.post("/v1/quotes", json=new_quote(observed_at=latest.isoformat()),
                     headers=admin_headers)
    assert ok.status_code == 201, ok.text
    too_late = (latest + timedelta(days=1)).isoformat()
    assert_problem(client.post("/v1/quotes", json=new_quote(instance_type="b",
                                                            observed_at=too_late),
                               headers=admin_headers), 422, "body.observed_at")


def test_patch_rejects_future_and_null_observed_at(client: TestClient,
                                                   admin_headers: dict[str, str]) -> None:
    quote = client.post("/v1/quotes", json=new_quote(), headers=admin_headers).json()
    match = {**admin_headers, "If-Match": f'"{quote["version"]}"'}
    assert_problem(client.patch(f"/v1/quotes/{quote['id']}", json={"observed_at": "2099-01-01"},
                                headers=match), 422, "body.observed_at")
    assert_problem(client.patch(f"/v1/quotes/{quote['id']}", json={"observed_at": None},
                                headers=match), 422, "body.observed_at")


def test_skypilot_import_takes_observed_at(client: TestClient,
                                           admin_headers: dict[str, str]) -> None:
    """A SkyPilot catalog has no date column: ?observed_at= dates its quotes (default: the
    captured_at day); a re-import of the same price moves the date forward, never back."""
    out = do_import(client, admin_headers, t4_file("1.5"), observed_at="2025-05-31",
                    captured_at="2026-11-30T08:00:00Z")
    assert out["observed_at"] == "2025-05-31"
    [q] = client.get("/v1/quotes", params={"provider": "testcloud"}).json()["data"]
    assert (q["observed_at"], q["stale"]) == ("2025-05-31", True)
    assert q["captured_at"].startswith("2026-11-30")

    older = do_import(client, admin_headers, t4_file("1.5"), observed_at="2025-01-01",
                      captured_at="2026-11-30T08:00:00Z")
    assert older["unchanged"] == 1
    [q] = client.get("/v1/quotes", params={"provider": "testcloud"}).json()["data"]
    assert q["observed_at"] == "2025-05-31"  # not moved back

    today = _today().isoformat()
    again = do_import(client, admin_headers, t4_file("1.5"))  # default: captured_at (now)'s day
    assert again["observed_at"] == today and again["unchanged"] == 1
    [q] = client.get("/v1/quotes", params={"provider": "testcloud"}).json()["data"]
    assert (q["observed_at"], q["stale"]) == (today, False)

    changed = do_import(client, admin_headers, t4_file("1.25"), observed_at="2026-06-01")
    assert len(changed["updated"]) == 1
    [q] = client.get("/v1/quotes", params={"provider": "testcloud"}).json()["data"]
    assert (q["price_usd_per_hour"], q["observed_at"]) == (1.25, "2026-06-01")


@pytest.mark.parametrize("value", ["2099-01-01", "2025-02-30", "last week"])
def test_import_rejects_bad_observed_at_query(client: TestClient,
                                              admin_headers: dict[str, str], value: str) -> None:
    resp = client.post("/v1/quotes/import", content=t4_file("1.5"),
                       params={"format": "skypilot", "provider": "testcloud",
                               "observed_at": value},
                       headers={**admin_headers, **CSV})
    assert_problem(resp, 422, "query.observed_at")
    assert client.get("/v1/quotes", params={"provider": "testcloud"}).json()["total"] == 0


def test_generic_import_rows_carry_their_own_observed_at(client: TestClient,
                                                         admin_headers: dict[str, str]) -> None:
    header = "gpu_slug,provider,region,instance_type,gpu_count,pricing,price_usd_per_hour," \
             "source,captured_at,observed_at\n"
    rows = (f"{H100},testcloud,r,a.x,8,on_demand,20,s,2026-11-30,2025-05-31\n"
            f"{H100},testcloud,r,b.x,8,on_demand,21,s,2026-11-30,\n")
    out = do_import(client, admin_headers, (header + rows).encode(), format="generic",
                    observed_at="2026-01-15")
    assert out["added"] == 2
    got = {q["instance_type"]: q["observed_at"]
           for q in client.get("/v1/quotes", params={"provider": "testcloud"}).json()["data"]}
    # a row's own date wins; a row without one gets the query's
    assert got == {"a.x": "2025-05-31", "b.x": "2026-01-15"}

    bad = header + f"{H100},testcloud,r,c.x,8,on_demand,20,s,2026-11-30,2099-12-31\n"
    body = do_import(client, admin_headers, bad.encode(), format="generic", status=422)
    assert "row 2.observed_at" in [e["field"] for e in body["errors"]]
    json_rows = [{**new_quote(instance_type="d.x"), "observed_at": "2025-31-05"}]
    resp = client.post("/v1/quotes/import", json=json_rows,
                       params={"format": "generic"}, headers=admin_headers)
    assert_problem(resp, 422, "row 1.observed_at")


_TRAIN = {
    "kind": "training", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
    "training": {"batch_size": 64, "seq_len": 2048, "tokens": 2_000_000_000},
    "objective": "cost", "limit": 3,
}


def _recommend(client: TestClient, **constraints: Any) -> dict[str, Any]:
    resp = client.post("/v1/recommendations?view=compact",
                       json={**_TRAIN, "constraints": {"max_gpus": 8, **constraints}})
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def test_answer_priced_from_a_stale_quote_says_so(client: TestClient) -> None:
    """The seeded AWS p5 quote (observed 2025-05-31) prices the only H100 offer AWS has: the
    candidate's stale_quote warning and the answer's warnings name the offer, the day it was
    observed and its age."""
    out = _recommend(client, providers=["aws"], gpu_slugs=[H100])
    [top] = out["recommendations"]
    quote = top["quote"]
    assert (quote["instance_type"], quote["observed_at"], quote["stale"]) == (
        "p5.48xlarge", "2025-05-31", True)
    # the quote shows its age to 0.01 day, the warning in whole days of the unrounded age:
    # from 12:00 to 12:07 UTC (the age 0.500-0.505 past a whole day) the two round apart
    age = quote["age_days"]
    days = {f"{math.floor(age):.0f} days", f"{math.ceil(age):.0f} days"}
    [warning] = [w["message"] for w in top["warnings"] if w["code"] == "stale_quote"]
    assert f"quote {quote['id']} is stale" in warning
    assert "aws p5.48xlarge (us-east-1, on_demand)" in warning
    assert "observed 2025-05-31" in warning and any(d in warning for d in days)
    [answer] = [w for w in out["warnings"] if w.startswith("stale prices")]
    assert "30 days" in answer and "1 of 1 listed candidates" in answer
    assert f"#1 {H100}: quote {quote['id']} aws p5.48xlarge" in answer
    assert "observed 2025-05-31" in answer and any(f"{d} old" in answer for d in days)


def test_fresh_quotes_give_no_stale_warning(client: TestClient,
                                            admin_headers: dict[str, str]) -> None:
    today = _today().isoformat()
    old = (_today() - timedelta(days=45)).isoformat()
    for itype, observed, price in (("fresh.8x", today, 20.0), ("old.8x", old, 19.0)):
        body = new_quote(instance_type=itype, observed_at=observed, price_usd_per_hour=price,
                         captured_at=datetime.now(UTC).isoformat())
        assert client.post("/v1/quotes", json=body, headers=admin_headers).status_code == 201
    # the cheaper offer is 45 days old: used, with both warnings naming it
    out = _recommend(client, providers=["testcloud"], gpu_slugs=[H100])
    [top] = out["recommendations"]
    assert top["quote"]["instance_type"] == "old.8x"
    assert any("testcloud old.8x" in w["message"] for w in top["warnings"]
               if w["code"] == "stale_quote")
    assert any("testcloud old.8x" in w and f"observed {old}" in w for w in out["warnings"])
    # without it, the fresh one: no stale warning anywhere
    client.delete(f"/v1/quotes/{top['quote']['id']}", headers=admin_headers)
    out = _recommend(client, providers=["testcloud"], gpu_slugs=[H100])
    [top] = out["recommendations"]
    assert top["quote"]["instance_type"] == "fresh.8x" and top["quote"]["stale"] is False
    assert not [w for w in top["warnings"] if w["code"] == "stale_quote"]
    assert not [w for w in out["warnings"] if w.startswith("stale prices")]
