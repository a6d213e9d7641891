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


def test_recommend_takes_exactly_the_api_body(tmp_path: Path) -> None:
    """The body POST /v1/recommendations accepts (with `limit`) is what the CLI accepts, and
    both rank the same GPUs, counts and offers on the same database."""
    from fastapi.testclient import TestClient

    from service.app.factory import create_app
    from service.core.config import Settings
    from service.workloads.examples import submission_body

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    for name in ("llm-serving", "too-big", "fp64-simulation"):
        body = submission_body(name, limit=4)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(body))
        cli = json.loads(_cli(url, "recommend", str(path), "--format", "json").stdout)
        with TestClient(create_app(Settings(database_url=url))) as client:
            api = client.post("/v1/recommendations", json=body)
        assert api.status_code == 200, api.text

        def picks(result: dict) -> list[tuple]:  # type: ignore[type-arg]
            return [(c["gpu"]["slug"], c["gpu_count"], (c["quote"] or {}).get("id"))
                    for c in result["recommendations"]]

        assert 0 < len(picks(cli)) <= 4  # at most the limit the body asks for
        assert picks(cli) == picks(api.json())
        assert [r["gpu"]["slug"] for r in cli["rejected"]] == [
            r["gpu"]["slug"] for r in api.json()["rejected"]]
    # --limit still overrides the body's limit; a bad limit names the field.
    assert len(json.loads(_cli(url, "recommend", str(path), "--limit", "2", "--format",
                               "json").stdout)["recommendations"]) == 2
    path.write_text(json.dumps({**body, "limit": 0}))
    run = _cli(url, "recommend", str(path), check=False)
    assert run.returncode == 2 and "limit" in run.stderr


def test_serve_prints_the_url_it_listens_on(tmp_path: Path) -> None:
    import os
    import time

    import httpx

    from tests.hardening.live import free_port, stop

    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "--database-url",
             f"sqlite:///{tmp_path / 'serve.db'}", "serve", "--port", str(port)],
            cwd=REPO_ROOT, stdout=fh, stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "PORT"})
    try:
        deadline = time.monotonic() + 60
        while "serving on" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        line = next(ln for ln in log.read_text().splitlines() if "serving on" in ln)
        url = line.split("serving on ", 1)[1].split()[0]
        assert url == f"http://127.0.0.1:{port}/"
        while time.monotonic() < deadline:
            try:
                page = httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert page.status_code == 200 and "/ui" in page.text and "/docs" in page.text
    finally:
        stop(proc)


def test_recommend_counts_the_rejections_it_does_not_list_and_survives_a_closed_pipe(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    workload = tmp_path / "big.json"
    workload.write_text(json.dumps({
        "kind": "inference", "model": {"preset": "llama-3.1-405b"}, "precision": "bf16",
        "inference": {"prompt_tokens": 2048, "output_tokens": 512},
        "constraints": {"max_gpus": 8}, "limit": 3,  # a >64 KB answer: more than a pipe holds
    }))
    out = json.loads(_cli(url, "recommend", str(workload), "--format", "json").stdout)
    rejected = len(out["rejected"])
    assert rejected > 15
    table = _cli(url, "recommend", str(workload)).stdout
    assert f"ruled out ({rejected}):" in table
    assert f"... and {rejected - 15} more (--format json lists every one)" in table
    # `gpu-advisor recommend ... | head -1`: the reader closes the pipe after one line
    proc = subprocess.Popen([sys.executable, "-m", "service.cli", "--database-url", url,
                             "recommend", str(workload), "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err
