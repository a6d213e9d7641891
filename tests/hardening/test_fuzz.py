"""Property-based fuzzing of every documented operation (schemathesis, committed OpenAPI doc).

Each operation gets a bounded number of generated requests (positive and negative), sent with an
admin key through the ASGI app on a fresh, migrated and seeded database. Every response must be
non-5xx and match the documented status codes, content types and schemas.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.engine import Engine

from service.app.factory import create_app
from service.core.config import Settings
from tests.conftest import REPO_ROOT
from tests.hardening.conftest import new_key

MAX_EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

# The coverage phase (every boundary value the schema defines) runs for every operation but the
# one-shot recommendation, where its ~800 cases of up to 1024 GPUs would take over a minute.
CONFIG = SchemathesisConfig.from_dict({
    "operations": [
        {"include-path": "/v1/recommendations", "phases": {"coverage": {"enabled": False}}},
    ],
})
schema = schemathesis.openapi.from_path(REPO_ROOT / "openapi" / "openapi.json", config=CONFIG)
pytestmark = pytest.mark.fuzz


@pytest.fixture(scope="module")
def fuzz_app(fresh_url: str, fresh_engine: Engine) -> Iterator[FastAPI]:
    app = create_app(Settings(database_url=fresh_url), engine=fresh_engine)
    yield app


@pytest.fixture(scope="module")
def fuzz_headers(fresh_engine: Engine) -> dict[str, str]:
    return {"Authorization": f"Bearer {new_key(fresh_engine, 'admin', 'fuzz-admin')}"}


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors_and_documented_responses(
    case: schemathesis.Case, fuzz_app: FastAPI, fuzz_headers: dict[str, str]
) -> None:
    case.call_and_validate(app=fuzz_app, headers=fuzz_headers, checks=CHECKS)
