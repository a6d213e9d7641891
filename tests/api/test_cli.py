"""The `gpu-advisor` command end to end on a temporary SQLite database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT


def _cli(url: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "service.cli", "--database-url", url, *args],
                          capture_output=True, text=True, check=check, cwd=REPO_ROOT)


def test_migrate_seed_and_recommend(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert "migrated" in _cli(url, "migrate").stdout
    assert "seeded 33 GPUs" in _cli(url, "seed").stdout
    assert "skipped" in _cli(url, "seed").stdout  # a non-empty catalog is left alone
    workload = tmp_path / "fp64.json"
    workload.write_text(json.dumps({
        "name": "cfd", "kind": "compute", "precision": "fp64",
        "compute": {"total_tflop": 5e6, "total_gb_moved": 2e6, "memory_gb": 60},
        "constraints": {"max_gpus": 8},
    }))
    out = json.loads(_cli(url, "recommend", str(workload), "--objective", "cost",
                          "--format", "json").stdout)
    assert out["objective"] == "cost" and out["recommendations"]
    table = _cli(url, "recommend", str(workload), "--limit", "3").stdout
    assert "objective: balanced" in table and "why #1:" in table
    assert len([ln for ln in table.splitlines() if ln[:2].strip().isdigit()]) == 3


def test_recommend_reports_bad_input_by_field(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    workload = tmp_path / "bad.json"
    workload.write_text(json.dumps({"kind": "inference", "model": {"preset": "gpt-9"},
                                    "inference": {"prompt_tokens": 1, "output_tokens": 1}}))
    run = _cli(url, "recommend", str(workload), check=False)
    assert run.returncode == 2 and "model.preset" in run.stderr
