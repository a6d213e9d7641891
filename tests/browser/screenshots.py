"""`make screenshots`: the docs and the comparison page in headless Chromium, as PNGs.

Serves a fresh seeded SQLite database with `gpu-advisor serve`, opens each page, waits for
what a person would see, and writes docs/screenshots/*.png (full page height). Fails if any
page requested anything from another host.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.browser.chrome import make_driver, outside, requested_urls
from tests.hardening.live import serve, stop

WIDTH = 1400


def _full_page(driver: Any, path: Path, *, max_height: int = 4000) -> None:
    driver.execute_script("window.scrollTo(0, 0); document.activeElement.blur()")
    height = driver.execute_script(
        "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    driver.set_window_size(WIDTH, min(int(height) + 40, max_height))
    driver.save_screenshot(str(path))
    driver.set_window_size(WIDTH, 1000)


def _wait_css(driver: Any, css: str, count: int = 1) -> None:
    WebDriverWait(driver, 60).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) >= count)


def fleet_shot(driver: Any, base: str, shot: Any) -> None:
    """The traffic-mix page with the chat preset's fleet drawn."""
    driver.get(f"{base}/ui/fleet")
    _wait_css(driver, "#fl-buckets tbody tr", 6)
    driver.find_element(By.ID, "fl-submit").click()
    _wait_css(driver, "#fl-bars-svg rect")
    shot("fleet-chat-mix")


def take(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = serve(f"sqlite:///{Path(tmp) / 'shots.db'}",
                           admin_key=f"gpa_shots_{uuid.uuid4().hex}")
        driver = make_driver(width=WIDTH, height=1000)
        try:
            def shot(name: str, **kw: Any) -> None:
                path = out / f"{name}.png"
                _full_page(driver, path, **kw)
                written.append(path)

            driver.get(f"{base}/")
            _wait_css(driver, "main a")
            shot("landing")

            driver.get(f"{base}/docs#/recommendations/recommendations-recommend_once")
            _wait_css(driver, ".examples-select select")
            shot("swagger-ui", max_height=2600)

            driver.get(f"{base}/redoc")
            _wait_css(driver, "[data-section-id^='operation/']", 20)
            shot("redoc", max_height=1600)

            for example in ("llm-serving", "too-big"):
                driver.get(f"{base}/ui")
                _wait_css(driver, "#gpu-picker input[type=checkbox]", 10)
                Select(driver.find_element(By.ID, "example")).select_by_value(example)
                driver.find_element(By.ID, "submit").click()
                _wait_css(driver, "#plot svg g.point", 2)
                if example == "llm-serving":
                    for slug in ("nvidia-h100-sxm5-80gb", "nvidia-l40s", "amd-mi300x"):
                        driver.find_element(By.ID, f"cmp-{slug}").click()
                    driver.find_element(By.ID, "compare-btn").click()
                    _wait_css(driver, "#compare-table")
                shot(f"compare-{example}")
            fleet_shot(driver, base, shot)
            stray = outside(requested_urls(driver), base)
            if stray:
                raise SystemExit(f"pages requested other hosts: {stray}")
        finally:
            driver.quit()
            stop(proc)
    return written


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("docs/screenshots")
    for path in take(out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
