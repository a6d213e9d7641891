"""The test harness itself: skipped browser tests are loud, `.ci/run` fails when it cannot get a
browser, and `make test-fast` leaves out exactly the slow and the browser tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

BROWSER_TESTS = "tests/browser"
SAMPLE = "tests/hardening/test_write_races.py"  # slow and quick tests side by side


def _env(path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"GPU_ADVISOR_REQUIRE_BROWSER", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER"}}
    return {**env, "PATH": str(path), **extra}


def _pytest(*args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = _env(path or Path(os.environ["PATH"]))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def _collected(*args: str) -> set[str]:
    out = _pytest("-o", "addopts=", "--collect-only", "-q", *args)
    assert out.returncode in (0, 5), out.stdout[-3000:] + out.stderr[-3000:]
    return {ln.strip() for ln in out.stdout.splitlines() if "::" in ln}


@pytest.mark.slow
def test_a_missing_browser_is_announced_loudly_at_the_end(tmp_path: Path) -> None:
    """Without chromium on PATH every browser test is skipped, the run still passes, and the
    summary says so in capitals, also under xdist as `make test` runs it."""
    out = _pytest("-n", "2", BROWSER_TESTS, path=tmp_path)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    total = len(_collected(BROWSER_TESTS))
    assert total >= 14
    match = re.search(r"^!{20,}\n(\d+) BROWSER TESTS SKIPPED: no chromium on PATH", text, re.M)
    assert match, text[-3000:]
    assert int(match.group(1)) == total
    assert f"{total} skipped" in text
    assert "The pages (/docs, /redoc, /ui) were NOT tested" in text


def test_no_notice_when_no_browser_test_was_skipped() -> None:
    out = _pytest("-m", "not browser", BROWSER_TESTS, SAMPLE, "-k", "wal_mode")
    assert out.returncode == 0, out.stdout[-3000:]
    assert "BROWSER TESTS SKIPPED" not in out.stdout + out.stderr


def _ensure_browser(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    """.ci/ensure-browser with only ``bin_dir`` on PATH (no apt-get: nothing is installed)."""
    bin_dir.mkdir(exist_ok=True)
    for tool in ("dirname", "id"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    bash = shutil.which("bash")
    assert bash
    return subprocess.run([bash, str(REPO_ROOT / ".ci" / "ensure-browser")], cwd=REPO_ROOT,
                          env=_env(bin_dir, PYTHON=sys.executable), capture_output=True,
                          text=True, timeout=120)


def test_ci_fails_when_it_cannot_get_a_browser(tmp_path: Path) -> None:
    out = _ensure_browser(tmp_path / "bin")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "cannot install them here" in out.stdout
    assert "ERROR: the browser tests (tests/browser) cannot run: no chromium on PATH" in out.stderr


def test_ci_goes_on_when_the_browser_is_there(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("chromium", "chromedriver"):
        (bin_dir / name).write_text("#!/bin/sh\necho fake\n")
        (bin_dir / name).chmod(0o755)
    out = _ensure_browser(bin_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == "" and out.stderr == ""
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    checks = ci.index(".ci/ensure-browser\n")
    assert ci.index("export GPU_ADVISOR_REQUIRE_BROWSER=1") > checks
    assert ci.index("make --no-print-directory test") > checks


def test_make_test_fast_leaves_out_slow_and_browser_tests() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    markers = re.search(r"^FAST_MARKERS := (.+)$", makefile, re.M)
    assert markers and '-m "$(FAST_MARKERS)"' in makefile.split("\ntest-fast:", 1)[1]
    fast = _collected("-m", markers.group(1), BROWSER_TESTS, SAMPLE)
    everything = _collected(BROWSER_TESTS, SAMPLE)
    left_out = everything - fast
    assert not any(n.startswith(BROWSER_TESTS) for n in fast)
    assert {n for n in everything if n.startswith(BROWSER_TESTS)} <= left_out
    sample_out = {n.split("::")[1] for n in left_out if n.startswith(SAMPLE)}
    sample_slow = set(re.findall(r"@pytest\.mark\.slow\ndef (test_\w+)",
                                 (REPO_ROOT / SAMPLE).read_text()))
    assert sample_out == sample_slow and len(sample_slow) == 6
    assert len(fast) == 3
