"""The traffic-mix page (`/ui/fleet`) in real headless Chromium against a live server: the
presets fill the histogram, the fleet is drawn as a stacked bar per GPU type beside the best
single type, a bad histogram shows the API's 422 naming the field, and no request leaves
127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.browser.chrome import outside, requested_urls, severe_console

pytestmark = [pytest.mark.slow, pytest.mark.browser]
WAIT_S = 90


def _status_settled(driver: Any) -> bool:
    text = driver.find_element(By.ID, "fl-status").text
    return not text.startswith("Finding") and not driver.find_element(
        By.ID, "fl-submit").get_attribute("disabled")


def test_fleet_page_draws_the_fleet_beside_the_single_type(browser: Any,
                                                           live_url: str) -> None:
    requested_urls(browser)
    browser.get(f"{live_url}/ui/fleet")
    WebDriverWait(browser, WAIT_S).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#fl-buckets tbody tr")) >= 6)
    preset = Select(browser.find_element(By.ID, "fl-preset"))
    assert preset.first_selected_option.get_attribute("value") == "azure-conversation-2023"
    assert "Splitwise" in browser.find_element(By.ID, "fl-preset-source").text
    assert "1.000000" in browser.find_element(By.ID, "fl-share-sum").text
    browser.find_element(By.ID, "fl-submit").click()
    WebDriverWait(browser, WAIT_S).until(_status_settled)
    status = browser.find_element(By.ID, "fl-status").text
    assert status.startswith("Fleet $") and "best single type" in status, status
    bars = browser.find_elements(By.CSS_SELECTOR, "#fl-bars-svg rect")
    assert bars, "no stacked bar drawn"
    rows = browser.find_elements(By.CSS_SELECTOR, "#fl-compare-svg text")
    assert any("Single type" in r.text for r in rows)
    assert browser.find_elements(By.CSS_SELECTOR, "#fl-pools tbody tr")
    assert browser.find_elements(By.CSS_SELECTOR, "#fl-routing li")
    urls = requested_urls(browser)
    assert any(u.endswith("/static/fleet.js") for u in urls)
    assert outside(urls, live_url) == []
    assert severe_console(browser) == []


def test_fleet_page_shows_the_422_of_a_bad_histogram(browser: Any, live_url: str) -> None:
    browser.get(f"{live_url}/ui/fleet")
    WebDriverWait(browser, WAIT_S).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#fl-buckets tbody tr")) >= 6)
    browser.find_element(By.ID, "fl-add").click()
    last = browser.find_elements(By.CSS_SELECTOR, "#fl-buckets tbody tr")[-1]
    share = last.find_elements(By.CSS_SELECTOR, "input")[2]
    share.clear()
    share.send_keys("0.5")
    assert "must sum to 1" in browser.find_element(By.ID, "fl-share-sum").text
    browser.find_element(By.ID, "fl-submit").click()
    WebDriverWait(browser, WAIT_S).until(_status_settled)
    status = browser.find_element(By.ID, "fl-status").text
    assert status.startswith("Error:") and "body.inference.traffic" in status, status
    assert browser.find_element(By.ID, "fl-results").get_attribute("hidden") is not None
