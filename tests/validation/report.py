"""Engine vs published measurements: the held-out validation set and the calibration points.

``python -m tests.validation.report [points.csv ...]`` (``make validate``) prints, per workload
group, the engine's Spearman rank correlation across GPUs and its pairwise order accuracy next
to the datasheet-peak baseline (GPUs ordered by their dense peak at the workload's precision,
the order the engine gave before v2), and the median absolute error of the engine's figures.

Points are CSV rows (see ``points.csv``): a workload as the API takes it, a catalog GPU and
count, a metric and the published value. Files are read here, never by the engine.
"""

from __future__ import annotations

import csv
import json
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
            ))
    return out


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
        seconds = est.time_to_complete_hours * 3600.0
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


@dataclass(frozen=True)
class Summary:
    points: int
    gpus: int
    median_spearman: float
    median_baseline_spearman: float
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
    ranked = [r for r in reports if r.n >= 3]
    compared = [r for r in reports if r.n >= 2]
    pairs = sum(r.pairs for r in reports)
    return Summary(
        points=len(scored),
        gpus=len({s.point.gpu.slug for s in scored}),
        median_spearman=_median([r.spearman for r in ranked]),
        median_baseline_spearman=_median([r.baseline_spearman for r in ranked]),
        pairwise=sum(r.pairs_ok for r in reports) / pairs if pairs else NAN,
        baseline_pairwise=sum(r.baseline_pairs_ok for r in reports) / pairs if pairs else NAN,
        median_abs_error=statistics.median(abs(s.error) for s in scored),
        best_named=_mean([float(r.best_named) for r in compared]),
        baseline_best_named=_mean([float(r.baseline_best_named) for r in compared]),
    )


def render(scored: Sequence[Scored], reports: Sequence[GroupReport]) -> str:
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
    lines += [
        "",
        f"{s.points} points, {s.gpus} GPUs, {len(reports)} groups.",
        f"Median Spearman per group (>= 3 GPUs): engine {s.median_spearman:.3f}, "
        f"datasheet peak {s.median_baseline_spearman:.3f}.",
        f"Pairwise order: engine {s.pairwise:.1%}, datasheet peak {s.baseline_pairwise:.1%}.",
        f"Best GPU named: engine {s.best_named:.0%}, datasheet peak {s.baseline_best_named:.0%}.",
        f"Median absolute error: {s.median_abs_error:.1%}.",
        "",
        "| point | GPU x n | metric | published | engine | error |",
        "|---|---|---|---|---|---|",
    ]
    for x in scored:
        p = x.point
        lines.append(f"| {p.id} | {p.gpu.slug} x{p.gpu_count} | {p.metric} | {p.value:,.4g} | "
                     f"{x.predicted:,.4g} | {x.error:+.0%} |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    paths = [Path(a) for a in argv] or [POINTS]
    for path in paths:
        scored = score(load(path))
        print(f"## {path.name}\n")
        print(render(scored, groups(scored)))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
