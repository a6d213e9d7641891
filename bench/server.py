"""Start and stop a live server for the benchmarks: `gpu-advisor serve` (or another module run
the same way, e.g. bench/floor_app.py) on a free loopback port, ready once /readyz answers 200.

One implementation for bench_http, bench_overload and bench_soak; the port choice is the test
suite's (tests/hardening/live.py: the test suite does not import the benchmarks, the benchmarks
use its helpers).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 60.0


def free_port() -> int:
    """A listening port outside the ephemeral range (see tests.hardening.live.free_port)."""
    from tests.hardening.live import free_port as pick

    return pick()


def serve_args(db_url: str, port: int, workers: int = 1) -> list[str]:
    """``gpu-advisor serve`` on ``db_url`` and ``port`` (one worker unless told)."""
    args = [sys.executable, "-m", "service.cli", "--database-url", db_url, "serve",
            "--host", "127.0.0.1", "--port", str(port)]
    return args + (["--workers", str(workers)] if workers > 1 else [])


def start(args_for_port: Sequence[str] | None = None, *, db_url: str = "", workers: int = 1,
          root: Path = ROOT, env: dict[str, str] | None = None,
          log_name: str | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Start a server; return (process, base URL) once /readyz is 200.

    ``args_for_port``: the command, with ``{port}`` where the port goes; default
    :func:`serve_args` of ``db_url`` and ``workers``. ``log_name``: keep its stderr in that file
    of the temp directory (default: discarded). Raises if it exits or is not ready in time."""
    port = free_port()
    args = ([a.replace("{port}", str(port)) for a in args_for_port] if args_for_port
            else serve_args(db_url, port, workers))
    environ = {**os.environ, "PYTHONPATH": str(root), **(env or {})}
    stderr = (open(Path(tempfile.gettempdir()) / log_name, "wb")  # noqa: SIM115
              if log_name else subprocess.DEVNULL)
    proc = subprocess.Popen(list(args), cwd=root, env=environ, stdout=subprocess.DEVNULL,
                            stderr=stderr)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited during start-up: {' '.join(args)}")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server did not become ready in {READY_TIMEOUT_S:g} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
