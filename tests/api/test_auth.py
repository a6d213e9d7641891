"""API keys: bootstrap key, private reads, the `keys create` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from service.app.factory import create_app
from service.core.config import Settings
from service.core.migrate import upgrade
from service.core.security import ApiKey, revoke_key
from tests.conftest import REPO_ROOT
from tests.helpers import assert_problem, new_gpu


def test_private_reads_need_a_key(settings: Settings, engine: Engine,
                                  reader_headers: dict[str, str], app) -> None:  # type: ignore[no-untyped-def]
    app.state.settings = settings.model_copy(update={"public_reads": False})
    with TestClient(app, raise_server_exceptions=False) as c:
        assert_problem(c.get("/v1/gpus"), 401)
        assert c.get("/v1/gpus", headers=reader_headers).status_code == 200
        assert c.get("/healthz").status_code == 200  # liveness stays open


def test_bootstrap_admin_key_is_installed_at_startup(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boot.db'}"
    upgrade(url)
    key = "gpa_bootstrap_" + "s" * 40
    app = create_app(Settings(database_url=url, bootstrap_admin_key=key))
    with TestClient(app, raise_server_exceptions=False) as c:
        headers = {"Authorization": f"Bearer {key}"}
        assert c.post("/v1/gpus", json=new_gpu(), headers=headers).status_code == 201
    with Session(app.state.engine) as session:
        row = session.exec(select(ApiKey).where(ApiKey.name == "bootstrap-admin")).one()
        assert key not in (row.key_hash, row.prefix)  # only the hash is stored
        assert revoke_key(session, prefix_or_name="bootstrap-admin") == 1
        session.commit()
    with TestClient(create_app(Settings(database_url=url)), raise_server_exceptions=False) as c:
        assert_problem(c.post("/v1/gpus", json=new_gpu(slug="x2"),
                              headers={"Authorization": f"Bearer {key}"}), 401)


def test_keys_create_prints_a_working_key_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    upgrade(url)
    run = subprocess.run(
        [sys.executable, "-m", "service.cli", "--database-url", url, "keys", "create",
         "--name", "portal", "--role", "reader"],
        capture_output=True, text=True, check=True, cwd=REPO_ROOT,
    )
    key = run.stdout.strip()
    assert key.startswith("gpa_") and "not shown again" in run.stderr
    app = create_app(Settings(database_url=url))
    with TestClient(app, raise_server_exceptions=False) as c:
        headers = {"Authorization": f"Bearer {key}"}
        assert c.get("/v1/gpus", headers=headers).status_code == 200
        assert_problem(c.post("/v1/gpus", json=new_gpu(), headers=headers), 403)
    listing = subprocess.run(
        [sys.executable, "-m", "service.cli", "--database-url", url, "keys", "list"],
        capture_output=True, text=True, check=True, cwd=REPO_ROOT,
    ).stdout
    assert "portal" in listing and key not in listing
