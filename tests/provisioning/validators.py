"""The real validators of what the engine emits: SkyPilot (task schema, ``sky.Task``,
``sky.serve.validate_service_task``) and kubernetes-validate (the Kubernetes OpenAPI schemas).

SkyPilot runs in a child process with its own HOME: it keeps state under ``~/.sky`` and
reads a cloud's price catalog there when a task names a cloud. The two real SkyPilot catalogs
in tests/data/skypilot (AWS, Lambda) are placed there fresh, so tasks on those clouds are
checked in full (cloud, region, instance type, and the accelerator name and count against
the catalog's row) without any download; a task on another cloud is checked against the
task schema in full, and as a ``sky.Task`` without its location fields (those need that
cloud's catalog, which the tests do not have and may not download).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import kubernetes_validate

K8S_VERSION = "1.30"
"""Kubernetes API version the manifests are validated against (a current GA release)."""
SKY_DATA = Path(__file__).resolve().parents[1] / "data" / "skypilot"
CATALOGS = {"aws": SKY_DATA / "aws_vms_gpu.csv", "lambda": SKY_DATA / "lambda_vms.csv"}


def validate_kubernetes(manifests: list[dict[str, Any]]) -> None:
    """Raises kubernetes_validate.ValidationError for any manifest that is not valid."""
    assert manifests, "no manifests"
    for m in manifests:
        for key in ("apiVersion", "kind", "metadata", "spec"):
            assert key in m, (key, m.get("kind"))
        kubernetes_validate.validate(m, K8S_VERSION, strict=True)


def validate_skypilot(tasks: list[tuple[str, bool]]) -> list[str | None]:
    """Each (YAML, serving) checked by SkyPilot; the error text per task, None when valid."""
    with tempfile.TemporaryDirectory() as home:
        version_dir = Path(home) / ".sky" / "catalogs" / _catalog_version()
        for cloud, path in CATALOGS.items():
            (version_dir / cloud).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, version_dir / cloud / "vms.csv")
        env = {**os.environ, "HOME": home}
        proc = subprocess.run(
            [sys.executable, "-m", "tests.provisioning.sky_check"],
            input=json.dumps(tasks), capture_output=True, text=True, env=env, timeout=300,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        results: list[str | None] = json.loads(proc.stdout.strip().splitlines()[-1])
        return results


def _catalog_version() -> str:
    from sky.catalog import constants

    return str(constants.CATALOG_SCHEMA_VERSION)
