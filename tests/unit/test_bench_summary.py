"""bench/__main__.py's SUMMARY.md after a partial run (``BENCH_ONLY``): the sections that did not
run keep their tables, read from the JSON files an earlier run wrote (bench/results/, committed),
instead of vanishing from the summary."""

from __future__ import annotations

import json
from pathlib import Path

from bench.__main__ import RESULTS, SECTIONS, earlier_results, summary


def test_a_partial_run_keeps_the_other_sections_tables() -> None:
    ran = ("seeded", "http")
    earlier = earlier_results(ran)
    assert "http" not in earlier and "seeded_median_ms" not in earlier  # they ran
    assert {"scale", "fleet", "soak", "overload"} <= set(earlier)
    scale = earlier.pop("scale")
    text = summary(None, scale, earlier, ran)
    assert "not run: scale, import, overload, soak, fleet" in text
    assert "Mixed fleet" in text  # bench_fleet.summary_lines, from fleet.json
    assert "GPUs" in text and "quotes" in text  # the scale table, from scale.json
    assert "Collector pauses" in text  # bench_soak.summary_lines, from soak.json


def test_nothing_is_read_back_for_the_sections_that_ran(tmp_path: Path) -> None:
    (tmp_path / "fleet.json").write_text(json.dumps({"stale": True}))
    assert earlier_results(SECTIONS, results=tmp_path) == {}
    assert earlier_results(("seeded",), results=tmp_path) == {"fleet": {"stale": True}}
    assert RESULTS.is_dir()
