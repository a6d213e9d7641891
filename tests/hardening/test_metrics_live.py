"""/metrics of a live `gpu-advisor serve --workers 2`: the server's totals, whichever worker
answers the scrape (prometheus_client's multiprocess mode, a directory per server)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from tests.hardening.live import concurrently, serve, server_errors, stop

ADMIN_KEY = "gpa_metricslv01_" + "d" * 43
REQUESTS = 48
SCRAPES = 12


def _count(text: str, route: str, method: str = "GET", status: str = "200") -> float:
    total = 0.0
    for line in text.splitlines():
        if (line.startswith("gpu_advisor_http_requests_total{") and f'route="{route}"' in line
                and f'method="{method}"' in line and f'status="{status}"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.slow
def test_consecutive_scrapes_of_two_workers_agree(fresh_url: str, tmp_path: Path) -> None:
    parent = tmp_path / "metrics"
    # list reads are admitted 4 at a time per worker (a 503 past that, on a busy machine):
    # this test counts requests, not admission, so it lets all 8 of its threads in
    proc, base = serve(fresh_url, admin_key=ADMIN_KEY, extra_args=("--workers", "2"),
                       env={"PROMETHEUS_MULTIPROC_DIR": str(parent),
                            "GPU_ADVISOR_MAX_CONCURRENT_READS": "16"})
    try:
        # new connections from 8 threads at once: the kernel hands them to both workers
        results = concurrently(REQUESTS, lambda i: httpx.get(
            f"{base}/v1/gpus", params={"limit": 1 + i % 5}, timeout=60).status_code)
        assert results == [200] * REQUESTS, results
        gpus, scrapes = [], []
        for _ in range(SCRAPES):
            with httpx.Client(timeout=30) as client:  # one connection per scrape
                text = client.get(f"{base}/metrics").text
            gpus.append(_count(text, "/v1/gpus"))
            scrapes.append(_count(text, "/metrics"))
            assert "\ngpu_advisor_metrics_workers_merged 1.0\n" in text  # it says so
        # every scrape sees every request, whichever worker it reached
        assert gpus == [REQUESTS] * SCRAPES, (gpus, server_errors(proc))
        assert scrapes == list(range(SCRAPES)), scrapes  # each scrape counts the ones before
        [server_dir] = list(parent.iterdir())  # one directory for this server, in the parent
        assert any(f.name.startswith("counter_") for f in server_dir.iterdir())
    finally:
        stop(proc)
    assert list(parent.iterdir()) == [], "serve left its metrics directory behind"
    assert not os.environ.get("PROMETHEUS_MULTIPROC_DIR")  # the test process is untouched
