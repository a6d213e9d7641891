"""Five hostile-client attacks (and lesser cases), each measured against a live `gpu-advisor serve`.

Short and scaled down for a shared 2-CPU machine; the figures are for before/after comparison,
not absolute. `python -m bench.measure_hostile [ROOT] [CASE ...]` (ROOT: the source tree to serve,
default this one; CASE: slow_upload, bomb, prebody, read_flood, if_match, startup, blackhole,
after_413; default all that need no PostgreSQL, plus those that do when TEST_DATABASE_URL is set).
Prints one JSON object per case.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench import server
from bench.bench_soak import rss_sample
from tests.hardening.live import concurrently

ROOT = Path(__file__).resolve().parent.parent
ADMIN_KEY = "gpa_hostile0001_" + "h" * 43
LIGHT = {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
         "inference": {"prompt_tokens": 512, "output_tokens": 128}}
PG_URL = os.environ.get("TEST_DATABASE_URL")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1) if values \
        else float("nan")


def _start(root: Path, env: dict[str, str], workers: int = 1,
           db_url: str | None = None) -> tuple[subprocess.Popen[bytes], str]:
    db_url = db_url or f"sqlite:///{tempfile.mkdtemp(prefix='gpa-hostile-')}/h.db"
    return server.start(db_url=db_url, workers=workers, root=root,
                        env={"GPU_ADVISOR_BOOTSTRAP_ADMIN_KEY": ADMIN_KEY, **env},
                        log_name=f"gpa-hostile-{os.getpid()}.log")


def _rss(proc: subprocess.Popen[bytes]) -> float:
    return float(rss_sample(proc.pid, 0.0)["workers_rss_mb"])


class RssPeak:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc, self.peak, self.before = proc, 0.0, _rss(proc)
        self._done = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, _rss(self.proc))
            time.sleep(0.05)

    def stop(self) -> dict[str, float]:
        self._done.set()
        self._t.join()
        return {"rss_before_mb": self.before, "rss_peak_mb": round(self.peak, 1),
                "rss_after_mb": _rss(self.proc)}


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def _raw(port: int, data: bytes, *, read_s: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=read_s) as s:
        try:
            s.sendall(data)
        except OSError:
            pass
        out = b""
        try:
            while part := s.recv(65536):
                out += part
        except OSError:
            pass
        return out


def _slow_uploader(port: int, path: str, stop: threading.Event, every_s: float) -> None:
    """One byte of a 1,000-byte body every ``every_s`` until ``stop`` (or the server cuts)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Content-Length: 1000\r\n\r\n".encode())
        while not stop.is_set():
            try:
                s.sendall(b" ")
            except OSError:
                return
            stop.wait(every_s)


def _codes(responses: list[Any]) -> dict[str, int]:
    return dict(Counter(str(r.status_code) if isinstance(r, httpx.Response) else
                        type(r).__name__ for r in responses))


# 1. Slow uploads hold admission slots; refused uploads get 500.

async def _steady(base: str, seconds: float, body: dict[str, Any]) -> dict[str, int]:
    codes: Counter[str] = Counter()
    stop_at = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        async def one() -> None:
            while time.monotonic() < stop_at:
                r = await client.post("/v1/recommendations", json=body)
                codes[str(r.status_code)] += 1
                if r.status_code == 503:
                    await asyncio.sleep(0.05)
        await asyncio.gather(*(one() for _ in range(4)))
    return dict(codes)


def slow_upload(root: Path) -> dict[str, Any]:
    env = {"GPU_ADVISOR_BODY_READ_TIMEOUT_S": "30", "GPU_ADVISOR_QUEUE_TIMEOUT_S": "1"}
    proc, base = _start(root, env)
    port = _port(base)
    stop = threading.Event()
    try:
        baseline = asyncio.run(_steady(base, 5, LIGHT))
        slow = [threading.Thread(target=_slow_uploader, args=(port, "/v1/recommendations",
                                                               stop, 5), daemon=True)
                for _ in range(2)]
        for t in slow:
            t.start()
        time.sleep(1)
        with_slow = asyncio.run(_steady(base, 5, LIGHT))
        # Uploads refused while queued: chunked bodies over the 5 MB limit, and bodies that
        # arrive after the queue timeout (slots held by the slow uploads).
        chunk = b" " * (1 << 20)

        def chunked(_: int) -> httpx.Response:
            return httpx.post(f"{base}/v1/recommendations", content=iter([chunk] * 6),
                              headers={"content-type": "application/json"}, timeout=60)

        def late(_: int) -> httpx.Response:
            def gen() -> Any:
                time.sleep(1.5)
                yield json.dumps(LIGHT).encode()
            return httpx.post(f"{base}/v1/recommendations", content=gen(),
                              headers={"content-type": "application/json"}, timeout=60)

        big = _parallel(8, chunked)
        queued_late = _parallel(8, late)
    finally:
        stop.set()
        server.stop(proc)
    return {"recommendations_4_clients_5s": baseline,
            "with_2_slow_uploads": with_slow,
            "chunked_6mb_while_slots_held": _codes(big),
            "late_bodies_while_slots_held": _codes(queued_late)}


def _parallel(n: int, fn: Any) -> list[Any]:
    """``fn(0..n-1)`` in n threads released together (the test suite's helper), each waited
    for up to 180 s."""
    return concurrently(n, fn, join_s=180.0)


# 2. Validation-error bomb.

def bomb(root: Path) -> dict[str, Any]:
    proc, base = _start(root, {})
    out: dict[str, Any] = {}
    try:
        cases = {
            "pricing_x_200k": {**LIGHT, "constraints": {"pricing": ["x"] * 200_000}},
            "unknown_keys_100k": {**LIGHT, **{f"k{i}": 1 for i in range(100_000)}},
            "form_factors_200k": {**LIGHT, "constraints": {"form_factors": ["y" * 8] * 200_000}},
        }
        for name, body in cases.items():
            data = json.dumps(body).encode()
            peak = RssPeak(proc)
            start = time.monotonic()
            r = httpx.post(f"{base}/v1/recommendations", content=data,
                           headers={"content-type": "application/json"}, timeout=120)
            out[name] = {"request_bytes": len(data), "status": r.status_code,
                         "response_bytes": len(r.content),
                         "seconds": round(time.monotonic() - start, 2), **peak.stop()}
    finally:
        server.stop(proc)
    return out


# 3. Bodies buffered and parsed before auth; JSON parsed on the event loop.

def _healthz_during(base: str, stop: threading.Event) -> list[float]:
    out: list[float] = []
    with httpx.Client(base_url=base, timeout=60) as client:
        while not stop.is_set():
            start = time.perf_counter()
            client.get("/healthz")
            out.append((time.perf_counter() - start) * 1e3)
            time.sleep(0.05)
    return out


def prebody(root: Path) -> dict[str, Any]:
    proc, base = _start(root, {})
    try:
        body = b'{"slug": "' + b"a" * 4_900_000 + b'"}'
        peak = RssPeak(proc)
        start = time.monotonic()
        answers = _parallel(60, lambda _: httpx.post(
            f"{base}/v1/gpus", content=body, timeout=120,
            headers={"content-type": "application/json"}))
        anon = {"status": _codes(answers), "seconds": round(time.monotonic() - start, 1),
                **peak.stop()}
        keys = json.dumps({f"k{i}": 1 for i in range(200_000)}).encode()
        stop = threading.Event()
        samples: list[float] = []
        prober = threading.Thread(target=lambda: samples.extend(_healthz_during(base, stop)))
        prober.start()
        answers = _parallel(10, lambda _: httpx.post(
            f"{base}/v1/recommendations", content=keys, timeout=120,
            headers={"content-type": "application/json"}))
        stop.set()
        prober.join()
        parsed = {"request_bytes": len(keys), "status": _codes(answers),
                  "healthz_p50_ms": _pct(samples, 0.5), "healthz_max_ms": _pct(samples, 1.0)}
    finally:
        server.stop(proc)
    return {"anonymous_5mb_posts_to_gpus_x60": anon, "keys_200k_x10_recommendations": parsed}


# 4. A read flood exhausts the pool.

async def _flood(base: str, seconds: float, clients: int) -> dict[str, Any]:
    codes: Counter[str] = Counter()
    lat: list[float] = []
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients + 4)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        async def one() -> None:
            while time.monotonic() < stop_at:
                start = time.perf_counter()
                try:
                    r = await client.get("/v1/quotes", params={"limit": 500})
                    codes[str(r.status_code)] += 1
                except httpx.HTTPError as exc:
                    codes[type(exc).__name__] += 1
                    continue
                lat.append((time.perf_counter() - start) * 1e3)
                if r.status_code == 503:
                    await asyncio.sleep(0.05)
        await asyncio.gather(*(one() for _ in range(clients)))
    return {"status": dict(codes), "p50_ms": _pct(lat, 0.5), "p99_ms": _pct(lat, 0.99)}


def read_flood(root: Path) -> dict[str, Any]:
    proc, base = _start(root, {})
    try:
        stop = threading.Event()
        bystander: list[float] = []
        codes: Counter[int] = Counter()

        def watch() -> None:
            with httpx.Client(base_url=base, timeout=120) as client:
                while not stop.is_set():
                    start = time.perf_counter()
                    codes[client.get("/v1/gpus/nvidia-h100-sxm5-80gb").status_code] += 1
                    bystander.append((time.perf_counter() - start) * 1e3)
                    time.sleep(0.1)

        t = threading.Thread(target=watch)
        t.start()
        flood = asyncio.run(_flood(base, 10, 100))
        stop.set()
        t.join()
    finally:
        server.stop(proc)
    return {"clients": 100, "flood": flood, "bystander_status": dict(codes),
            "bystander_p50_ms": _pct(bystander, 0.5), "bystander_max_ms": _pct(bystander, 1.0)}


# 5. If-Match: * under 20 concurrent PATCHes.

def if_match(root: Path) -> dict[str, Any]:
    out = {}
    urls = {"sqlite": None}
    if PG_URL:
        urls["postgresql"] = _pg_database()
    for name, url in urls.items():
        proc, base = _start(root, {}, db_url=url)
        try:
            auth = {"Authorization": f"Bearer {ADMIN_KEY}", "If-Match": "*"}
            answers = _parallel(20, lambda i, b=base, h=auth: httpx.patch(
                f"{b}/v1/gpus/nvidia-h100-sxm5-80gb", json={"notes": f"n{i}"},
                headers=h, timeout=60))
            version = httpx.get(f"{base}/v1/gpus/nvidia-h100-sxm5-80gb").headers["etag"]
            out[name] = {"status": _codes(answers), "etag_after": version}
        finally:
            server.stop(proc)
    return out


def _pg_database() -> str:
    sys.path.insert(0, str(ROOT))
    from tests.conftest import create_pg_database

    assert PG_URL
    return create_pg_database(PG_URL, prefix="gpa_hostile_bench")


# Lower items.

class _BlackHole:
    """Accepts TCP connections and never answers (a black-holed database)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.conns.append(self.sock.accept()[0])
            except OSError:
                return


def startup(root: Path) -> dict[str, Any]:
    hole = _BlackHole()
    url = f"postgresql+psycopg://u:p@127.0.0.1:{hole.port}/db"
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "--database-url", url, "serve", "--port",
         str(server.free_port())], cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=60)
        return {"exit_code": proc.returncode, "seconds": round(time.monotonic() - start, 1),
                "last_line": err.decode(errors="replace").strip().splitlines()[-1:]}
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"exit_code": None, "seconds": ">60 (killed)"}


def blackhole(root: Path) -> dict[str, Any]:
    if not PG_URL:
        return {"skipped": "needs TEST_DATABASE_URL"}
    sys.path.insert(0, str(ROOT))
    from sqlalchemy.engine import make_url

    from tests.hardening.tcp_proxy import TcpProxy

    url = make_url(_pg_database())
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432).start()
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    proc, base = _start(root, {}, db_url=proxied)
    try:
        _parallel(6, lambda _: httpx.get(f"{base}/v1/gpus", timeout=30))
        proxy.blackhole = True

        def call(i: int) -> tuple[int, float]:
            start = time.monotonic()
            path = ["/v1/gpus", "/readyz", "/v1/gpus/nvidia-h100-sxm5-80gb"][i % 3]
            r = httpx.get(f"{base}{path}", timeout=60)
            return r.status_code, round(time.monotonic() - start, 2)

        answers = _parallel(6, call)
    finally:
        server.stop(proc)
        proxy.stop()
    return {"answers": answers, "max_seconds": max(a[1] for a in answers)}


def after_413(root: Path) -> dict[str, Any]:
    proc, base = _start(root, {})
    try:
        body = b" " * 6_000_000
        head = (b"POST /v1/gpus HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        answer = _raw(_port(base), head + body)
    finally:
        server.stop(proc)
    statuses = [line.split(b" ")[1].decode() for line in answer.split(b"\r\n")
                if line.startswith(b"HTTP/1.1 ")]
    return {"statuses_on_connection": statuses}


CASES = {"slow_upload": slow_upload, "bomb": bomb, "prebody": prebody,
         "read_flood": read_flood, "if_match": if_match, "startup": startup,
         "blackhole": blackhole, "after_413": after_413}


def main(argv: list[str]) -> None:
    root = ROOT
    if argv and Path(argv[0]).is_dir():
        root, argv = Path(argv[0]).resolve(), argv[1:]
    for name in argv or list(CASES):
        result = CASES[name](root)
        print(json.dumps({name: result}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
