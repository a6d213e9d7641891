"""Engine vs published measurements: the held-out validation set and the calibration points.

``python -m tests.validation.report [points.csv ...]`` (``make validate``) prints, per workload
group, the engine's Spearman rank correlation across GPUs and its pairwise order accuracy next
to the datasheet-peak baseline (GPUs ordered by their dense peak at the workload's precision,
the order a model with one efficiency per model family gives), and the median absolute error
of the engine's figures; per source family, the points, their median absolute error and the
worst one; and the headline (median error, pairwise order, Spearman medians for groups of >= 5
GPUs and of 3-4 apart).

Points are CSV rows (see ``points.csv``): a workload as the API takes it, a catalog GPU and
count, a metric and the published value, and where it was published: ``source_family`` (the
publisher's benchmark series) and ``source_key`` (one measurement campaign: suite + round +
submitter for MLPerf, the system for TOP500, the page or file otherwise; ``;`` between keys
when a row drew on several). A held-out point that shares a key with a calibration row is not
held out: the headline leaves it out and lists it. Files are read here, never by the engine.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from service.engine import estimate
from service.engine.cache import EngineCache, Memo
from service.engine.physics.estimate import workload_rate
from service.engine.types import Estimate, GpuSpec, Workload
from service.workloads.schemas import WorkloadSpec
from tests.unit.catalog_data import load_gpus

HERE = Path(__file__).resolve().parent
POINTS = HERE / "points.csv"
CALIBRATION = HERE / "calibration.csv"
LOWER_IS_BETTER = frozenset({"ttft_ms", "tpot_ms", "latency_ms"})


@dataclass(frozen=True)
class Point:
    id: str
    group: str
    kind: str
    gpu: GpuSpec
    gpu_count: int
    metric: str
    value: float
    workload: Workload
    source: str
    source_family: str
    source_keys: frozenset[str]


@dataclass(frozen=True)
class Scored:
    point: Point
    predicted: float
    baseline: float
    """Datasheet peak x GPUs at the workload's precision (higher = predicted better; for
    latency metrics too)."""

    @property
    def error(self) -> float:
        return self.predicted / self.point.value - 1.0


@cache
def _gpus() -> dict[str, GpuSpec]:
    return {g.slug: g for g in load_gpus()}


def load(path: Path = POINTS) -> list[Point]:
    out = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            spec = WorkloadSpec.model_validate(json.loads(row["workload_json"]))
            out.append(Point(
                id=row["id"],
                group=row["group"],
                kind=row["kind"],
                gpu=_gpus()[row["gpu_slug"]],
                gpu_count=int(row["gpu_count"]),
                metric=row["metric"],
                value=float(row["value"]),
                workload=spec.to_engine(),
                source=row["source"],
                source_family=row["source_family"],
                source_keys=parse_source_keys(row["source_key"]),
            ))
    return out


def parse_source_keys(text: str) -> frozenset[str]:
    return frozenset(k.strip() for k in text.split(";") if k.strip())


_MLPERF_REPO = re.compile(r"github\.com/mlcommons/(inference|training)_results_(v[0-9.]+)")
_MLPERF_SUBMITTER = re.compile(r"closed/([^/]+)/")
_MLPERF_NAMED = re.compile(r"MLPerf (Inference|Training) (v[0-9.]+) closed \(([^)]+)\)")


def derived_source_key(source: str, locator: str) -> str | None:
    """The source key that a row's ``source`` and ``source_locator`` name, where they name one.

    MLPerf: ``mlperf-<suite>-<round>/<submitter>``, read from the results repository and the
    ``closed/<submitter>/`` path, or from "MLPerf <Suite> <round> closed (<submitter>)".
    Another GitHub repository: the repository and the file path that opens the locator. None
    when the row names no such thing (a paper, a TOP500 system, a recalled figure): its
    ``source_key`` column is then the only identity.
    """
    repo = _MLPERF_REPO.fullmatch(source)
    if repo:
        submitter = _MLPERF_SUBMITTER.match(locator)
        if submitter is None:
            return None
        return f"mlperf-{repo[1]}-{repo[2]}/{submitter[1].lower()}"
    named = _MLPERF_NAMED.match(source)
    if named:
        return f"mlperf-{named[1].lower()}-{named[2]}/{named[3].lower()}"
    if source.startswith("github.com/") and locator:
        path = locator.split()[0].rstrip(",:")
        if "/" in path or "." in path:
            return f"{source}/{path}"
    return None


def same_source(points: Iterable[Point], calibration: Iterable[Point]) -> list[Point]:
    """Points that share a source key with a calibration row (so are not held out)."""
    used = set().union(*(c.source_keys for c in calibration))
    return [p for p in points if p.source_keys & used]


def _metric(p: Point, est: Estimate) -> float:
    m = p.metric
    if m == "samples_per_s":
        value = est.samples_per_s
    elif m == "tokens_per_s":
        value = est.tokens_per_s
    elif m in ("ttft_ms", "tpot_ms", "latency_ms"):
        value = getattr(est, m)
    elif m in ("tflops", "gb_per_s"):
        spec = p.workload.compute
        assert spec is not None and est.time_to_complete_hours
        # the rate while the job runs (HPL's Rmax, STREAM's GB/s): its start-up left out
        seconds = est.time_to_complete_hours * 3600.0 - (est.startup_s or 0.0)
        value = (spec.total_tflop if m == "tflops" else spec.total_gb_moved) / seconds
    else:
        raise ValueError(f"{p.id}: unknown metric {m!r}")
    if value is None:
        raise ValueError(f"{p.id}: the estimate has no {m}")
    return float(value)


def score(points: Iterable[Point], cache_: EngineCache | None = None) -> list[Scored]:
    shared = cache_ or EngineCache()
    out = []
    for p in points:
        est = estimate(p.workload, p.gpu, p.gpu_count, memo=Memo(shared))
        rate = workload_rate(p.workload, p.gpu)
        peak = (rate.tflops if rate else 0.0) * p.gpu_count
        if p.metric in ("gb_per_s",):
            peak = p.gpu.memory_bandwidth_gb_s * p.gpu_count
        out.append(Scored(p, _metric(p, est), peak))
    return out


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0
        i = j + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rho (Pearson on ranks, ties averaged); 0 when a side is constant."""
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return 0.0 if va == 0 or vb == 0 else cov / (va * vb) ** 0.5


def pairwise(a: Sequence[float], b: Sequence[float]) -> tuple[int, int]:
    """(pairs ordered alike, pairs compared); pairs tied in ``b`` (measured) are skipped."""
    good = total = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            if b[i] == b[j]:
                continue
            total += 1
            good += (a[i] - a[j]) * (b[i] - b[j]) > 0
    return good, total


@dataclass(frozen=True)
class GroupReport:
    group: str
    n: int
    spearman: float
    baseline_spearman: float
    pairs_ok: int
    baseline_pairs_ok: int
    pairs: int
    median_abs_error: float
    best_named: bool
    """The GPU the engine ranks first is the one measured best."""
    baseline_best_named: bool


def groups(scored: Sequence[Scored]) -> list[GroupReport]:
    by: dict[str, list[Scored]] = {}
    for s in scored:
        by.setdefault(s.point.group, []).append(s)
    out = []
    for name, items in sorted(by.items()):
        sign = -1.0 if items[0].point.metric in LOWER_IS_BETTER else 1.0
        measured = [sign * s.point.value for s in items]
        engine = [sign * s.predicted for s in items]
        base = [s.baseline for s in items]
        ok, total = pairwise(engine, measured)
        bok, _ = pairwise(base, measured)
        best = max(range(len(items)), key=lambda i: measured[i])
        out.append(GroupReport(
            group=name,
            n=len(items),
            spearman=spearman(engine, measured) if len(items) >= 3 else float("nan"),
            baseline_spearman=spearman(base, measured) if len(items) >= 3 else float("nan"),
            pairs_ok=ok,
            baseline_pairs_ok=bok,
            pairs=total,
            median_abs_error=statistics.median(abs(s.error) for s in items),
            best_named=max(range(len(items)), key=lambda i: engine[i]) == best,
            baseline_best_named=max(range(len(items)), key=lambda i: base[i]) == best,
        ))
    return out


SPEARMAN_MIN_GPUS = 5
"""Groups of at least this many GPUs carry the Spearman headline: over 3 GPUs rho is one of
1.0, 0.5, -0.5, -1.0 and over 4 it moves in steps of 0.2, so one swapped pair moves it a lot
and a perfect score comes by chance often (1 in 6 over 3 GPUs, 1 in 24 over 4)."""


@dataclass(frozen=True)
class Summary:
    points: int
    gpus: int
    median_spearman: float
    """Median over groups of >= ``SPEARMAN_MIN_GPUS`` GPUs."""
    median_baseline_spearman: float
    groups_spearman: int
    median_spearman_small: float
    """Median over groups of 3 to ``SPEARMAN_MIN_GPUS - 1`` GPUs (reported apart)."""
    median_baseline_spearman_small: float
    groups_spearman_small: int
    pairwise: float
    baseline_pairwise: float
    median_abs_error: float
    best_named: float
    baseline_best_named: float


NAN = float("nan")


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else NAN


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else NAN


def summarize(scored: Sequence[Scored], reports: Sequence[GroupReport]) -> Summary:
    ranked = [r for r in reports if r.n >= SPEARMAN_MIN_GPUS]
    small = [r for r in reports if 3 <= r.n < SPEARMAN_MIN_GPUS]
    compared = [r for r in reports if r.n >= 2]
    pairs = sum(r.pairs for r in reports)
    return Summary(
        points=len(scored),
        gpus=len({s.point.gpu.slug for s in scored}),
        median_spearman=_median([r.spearman for r in ranked]),
        median_baseline_spearman=_median([r.baseline_spearman for r in ranked]),
        groups_spearman=len(ranked),
        median_spearman_small=_median([r.spearman for r in small]),
        median_baseline_spearman_small=_median([r.baseline_spearman for r in small]),
        groups_spearman_small=len(small),
        pairwise=sum(r.pairs_ok for r in reports) / pairs if pairs else NAN,
        baseline_pairwise=sum(r.baseline_pairs_ok for r in reports) / pairs if pairs else NAN,
        median_abs_error=statistics.median(abs(s.error) for s in scored),
        best_named=_mean([float(r.best_named) for r in compared]),
        baseline_best_named=_mean([float(r.baseline_best_named) for r in compared]),
    )


@dataclass(frozen=True)
class FamilyReport:
    family: str
    n: int
    median_abs_error: float
    worst: Scored
    """The point with the largest absolute error."""


def families(scored: Sequence[Scored]) -> list[FamilyReport]:
    by: dict[str, list[Scored]] = {}
    for s in scored:
        by.setdefault(s.point.source_family, []).append(s)
    return [
        FamilyReport(
            family=name,
            n=len(items),
            median_abs_error=statistics.median(abs(s.error) for s in items),
            worst=max(items, key=lambda s: abs(s.error)),
        )
        for name, items in sorted(by.items())
    ]


def render_families(scored: Sequence[Scored], not_held_out: Sequence[Scored] = ()) -> str:
    """Per source family: points, median absolute error, worst point; families whose points
    share a source with calibration are listed apart (they are not in the headline)."""
    lines = [
        "| source family | points | median abs err | worst point |",
        "|---|---|---|---|",
    ]
    for label, items in (("", scored), (" (same source as calibration)", not_held_out)):
        for f in families(items):
            lines.append(f"| {f.family}{label} | {f.n} | {f.median_abs_error:.0%} | "
                         f"{f.worst.point.id} {f.worst.error:+.0%} |")
    return "\n".join(lines)


def _rho(value: float) -> str:
    return "-" if value != value else f"{value:.3f}"


def _points_table(scored: Sequence[Scored]) -> list[str]:
    lines = [
        "| point | GPU x n | metric | published | engine | error |",
        "|---|---|---|---|---|---|",
    ]
    for x in scored:
        p = x.point
        lines.append(f"| {p.id} | {p.gpu.slug} x{p.gpu_count} | {p.metric} | {p.value:,.4g} | "
                     f"{x.predicted:,.4g} | {x.error:+.0%} |")
    return lines


def render(
    scored: Sequence[Scored],
    reports: Sequence[GroupReport],
    not_held_out: Sequence[Scored] = (),
) -> str:
    """The per-group table, the headline and the per-family table over ``scored``, then each
    point; ``not_held_out`` (points sharing a source with calibration) only in the per-family
    table and a list of their own."""
    lines = [
        "| group | GPUs | Spearman (engine / peak) | pairwise (engine / peak) | median abs err |"
        " best named (engine / peak) |",
        "|---|---|---|---|---|---|",
    ]
    for r in reports:
        rho = "-" if r.n < 3 else f"{r.spearman:.2f} / {r.baseline_spearman:.2f}"
        pw = f"{r.pairs_ok}/{r.pairs} / {r.baseline_pairs_ok}/{r.pairs}" if r.pairs else "-"
        best = f"{'yes' if r.best_named else 'no'} / {'yes' if r.baseline_best_named else 'no'}"
        lines.append(f"| {r.group} | {r.n} | {rho} | {pw} | {r.median_abs_error:.0%} | {best} |")
    s = summarize(scored, reports)
    left_out = (
        f" {len(not_held_out)} points that share a source with calibration are left out."
        if not_held_out else ""
    )
    lines += [
        "",
        f"{s.points} points, {s.gpus} GPUs, {len(reports)} groups.{left_out}",
        f"Median Spearman per group, groups of >= {SPEARMAN_MIN_GPUS} GPUs "
        f"({s.groups_spearman}): engine {_rho(s.median_spearman)}, "
        f"datasheet peak {_rho(s.median_baseline_spearman)}.",
        f"Median Spearman per group, groups of 3-{SPEARMAN_MIN_GPUS - 1} GPUs "
        f"({s.groups_spearman_small}, little signal each): engine "
        f"{_rho(s.median_spearman_small)}, datasheet peak "
        f"{_rho(s.median_baseline_spearman_small)}.",
        f"Pairwise order: engine {s.pairwise:.1%}, datasheet peak {s.baseline_pairwise:.1%}.",
        f"Best GPU named: engine {s.best_named:.0%}, datasheet peak {s.baseline_best_named:.0%}.",
        f"Median absolute error: {s.median_abs_error:.1%}.",
        "",
        render_families(scored, not_held_out),
        "",
        *_points_table(scored),
    ]
    if not_held_out:
        lines += ["", "Not held out (same source as a calibration row):", "",
                  *_points_table(not_held_out)]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    paths = [Path(a) for a in argv] or [POINTS]
    calibration = load(CALIBRATION)
    for path in paths:
        scored = score(load(path))
        shared = (
            set() if path.resolve() == CALIBRATION.resolve()
            else {p.id for p in same_source((s.point for s in scored), calibration)}
        )
        held = [s for s in scored if s.point.id not in shared]
        print(f"## {path.name}\n")
        print(render(held, groups(held), [s for s in scored if s.point.id in shared]))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
