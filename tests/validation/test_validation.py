"""The engine against published measurements (see report.py, CALIBRATION.md, VALIDATION.md).

Calibration rows: each published point that set a constant is reproduced within a band a
+-30% change of that constant would leave. Held-out points: the ranking quality and error the
closing note reports, with thresholds that the same change of any constant would break (see
``test_a_thirty_percent_change_of_any_constant_breaks_a_threshold``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from service.engine import constants as c
from tests.validation import report as r

CALIBRATION_TOLERANCE = 0.08
"""Each calibration row within +-8%: the constants were set to land the rows within ~+-5%."""
WIDER = {"cal-10a-mlperf-70b-h100": 0.20}
"""MLPerf v4.0's H100 row lands ~18% high with the FP8 factor set by the newer TensorRT-LLM
v1.0 rows (NVIDIA's v4.1 H100 result was ~12% above its v4.0 one); it anchors the level, the
vendor factor comes from the same-round ratio."""


NARROWER = {"cal-5-mlperf31-r50-offline-h100-sxm5": 0.04}
"""MLPerf ResNet-50 INT8 on H100 SXM runs close to its memory roof at the fitted inference
convolution efficiency (the layers' memory and compute totals are about equal): +30% of
the constant moves the row by +5% only, so the row is held within +-4% (it lands at -1%)."""


def _tolerance(point_id: str) -> float:
    return NARROWER.get(point_id, WIDER.get(point_id, CALIBRATION_TOLERANCE))


# Held-out thresholds, on the validation set disjoint by source from calibration (148 points).
MIN_MEDIAN_SPEARMAN = 0.95
"""Median Spearman over groups of >= 5 GPUs (0.980 there, 14 groups, 2026-12-06). Groups of 3-4
are reported apart and not asserted: a perfect rho over 3 GPUs happens by chance 1 time in 6."""
MIN_SPEARMAN_MARGIN = 0.05
MIN_PAIRWISE = 0.96
"""96.3% (17 of 459 pairs inverted) on 2026-12-06 with Lambda's FP32 table; 95.5% (15 of 330) on
the 120 points before it. Asserted at the physics target, 96% (94% until it was met)."""
MAX_MEDIAN_ABS_ERROR = 0.14
"""13.4% on 2026-12-06 with Lambda's FP32 table (12.9% on the 120 points before it; 14.6% before
that day's eager-attention and LM-head changes); asserted at the physics target, 14% (15% until
it was met)."""
MAX_FAMILY_MEDIAN_ABS_ERROR = 0.28
"""No source family's median absolute error above this (worst on 2026-12-06: MosaicML
llm-foundry 24.7%, top500 22.5%; the physics target is 25%, this guard sits a little above it so
that a change moving one point of a six-point family does not trip it by itself)."""
MIN_BEST_NAMED = 0.80


@pytest.fixture(scope="module")
def calibration() -> list[r.Scored]:
    return r.score(r.load(r.CALIBRATION))


@pytest.fixture(scope="module")
def held_out() -> list[r.Scored]:
    return r.score(r.load(r.POINTS))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_at_most_twelve_calibration_points_and_a_broad_validation_set() -> None:
    cal = r.load(r.CALIBRATION)
    assert 1 <= len(cal) <= 12
    held = r.load(r.POINTS)
    assert len(held) >= 60
    assert len({p.gpu.slug for p in held}) >= 10
    assert {p.kind for p in held} == {"training", "inference", "compute"}


@pytest.mark.parametrize("path", [r.POINTS, r.CALIBRATION], ids=lambda p: p.name)
def test_every_row_names_its_source_family_and_key(path: Path) -> None:
    """The source columns agree with what ``source`` / ``source_locator`` name, where they
    name a results repository or a file; MLPerf keys are suite + round + submitter and the
    family is that key."""
    for row in _rows(path):
        keys = r.parse_source_keys(row["source_key"])
        assert row["source_family"] and keys, row["id"]
        derived = r.derived_source_key(row["source"], row["source_locator"])
        if derived is not None:
            assert derived in keys, (row["id"], derived, keys)
        if derived is not None and derived.startswith("mlperf-"):
            assert row["source_family"] == derived, row["id"]


def test_source_keys_ignore_the_commit_and_the_table() -> None:
    """Two versions or tables of one page are one source, so that a page's older table (here
    TensorRT-LLM's perf-overview v0.17) cannot be held out against its newer one (v1.0)."""
    repo = "github.com/NVIDIA/TensorRT-LLM"
    a = r.derived_source_key(repo, "docs/source/performance/perf-overview.md (v1.0 tables), x")
    b = r.derived_source_key(
        repo, "docs/source/performance/perf-overview.md @ 258c7540 (table 'version 0.17')"
    )
    assert a == b == f"{repo}/docs/source/performance/perf-overview.md"
    mlperf = "github.com/mlcommons/inference_results_v3.1"
    assert r.derived_source_key(mlperf, "closed/NVIDIA/results/L4x1_TRT/bert-99/...") == (
        r.derived_source_key("MLPerf Inference v3.1 closed (NVIDIA)", "")
    ) == "mlperf-inference-v3.1/nvidia"


def test_validation_is_disjoint_from_calibration_by_source() -> None:
    """No held-out point comes from a source a calibration row was read from: same MLPerf
    suite, round and submitter, same TOP500 system, or same page or file (any version)."""
    cal = r.load(r.CALIBRATION)
    held = r.load(r.POINTS)
    shared = r.same_source(held, cal)
    assert not shared, f"{len(shared)} share a source: {sorted(p.id for p in shared)}"

    def setup(p: r.Point) -> tuple[object, ...]:
        return (p.gpu.slug, p.gpu_count, p.metric, p.workload)

    assert not {setup(p) for p in cal} & {setup(p) for p in held}


def test_every_calibration_row_is_in_calibration_md() -> None:
    text = (r.HERE.parents[1] / "service" / "engine" / "CALIBRATION.md").read_text()
    with r.CALIBRATION.open(newline="", encoding="utf-8") as fh:
        ids = [row["id"] for row in csv.DictReader(fh)]
    missing = [i for i in ids if f"`{i}`" not in text]
    assert not missing


@pytest.mark.parametrize("point_id", [p.id for p in r.load(r.CALIBRATION)])
def test_calibration_row_reproduced(calibration: list[r.Scored], point_id: str) -> None:
    scored = next(s for s in calibration if s.point.id == point_id)
    assert abs(scored.error) <= _tolerance(point_id), (point_id, scored.predicted)


def test_held_out_ranking_beats_the_datasheet_peak(held_out: list[r.Scored]) -> None:
    summary = r.summarize(held_out, r.groups(held_out))
    assert summary.median_spearman >= MIN_MEDIAN_SPEARMAN
    assert summary.median_spearman >= summary.median_baseline_spearman + MIN_SPEARMAN_MARGIN
    assert summary.pairwise >= MIN_PAIRWISE
    assert summary.pairwise > summary.baseline_pairwise
    assert summary.best_named >= MIN_BEST_NAMED


def test_held_out_median_error(held_out: list[r.Scored]) -> None:
    summary = r.summarize(held_out, r.groups(held_out))
    assert summary.median_abs_error <= MAX_MEDIAN_ABS_ERROR


def test_no_source_family_far_off(held_out: list[r.Scored]) -> None:
    worst = max(r.families(held_out), key=lambda f: f.median_abs_error)
    assert worst.median_abs_error <= MAX_FAMILY_MEDIAN_ABS_ERROR, worst


def _passes(scored: list[r.Scored], cal: list[r.Scored]) -> bool:
    summary = r.summarize(scored, r.groups(scored))
    return (
        all(abs(s.error) <= _tolerance(s.point.id) for s in cal)
        and summary.median_spearman >= MIN_MEDIAN_SPEARMAN
        and summary.pairwise >= MIN_PAIRWISE
        and summary.median_abs_error <= MAX_MEDIAN_ABS_ERROR
        and all(f.median_abs_error <= MAX_FAMILY_MEDIAN_ABS_ERROR for f in r.families(scored))
        and summary.best_named >= MIN_BEST_NAMED
    )


@contextmanager
def _scaled(name: str, factor: float) -> Iterator[None]:
    old = getattr(c, name)
    setattr(c, name, old * factor)
    try:
        yield
    finally:
        setattr(c, name, old)


FITTED = (
    "GEMM_EFFICIENCY",
    "TRAINING_KERNEL_FACTOR",
    "CONV_EFFICIENCY",
    "CONV_INFERENCE_EFFICIENCY",
    "EFF_8BIT_GEMM",
    "EFF_NON_TENSOR",
    "EFF_FP64_TENSOR",
    "EFF_MEMORY_BW",
    "LLAMACPP_STREAM_BYTES_PER_SM_CYCLE",
    "LLAMACPP_PROMPT_EFFICIENCY",
)


@pytest.mark.parametrize("name", FITTED)
@pytest.mark.parametrize("factor", [0.7, 1.3])
def test_a_thirty_percent_change_of_any_constant_breaks_a_threshold(
    name: str, factor: float
) -> None:
    """The thresholds are tight enough to notice a +-30% error in any fitted constant."""
    with _scaled(name, factor):
        cal = r.score(r.load(r.CALIBRATION))
        held = r.score(r.load(r.POINTS))
        assert not _passes(held, cal)


def test_vendor_factor_is_per_vendor_and_sourced() -> None:
    assert set(c.VENDOR_EFFICIENCY) <= {"amd", "intel"}
    source = str(c.ASSUMPTIONS["vendor_efficiency"].source)
    assert "MLPerf" in source and "MI300X" in source


PUBLISHED_MI300X_OVER_H100 = 0.965
"""MLPerf Inference v4.1, Llama-2-70B offline, 8 GPUs: MI300X within 3-4% below NVIDIA's H100
of the same round (CALIBRATION.md rows 9-10): the comparison the AMD factor was set from."""


def _vendor_ratio_error(cal: list[r.Scored]) -> float:
    """How far the engine's MI300X / H100 ratio on MLPerf Llama-2-70B is from the published
    same-round one."""
    by = {s.point.id: s for s in cal}
    h100, mi300x = by["cal-10a-mlperf-70b-h100"], by["cal-10b-mlperf-70b-mi300x"]
    return (mi300x.predicted / h100.predicted) / PUBLISHED_MI300X_OVER_H100 - 1.0


def test_vendor_factor_reproduces_the_published_comparison(
    calibration: list[r.Scored],
) -> None:
    assert abs(_vendor_ratio_error(calibration)) <= 0.05


@pytest.mark.parametrize("factor", [0.7, 1.3])
def test_a_thirty_percent_change_of_the_vendor_factor_breaks_it(factor: float) -> None:
    old = dict(c.VENDOR_EFFICIENCY)
    c.VENDOR_EFFICIENCY["amd"] = old["amd"] * factor
    try:
        assert abs(_vendor_ratio_error(r.score(r.load(r.CALIBRATION)))) > 0.05
    finally:
        c.VENDOR_EFFICIENCY.clear()
        c.VENDOR_EFFICIENCY.update(old)
