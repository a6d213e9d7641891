"""The pages for people in real headless Chromium, served by a live `gpu-advisor serve`.

Each test loads a page, waits for what a person would see (operations in Swagger UI, ReDoc's
reference, the comparison page's table, plot, memory bar and rejected list) and checks, from
Chrome's own network log, that no request went anywhere but the server on 127.0.0.1.
"""

from __future__ import annotations

import json
import math
import re
import urllib.request
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


def test_the_runtime_select_reaches_the_request(browser: Any, live_url: str) -> None:
    """llama.cpp on the CNN example: the page sends the runtime, and the 422 names it."""
    browser.get(f"{live_url}/ui")
    _wait(browser, "#f-inference-prompt_tokens")
    Select(browser.find_element(By.ID, "example")).select_by_value("cnn-edge")
    Select(browser.find_element(By.ID, "f-inference-runtime")).select_by_value("llama.cpp")
    _submit_example_current(browser)
    status = browser.find_element(By.ID, "status").text
    assert status.startswith("Error") and "inference.runtime" in status, status


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


# ---------- the scatter's labels, scales and fronts; the answer's life cycle ----------

_GEOMETRY_JS = """
const svg = document.querySelector('#plot svg');
const box = (b) => ({x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height});
const labels = Array.from(svg.querySelectorAll('text.point-label')).map(
  (t) => ({slug: t.dataset.slug, text: t.textContent, box: box(t.getBBox())}));
const points = Array.from(svg.querySelectorAll('g.point')).map((g) => ({
  slug: g.dataset.slug, cls: g.getAttribute('class').split(' '), box: box(g.getBBox()),
  y: g.querySelector('circle, polygon').getBBox().y}));
const path = svg.querySelector('path.pareto-line');
const line = [];
for (let s = 0; s <= path.getTotalLength(); s += 1) {
  const p = path.getPointAtLength(s); line.push([p.x, p.y]);
}
const [xAxis, yAxis] = svg.querySelectorAll('line.axis');
const area = {x0: +xAxis.getAttribute('x1'), x1: +xAxis.getAttribute('x2'),
              y0: +yAxis.getAttribute('y1'), y1: +xAxis.getAttribute('y1')};
const text = (sel) => (svg.querySelector(sel) || {}).textContent;
const yTicks = Array.from(svg.querySelectorAll('g.axes > text[text-anchor=end]')).map(
  (t) => t.textContent);
return {labels, points, line, area, xLabel: text('.x-label'), yLabel: text('.y-label'), yTicks};
"""


def _geometry(driver: Any) -> dict[str, Any]:
    return dict(driver.execute_script(_GEOMETRY_JS))


def _overlap(a: dict[str, float], b: dict[str, float], slack: float = 0.5) -> bool:
    return (min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > slack
            and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > slack)


def _inside(b: dict[str, float], area: dict[str, float], slack: float = 0.5) -> bool:
    return (b["x0"] >= area["x0"] - slack and b["x1"] <= area["x1"] + slack
            and b["y0"] >= area["y0"] - slack and b["y1"] <= area["y1"] + slack)


def _top_slug(driver: Any) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, "#ranked tbody tr").get_attribute(
        "data-slug"))


def _assert_labels_are_readable(driver: Any) -> None:
    """The top pick is labelled '#1 ...'; no label covers a point, the staircase, another
    label, or leaves the plot area."""
    geo = _geometry(driver)
    for i, lb in enumerate(geo["labels"]):
        box = lb["box"]
        assert _inside(box, geo["area"]), lb
        hit = [p["slug"] for p in geo["points"] if _overlap(box, p["box"])]
        assert hit == [], f"label {lb['text']!r} covers the point(s) {hit}"
        on_line = [xy for xy in geo["line"] if box["x0"] + 0.5 < xy[0] < box["x1"] - 0.5
                   and box["y0"] + 0.5 < xy[1] < box["y1"] - 0.5]
        assert on_line == [], f"label {lb['text']!r} covers the Pareto line at {on_line[:3]}"
        for other in geo["labels"][i + 1:]:
            assert not _overlap(box, other["box"]), (lb["text"], other["text"])
    top = _top_slug(driver)
    if not any(p["slug"] == top for p in geo["points"]):
        return  # the top pick has no price or no time: it is not plotted
    texts = [lb["text"] for lb in geo["labels"]]
    top_labels = [t for t in texts if t.split(" ")[-2] == top]
    assert top_labels, f"no label names the #1 pick {top}: {texts}"
    assert top_labels[0].startswith("#1 "), top_labels
    front = {p["slug"] for p in geo["points"] if "front" in p["cls"]}
    assert {lb["slug"] for lb in geo["labels"]} <= front | {top}


def _ready(driver: Any) -> None:
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.find_element(By.ID, "status").text.split(" ")[0] not in ("Ranking...", "")
        and not d.find_element(By.ID, "submit").get_attribute("disabled"))


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_plot_labels_the_top_pick_and_covers_nothing(browser: Any, live_url: str,
                                                     name: str) -> None:
    browser.get(f"{live_url}/ui?example={name}")
    _ready(browser)
    _assert_labels_are_readable(browser)


@pytest.mark.parametrize("objective", ["cost", "time", "energy", "balanced"])
def test_plot_labels_the_top_pick_under_every_objective(browser: Any, live_url: str,
                                                        objective: str) -> None:
    """Under energy the #1 pick of the LLM-serving example is off the cost-time staircase:
    it is labelled too, not only the staircase's points."""
    browser.get(f"{live_url}/ui?example=llm-serving")
    _ready(browser)
    Select(browser.find_element(By.ID, "f-objective")).select_by_value(objective)
    _submit_example_current(browser)
    _ready(browser)
    _assert_labels_are_readable(browser)


def test_plot_clips_far_outliers_and_offers_log_axes(browser: Any, live_url: str) -> None:
    """LLM serving: two V100 offers cost ~6x the rest; clipped, they do not squeeze every
    other point into the bottom tenth of the plot."""
    browser.get(f"{live_url}/ui?example=llm-serving")
    _ready(browser)
    geo = _geometry(browser)
    # the points that are not clipped spread over the plot: their middle half takes at least
    # a fifth of its height (it took 7% with the outliers in place on a linear axis)
    ys = sorted(p["y"] for p in geo["points"] if "clipped" not in p["cls"])
    q1, q3 = ys[len(ys) // 4], ys[(3 * len(ys)) // 4]
    assert q3 - q1 >= 0.2 * (geo["area"]["y1"] - geo["area"]["y0"]), (q1, q3, geo["area"])
    clip = browser.find_element(By.ID, "plot-clip")
    assert clip.is_selected()
    clipped = [p for p in geo["points"] if "clipped" in p["cls"]]
    assert 1 <= len(clipped) <= 3, [p["slug"] for p in geo["points"]]
    assert all("front" not in p["cls"] for p in clipped)
    note = browser.find_element(By.ID, "plot-clipped").text
    assert f"{len(clipped)} far outlier" in note and "Untick" in note
    names = {tr.get_attribute("data-slug"): tr.find_element(By.CSS_SELECTOR, "th").text
             for tr in browser.find_elements(By.CSS_SELECTOR, "#ranked tbody tr")}
    assert all(names[p["slug"]] in note for p in clipped)
    assert all(_inside(p["box"], geo["area"], slack=1) for p in geo["points"])
    _assert_labels_are_readable(browser)

    clip.click()  # every point in place, none off the plot
    geo = _geometry(browser)
    assert [p for p in geo["points"] if "clipped" in p["cls"]] == []
    assert browser.find_element(By.ID, "plot-clipped").text == ""
    assert all(_inside(p["box"], geo["area"], slack=1) for p in geo["points"])
    _assert_labels_are_readable(browser)

    log_y = browser.find_element(By.ID, "plot-log-y")
    assert not log_y.is_selected() and "log" not in geo["yLabel"]
    log_y.click()
    geo = _geometry(browser)
    assert geo["yLabel"].endswith("(log scale)"), geo["yLabel"]
    ticks = [float(t.replace(",", "")) for t in geo["yTicks"]]
    assert len(ticks) >= 2 and all(
        re.fullmatch(r"[125](?:0*|\.?)", f"{t / 10 ** math.floor(math.log10(t)):g}") for t in ticks
    ), geo["yTicks"]
    _assert_labels_are_readable(browser)
    browser.find_element(By.ID, "plot-log-x").click()
    assert _geometry(browser)["xLabel"].endswith("(log scale)")
    _assert_labels_are_readable(browser)


@pytest.mark.parametrize(("name", "time_header"), [("llm-serving", "Latency per request [ms]"),
                                                   ("llm-training", "Time to finish [h]")])
def test_column_headers_carry_one_unit_each(browser: Any, live_url: str, name: str,
                                            time_header: str) -> None:
    browser.get(f"{live_url}/ui?example={name}")
    _ready(browser)
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#ranked thead th")]
    assert time_header in heads, heads
    assert all(h.count("[") <= 1 and h.count("[") == h.count("]") for h in heads), heads
    assert _geometry(browser)["xLabel"].removesuffix(" (log scale)") == time_header


def _recommend_api(base: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(f"{base}/v1/recommendations", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=WAIT_S) as resp:
        return dict(json.load(resp))


def _cost_time(c: dict[str, Any]) -> tuple[float, float] | None:
    k, e = c["cost"], c["estimate"]
    cost = next((k[f] for f in ("total_usd", "usd_per_million_output_tokens",
                                "usd_per_1k_requests") if k.get(f) is not None), None)
    time = e["time_to_complete_hours"] if e.get("time_to_complete_hours") is not None \
        else e.get("latency_ms")
    return (cost, time) if cost and time and cost > 0 and time > 0 else None


@pytest.mark.parametrize("name", ["llm-serving", "fp64-simulation"])
def test_pareto_columns_match_the_plot_and_the_api_and_the_page_says_why(
        browser: Any, live_url: str, name: str) -> None:
    browser.get(f"{live_url}/ui?example={name}")
    _ready(browser)
    body = json.loads(browser.find_element(By.ID, "body-preview").get_attribute("textContent"))
    answer = _recommend_api(live_url, {**body, "limit": 100})
    points = {c["gpu"]["slug"]: _cost_time(c) for c in answer["recommendations"]}
    front2 = {s for s, p in points.items() if p and not any(
        q and q[0] <= p[0] and q[1] <= p[1] and q != p for q in points.values())}
    front3 = {c["gpu"]["slug"] for c in answer["recommendations"] if c["pareto_optimal"]}
    assert front2 <= front3  # counting energy can only add to the cost-time front

    rows = {tr.get_attribute("data-slug"): tr for tr in
            browser.find_elements(By.CSS_SELECTOR, "#ranked tbody tr")}
    assert set(rows) == set(points)
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#ranked thead th")]
    assert "Pareto: cost, time" in heads and "Pareto: cost, time, energy" in heads
    for slug, tr in rows.items():
        two = tr.find_element(By.CSS_SELECTOR, "td.pareto2").text
        three = tr.find_element(By.CSS_SELECTOR, "td.pareto3").text
        if points[slug] is None:
            assert (two, three) == ("-", "-"), slug
        else:
            assert two == ("yes" if slug in front2 else "no"), slug
            assert three == ("yes" if slug in front3 else "no"), slug
    plot = {p["slug"]: p["cls"] for p in _geometry(browser)["points"]}
    assert {s for s, cls in plot.items() if "front" in cls} == front2
    assert {s for s, cls in plot.items() if "front3d" in cls} == front3 - front2
    note = browser.find_element(By.ID, "pareto-note").text
    assert "energy" in note and "staircase" in note
    for slug in front3 - front2:
        assert rows[slug].find_element(By.CSS_SELECTOR, "th").text in note
    if name == "llm-serving":  # the two fronts differ here, which the page has to explain
        assert front3 - front2


def _snapshot_after(driver: Any, script: str) -> dict[str, Any]:
    """Run ``script`` and read what the answer area shows before any new answer can arrive
    (the same task: no response is handled in between)."""
    return dict(driver.execute_script(script + """
        return {hidden: document.getElementById('results').hidden,
                rows: document.querySelectorAll('#ranked tbody tr').length,
                points: document.querySelectorAll('#plot svg g.point').length,
                memory: document.querySelectorAll('#memory svg').length,
                rejected: document.querySelectorAll('#rejected tr').length,
                status: document.getElementById('status').textContent};"""))


def _choose_example(name: str) -> str:
    return (f"const s = document.getElementById('example'); s.value = {json.dumps(name)};"
            "s.dispatchEvent(new Event('change', {bubbles: true}));")


# Counts the page's requests still in flight (window.fetch wrapped once per page load).
_COUNT_FETCHES = """
if (!window.__inflight) {
  window.__inflight = 0;
  const f = window.fetch;
  window.fetch = (...a) => {
    window.__inflight++;
    return f(...a).finally(() => { window.__inflight--; });
  };
}"""


def test_changing_the_example_replaces_the_answer(browser: Any, live_url: str) -> None:
    browser.get(f"{live_url}/ui?example=llm-serving")
    _ready(browser)
    assert browser.find_element(By.ID, "cost-h").text == "Cost [USD per million output tokens]"
    for slug in ("nvidia-l4", "nvidia-t4"):
        browser.find_element(By.ID, f"cmp-{slug}").click()
    browser.find_element(By.ID, "compare-btn").click()
    WebDriverWait(browser, WAIT_S).until(ec.presence_of_element_located((By.ID, "compare-table")))

    # the old answer leaves the screen at once, then the new example's arrives
    shown = _snapshot_after(browser, _choose_example("cnn-edge"))
    assert shown["hidden"] and shown == {**shown, "rows": 0, "points": 0, "memory": 0,
                                         "rejected": 0}, shown
    assert "candidates" not in shown["status"], shown
    assert browser.find_elements(By.ID, "compare-table") == []
    _ready(browser)
    assert browser.find_element(By.ID, "results").is_displayed()
    assert "stale" not in browser.find_element(By.ID, "results").get_attribute("class")
    assert browser.find_element(By.ID, "cost-h").text == "Cost [USD per 1,000 requests]"
    assert browser.find_element(By.ID, "f-kind").get_attribute("value") == "inference"

    # an edit leaves the answer up, marked out of date
    browser.find_element(By.ID, "f-inference-output_tokens").send_keys("0")
    assert "stale" in browser.find_element(By.ID, "results").get_attribute("class")
    assert "changed" in browser.find_element(By.ID, "status").text

    # an error leaves with the answer it replaced
    field = browser.find_element(By.ID, "f-inference-max_latency_ms")
    field.clear()
    field.send_keys("-5")
    _submit_example_current(browser)
    assert browser.find_element(By.ID, "status").text.startswith("Error")
    shown = _snapshot_after(browser, _choose_example("llm-training"))
    assert not shown["status"].startswith("Error"), shown
    _ready(browser)
    assert browser.find_element(By.ID, "cost-h").text == "Cost [USD to finish]"


def test_an_answer_for_an_older_request_is_dropped(browser: Any, live_url: str) -> None:
    browser.get(f"{live_url}/ui")
    _wait(browser, "#gpu-picker input[type=checkbox]", count=10)
    # Recommend the form's llm-serving workload, then at once switch to cnn-edge: whichever
    # answer comes back last, the page must end on cnn-edge's.
    browser.execute_script(_COUNT_FETCHES + "document.getElementById('submit').click();"
                           + _choose_example("cnn-edge"))
    WebDriverWait(browser, WAIT_S).until(
        lambda d: d.execute_script("return window.__inflight") == 0)
    _ready(browser)
    assert browser.find_element(By.ID, "cost-h").text == "Cost [USD per 1,000 requests]"
    assert browser.find_element(By.ID, "f-kind").get_attribute("value") == "inference"
    rows = browser.find_elements(By.CSS_SELECTOR, "#ranked tbody tr")
    assert len(rows) == len(_recommend_api(live_url, {**json.loads(
        browser.find_element(By.ID, "body-preview").get_attribute("textContent")),
        "limit": 100})["recommendations"])
