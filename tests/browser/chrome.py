"""Drive the system's Chromium (Debian `chromium` + `chromium-driver`) with Selenium.

Nothing is downloaded: the browser and driver paths are given, so Selenium Manager is never
asked to fetch a driver (SE_OFFLINE makes sure). Every request the page makes is read back from
Chrome's DevTools performance log, so a test can prove no request left 127.0.0.1; host names
other than 127.0.0.1 are also mapped to nowhere, so a stray request fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any
from urllib.parse import urlsplit

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)


def find(names: tuple[str, ...]) -> str | None:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if find(CHROMIUM_NAMES) is None:
        return "no chromium on PATH (apt-get install chromium chromium-driver)"
    if find(DRIVER_NAMES) is None:
        return "no chromedriver on PATH (apt-get install chromium-driver)"
    return None


def make_driver(*, width: int = 1400, height: int = 1000) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"
    binary, driver = find(CHROMIUM_NAMES), find(DRIVER_NAMES)
    assert binary and driver, browser_missing()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--disable-extensions",
                "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                "--lang=en-US", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


def requested_urls(driver: Any) -> list[str]:
    """Every URL the page asked for since the last call (DevTools Network events)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def outside(urls: list[str], base: str) -> list[str]:
    """The URLs that were not served by ``base`` (data: and blob: stay in the page)."""
    host = urlsplit(base).netloc
    return [u for u in urls
            if urlsplit(u).scheme not in ("data", "blob", "about")
            and urlsplit(u).netloc != host]


def severe_console(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
