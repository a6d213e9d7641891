"""A live `gpu-advisor serve` (SQLite, or PostgreSQL with TEST_DATABASE_URL) and a browser."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.chrome import browser_missing, make_driver
from tests.conftest import PG_URL, create_pg_database, drop_pg_database
from tests.hardening.live import serve, stop


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = browser_missing()
    if reason and os.environ.get("GPU_ADVISOR_REQUIRE_BROWSER") == "1":
        raise pytest.UsageError(f"browser tests required but {reason}")
    if reason:
        for item in items:
            if "tests/browser" in str(item.fspath):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="module")
def live_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if PG_URL:
        url = create_pg_database(PG_URL, prefix="gpu_advisor_browser")
    else:
        url = f"sqlite:///{tmp_path_factory.mktemp('browser') / 'live.db'}"
    proc, base = serve(url, admin_key=f"gpa_browser_{uuid.uuid4().hex}")
    try:
        yield base
    finally:
        stop(proc)
        if PG_URL:
            drop_pg_database(PG_URL, url)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = make_driver()
    try:
        yield driver
    finally:
        driver.quit()
