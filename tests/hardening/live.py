"""A live `gpu-advisor serve` in a subprocess, and requests released together from threads.

In-process ASGI tests run one request at a time; races (SQLite's write lock, conditional
UPDATEs, idempotent inserts) only show over real HTTP with real threads.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from tests.conftest import REPO_ROOT

# Listening ports come from below Linux's ephemeral range (32768-60999 by default): a port the
# kernel hands out for bind(0) is also one it hands out to outgoing connections (the test
# clients', PostgreSQL's), so one of them could take it between the check and the server's bind.
LISTEN_PORTS = range(20_000, 32_000)
START_ATTEMPTS = 4


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now, outside the ephemeral range."""
    for _ in range(200):
        port = random.choice(LISTEN_PORTS)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


def serve(url: str, *, admin_key: str, extra_args: Sequence[str] = (),
          env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Start `gpu-advisor serve` on ``url``; return (process, base URL) once /readyz is 200.

    A server that lost its port to another process before binding it is started again on
    another port (tests and benchmarks may run beside each other)."""
    for attempt in range(START_ATTEMPTS):
        try:
            return _serve_once(url, admin_key=admin_key, extra_args=extra_args, env=env)
        except PortTaken:
            if attempt == START_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


class PortTaken(RuntimeError):
    """The server exited because its port was taken between the choice and the bind."""


def _serve_once(url: str, *, admin_key: str, extra_args: Sequence[str],
                env: dict[str, str] | None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    environ = {**os.environ, "GPU_ADVISOR_BOOTSTRAP_ADMIN_KEY": admin_key, "DATABASE_URL": url,
               **(env or {})}
    # The server logs every request to stderr: a file, not a pipe nobody reads (a full pipe
    # blocks the server mid-request).
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1",
         "--port", str(port), *extra_args],
        cwd=REPO_ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=log,
    )
    proc.server_log = log  # type: ignore[attr-defined]  # read by server_errors()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            text = log.read().decode(errors="replace")
            if "address already in use" in text:
                raise PortTaken(text[-2000:])
            raise RuntimeError(f"server exited: {text[-2000:]}")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    stop(proc)
    raise RuntimeError("server did not become ready in 60 s")


def server_errors(proc: subprocess.Popen[bytes], limit: int = 20_000) -> str:
    """The server's error log lines (tracebacks included) so far, for a failure report."""
    log = getattr(proc, "server_log", None)
    if log is None:
        return ""
    log.seek(0)
    lines = log.read().decode(errors="replace").splitlines()
    keep = [ln for ln in lines if '"level": "error"' in ln or "Traceback" in ln
            or ln.startswith(("  ", "sqlalchemy", "ValueError", "TypeError", "KeyError"))]
    return "\n".join(keep)[-limit:]


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def concurrently(n: int, fn: Callable[[int], Any], *, join_s: float = 120.0) -> list[Any]:
    """Run fn(0..n-1) in n threads released together by a barrier; each thread is waited for
    up to ``join_s`` (one still running leaves its result None)."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = fn(i)
        except Exception as exc:  # surfaced by the caller's assertions
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=join_s)
    return results
