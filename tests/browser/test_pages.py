"""The pages for people in real headless Chromium, served by a live `gpu-advisor serve`.

Each test loads a page, waits for what a person would see (operations in Swagger UI, ReDoc's
reference, the comparison page's table, plot, memory bar and rejected list) and checks, from
Chrome's own network log, that no request went anywhere but the server on 127.0.0.1.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from service.workloads.examples import EXAMPLES
from tests.browser.chrome import outside, requested_urls, severe_console

pytestmark = [pytest.mark.slow, pytest.mark.browser]
WAIT_S = 60


def _wait(driver: Any, css: str, *, count: int = 1) -> list[Any]:
    WebDriverWait(driver, WAIT_S).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) >= count
    )
    return list(driver.find_elements(By.CSS_SELECTOR, css))


def _only_local(driver: Any, base: str) -> list[str]:
    urls = requested_urls(driver)
    assert urls, "the performance log saw no request at all"
    assert outside(urls, base) == [], f"requests left {base}: {outside(urls, base)}"
    return urls


def test_landing_page_links_docs_ui_and_health(browser: Any, live_url: str) -> None:
    requested_urls(browser)  # drop what earlier tests left in the log
    browser.get(f"{live_url}/")
    hrefs = {a.get_attribute("href") for a in _wait(browser, "main a[href]")}
    for path in ("/ui", "/docs", "/redoc", "/healthz"):
        assert f"{live_url}{path}" in hrefs
    assert "which GPU" in browser.find_element(By.TAG_NAME, "h1").text
    _only_local(browser, live_url)


def test_swagger_ui_renders_operations_offline(browser: Any, live_url: str) -> None:
    requested_urls(browser)
    browser.get(f"{live_url}/docs")
    ops = _wait(browser, ".opblock-summary", count=20)
    paths = {o.find_element(By.CSS_SELECTOR, ".opblock-summary-path").text for o in ops}
    assert {"/v1/recommendations", "/v1/estimates", "/v1/workloads"} <= {
        p.replace("\u200b", "") for p in paths}
    urls = _only_local(browser, live_url)
    assert any(u.endswith("/static/vendor/swagger-ui-bundle.js") for u in urls)
    assert any(u.endswith("/openapi.json") for u in urls)
    assert severe_console(browser) == []


def test_swagger_ui_shows_named_examples(browser: Any, live_url: str) -> None:
    browser.get("about:blank")  # a hash change alone would not reload Swagger UI
    browser.get(f"{live_url}/docs#/recommendations/recommendations-recommend_once")
    select = _wait(browser, "#operations-recommendations-recommendations-recommend_once "
                            ".examples-select select")[0]
    names = {o.get_attribute("value") for o in Select(select).options}
    assert set(EXAMPLES) <= names
    _only_local(browser, live_url)


def test_redoc_renders_offline(browser: Any, live_url: str) -> None:
    requested_urls(browser)
    browser.get(f"{live_url}/redoc")
    _wait(browser, "[data-section-id^='operation/']", count=20)
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "Rank GPUs for a workload" in text
    urls = _only_local(browser, live_url)
    assert any(u.endswith("/static/redoc/redoc.standalone.js") for u in urls)
    assert severe_console(browser) == []  # e.g. a Content-Security-Policy violation


def _submit_example(driver: Any, base: str, name: str) -> None:
    Select(driver.find_element(By.ID, "example")).select_by_value(name)
    driver.find_element(By.ID, "submit").click()
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.find_element(By.ID, "status").text.split(" ")[0] not in ("Ranking...", "")
        and not d.find_element(By.ID, "submit").get_attribute("disabled")
    )


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_comparison_page_answers_each_named_example(browser: Any, live_url: str,
                                                    name: str) -> None:
    requested_urls(browser)
    browser.get(f"{live_url}/ui")
    _wait(browser, "#gpu-picker input[type=checkbox]", count=10)
    _submit_example(browser, live_url, name)
    status = browser.find_element(By.ID, "status").text
    assert not status.startswith("Error"), status
    assert browser.find_element(By.ID, "results").is_displayed()

    rows = browser.find_elements(By.CSS_SELECTOR, "#ranked tbody tr")
    assert len(rows) >= 2
    first = [td.text for td in rows[0].find_elements(By.CSS_SELECTOR, "th, td")]
    assert first[0] == "1" and first[4] != "-" and first[5] != "-"
    # the GPU count is the total paid for; with several multi-GPU replicas, their layout too
    m = re.fullmatch(r"(\d+)(?: \((\d+) x (\d+)\))?", first[2])
    assert m, first[2]
    if m.group(2):
        assert int(m.group(1)) == int(m.group(2)) * int(m.group(3)), first[2]
    assert first[6] in ("compute", "memory_bandwidth", "interconnect")

    points = browser.find_elements(By.CSS_SELECTOR, "#plot svg g.point")
    assert len(points) >= 2
    line = browser.find_element(By.CSS_SELECTOR, "#plot svg path.pareto-line")
    assert line.get_attribute("d").count("L") >= 2
    front = browser.find_elements(By.CSS_SELECTOR, "#plot svg g.point.front")
    assert 1 <= len(front) <= len(points)
    # Hover text names GPU x count and the offer.
    label = points[0].get_attribute("aria-label")
    assert " x " in label and ":" in label

    segments = browser.find_elements(By.CSS_SELECTOR, "#memory svg rect.seg")
    assert segments, "memory bar has no segment"
    assert "GPU memory" in browser.find_element(By.CSS_SELECTOR, "#memory svg").text

    rejected = browser.find_element(By.ID, "rejected")
    rejected_rows = rejected.find_elements(By.CSS_SELECTOR, "tbody tr")
    if name in ("too-big", "cnn-edge"):
        assert len(rejected_rows) >= 5
        assert all(r.find_elements(By.CSS_SELECTOR, "td")[1].text for r in rejected_rows)
        # the typed fix is shown by its detail, never as a serialized object
        assert all(r.find_elements(By.CSS_SELECTOR, "td")[1].text
                   and "[object" not in r.text for r in rejected_rows)
    else:
        assert rejected_rows or "No GPU was rejected" in rejected.text
    # typed fields (fixes, coded warnings) are shown by their text, never as "[object Object]"
    assert "[object" not in browser.find_element(By.TAG_NAME, "body").text
    _only_local(browser, live_url)
    assert severe_console(browser) == []


def test_too_big_model_rejections_name_fixes(browser: Any, live_url: str) -> None:
    browser.get(f"{live_url}/ui")
    _submit_example(browser, live_url, "too-big")
    text = browser.find_element(By.ID, "rejected").text
    assert "needs" in text.lower() or "GPUs" in text


def test_memory_bar_follows_the_selected_candidate(browser: Any, live_url: str) -> None:
    browser.get(f"{live_url}/ui")
    _submit_example(browser, live_url, "llm-serving")
    before = browser.find_element(By.CSS_SELECTOR, "#memory svg").get_attribute("aria-label")
    buttons = browser.find_elements(By.CSS_SELECTOR, "#ranked .mem-btn")
    buttons[1].click()
    after = browser.find_element(By.CSS_SELECTOR, "#memory svg").get_attribute("aria-label")
    assert after != before
    assert buttons[1].get_attribute("aria-pressed") == "true"


def test_gpu_comparison_view(browser: Any, live_url: str) -> None:
    requested_urls(browser)
    browser.get(f"{live_url}/ui")
    _submit_example(browser, live_url, "llm-serving")
    for slug in ("nvidia-h100-sxm5-80gb", "nvidia-l4", "amd-mi300x"):
        browser.find_element(By.ID, f"cmp-{slug}").click()
    browser.find_element(By.ID, "compare-btn").click()
    table = WebDriverWait(browser, WAIT_S).until(
        ec.presence_of_element_located((By.ID, "compare-table")))
    heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert len(heads) == 4 and "NVIDIA L4" in heads
    mem = table.find_element(By.XPATH, ".//tr[th='Memory [GB]']")
    memory = dict(zip(heads[1:], [td.text for td in mem.find_elements(By.TAG_NAME, "td")],
                      strict=True))
    assert memory == {"NVIDIA H100 SXM5 80GB": "80", "NVIDIA L4": "24",
                      "AMD Instinct MI300X": "192"}
    fits = table.find_element(By.CSS_SELECTOR, "tr[data-row=fits]")
    assert {td.text for td in fits.find_elements(By.TAG_NAME, "td")} <= {"yes", "no"}
    _only_local(browser, live_url)
    # Too few GPUs: a clear message, no table change.
    for slug in ("nvidia-l4", "amd-mi300x"):
        browser.find_element(By.ID, f"cmp-{slug}").click()
    browser.find_element(By.ID, "compare-btn").click()
    assert "Pick 2 to 4" in browser.find_element(By.ID, "compare-status").text


def test_bad_input_shows_the_problem_field(browser: Any, live_url: str) -> None:
    browser.get(f"{live_url}/ui")
    _wait(browser, "#f-inference-prompt_tokens")
    field = browser.find_element(By.ID, "f-inference-max_ttft_ms")
    field.clear()
    field.send_keys("-5")
    _submit_example_current(browser)
    status = browser.find_element(By.ID, "status").text
    assert status.startswith("Error") and "max_ttft_ms" in status


def _submit_example_current(driver: Any) -> None:
    driver.find_element(By.ID, "submit").click()
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.find_element(By.ID, "status").text not in ("Ranking...", "")
        and not d.find_element(By.ID, "status").text.startswith("Choose"))


def test_controls_are_labelled_and_the_plot_works_from_the_keyboard(browser: Any,
                                                                     live_url: str) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.get(f"{live_url}/ui")
    _submit_example(browser, live_url, "too-big")
    controls = browser.find_elements(By.CSS_SELECTOR, "main input, main select")
    assert len(controls) > 30
    unlabelled = [
        c.get_attribute("id") for c in controls
        if not browser.find_elements(By.CSS_SELECTOR, f"label[for='{c.get_attribute('id')}']")
        and not c.get_attribute("aria-label")
    ]
    assert unlabelled == []
    points = browser.find_elements(By.CSS_SELECTOR, "#plot svg g.point")
    target = points[-1]
    slug = target.get_attribute("data-slug")
    assert target.get_attribute("tabindex") == "0"
    browser.execute_script("arguments[0].focus()", target)
    assert browser.switch_to.active_element == target
    target.send_keys(Keys.ENTER)
    name = browser.find_element(By.CSS_SELECTOR, f"#ranked tr[data-slug='{slug}'] th").text
    assert name in browser.find_element(By.CSS_SELECTOR, "#memory svg").get_attribute(
        "aria-label")
