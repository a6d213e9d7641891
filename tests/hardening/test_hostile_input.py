"""Hostile input, through the app on SQLite and, when
TEST_DATABASE_URL is set, on PostgreSQL (which refuses NUL in text: these were 500s there).

- NUL and other C0 control characters in a query filter or a body field: 422 naming the field;
  in a path id: 404; in an imported file: 422 naming the row and column; nothing is written.
- Import files the parsers choked on (a CSV field over the csv module's limit, JSON nested
  thousands deep, integers past Python's 4,300-digit conversion limit, a 4,000-digit
  SizeInMiB, a captured_at that overflows when moved to UTC): 422 naming the row and field.
- /metrics follows GPU_ADVISOR_METRICS_PUBLIC, or the read rule when unset.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.core.config import Settings
from tests.helpers import H100, assert_problem

CONTROL = ["\x00", "a\x00b", "\x01", "x\x1b[31m", "\x1f"]
"""NUL (PostgreSQL's 500), and other C0 controls, alone and inside text."""
TIME = "2026-11-30T00:00:00Z"
WORKLOAD: dict[str, Any] = {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
                            "inference": {"prompt_tokens": 512, "output_tokens": 128}}


def gpu_body(**over: Any) -> dict[str, Any]:
    body = {
        "slug": "hostile-gpu", "name": "Hostile GPU", "vendor": "NVIDIA", "architecture": "Test",
        "form_factor": "pcie", "memory_gb": 48, "memory_type": "GDDR6",
        "memory_bandwidth_gb_s": 864, "fp32_tflops": 90, "bf16_tflops": 360, "tdp_w": 350,
        "interconnect": "pcie", "aliases": ["hostile"], "source": "test", "notes": "",
    }
    body.update(over)
    return body


def quote_body(**over: Any) -> dict[str, Any]:
    body = {
        "gpu_slug": H100, "provider": "hostile", "region": "r-1", "instance_type": "i-1",
        "gpu_count": 1, "pricing": "on_demand", "price_usd_per_hour": 2.5, "source": "test",
        "captured_at": TIME,
    }
    body.update(over)
    return body


def set_path(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``body`` with the dotted ``path`` set to ``value`` (a list field gets ``[value]``)."""
    out = json.loads(json.dumps(body))
    *parents, leaf = path.split(".")
    node = out
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = [value] if isinstance(node.get(leaf), list) else value
    return out


def post_json(client: TestClient, method: str, url: str, body: Any,
              headers: dict[str, str]) -> Any:
    # Escaped JSON (\u0000), as a client library sends it; httpx's json= would send raw bytes.
    return client.request(method, url, content=json.dumps(body),
                          headers={**headers, "Content-Type": "application/json"})


def no_quotes_of(client: TestClient, provider: str) -> None:
    resp = client.get("/v1/quotes", params={"provider": provider, "include_expired": "true"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["total"] == 0


# -- query filters --------------------------------------------------------------------------

FILTERS = [("/v1/gpus", "q"), ("/v1/gpus", "vendor"), ("/v1/quotes", "gpu"),
           ("/v1/quotes", "provider"), ("/v1/quotes", "region")]


@pytest.mark.parametrize("char", CONTROL, ids=repr)
@pytest.mark.parametrize(("url", "param"), FILTERS, ids=lambda v: str(v))
def test_control_characters_in_a_filter_are_422_naming_it(
    client: TestClient, url: str, param: str, char: str
) -> None:
    body = assert_problem(client.get(url, params={param: char}), 422, f"query.{param}")
    error = next(e for e in body["errors"] if e["field"] == f"query.{param}")
    assert error["type"] == "control_characters"


@pytest.mark.parametrize(("url", "param"), FILTERS, ids=lambda v: str(v))
def test_tab_and_line_breaks_in_a_filter_are_allowed(
    client: TestClient, url: str, param: str
) -> None:
    assert client.get(url, params={param: "a\tb\r\n"}).status_code == 200


@pytest.mark.parametrize("param", ["provider", "source"])
def test_control_characters_in_import_parameters_are_422(
    client: TestClient, admin_headers: dict[str, str], param: str
) -> None:
    params = {"format": "generic", "provider": "hostile", param: "bad\x00"}
    resp = client.post("/v1/quotes/import", params=params, content=b"[]",
                       headers={**admin_headers, "Content-Type": "application/json"})
    assert_problem(resp, 422, f"query.{param}")


# -- path ids ---------------------------------------------------------------------------------

PATH_IDS = [
    ("GET", "/v1/gpus/%00"), ("GET", "/v1/gpus/h100%01"), ("PATCH", "/v1/gpus/%00"),
    ("PUT", "/v1/gpus/%00"), ("DELETE", "/v1/gpus/%00"),
    ("GET", "/v1/workloads/%00"), ("GET", "/v1/workloads/%00abc"),
    ("DELETE", "/v1/workloads/%00"), ("GET", "/v1/workloads/%00/runs"),
    ("GET", "/v1/workloads/%00/recommendations"), ("GET", "/v1/workloads/%00/runs/%00"),
    ("POST", "/v1/workloads/%00/runs"), ("GET", "/v1/models/%00"),
]


@pytest.mark.parametrize(("method", "url"), PATH_IDS, ids=lambda v: str(v))
def test_control_characters_in_a_path_id_are_404(
    client: TestClient, admin_headers: dict[str, str], method: str, url: str
) -> None:
    body = {k: v for k, v in gpu_body().items() if k != "slug"} if method == "PUT" else (
        {"notes": "x"} if method == "PATCH" else None)
    headers = {**admin_headers, "If-Match": '"1"', "Content-Type": "application/json"}
    resp = client.request(method, url, headers=headers,
                          content=json.dumps(body) if body is not None else None)
    assert_problem(resp, 404)


def test_control_characters_in_a_run_id_of_a_real_workload_are_404(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    created = post_json(client, "POST", "/v1/workloads", {**WORKLOAD, "name": "w"},
                        admin_headers)
    assert created.status_code == 201, created.text
    assert_problem(client.get(f"/v1/workloads/{created.json()['id']}/runs/%00",
                              headers=admin_headers), 404)


# -- body fields ------------------------------------------------------------------------------

GPU_FIELDS = ["name", "vendor", "architecture", "memory_type", "aliases", "source", "notes"]
QUOTE_FIELDS = ["gpu_slug", "provider", "region", "instance_type", "source"]
WORKLOAD_FIELDS = ["model.preset", "model.name", "constraints.vendors", "constraints.providers",
                   "constraints.regions", "constraints.gpu_slugs",
                   "constraints.exclude_gpu_slugs"]


def _writes() -> list[tuple[str, str, dict[str, Any], str]]:
    """(method, url, valid body, field to poison): every string field of every write body."""
    replace = {k: v for k, v in gpu_body().items() if k != "slug"}
    workload = {**WORKLOAD, "name": "w", "constraints": {
        "vendors": ["NVIDIA"], "providers": ["aws"], "regions": ["us-east-1"],
        "gpu_slugs": [H100], "exclude_gpu_slugs": ["x"]}}
    out = [("POST", "/v1/gpus", gpu_body(), f) for f in [*GPU_FIELDS, "slug"]]
    out += [("PUT", f"/v1/gpus/{H100}", replace, f) for f in GPU_FIELDS]
    out += [("PATCH", f"/v1/gpus/{H100}", {}, f) for f in GPU_FIELDS]
    out += [("POST", "/v1/quotes", quote_body(), f) for f in QUOTE_FIELDS]
    out += [("PATCH", "/v1/quotes/1", {}, f) for f in QUOTE_FIELDS]
    out += [("POST", "/v1/workloads", workload, f) for f in ["name", *WORKLOAD_FIELDS]]
    out += [("POST", "/v1/recommendations", workload, f) for f in ["name", *WORKLOAD_FIELDS]]
    out += [("POST", "/v1/estimates", {"workload": WORKLOAD, "gpu_slug": H100}, f)
            for f in ["gpu_slug", "workload.model.preset"]]
    return out


@pytest.mark.parametrize("char", ["\x00", "ok\x07"], ids=repr)
@pytest.mark.parametrize(("method", "url", "body", "field"), _writes(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_control_characters_in_a_body_field_are_422_naming_it(
    client: TestClient, admin_headers: dict[str, str], method: str, url: str,
    body: dict[str, Any], field: str, char: str,
) -> None:
    poisoned = set_path(body, field, char)
    headers = {**admin_headers, "If-Match": '"1"'}
    assert_problem(post_json(client, method, url, poisoned, headers), 422, f"body.{field}")


def test_nothing_is_written_and_clean_text_still_is(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    assert_problem(post_json(client, "POST", "/v1/quotes", quote_body(source="s\x00"),
                             admin_headers), 422, "body.source")
    no_quotes_of(client, "hostile")
    notes = "line one\r\n\tline two\nend"  # tab and line breaks are ordinary text
    created = post_json(client, "POST", "/v1/gpus", gpu_body(notes=notes), admin_headers)
    assert created.status_code == 201, created.text
    assert client.get("/v1/gpus/hostile-gpu").json()["notes"] == notes


# -- imported files --------------------------------------------------------------------------

GENERIC_HEADER = ("gpu_slug,provider,region,instance_type,gpu_count,pricing,"
                  "price_usd_per_hour,source,captured_at")
GENERIC_COLUMNS = GENERIC_HEADER.split(",")
SKY_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,GpuInfo,Price,SpotPrice,Region"
H100_INFO = "\"{'Gpus': [{'Name': 'H100', 'MemoryInfo': {'SizeInMiB': 81920}}]}\""


def generic_csv(**over: str) -> bytes:
    row = {"gpu_slug": H100, "provider": "hostile", "region": "r-1", "instance_type": "i-1",
           "gpu_count": "1", "pricing": "on_demand", "price_usd_per_hour": "2.5",
           "source": "test", "captured_at": TIME, **over}
    columns = GENERIC_COLUMNS + [c for c in over if c not in GENERIC_COLUMNS]
    return (",".join(columns) + "\n" + ",".join(row[c] for c in columns) + "\n").encode()


def sky_csv(**over: str) -> bytes:
    row = {"InstanceType": "p5.48xlarge", "AcceleratorName": "H100", "AcceleratorCount": "8",
           "GpuInfo": H100_INFO, "Price": "98.32", "SpotPrice": "", "Region": "r-1", **over}
    return (SKY_HEADER + "\n" + ",".join(row[c] for c in SKY_HEADER.split(",")) + "\n").encode()


def do_import(client: TestClient, headers: dict[str, str], body: bytes, fmt: str,
              ctype: str = "text/csv", **params: str) -> Any:
    params = {"format": fmt, "provider": "hostile", **params}
    return client.post("/v1/quotes/import", params=params, content=body,
                       headers={**headers, "Content-Type": ctype})


@pytest.mark.parametrize("dry_run", ["true", "false"])
@pytest.mark.parametrize("column", ["gpu_slug", "region", "instance_type", "source"])
def test_control_characters_in_a_generic_csv_are_422_naming_row_and_column(
    client: TestClient, admin_headers: dict[str, str], column: str, dry_run: str
) -> None:
    body = generic_csv(**{column: "bad\x00"})
    resp = do_import(client, admin_headers, body, "generic", dry_run=dry_run)
    assert_problem(resp, 422, f"row 2.{column}")
    no_quotes_of(client, "hostile")


@pytest.mark.parametrize("field", ["gpu_slug", "provider", "region", "instance_type", "source"])
def test_control_characters_in_a_json_import_are_422_naming_row_and_field(
    client: TestClient, admin_headers: dict[str, str], field: str
) -> None:
    rows = [quote_body(instance_type="ok-1"), quote_body(**{field: "bad\x00"})]
    resp = do_import(client, admin_headers, json.dumps(rows).encode(), "generic",
                     ctype="application/json")
    assert_problem(resp, 422, f"row 2.{field}")
    no_quotes_of(client, "hostile")


@pytest.mark.parametrize("column", ["InstanceType", "AcceleratorName", "Region", "GpuInfo"])
def test_control_characters_in_a_skypilot_csv_are_422_naming_row_and_column(
    client: TestClient, admin_headers: dict[str, str], column: str
) -> None:
    value = H100_INFO.replace("H100", "H1\x0000") if column == "GpuInfo" else "p\x00"
    resp = do_import(client, admin_headers, sky_csv(**{column: value}), "skypilot")
    assert_problem(resp, 422, f"row 2.{column}")
    no_quotes_of(client, "hostile")


def test_a_clean_skypilot_csv_still_imports(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    resp = do_import(client, admin_headers, sky_csv(), "skypilot")
    assert resp.status_code == 200, resp.text
    assert resp.json()["added"] == 1


# -- import edge cases ------------------------------------------------------------------------

HUGE_FIELD = "x" * 140_000
"""Over the csv module's field_size_limit (131,072)."""
DIGITS_5000 = "1" * 5_000
"""Past Python's int-from-string limit (4,300 digits)."""


@pytest.mark.parametrize(("fmt", "body", "field"), [
    ("generic", generic_csv(source=HUGE_FIELD), "row 2.source"),
    ("generic", generic_csv(source=f'"{"a," * 70_000}"'), "row 2.source"),
    ("skypilot", sky_csv(GpuInfo=f'"{HUGE_FIELD}"'), "row 2.GpuInfo"),
    ("generic", (HUGE_FIELD + "\n").encode(), "header"),
], ids=["generic", "quoted-with-commas", "skypilot", "header"])
def test_a_csv_field_over_the_csv_limit_is_422_naming_row_and_column(
    client: TestClient, admin_headers: dict[str, str], fmt: str, body: bytes, field: str
) -> None:
    assert_problem(do_import(client, admin_headers, body, fmt), 422, field)


@pytest.mark.parametrize("depth", [5_000, 100_000])
@pytest.mark.parametrize("inside_a_row", [False, True])
def test_json_nested_thousands_deep_is_422(
    client: TestClient, admin_headers: dict[str, str], depth: int, inside_a_row: bool
) -> None:
    nested = "[" * depth + "]" * depth
    text = f'[{{"gpu_slug": "{H100}", "source": {nested}}}]' if inside_a_row else nested
    resp = do_import(client, admin_headers, text.encode(), "generic", ctype="application/json")
    assert_problem(resp, 422, "body")


@pytest.mark.parametrize("field", ["gpu_count", "price_usd_per_hour", "provider"])
def test_json_integer_over_4300_digits_is_422_naming_row_and_field(
    client: TestClient, admin_headers: dict[str, str], field: str
) -> None:
    text = json.dumps([quote_body(), quote_body(instance_type="i-2", **{field: 0})])
    text = text.replace(f'"{field}": 0', f'"{field}": {DIGITS_5000}')
    resp = do_import(client, admin_headers, text.encode(), "generic", ctype="application/json")
    assert_problem(resp, 422, f"row 2.{field}")


@pytest.mark.parametrize(("fmt", "body", "field"), [
    ("generic", generic_csv(gpu_count=DIGITS_5000), "row 2.gpu_count"),
    ("generic", generic_csv(price_usd_per_hour=DIGITS_5000), "row 2.price_usd_per_hour"),
    ("skypilot", sky_csv(AcceleratorCount=DIGITS_5000), "row 2.AcceleratorCount"),
    ("skypilot", sky_csv(Price=DIGITS_5000), "row 2.Price"),
    ("skypilot", sky_csv(Price="-" + DIGITS_5000), "row 2.Price"),
    ("skypilot", sky_csv(GpuInfo=H100_INFO.replace("81920", "9" * 4_000)), "row 2.GpuInfo"),
    ("skypilot", sky_csv(GpuInfo=H100_INFO.replace("81920", DIGITS_5000)), "row 2.GpuInfo"),
    ("skypilot", sky_csv(GpuInfo=H100_INFO.replace("81920", "1e999")), "row 2.GpuInfo"),
], ids=["csv-count", "csv-price", "sky-count", "sky-price", "sky-negative", "size-4000",
        "size-5000", "size-inf"])
def test_huge_numbers_in_a_csv_are_422_naming_row_and_column(
    client: TestClient, admin_headers: dict[str, str], fmt: str, body: bytes, field: str
) -> None:
    body_json = assert_problem(do_import(client, admin_headers, body, fmt), 422, field)
    assert len(json.dumps(body_json)) < 5_000  # the huge value is not echoed back whole


OVERFLOWING = "0001-01-01T00:00:00+14:00"
"""Year 1 at UTC+14 is in year 0 once moved to UTC: Python's OverflowError."""


@pytest.mark.parametrize("column", ["captured_at", "valid_until"])
def test_a_time_that_overflows_in_a_file_is_422_naming_row_and_column(
    client: TestClient, admin_headers: dict[str, str], column: str
) -> None:
    resp = do_import(client, admin_headers, generic_csv(**{column: OVERFLOWING}), "generic")
    assert_problem(resp, 422, f"row 2.{column}")
    rows = [quote_body(**{column: OVERFLOWING})]
    resp = do_import(client, admin_headers, json.dumps(rows).encode(), "generic",
                     ctype="application/json")
    assert_problem(resp, 422, f"row 1.{column}")


@pytest.mark.parametrize("value", [OVERFLOWING, "9999-12-31T23:59:59-14:00"])
def test_a_captured_at_parameter_that_overflows_is_422(
    client: TestClient, admin_headers: dict[str, str], value: str
) -> None:
    resp = do_import(client, admin_headers, generic_csv(), "generic", captured_at=value)
    assert_problem(resp, 422, "query.captured_at")
    no_quotes_of(client, "hostile")


# -- /metrics -------------------------------------------------------------------------------

@pytest.mark.parametrize(("public_reads", "metrics_public", "anonymous_ok"), [
    (True, None, True), (False, None, False), (False, True, True), (True, False, False),
])
def test_metrics_follow_the_read_rule_or_their_own_setting(
    app: FastAPI, settings: Settings, reader_headers: dict[str, str], public_reads: bool,
    metrics_public: bool | None, anonymous_ok: bool,
) -> None:
    app.state.settings = settings.model_copy(
        update={"public_reads": public_reads, "metrics_public": metrics_public})
    with TestClient(app, raise_server_exceptions=False) as c:
        anonymous = c.get("/metrics")
        if anonymous_ok:
            assert anonymous.status_code == 200
            assert anonymous.headers["content-type"].startswith("text/plain")
        else:
            assert_problem(anonymous, 401)
            assert anonymous.headers["www-authenticate"] == "Bearer"
        keyed = c.get("/metrics", headers=reader_headers)
        assert keyed.status_code == 200, keyed.text
        assert "gpu_advisor_http_requests_total" in keyed.text
        assert_problem(c.get("/metrics", headers={"Authorization": "Bearer gpa_no_such"}), 401)
        assert c.get("/healthz").status_code == 200  # liveness stays open


@pytest.mark.parametrize(("env", "expected"), [("false", False), ("true", True), (None, None)])
def test_metrics_public_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, env: str | None, expected: bool | None
) -> None:
    if env is None:
        monkeypatch.delenv("GPU_ADVISOR_METRICS_PUBLIC", raising=False)
    else:
        monkeypatch.setenv("GPU_ADVISOR_METRICS_PUBLIC", env)
    assert Settings().metrics_public is expected
