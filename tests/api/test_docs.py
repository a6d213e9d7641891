"""The pages for people through the ASGI app: offline assets, described fields, named examples."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.workloads.examples import EXAMPLES, estimate_body, submission_body

PAGES = ("/", "/ui", "/ui/fleet", "/docs", "/redoc", "/docs/oauth2-redirect")
ROUTES = {("/v1/estimates", "post"), ("/v1/recommendations", "post"), ("/v1/workloads", "post")}


@pytest.mark.parametrize("path", PAGES)
def test_pages_name_no_other_host(client: TestClient, path: str) -> None:
    page = client.get(path)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    refs = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']+)', page.text)
    refs += re.findall(r"url:\s*'([^']+)'", page.text)
    assert refs or path == "/docs/oauth2-redirect"
    for ref in refs:
        assert ref.startswith(("/", "#", "?")), f"{path} loads {ref}"
        if ref.startswith("/") and not ref.startswith("/docs") and "?" not in ref:
            assert client.get(ref).status_code == 200, ref


def _directives(csp: str) -> dict[str, list[str]]:
    out = {}
    for part in csp.split(";"):
        name, *values = part.split()
        out[name] = values
    return out


@pytest.mark.parametrize("path", PAGES)
def test_pages_run_no_inline_script(client: TestClient, path: str) -> None:
    """script-src 'self' (no 'unsafe-inline'): every script is a file under /static, settings
    travel in JSON data blocks; an injected inline script would not run."""
    page = client.get(path)
    csp = _directives(page.headers["content-security-policy"])
    assert csp["script-src"] == ["'self'"], csp["script-src"]
    assert csp["object-src"] == ["'none'"]
    for attrs, body in re.findall(r"<script([^>]*)>(.*?)</script>", page.text, re.S):
        if 'type="application/json"' in attrs:
            continue  # a data block: never executed
        assert "src=" in attrs and not body.strip(), f"{path}: inline script {body[:80]!r}"
    assert not re.search(r"\son[a-z]+\s*=", page.text, re.I), f"{path}: an on* handler attribute"


def test_docs_assets_are_served_from_the_package(client: TestClient) -> None:
    for path in ("/static/vendor/swagger-ui-bundle.js", "/static/vendor/swagger-ui.css",
                 "/static/redoc/redoc.standalone.js", "/static/ui.js", "/static/ui.css"):
        asset = client.get(path)
        assert asset.status_code == 200 and len(asset.content) > 1000, path
    redoc = client.get("/static/redoc/redoc.standalone.js").text
    assert "cdn.redoc.ly" not in redoc and "fonts.googleapis" not in redoc
    assert client.get("/static/../service/main.py").status_code == 404


def test_landing_page_links(client: TestClient) -> None:
    text = client.get("/").text
    for path in ('href="/ui"', 'href="/docs"', 'href="/redoc"', 'href="/healthz"'):
        assert path in text
    for name in EXAMPLES:
        assert f'/ui?example={name}"' in text


def _properties(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name, comp in schema["components"]["schemas"].items():
        for prop, spec in (comp.get("properties") or {}).items():
            out.append((f"{name}.{prop}", spec))
    return out


def test_every_schema_field_is_described(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    props = _properties(schema)
    assert len(props) > 300
    missing = [name for name, spec in props if not spec.get("description")]
    assert missing == []


def test_request_fields_with_units_say_them(client: TestClient) -> None:
    comps = client.get("/openapi.json").json()["components"]["schemas"]
    for comp, unit_fields in {
        "InferenceInput": ("max_ttft_ms", "max_tpot_ms", "max_latency_ms",
                           "target_requests_per_s", "prompt_tokens"),
        "ConstraintsIn": ("budget_usd", "max_usd_per_hour", "deadline_hours", "max_power_w"),
        "EstimateOut": ("ttft_ms", "latency_ms", "time_to_complete_hours", "power_w"),
        "CostOut": ("usd_per_hour", "usd_per_million_output_tokens"),
    }.items():
        for field in unit_fields:
            assert re.search(r"\[[^\]]+\]", comps[comp]["properties"][field]["description"]), (
                f"{comp}.{field} names no unit")


def test_named_examples_on_the_workload_routes(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path, method in ROUTES:
        content = paths[path][method]["requestBody"]["content"]["application/json"]
        named = content["examples"]
        assert set(named) == set(EXAMPLES), path
        for example in named.values():
            assert example["summary"] and example["description"] and example["value"]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_named_example_is_answered(client: TestClient, admin_headers: dict[str, str],
                                        name: str) -> None:
    rec = client.post("/v1/recommendations", json=submission_body(name, limit=100))
    assert rec.status_code == 200, rec.text
    result = rec.json()
    assert len(result["recommendations"]) >= 2
    assert any(c["pareto_optimal"] for c in result["recommendations"])
    if name == "too-big":
        codes = {r["code"] for r in result["rejected"]}
        assert "memory" in codes and len(result["rejected"]) >= 10
    est = client.post("/v1/estimates", json=estimate_body(name))
    assert est.status_code == 200, est.text
    assert est.json()["fits"] is (name != "too-big")
    stored = client.post("/v1/workloads", json=submission_body(name), headers=admin_headers)
    assert stored.status_code == 201, stored.text
    assert stored.json()["kind"] == EXAMPLES[name]["workload"]["kind"]
