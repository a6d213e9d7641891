"""The committed OpenAPI document, the health routes, the compose file and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from fastapi.testclient import TestClient

from service.app.factory import create_app
from service.http.openapi_doc import openapi_json
from tests.conftest import REPO_ROOT
from tests.helpers import assert_problem


def test_openapi_document_has_not_drifted(app) -> None:  # type: ignore[no-untyped-def]
    committed = (REPO_ROOT / "openapi" / "openapi.json").read_text(encoding="utf-8")
    assert openapi_json(app) == committed, "run: gpu-advisor export-openapi -o openapi/openapi.json"


def test_every_operation_has_stable_id_summary_and_problem_responses(app) -> None:  # type: ignore[no-untyped-def]
    spec = app.openapi()
    ids = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            ids.append(op["operationId"])
            assert op.get("summary"), f"{method} {path} has no summary"
            assert "-" in op["operationId"] and " " not in op["operationId"]
            read_only = path in {"/v1/estimates", "/v1/recommendations"}
            if path.startswith("/v1/") and method in {"post", "put", "patch", "delete"} \
                    and not read_only:
                assert "401" in op["responses"] and "403" in op["responses"], (method, path)
    assert len(ids) == len(set(ids))
    assert "gpus-list_gpus" in ids and "quotes-create_quote" in ids


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready"}
    assert client.get("/healthz").headers["x-request-id"]


def test_readyz_is_503_problem_when_database_unreachable(settings) -> None:  # type: ignore[no-untyped-def]
    down = settings.model_copy(update={
        "database_url": "postgresql+psycopg://nobody@127.0.0.1:1/none",
        "db_connect_timeout_s": 1.0,
    })
    with TestClient(create_app(down), raise_server_exceptions=False) as c:
        assert_problem(c.get("/readyz"), 503)
        assert_problem(c.get("/v1/gpus"), 503)


def test_docker_compose_declares_db_and_service() -> None:
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["db"]["image"].startswith("postgres")
    assert "healthcheck" in services["db"] and "healthcheck" in services["api"]
    env = services["api"]["environment"]
    assert env["DATABASE_URL"].startswith("postgresql+psycopg://")
    assert "@db:5432/" in env["DATABASE_URL"]
    assert "8000:8000" in services["api"]["ports"]
    assert services["api"]["depends_on"]["db"]["condition"] == "service_healthy"
    assert (REPO_ROOT / "Dockerfile").exists()


def test_cli_export_openapi_matches_committed() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "service.cli", "export-openapi"],
        capture_output=True, text=True, check=True, cwd=REPO_ROOT,
    )
    assert json.loads(out.stdout)["info"]["title"] == "gpu-advisor"
    assert out.stdout == (REPO_ROOT / "openapi" / "openapi.json").read_text(encoding="utf-8")


def _documented_roles() -> dict[tuple[str, str], set[str]]:
    """The route/roles table of docs/api.md, one entry per method and path."""
    import re

    text = (REPO_ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    table = text.split("| route | roles |", 1)[1].split("\n\n", 1)[0]
    out: dict[tuple[str, str], set[str]] = {}
    for line in table.splitlines()[2:]:
        route_cell, roles_cell = line.strip("|").split("|")[:2]
        roles = set(re.findall(r"anyone|anonymous|reader|submitter|admin",
                               re.sub(r"\([^)]*\)", "", roles_cell)))
        for methods, path in re.findall(r"`([A-Z/]+) ([^`]+)`", route_cell):
            for method in methods.split("/"):
                out[(method.lower(), path)] = roles
    return out


def test_documented_roles_table_matches_openapi(app) -> None:  # type: ignore[no-untyped-def]
    documented = {
        (method, path): set(op["x-roles"])
        for path, ops in app.openapi()["paths"].items() for method, op in ops.items()
    }
    assert _documented_roles() == documented
