"""The image, the compose file and the lock files, read as files (no Docker daemon needed).

The image runs unprivileged from a non-editable install of the locked dependencies, a
.dockerignore keeps the build context small, and compose publishes no database port and
hard-codes no password.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import yaml
from packaging.licenses import canonicalize_license_expression
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import REPO_ROOT

_PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)\s*(?:;\s*(.+))?$")


def _pins(name: str) -> dict[str, tuple[str, str | None]]:
    """{normalized name: (version, marker)} of a pip-tools/uv style lock file."""
    pins: dict[str, tuple[str, str | None]] = {}
    for line in (REPO_ROOT / name).read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _PIN.match(line.strip())
        assert match, f"{name}: not an exact pin: {line!r}"
        pins[canonicalize_name(match.group(1).split("[")[0])] = (match.group(2), match.group(3))
    return pins


def _pyproject() -> dict[str, list[str]]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return {"runtime": project["dependencies"],
            "dev": project["optional-dependencies"]["dev"]}


def _final_stage(text: str) -> list[str]:
    """The instructions of the Dockerfile's last stage, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    lines = [ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.startswith("#")]
    last_from = max(i for i, ln in enumerate(lines) if ln.upper().startswith("FROM "))
    return lines[last_from:]


def test_dockerfile_runs_unprivileged_from_the_lock_without_editable_installs() -> None:
    text = (REPO_ROOT / "Dockerfile").read_text()
    final = _final_stage(text)
    users = [ln.split(None, 1)[1] for ln in final if ln.upper().startswith("USER ")]
    assert users, "the final stage sets no USER: it would run as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    assert user.isdigit(), "a numeric UID lets Kubernetes verify runAsNonRoot"
    assert final[-1].upper().startswith("CMD ") and any(ln.upper().startswith("HEALTHCHECK")
                                                        for ln in final)
    installs = [ln for ln in re.sub(r"\\\n", " ", text).splitlines() if "pip install" in ln]
    assert installs
    assert not any(re.search(r"\s(-e|--editable)\b", ln) for ln in installs), installs
    assert any("-r" in ln and "requirements.lock" in ln for ln in installs), installs
    project_installs = [ln for ln in installs if "requirements.lock" not in ln]
    assert all("--no-deps" in ln for ln in project_installs), project_installs
    assert "COPY requirements.lock" in text


def test_dockerignore_keeps_the_context_small_and_clean() -> None:
    entries = {ln.strip().rstrip("/") for ln in
               (REPO_ROOT / ".dockerignore").read_text().splitlines()
               if ln.strip() and not ln.startswith("#")}
    for needed in (".venv", ".git", "**/__pycache__", ".pytest_cache", ".mypy_cache",
                   ".ruff_cache", "*.db", "*.db-wal", ".env"):
        assert needed in entries, needed
    for kept in ("requirements.lock", "service", "migrations", "alembic.ini", "README.md",
                 "pyproject.toml"):
        assert kept not in entries, kept


def test_compose_has_no_password_and_no_published_database_port() -> None:
    text = (REPO_ROOT / "docker-compose.yml").read_text()
    compose = yaml.safe_load(text)
    db, api = compose["services"]["db"], compose["services"]["api"]
    assert "ports" not in db, "PostgreSQL must stay on the compose network"
    db_env = db["environment"]
    assert "POSTGRES_PASSWORD" not in db_env
    assert db_env["POSTGRES_PASSWORD_FILE"] == "/run/secrets/postgres_password"
    assert "postgres_password" in db["secrets"]
    assert compose["secrets"]["postgres_password"] == {"environment": "POSTGRES_PASSWORD"}
    url = api["environment"]["DATABASE_URL"]
    userinfo = url.split("://", 1)[1].split("@", 1)[0]
    assert ":" not in userinfo, "no password in DATABASE_URL"
    assert re.fullmatch(r"\$\{POSTGRES_PASSWORD:\?[^}]*\}", api["environment"]["PGPASSWORD"])
    # No literal password anywhere: every *PASSWORD* value is a reference.
    for service in compose["services"].values():
        for key, value in (service.get("environment") or {}).items():
            if "PASSWORD" in key and not key.endswith("_FILE"):
                assert str(value).startswith("${"), (key, value)


def test_lock_files_pin_every_dependency() -> None:
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    deps = _pyproject()
    for spec in deps["runtime"]:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in runtime and name in dev, name
        assert req.specifier.contains(runtime[name][0]), (spec, runtime[name])
    for spec in deps["dev"]:
        req = Requirement(spec)
        assert canonicalize_name(req.name) in dev, req.name
    for name, pin in runtime.items():
        got = dev.get(name)
        # the same version; the dev lock may need it on more platforms (no marker) when a
        # dev-only dependency does (tzdata: pandas, under skypilot in the validators extra)
        same = got == pin or (got is not None and got[0] == pin[0] and got[1] is None)
        assert same, f"{name}: {pin} in requirements.lock, {got} in dev"


def test_make_ci_and_the_image_install_from_the_locks() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    stamp_rule = makefile.split("$(STAMP):", 1)[1].split("\nrun:", 1)[0]
    assert "requirements-dev.lock" in stamp_rule.splitlines()[0], "reinstall when the lock moves"
    assert "-r requirements-dev.lock" in stamp_rule
    assert "--no-deps --no-build-isolation -e ." in stamp_rule and "'.[dev]'" not in stamp_rule
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert ".venv/.installed" in ci


def test_build_backend_is_pinned_in_both_locks_and_the_license_is_spdx() -> None:
    """setuptools reads `project.license` as an SPDX string (the table form is deprecated, and
    refused by setuptools releases from 2027-02-18); an uncapped backend would pick such a
    release up on its own. So the backend is pinned exactly, the same version is in both locks,
    and `make` and the image build with the locked one (no build isolation)."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert isinstance(project["license"], str), "use the SPDX string form: license = \"...\""
    assert canonicalize_license_expression(project["license"]) == project["license"]
    assert not any(c.startswith("License ::") for c in project.get("classifiers", [])), \
        "license classifiers are refused next to an SPDX license expression"
    (backend,) = [Requirement(r) for r in pyproject["build-system"]["requires"]]
    assert canonicalize_name(backend.name) == "setuptools"
    assert pyproject["build-system"]["build-backend"] == "setuptools.build_meta"
    (spec,) = backend.specifier
    assert spec.operator == "==", f"pin the build backend exactly, not {spec}"
    assert Version(spec.version) >= Version("77"), "77 is the first to read an SPDX license"
    for lock in ("requirements.lock", "requirements-dev.lock"):
        assert _pins(lock).get("setuptools") == (spec.version, None), lock
    makefile = (REPO_ROOT / "Makefile").read_text()
    lock_rule = makefile.split("\nlock:", 1)[1].split("\n\n", 1)[0]
    assert lock_rule.count("$(BUILD_REQUIRES) | $(UV) pip compile pyproject.toml - ") == 2
    dockerfile = re.sub(r"\\\n", " ", (REPO_ROOT / "Dockerfile").read_text())
    project_installs = [ln for ln in dockerfile.splitlines()
                        if "pip install" in ln and "requirements.lock" not in ln]
    assert project_installs and all("--no-build-isolation" in ln for ln in project_installs)


def test_this_environment_matches_the_lock() -> None:
    """`make test` runs on exactly the pinned versions (the venv is built from the dev lock)."""
    stale = []
    for name, (version, marker) in _pins("requirements-dev.lock").items():
        if marker and not Marker(marker).evaluate():
            continue
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            stale.append((name, version, installed))
    assert stale == [], f"run `make` to reinstall from requirements-dev.lock: {stale}"


def test_installed_copies_find_their_migrations(tmp_path: Path) -> None:
    """The image installs the package (not editable): migrate.py then reads alembic.ini and
    migrations/ from the working directory, where the Dockerfile copies them."""
    final = "\n".join(_final_stage((REPO_ROOT / "Dockerfile").read_text()))
    assert "WORKDIR /app" in final
    assert "COPY alembic.ini" in final and "COPY migrations ./migrations" in final
    site, app = tmp_path / "site-packages", tmp_path / "app"
    shutil.copytree(REPO_ROOT / "service", site / "service",
                    ignore=shutil.ignore_patterns("__pycache__"))
    app.mkdir()
    shutil.copy(REPO_ROOT / "alembic.ini", app)
    shutil.copytree(REPO_ROOT / "migrations", app / "migrations",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("from service.core.migrate import ROOT, upgrade; import service; "
            "print(ROOT, service.__file__); upgrade('sqlite:///installed.db')")
    out = subprocess.run([sys.executable, "-c", code], cwd=app, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(site)}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    root, module = out.stdout.split()
    assert Path(root) == app and Path(module).is_relative_to(site)
    assert (app / "installed.db").stat().st_size > 0
