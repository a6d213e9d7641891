"""Child process of :func:`validators.validate_skypilot`: reads [(yaml, serving), ...] as JSON
on stdin, prints a JSON list of error texts (null = valid) as its last line."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import yaml

FULL_CLOUDS = ("aws", "lambda")
LOCATION = ("cloud", "region", "zone", "instance_type")
SKY_DATA = Path(__file__).resolve().parents[1] / "data" / "skypilot"


def _catalog_rows() -> dict[tuple[str, str], set[str]]:
    """(cloud, instance type) -> the catalog's 'Name:count' accelerators for it."""
    rows: dict[tuple[str, str], set[str]] = {}
    for cloud, name in (("aws", "aws_vms_gpu.csv"), ("lambda", "lambda_vms.csv")):
        with (SKY_DATA / name).open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if r["AcceleratorName"]:
                    count = int(float(r["AcceleratorCount"]))
                    rows.setdefault((cloud, r["InstanceType"]), set()).add(
                        f"{r['AcceleratorName']}:{count}")
    return rows


def check(text: str, serving: bool, rows: dict[tuple[str, str], set[str]]) -> None:
    import sky
    import sky.serve
    from sky.utils import common_utils, schemas

    config: dict[str, Any] = yaml.safe_load(text)
    common_utils.validate_schema(config, schemas.get_task_schema(), "Invalid task YAML: ")
    res = config["resources"]
    cloud = res.get("cloud")
    if cloud in FULL_CLOUDS:
        key = (cloud, res["instance_type"])
        assert key in rows, f"{key} is not in SkyPilot's {cloud} catalog"
        assert res["accelerators"] in rows[key], (res["accelerators"], rows[key])
    else:
        for k in LOCATION:
            res.pop(k, None)
    task = sky.Task.from_yaml_config(config)
    if serving:
        sky.serve.validate_service_task(task, pool=False)
    else:
        assert task.service is None, "a non-serving task has a service block"


def main() -> None:
    tasks = json.loads(sys.stdin.read())
    rows = _catalog_rows()
    out: list[str | None] = []
    for text, serving in tasks:
        try:
            check(text, serving, rows)
            out.append(None)
        except Exception as exc:  # noqa: BLE001 - every failure is reported per task
            out.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
