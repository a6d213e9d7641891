"""Slow, huge and many clients against a live `gpu-advisor serve --workers 2`.

1. A slow upload holds no admission slot (the body is received before a slot is taken), and an
   upload refused while others hold the slots gets 408/413/503 problem+json, never a 500.
2. A 422 is at most 64 KB whatever the input (50 errors listed, list fields bounded, at most
   256 keys per object), and the worker's memory stays bounded.
3. A write to a route that needs a key is refused (401) before its body is read; the bodies a
   worker holds at once are bounded (503 + Retry-After past GPU_ADVISOR_MAX_BUFFERED_BODY_BYTES).
4. List reads are admitted: a flood of GET /v1/quotes gets 200 or an admission 503, and a
   bystander's GET of one GPU is answered throughout.
5. `If-Match: *` on 20 concurrent PATCHes: all 200, on SQLite and PostgreSQL alike.

Plus the lower items: the rest of a body answered early (413) is not read as the next head (no
unsolicited 431), and `serve` against a black-holed database exits instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Engine

from tests.conftest import REPO_ROOT
from tests.hardening.conftest import new_key
from tests.hardening.live import concurrently, free_port, serve, server_errors, stop

pytestmark = pytest.mark.slow

ADMIN_KEY = "gpa_hostile0001_" + "c" * 43
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}
LIGHT: dict[str, Any] = {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
                         "inference": {"prompt_tokens": 512, "output_tokens": 128}}
HEAVY: dict[str, Any] = {  # ~1 s of engine work per recommendation
    "kind": "training", "model": {"preset": "llama-2-70b"}, "precision": "bf16",
    "training": {"batch_size": 1024, "seq_len": 4096, "tokens": 2e11,
                 "activation_checkpointing": True, "sharding": "auto"},
    "limit": 100,
}
MAX_PROBLEM_BYTES = 64 * 1024
SLUG = "nvidia-h100-sxm5-80gb"


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def _head(path: str, length: int, extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n{extra}\r\n").encode()


def _read_response(sock: socket.socket, timeout_s: float) -> bytes:
    """One response's head and body (by Content-Length), or what came before the timeout."""
    sock.settimeout(timeout_s)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            part = sock.recv(65536)
            if not part:
                return data
            data += part
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            part = sock.recv(65536)
            if not part:
                break
            body += part
        return head + b"\r\n\r\n" + body
    except (TimeoutError, OSError):
        return data


def _status(raw: bytes) -> int | None:
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.1 ") else None


def _worker_rss_mb(pid: int) -> float:
    """VmRSS summed over the server's worker processes (children of uvicorn's supervisor)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) != pid:
                continue
            if b"resource_tracker" in (entry / "cmdline").read_bytes():
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1024


@pytest.fixture(scope="module")
def tight(fresh_url: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """One slot and two queued per worker; short queue and body timeouts."""
    proc, base = serve(fresh_url, admin_key=ADMIN_KEY, extra_args=["--workers", "2"], env={
        "GPU_ADVISOR_MAX_CONCURRENT_REQUESTS": "1", "GPU_ADVISOR_MAX_QUEUED_REQUESTS": "2",
        "GPU_ADVISOR_QUEUE_TIMEOUT_S": "0.5", "GPU_ADVISOR_BODY_READ_TIMEOUT_S": "3",
        "GPU_ADVISOR_MAX_BUFFERED_BODY_BYTES": "3000000",
    })
    yield base, proc
    stop(proc)


@pytest.fixture(scope="module")
def default(fresh_url: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The defaults a deployment runs with."""
    proc, base = serve(fresh_url, admin_key=ADMIN_KEY, extra_args=["--workers", "2"])
    yield base, proc
    stop(proc)


# 1. Slow uploads.

def test_slow_uploads_hold_no_admission_slot(tight: tuple[str, Any]) -> None:
    base, proc = tight
    port = _port(base)
    # Eight uploads trickling a body (a byte every 0.5 s, within the 3 s body timeout): before,
    # each held its worker's only slot until the body timeout and every other answer was 503.
    stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
    done = threading.Event()

    def trickle() -> None:
        while not done.is_set():
            for s in stalled:
                try:
                    s.sendall(b" ")
                except OSError:
                    pass
            done.wait(0.5)

    for s in stalled:
        s.sendall(_head("/v1/recommendations", 1000))
    trickler = threading.Thread(target=trickle)
    trickler.start()
    try:
        time.sleep(0.5)
        with httpx.Client(base_url=base, timeout=30) as client:
            codes = [client.post("/v1/recommendations", json=LIGHT).status_code
                     for _ in range(10)]
    finally:
        done.set()
        trickler.join()
        for s in stalled:
            s.close()
    assert codes == [200] * 10, codes


def _saturate(base: str, n: int) -> threading.Thread:
    """``n`` heavy recommendations in the background: both workers' single slots are busy."""
    def run() -> None:
        concurrently(n, lambda _: httpx.post(f"{base}/v1/recommendations", json=HEAVY,
                                             timeout=120))
    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)
    return thread


def test_uploads_refused_while_slots_are_busy_are_problems_not_500(
        tight: tuple[str, Any]) -> None:
    base, proc = tight
    heavy = _saturate(base, 8)
    try:
        # Chunked bodies over the 5 MB limit (was a 500 when refused from the queue).
        chunk = b" " * (1 << 20)
        oversized = concurrently(6, lambda _: httpx.post(
            f"{base}/v1/recommendations", content=iter([chunk] * 6), timeout=60,
            headers={"content-type": "application/json"}))
        # Bodies that stop arriving: 408 after the body timeout (was a 500 when the timeout
        # struck while the admission middleware drained the body of a refused request).
        port = _port(base)

        def stall(_: int) -> bytes:
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(_head("/v1/recommendations", 1000) + b'{"kind": ')
                return _read_response(s, 20)

        stalled = concurrently(6, stall)
    finally:
        heavy.join(timeout=120)
    for r in oversized:
        assert isinstance(r, httpx.Response), r
        # 413 at the 5 MB limit, or 503 at this server's 3 MB body budget: never a 500.
        assert r.status_code in (413, 503), (r.status_code, r.text[:300], server_errors(proc))
        assert r.headers["content-type"].startswith("application/problem+json")
    for raw in stalled:
        assert _status(raw) == 408, (raw[:300], server_errors(proc))
        assert b"application/problem+json" in raw


# 2. The validation-error bomb.

def test_a_422_is_small_whatever_the_input(default: tuple[str, Any]) -> None:
    base, proc = default
    before = _worker_rss_mb(proc.pid)
    peak = before
    bombs = {
        "body.constraints.pricing": {**LIGHT, "constraints": {"pricing": ["x"] * 990_000}},
        "body.constraints.form_factors": {
            **LIGHT, "constraints": {"form_factors": [1] * 900_000}},
        "body": {**LIGHT, **{f"k{i}": 1 for i in range(400_000)}},
    }
    answers: dict[str, httpx.Response] = {}
    for field, body in bombs.items():
        data = json.dumps(body, separators=(",", ":")).encode()
        assert len(data) < 5_000_000  # under the body limit: validation has to refuse it
        sent = threading.Thread(target=lambda d=data, f=field: answers.__setitem__(
            f, httpx.post(f"{base}/v1/recommendations", content=d, timeout=120,
                          headers={"content-type": "application/json"})))
        sent.start()
        while sent.is_alive():
            peak = max(peak, _worker_rss_mb(proc.pid))
            time.sleep(0.02)
    for field, r in answers.items():
        assert r.status_code == 422, (field, r.status_code, r.text[:300])
        assert len(r.content) <= MAX_PROBLEM_BYTES, (field, len(r.content))
        assert r.json()["errors"][0]["field"].startswith(field), (field, r.text[:500])
    # Was +2.3 GB for the first bomb alone (one error object per list item).
    assert peak - before < 500, (before, peak)
    # Many distinct errors: 250 unknown keys are 250 errors, 50 listed, the rest counted.
    r = httpx.post(f"{base}/v1/recommendations", timeout=60,
                   json={**LIGHT, **{f"unknown_{i}": 1 for i in range(250)}})
    assert r.status_code == 422
    problem = r.json()
    assert len(problem["errors"]) == 50, len(problem["errors"])
    assert "250 invalid fields" in problem["detail"] and "200 more" in problem["detail"]


# 3. Bodies before authentication; the body budget.

@pytest.mark.parametrize("auth", ["", "Authorization: Bearer gpa_nosuchkey_xyz\r\n"])
def test_writes_needing_a_key_are_refused_before_the_body(default: tuple[str, Any],
                                                          auth: str) -> None:
    """The head of a 4.9 MB POST /v1/gpus without a valid key gets its 401 at once: the server
    does not wait for (and buffer, and parse) the body first."""
    base, _ = default
    with socket.create_connection(("127.0.0.1", _port(base))) as s:
        s.sendall(_head("/v1/gpus", 4_900_000, auth))
        answer = _read_response(s, 10)  # the body is never sent
    assert _status(answer) == 401, answer[:300]
    assert b"application/problem+json" in answer and b"www-authenticate: Bearer" in answer


def test_a_key_without_the_role_is_refused_before_the_body(
    default: tuple[str, Any], fresh_engine: Engine,
) -> None:
    """A reader's key on an admin write: 403 from the head alone, the 4.9 MB body unsent."""
    base, _ = default
    reader = new_key(fresh_engine, role="reader", name="prebody-reader")
    with socket.create_connection(("127.0.0.1", _port(base))) as s:
        s.sendall(_head("/v1/gpus", 4_900_000, f"Authorization: Bearer {reader}\r\n"))
        answer = _read_response(s, 10)  # the body is never sent
    assert _status(answer) == 403, answer[:300]
    assert b"application/problem+json" in answer and b"role 'reader'" in answer


def test_bodies_held_per_worker_are_bounded(tight: tuple[str, Any]) -> None:
    """GPU_ADVISOR_MAX_BUFFERED_BODY_BYTES=3000000 here: with 1.2 MB received of each of four
    2 MB bodies, a further 2 MB body is refused at once (503 + Retry-After) by a worker that
    holds them."""
    base, proc = tight
    port = _port(base)
    held = []
    try:
        for _ in range(4):  # at least one per worker whatever the kernel's spread
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(_head("/v1/recommendations", 2_000_000) + b" " * 1_200_000)
            held.append(s)
        time.sleep(0.2)

        def probe(_: int) -> bytes:
            # Within the held bodies' 3 s body timeout (which would free the budget).
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(_head("/v1/recommendations", 2_000_000))
                return _read_response(s, 1)

        answers = concurrently(8, probe)
    finally:
        for s in held:
            s.close()
    refused = [a for a in answers if _status(a) == 503]
    for answer in refused:
        assert b"retry-after:" in answer.lower(), answer[:300]
        assert b"GPU_ADVISOR_MAX_BUFFERED_BODY_BYTES" in answer
    # The others are still waiting for their bodies: no answer yet.
    assert all(a == b"" for a in answers if _status(a) != 503), answers
    assert refused, (answers, server_errors(proc))


def test_announced_bodies_that_never_come_hold_no_budget(tight: tuple[str, Any]) -> None:
    """Eighty clients announce 100 kB bodies (8 MB against a 3 MB budget per worker: enough to
    fill both workers' budgets) and send nothing: an honest recommendation beside them is still
    answered, not refused for a budget the idle clients would otherwise hold until their body
    timeout."""
    base, proc = tight
    port = _port(base)
    idle = []
    try:
        for _ in range(80):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(_head("/v1/recommendations", 100_000))
            idle.append(s)
        time.sleep(0.3)
        answers = [httpx.post(f"{base}/v1/recommendations", json=LIGHT, timeout=30)
                   for _ in range(3)]
    finally:
        for s in idle:
            s.close()
    assert [a.status_code for a in answers] == [200] * 3, (
        [a.text[:200] for a in answers], server_errors(proc))


# 4. A read flood.

async def _flood(base: str, seconds: float, clients: int) -> tuple[Counter[str], list[Any]]:
    codes: Counter[str] = Counter()
    bad: list[Any] = []
    stop_at = time.monotonic() + seconds
    # The client lets an idle connection go after 1 s, well before the server's 5 s keep-alive
    # timeout: with httpx's default (5 s, the server's own figure) a connection idle in the pool
    # could be picked just as the server closed it (3 of 291 requests on a loaded CI machine).
    limits = httpx.Limits(max_connections=clients + 4, keepalive_expiry=1.0)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        async def one() -> None:
            while time.monotonic() < stop_at:
                try:
                    r = await client.get("/v1/quotes", params={"limit": 500})
                except httpx.TransportError as exc:
                    # Any left (a connection reset under load): counted apart, at most 1%.
                    codes[type(exc).__name__] += 1
                    continue
                codes[str(r.status_code)] += 1
                if r.status_code == 503:
                    if ("GPU_ADVISOR_MAX_CONCURRENT_READS" not in r.text
                            or not r.headers.get("retry-after")):
                        bad.append(r.text[:300])
                    await asyncio.sleep(0.05)
                elif r.status_code != 200:
                    bad.append((r.status_code, r.text[:300]))
        await asyncio.gather(*(one() for _ in range(clients)))
    return codes, bad


def test_a_read_flood_is_admitted_and_a_bystander_is_served(default: tuple[str, Any]) -> None:
    base, proc = default
    done = threading.Event()
    bystander: list[int] = []

    def watch() -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            while not done.is_set():
                bystander.append(client.get(f"/v1/gpus/{SLUG}").status_code)
                time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        codes, bad = asyncio.run(_flood(base, 6, 100))
    finally:
        done.set()
        watcher.join(timeout=120)
    # Was: 503 "no database connection became free" for the flood and the bystander alike,
    # answers after 20 s; now only admission's 503 (Retry-After), the pool never runs out.
    answered = codes["200"] + codes["503"]
    assert codes["200"] > 0 and sum(codes.values()) - answered <= answered // 100, codes
    assert not bad, (bad[:3], server_errors(proc))
    assert bystander and set(bystander) == {200}, Counter(bystander)


# 5. If-Match: *.

@pytest.mark.parametrize("kind", ["gpu", "quote"])
def test_if_match_star_gives_the_same_answer_on_every_database(
        default: tuple[str, Any], kind: str) -> None:
    base, _ = default
    if kind == "gpu":
        url, change = f"{base}/v1/gpus/{SLUG}", lambda i: {"notes": f"star {i}"}
    else:
        quote = next(q for q in httpx.get(f"{base}/v1/quotes", params={"limit": 50}).json()[
            "data"] if q.get("price_usd_per_hour"))
        url = f"{base}/v1/quotes/{quote['id']}"
        price = quote["price_usd_per_hour"]

        def change(i: int) -> dict[str, Any]:
            return {"price_usd_per_hour": round(price + 0.01 * (i + 1), 4)}
    before = int(httpx.get(url).headers["etag"].strip('"'))
    answers = concurrently(20, lambda i: httpx.patch(
        url, json=change(i), timeout=60, headers={**AUTH, "If-Match": "*"}))
    codes = Counter(a.status_code if isinstance(a, httpx.Response) else repr(a) for a in answers)
    assert codes == {200: 20}, codes  # PostgreSQL gave 18-19 x 412, SQLite 20 x 200
    after = int(httpx.get(url).headers["etag"].strip('"'))
    assert after == before + 20


# Lower items.

def test_the_rest_of_a_refused_body_is_not_read_as_a_head(default: tuple[str, Any]) -> None:
    """A 6 MB body refused by its Content-Length (413) then sent anyway: one answer, the 413;
    the body is dropped, not taken for a 6 MB request head (which got an unsolicited 431)."""
    base, _ = default
    body = b" " * 6_000_000
    with socket.create_connection(("127.0.0.1", _port(base)), timeout=30) as s:
        s.sendall(_head("/v1/gpus", len(body), "Authorization: Bearer " + ADMIN_KEY + "\r\n"))
        first = _read_response(s, 10)
        try:
            s.sendall(body)
        except OSError:
            pass
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        second = _read_response(s, 10)
    assert _status(first) == 413, first[:300]
    assert _status(second) == 200, second[:300]


def test_serve_against_a_black_holed_database_exits() -> None:
    """A database host that accepts TCP connections and never answers: `serve` fails after its
    connect timeout instead of waiting for the start-up lock for minutes."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(hole.accept()[0])  # and never answered
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    url = f"postgresql+psycopg://u:p@127.0.0.1:{hole.getsockname()[1]}/db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "--database-url", url, "serve", "--port",
         str(free_port())], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "GPU_ADVISOR_DB_CONNECT_TIMEOUT_S": "2"})
    try:
        _, err = proc.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("serve still waiting for a black-holed database after 45 s")
    finally:
        hole.close()
        for conn in accepted:
            conn.close()
    assert proc.returncode != 0
    assert b"database" in err.lower(), err[-500:]
