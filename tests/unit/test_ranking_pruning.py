"""Branch and bound in recommend(): the same top `limit` as the exhaustive search, bounds that
never exceed the real best score, and a warning counting the GPUs skipped."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterator
from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from service.engine.cache import Memo
from service.engine.choice import figures as fg
from service.engine.choice import ranking as rk
from service.engine.choice.bounds import (
    NO_MINIMA,
    Pending,
    balanced_floor,
    count_floors,
    pareto,
)
from service.engine.choice.cost import OfferIndex, group_offers, usd_per_gpu_hour
from service.engine.choice.search import BalancedSearch, Skipped
from service.engine.constants import MAX_AUTO_BATCH
from service.engine.physics.estimate import (
    known_padded_point,
    more_replicas_than_needed,
    serving_point,
)
from service.engine.physics.performance import peak_rate
from service.engine.physics.serving import ServingModel, largest_meeting
from service.engine.recommend_types import (
    Constraints,
    CostSettings,
    Objective,
    Offer,
    Recommendation,
)
from service.engine.types import ComputeSpec, GpuSpec, InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import load_gpus, load_offers

OBJECTIVES: tuple[Objective, ...] = ("cost", "time", "balanced", "energy")
WORKLOADS = {
    "llama-3.1-8b-serve": Workload(
        kind="inference",
        precision="bf16",
        model=PRESETS["llama-3.1-8b"].model,
        inference=InferenceSpec(
            prompt_tokens=1024,
            output_tokens=256,
            max_ttft_ms=2000,
            max_tpot_ms=60,
            target_requests_per_s=10,
        ),
    ),
    "llama-2-70b-pretrain": Workload(
        kind="training",
        precision="bf16",
        model=PRESETS["llama-2-70b"].model,
        training=TrainingSpec(batch_size=1024, seq_len=4096, tokens=2e11),
    ),
    "resnet-50-int8": Workload(
        kind="inference",
        precision="int8",
        model=PRESETS["resnet-50"].model,
        inference=InferenceSpec(target_requests_per_s=5000, max_latency_ms=10),
    ),
    "fp64-compute": Workload(
        kind="compute",
        precision="fp64",
        compute=ComputeSpec(total_tflop=5e6, total_gb_moved=2e6, memory_gb=60),
    ),
}
LIMIT = 10
SYNTHETIC_SIZE = 300
SYNTHETIC_SEED = 20240611


@cache
def synthetic() -> tuple[tuple[GpuSpec, ...], tuple[Offer, ...]]:
    """~300 perturbed clones of the seeded GPUs (rates, bandwidth, memory, power x 0.8-1.25)
    with their quotes re-priced (x 0.7-1.4) and thinned, from a fixed seed."""
    rng = random.Random(SYNTHETIC_SEED)
    base_gpus, base_offers = load_gpus(), group_offers(load_offers())
    rate_fields = ("fp64_tflops", "fp64_tensor_tflops", "fp32_tflops", "tf32_tflops",
                   "bf16_tflops", "fp16_tflops", "fp8_tflops", "int8_tops")
    gpus: list[GpuSpec] = []
    offers: list[Offer] = []
    qid = 1
    for i in range(SYNTHETIC_SIZE):
        g = base_gpus[i % len(base_gpus)]
        factor = rng.uniform(0.8, 1.25)
        changes: dict[str, object] = {
            f: getattr(g, f) * factor for f in rate_fields if getattr(g, f) is not None
        }
        changes.update(
            slug=f"{g.slug}-syn{i}",
            memory_bandwidth_gb_s=g.memory_bandwidth_gb_s * rng.uniform(0.8, 1.25),
            memory_gb=g.memory_gb * rng.choice((0.8, 1.0, 1.0, 1.25)),
            tdp_w=g.tdp_w * rng.uniform(0.8, 1.25),
        )
        clone = dataclasses.replace(g, **changes)  # type: ignore[arg-type]
        gpus.append(clone)
        for o in base_offers.get(g.slug, ()):
            if rng.random() < 0.2:
                continue
            price = rng.uniform(0.7, 1.4)
            offers.append(dataclasses.replace(
                o,
                quote_id=qid,
                gpu_slug=clone.slug,
                price_usd_per_hour=None if o.price_usd_per_hour is None
                else o.price_usd_per_hour * price,
                purchase_price_usd=None if o.purchase_price_usd is None
                else o.purchase_price_usd * price,
            ))
            qid += 1
    return tuple(gpus), tuple(offers)


def _pair(
    workload: Workload, objective: Objective, gpus: object, offers: object, **kw: object
) -> tuple[Recommendation, Recommendation]:
    def run(exhaustive: bool) -> Recommendation:
        return rk.recommend(
            workload, gpus, offers, objective=objective, limit=LIMIT,  # type: ignore[arg-type]
            exhaustive=exhaustive, **kw,  # type: ignore[arg-type]
        )

    return run(False), run(True)


def _check_same_top(pruned: Recommendation, full: Recommendation) -> None:
    assert pruned.recommendations == full.recommendations
    full_rejected = {r.gpu_slug: r for r in full.rejected}
    returned = {c.gpu_slug for c in full.recommendations}
    # every rejection the pruned search makes is the exhaustive one (GPUs evaluated in full
    # and ranked below the top included), except the GPUs it skipped ('outranked' by their
    # best case): those are neither returned by the exhaustive search nor better
    outranked = [r for r in pruned.rejected
                 if r.code == "outranked" and not r.reason.startswith("ranked #")]
    for r in pruned.rejected:
        if r in outranked:
            assert r.gpu_slug not in returned
            assert r.fix.kind == "limit" and r.fix.field == "limit"
        elif r.reason.startswith("ranked #"):
            # evaluated in full by both, ranked below the top: the same score and count (its
            # rank is among the GPUs each search evaluated, and under cost or time the
            # tolerance picks depend on which others are there)
            full_r = full_rejected[r.gpu_slug]
            assert full_r.reason.startswith("ranked #")
            assert r.reason.split(" ", 2)[2] == full_r.reason.split(" ", 2)[2]
            assert dataclasses.replace(r, reason=full_r.reason) == full_r
        else:
            assert full_rejected[r.gpu_slug] == r
    skipped = [w for w in pruned.warnings if "not evaluated in full" in w]
    if skipped:
        assert int(skipped[0].split()[0]) == len(outranked) > 0
        assert f"cannot reach the top {LIMIT} under {pruned.objective}" in skipped[0]
    else:
        assert not outranked
        assert pruned == full


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_pruned_top_equals_exhaustive_seeded(name: str, objective: Objective) -> None:
    pruned, full = _pair(WORKLOADS[name], objective, load_gpus(), load_offers())
    _check_same_top(pruned, full)


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_pruned_top_equals_exhaustive_synthetic(name: str, objective: Objective) -> None:
    gpus, offers = synthetic()
    pruned, full = _pair(WORKLOADS[name], objective, gpus, offers)
    _check_same_top(pruned, full)
    assert len(full.recommendations) == LIMIT


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_pruning_skips_gpus_on_the_synthetic_catalog(objective: Objective) -> None:
    gpus, offers = synthetic()
    rec = rk.recommend(WORKLOADS["fp64-compute"], gpus, offers, objective=objective, limit=3)
    assert any("not evaluated in full" in w for w in rec.warnings)


@pytest.mark.parametrize(
    "kw",
    [
        {"deployment": "on_prem"},
        {"max_gpus": 16},
        {"providers": ("aws", "gcp")},
        {"budget_usd": 5e5},
    ],
)
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_pruned_top_equals_exhaustive_with_constraints(
    objective: Objective, kw: dict[str, object]
) -> None:
    gpus, offers = synthetic()
    for workload in (WORKLOADS["fp64-compute"], WORKLOADS["llama-3.1-8b-serve"]):
        pruned, full = _pair(workload, objective, gpus, offers,
                             constraints=Constraints(**kw))  # type: ignore[arg-type]
        _check_same_top(pruned, full)


def _req(workload: Workload, objective: Objective, index: OfferIndex | None = None
         ) -> rk.Request:
    return rk.Request(workload, Constraints(), CostSettings(), objective, Memo(), False,
                      index or OfferIndex(load_offers()))


def _screened(workload: Workload, objective: Objective) -> list[Pending]:
    index = OfferIndex(load_offers())
    out = []
    for gpu in load_gpus():
        got = rk._screen(_req(workload, objective, index), gpu, index)
        if isinstance(got, Pending):
            out.append(got)
    return out


def _evaluated(workload: Workload, objective: Objective) -> Iterator[tuple[Pending, list[Any]]]:
    """Each screened GPU that has options, with its options."""
    for p in _screened(workload, objective):
        options, _, _ = rk._evaluate_gpu(_req(workload, objective), p)
        if options:
            yield p, options


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_bounds_never_exceed_the_real_best(name: str, objective: Objective) -> None:
    workload = WORKLOADS[name]
    checked = 0
    for p, options in _evaluated(workload, objective):
        checked += 1
        if objective == "balanced":
            money = min(o.money if o.money is not None else o.proxy for o in options)
            assert p.lb_cost <= money, p.gpu.slug
            assert p.lb_time <= min(o.time for o in options), p.gpu.slug
        else:
            best = min(rk._value(o, objective, NO_MINIMA) for o in options)
            assert p.lb <= best, (p.gpu.slug, p.lb, best)
            assert p.lb > 0, p.gpu.slug  # every seeded GPU with a rate gets a real bound
            # the bound is meaningful, not vanishingly small (time bounds assume all the
            # GPUs the offers can hold, up to the cap, so only cost and energy are held to this)
            if objective in ("cost", "energy") and name != "llama-2-70b-pretrain":
                assert p.lb >= best * 0.05, (p.gpu.slug, p.lb, best)
    assert checked >= 5


FLOOR_WORKLOADS = {
    # an MoE model (the busiest expert, every expert's backward GEMMs), a sliding window
    # longer than it (the floor's attention FLOPs), an encoder fine-tuned with eager attention
    # and no LM head (bidirectional pairs, the head's share of the floor)
    "mixtral-pretrain": Workload(
        kind="training", precision="bf16", model=PRESETS["mixtral-8x7b"].model,
        training=TrainingSpec(batch_size=256, seq_len=4096, tokens=1e10)),
    "mistral-16k": Workload(
        kind="training", precision="bf16", model=PRESETS["mistral-7b"].model,
        training=TrainingSpec(batch_size=64, seq_len=16384, tokens=1e10)),
    "bert-squad-eager": Workload(
        kind="training", precision="fp16", model=PRESETS["bert-large"].model,
        training=TrainingSpec(batch_size=256, seq_len=384, samples=1e6, flash_attention=False,
                              lm_head_fraction=0.0)),
    # activation checkpointing: every layout recomputes the layers' forward GEMMs, which the
    # floor counts (a dense model and an MoE one, whose recompute runs the routed experts)
    "llama-70b-checkpointed": Workload(
        kind="training", precision="bf16", model=PRESETS["llama-2-70b"].model,
        training=TrainingSpec(batch_size=1024, seq_len=4096, tokens=2e11,
                              activation_checkpointing=True)),
    "mixtral-checkpointed": Workload(
        kind="training", precision="bf16", model=PRESETS["mixtral-8x7b"].model,
        training=TrainingSpec(batch_size=256, seq_len=4096, tokens=1e10,
                              activation_checkpointing=True)),
}


@pytest.mark.parametrize("objective", ("time", "cost"))
@pytest.mark.parametrize("name", sorted(FLOOR_WORKLOADS))
def test_training_floors_hold_for_moe_windows_and_encoders(name: str,
                                                           objective: Objective) -> None:
    """The screen's bound of each GPU never exceeds its best option: the floor FLOPs are no
    more than any layout runs (MoE backward over every routed expert, attention over the
    pairs the model scores)."""
    workload = FLOOR_WORKLOADS[name]
    checked = 0
    for p, options in _evaluated(workload, objective):
        checked += 1
        best = min(rk._value(o, objective, NO_MINIMA) for o in options)
        assert 0 < p.lb <= best, (p.gpu.slug, p.lb, best)
    assert checked >= 3


def test_the_recomputed_forward_is_the_layer_shapes() -> None:
    """The checkpointed floor adds the layers' forward GEMM FLOPs: exactly the GEMMs LayerOps
    times at TP 1 (QKV, attention output, the MLP through its routed experts), for every
    transformer preset, and llama-2-70b's floor rises by a third of its layer FLOPs."""
    from service.engine.physics import training as tr
    from service.engine.physics import transformer_ops as tops

    h100 = next(g for g in load_gpus() if g.slug == "nvidia-h100-sxm5-80gb")
    base = FLOOR_WORKLOADS["llama-70b-checkpointed"]
    rate = peak_rate(h100, "bf16")
    assert rate is not None
    dev = tr.training_device(base, h100, rate, Memo())
    checked = 0
    for preset in PRESETS.values():
        model = preset.model
        if not isinstance(model, type(PRESETS["llama-2-70b"].model)):
            continue
        ops = tops.LayerOps(model, dev, 1, 2.0, 2.0)
        mlp = (ops.up_n * ops.h + ops.h * ops.down_k) * ops.top_k
        want = 2.0 * model.layers * (ops.qkv_n * ops.h + ops.h * ops.o_k + mlp)
        assert tops.layer_forward_flops_per_token(model) == pytest.approx(want, rel=1e-12)
        checked += 1
    assert checked >= 10
    assert base.training is not None
    plain = dataclasses.replace(base, training=dataclasses.replace(
        base.training, activation_checkpointing=False))
    ratio = tr.training_floor_flops(base) / tr.training_floor_flops(plain)
    assert 1.25 < ratio < 1.34, ratio


EXTRA_INFERENCE = {
    "fixed-batch": InferenceSpec(prompt_tokens=512, output_tokens=128, batch_size=8,
                                 max_latency_ms=5000),
    "no-limits": InferenceSpec(prompt_tokens=512, output_tokens=128),
    "latency-target": InferenceSpec(prompt_tokens=1024, output_tokens=256,
                                    max_latency_ms=8000, target_requests_per_s=2),
}


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("name", sorted(EXTRA_INFERENCE))
def test_pruned_top_equals_exhaustive_inference_variants(name: str, objective: Objective) -> None:
    """The throughput-mode latency floor (fixed batch, no limits, a target) and the balanced
    search evaluating blocking GPUs out of turn: the same top, no GPU listed twice."""
    workload = Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                        inference=EXTRA_INFERENCE[name])
    for gpus, offers in ((load_gpus(), load_offers()), synthetic()):
        pruned, full = _pair(workload, objective, gpus, offers)
        _check_same_top(pruned, full)
        slugs = [c.gpu_slug for c in pruned.recommendations]
        assert len(slugs) == len(set(slugs))


@pytest.mark.parametrize("max_gpus", [None, 4, 16])
def test_memory_rejections_match_the_full_estimate(max_gpus: int | None) -> None:
    """Training rejections on memory are explained from the minimum-memory layout alone
    (memory_only.memory_estimate): the same reason and fix text as from the full estimate."""
    from service.engine.choice import explain as ex
    from service.engine.physics.estimate import estimate, gpu_count_candidates, min_gpus_to_fit
    from service.engine.physics.memory_only import memory_estimate

    workload = WORKLOADS["llama-2-70b-pretrain"]
    cap = max_gpus or rk.CAP_TRAINING_GPUS
    checked = 0
    for gpu in load_gpus():
        n = gpu_count_candidates(gpu, cap)[-1]
        first = min_gpus_to_fit(workload, gpu)
        if first is not None and first <= n:
            continue
        fast = ex.memory_failure(gpu, memory_estimate(workload, gpu, n), first, cap)
        assert fast == ex.memory_failure(gpu, estimate(workload, gpu, n), first, cap)
        checked += 1
    assert checked > 0


def priced_balanced_options(workload: Workload) -> Iterator[
        tuple[Pending, Any, dict[int, tuple[Offer | None, int]], list[tuple[float, float]]]]:
    """Each priced option of each seeded GPU type a balanced ranking screens: (its screen,
    the option, the counts the offers plan, the (cost, time) floor pairs of its count,
    ranking._planned_floors)."""
    for p in _screened(workload, "balanced"):
        req = _req(workload, "balanced")
        options, _, _ = rk._evaluate_gpu(req, p)
        plan, planned = rk._planned_floors(req, p)
        floors = dict(zip(sorted(plan), planned, strict=True))
        for o in options:
            if o.money is not None and o.offer is not None:
                yield p, o, plan, floors[o.est.gpu_count]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_count_floors_never_exceed_the_real_option(name: str) -> None:
    """The balanced probe skips a count only on these floors: each must hold for its count."""
    workload = WORKLOADS[name]
    checked = tighter = exact = 0
    for p, o, plan, pairs in priced_balanced_options(workload):
        assert o.offer == plan[o.est.gpu_count][0]
        # an option is at or above one of its count's pairs (serving with a target: one per
        # range of copies, bounds.count_pairs); the first has the count's least cost floor,
        # the last its least time floor
        assert any(a <= o.money and b <= o.time for a, b in pairs), (
            p.gpu.slug, o.est.gpu_count, pairs, o.money, o.time)
        lbc = pairs[0][0]
        lbt = max(b for a, b in pairs if a <= o.money and b <= o.time)
        assert pairs[-1][1] == min(b for _, b in pairs)
        # a count's own floors are at least the GPU's (bounds.count_floors)
        coarse = count_floors(workload.kind, p, o.est.gpu_count, usd_per_gpu_hour(
            o.offer, p.gpu, CostSettings()))
        assert lbc >= coarse[0] * (1 - 1e-12) and lbt >= p.lb_time
        tighter += lbt > p.lb_time * 1.01 or lbc > coarse[0] * 1.01
        exact += lbt >= o.time * (1 - 1e-8)
        checked += 1
    assert checked >= 10
    if name == "fp64-compute":
        # a compute job's count floors are its times on the count, exchanges included (at
        # the fastest network any offer gives: exact where the count stays in one node)
        assert tighter >= 3 and exact >= checked // 2, (tighter, exact, checked)
    if name == "llama-3.1-8b-serve":
        # LLM serving: a small count cannot reach a larger one's TP latency, nor pay for
        # fewer GPUs than it has (the floors the balanced bound of an unevaluated GPU is taken
        # on; a CNN has one split and its work, not the GPUs paid, sets its cost floor)
        assert tighter >= 3, tighter


def _bisect(roof: ServingModel, hi: int) -> int:
    if roof.meets(hi):
        return hi
    if hi == 1 or not roof.meets(1):
        return 0
    lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if roof.meets(mid) else (lo, mid)
    return lo


@pytest.mark.parametrize("name", sorted(EXTRA_INFERENCE) + ["llama-3.1-8b-serve"])
def test_boundary_search_equals_bisection(name: str) -> None:
    """largest_meeting probes where the limits are crossed; the answer is the bisection's."""
    base = WORKLOADS["llama-3.1-8b-serve"]
    spec = base.inference if name not in EXTRA_INFERENCE else EXTRA_INFERENCE[name]
    workload = dataclasses.replace(base, inference=spec)
    for gpu in load_gpus():
        rate = peak_rate(gpu, workload.precision, matmul=True)
        if rate is None:
            continue
        for tp in (1, 2, 4, 8):
            roof = ServingModel(workload, gpu, rate, tp, 100.0)
            assert largest_meeting(roof) == _bisect(roof, int(MAX_AUTO_BATCH)), (gpu.slug, tp)


def _planned(workload: Workload, constraints: Constraints, index: OfferIndex
             ) -> Iterator[tuple[rk.Request, Pending, dict[int, tuple[Offer | None, int]]]]:
    """Each seeded GPU type a cost ranking under ``constraints`` evaluates: its request, its
    screen and the counts it plans with their offers."""
    for gpu in load_gpus():
        req = dataclasses.replace(_req(workload, "cost", index), constraints=constraints)
        p = rk._screen(req, gpu, index)
        if isinstance(p, Pending):
            yield req, p, rk._plan(req, p)[0]


@pytest.mark.parametrize("name", ["llama-2-70b-pretrain", "fp64-compute"])
def test_a_job_count_without_light_figures_misses_a_limit(name: str) -> None:
    """A ranking builds a job count's full option only when the GPU has no feasible count
    (its failure is then reported): that is exact only if the light figures are Figures exactly
    when the full option misses no limit (else None: memory, idle replicas; or Missed: a cost
    limit, with the full failure's stage and overage, from which the walk picks the one count
    it builds when every count misses)."""
    workload = WORKLOADS[name]
    index = OfferIndex(load_offers())
    light = missed = 0
    stages: set[int] = set()
    for c in (Constraints(), Constraints(max_usd_per_hour=40.0),
              Constraints(max_usd_per_hour=400.0), Constraints(max_gpus=12),
              Constraints(deadline_hours=2.0), Constraints(budget_usd=2e4),
              Constraints(budget_usd=500.0)):
        for req, p, plan in _planned(workload, c, index):
            counts = sorted(plan)
            figures = fg.figures_of(workload, p.gpu, [(n, *plan[n]) for n in counts],
                                    req.settings, req.constraints, req.memo)
            for n, fig in zip(counts, figures, strict=True):
                _, miss = rk._full_option(req, p, n, *plan[n], False)
                assert isinstance(fig, fg.Figures) == (miss is None), (p.gpu.slug, n, c, miss)
                if isinstance(fig, fg.Missed):
                    assert miss is not None and (fig.stage, fig.overage) == (
                        miss.stage, miss.overage), (p.gpu.slug, n, c, fig, miss)
                    stages.add(fig.stage)
                light += isinstance(fig, fg.Figures)
                missed += not isinstance(fig, fg.Figures)
    assert light >= 10 and missed >= 3, (light, missed)
    # every cost limit a job can miss (max_gpus caps the counts planned: never missed)
    assert stages == {3, 4, 5}, stages


def test_a_serving_count_marked_missed_misses_a_limit() -> None:
    """Serving in throughput mode: figures.MISS (no batch meets the latency limits, the batch
    at the load misses them, or a cost limit) is skipped like a job's missing figures, so the
    full option must miss a limit exactly then; light figures mean it misses none."""
    base = WORKLOADS["llama-3.1-8b-serve"]
    assert base.inference is not None
    index = OfferIndex(load_offers())
    seen = {"light": 0, "miss": 0}
    for tpot in (60.0, 12.0):
        workload = dataclasses.replace(base, inference=dataclasses.replace(
            base.inference, max_tpot_ms=tpot))
        for max_usd in (None, 30.0):
            constraints = Constraints(max_usd_per_hour=max_usd)
            for req, p, plan in _planned(workload, constraints, index):
                for n in sorted(plan):
                    fig = rk._serving_figures(req, p, n, *plan[n])
                    if fig is None:
                        continue
                    full, miss = rk._full_option(req, p, n, *plan[n], False)
                    missed = isinstance(fig, fg.Missed)
                    assert missed == (miss is not None), (p.gpu.slug, n, tpot, max_usd, miss)
                    if isinstance(fig, fg.Missed):
                        # the full failure's stage and overage, the same floats, and what
                        # the walk reads off the full option to pass it over
                        assert miss is not None
                        assert (fig.stage, repr(fig.overage)) == (miss.stage, repr(miss.overage))
                        assert (fig.idle_gpus, fig.padded) == (
                            rk.idle_gpus(workload, full.est), rk.padded(workload, full.est))
                    seen["miss" if missed else "light"] += 1
    assert seen["light"] >= 10 and seen["miss"] >= 10, seen


@pytest.mark.parametrize("objective", ("cost", "energy"))
@pytest.mark.parametrize("target", (10.0, 60.0))
def test_count_bounds_with_the_floors_replicas_hold(objective: Objective, target: float) -> None:
    """A serving count is skipped when the rate of the replicas it cannot go below (the
    floor's busy GPUs over the count, :attr:`bounds.Floors.gpus_needed`) already beats the
    best option: every option's value is at least that bound, and the bound asks for more
    than one replica somewhere (else it says nothing new)."""
    base = WORKLOADS["llama-3.1-8b-serve"]
    assert base.inference is not None
    workload = dataclasses.replace(base, inference=dataclasses.replace(
        base.inference, target_requests_per_s=target))
    from service.engine.choice.cost import unit_rate_lower_bound

    checked = multi = 0
    for p, options in _evaluated(workload, objective):
        for o in options:
            n = o.est.gpu_count
            needed = p.floor.gpus_needed
            replicas = max(1, -(-needed // n)) if needed > 0 else 1
            bound = unit_rate_lower_bound(workload, objective, p.gpu, n, o.offer, o.instances,
                                          int(replicas))
            if bound is None:
                continue
            # exact where the replicas are the floor's (the pruning clears PRUNE_MARGIN)
            value = rk._value(o, objective, NO_MINIMA)
            assert bound <= value * (1 + 1e-12), (p.gpu.slug, n, replicas, bound, value)
            checked += 1
            multi += replicas > 1
    assert checked >= 10 and multi >= 3, (checked, multi)


def test_a_probed_gpu_with_no_feasible_count_reports_its_failure() -> None:
    """Balanced: a GPU probed out of turn (its floors were below the minima) whose every count
    misses a limit has no option and no floor left; skipped, it read "has no usable price
    quote" though it had one. It is evaluated in full instead, and its failure reported, as
    the exhaustive search reports it."""
    workload = Workload(
        kind="inference", precision="int8", model=PRESETS["bert-large"].model,
        inference=InferenceSpec(prompt_tokens=314, output_tokens=0, batch_size=51,
                                max_latency_ms=74.3, target_requests_per_s=0.17))
    pruned, full = _pair(workload, "balanced", load_gpus(), load_offers())
    _check_same_top(pruned, full)
    priced = {o.gpu_slug for o in load_offers() if o.price_usd_per_hour is not None}
    wrong = [r.gpu_slug for r in pruned.rejected
             if "no usable price quote" in r.reason and r.gpu_slug in priced]
    assert not wrong, wrong
    exhaustive = {r.gpu_slug: r.code for r in full.rejected}
    latency = [r.gpu_slug for r in pruned.rejected if r.code == "latency"]
    assert len(latency) >= 3 and all(exhaustive[s] == "latency" for s in latency), latency


def test_the_training_floor_follows_the_plans_recompute_setting() -> None:
    """A walk that plans without recomputation (a public keyword) gets the floor without the
    recomputed forward, whatever the workload asks: the floor never exceeds its plans."""
    from service.engine.physics import training as tr

    base = FLOOR_WORKLOADS["llama-70b-checkpointed"]
    assert base.training is not None
    plain = dataclasses.replace(base, training=dataclasses.replace(
        base.training, activation_checkpointing=False))
    assert tr.training_floor_flops(base, False) == tr.training_floor_flops(plain)
    assert tr.training_floor_flops(plain, True) == tr.training_floor_flops(base)
    memo = Memo()
    assert tr._floor_flops(base, False, memo) < tr._floor_flops(base, True, memo)


def _serving_workload(r: random.Random) -> Workload:
    model = r.choice(("llama-3.1-8b", "llama-2-13b", "mistral-7b", "gpt-2", "llama-3.1-70b",
                      "bert-large"))
    encoder = model == "bert-large"
    spec = InferenceSpec(
        prompt_tokens=r.choice((128, 384)) if encoder else r.choice((64, 512, 2048)),
        output_tokens=0 if encoder else r.choice((1, 32, 256)),
        target_requests_per_s=r.choice((None, round(10 ** r.uniform(-0.5, 3), 2))),
        max_ttft_ms=r.choice((None, 300.0, 3000.0)),
        max_tpot_ms=None if encoder else r.choice((None, 30.0, 120.0)),
        max_latency_ms=r.choice((None, 2000.0, 20000.0)))
    return Workload(kind="inference", precision=r.choice(("bf16", "fp8", "int8")),
                    model=PRESETS[model].model, inference=spec)


@pytest.mark.parametrize("latency_mode", (False, True))
def test_light_serving_options_are_the_full_options(latency_mode: bool) -> None:
    """A serving option known by its light figures (figures.serving_figures, in throughput
    mode and in the time objective's latency mode) ranks on the floats its full option
    (estimate, cost, ranking._metrics) gives, with the same idle-GPU and padded flags, and is
    light exactly where the full option misses no limit: random transformer serving workloads,
    every seeded GPU type, every planned count."""
    r = random.Random(11 + latency_mode)
    index = OfferIndex(load_offers())
    light = missed = 0
    for _ in range(8):
        workload = _serving_workload(r)
        constraints = Constraints(max_usd_per_hour=r.choice((None, 40.0)))
        for req, p, plan in _planned(workload, constraints, index):
            for n in sorted(plan):
                opt, miss = rk._option(req, p, n, *plan[n], latency_mode=latency_mode)
                full, full_miss = rk._full_option(req, p, n, *plan[n], latency_mode)
                if not isinstance(opt, rk.LightOption):
                    continue
                assert miss is None and full_miss is None, (p.gpu.slug, n)
                got = (opt.money, opt.time, opt.energy, opt.proxy, opt.usd_per_hour,
                       opt.idle_gpus, opt.padded)
                want = (full.money, full.time, full.energy, full.proxy,
                        full.cost.usd_per_hour, rk.idle_gpus(workload, full.est),
                        rk.padded(workload, full.est))
                assert repr(got) == repr(want), (p.gpu.slug, n, got, want)
                light += 1
            for n in sorted(plan):
                fig = rk._serving_figures(req, p, n, *plan[n], latency_mode)
                if isinstance(fig, fg.Missed):
                    failure = rk._full_option(req, p, n, *plan[n], latency_mode)[1]
                    assert failure is not None
                    assert (fig.stage, repr(fig.overage)) == (failure.stage,
                                                              repr(failure.overage))
                    missed += 1
    assert light >= 100 and missed >= 5, (light, missed)


def test_a_gpu_whose_time_floor_misses_the_deadline_is_rejected_for_it() -> None:
    # an FP64 job with a deadline, ranked by time: GPUs whose bound cannot reach the top 9 are
    # skipped, but one whose time floor is already past the deadline gets the deadline's
    # failure (the time it needs, the deadline that would hold it), as the exhaustive search
    # says; "ask for more results" would not put it in the answer
    job = Workload(kind="compute", precision="fp64",
                   compute=ComputeSpec(total_tflop=7.52e5, total_gb_moved=2.72,
                                       fp64_units="matrix"))
    kw: dict[str, Any] = {"objective": "time", "limit": 9,
                          "constraints": Constraints(deadline_hours=39.4)}
    pruned = rk.recommend(job, load_gpus(), load_offers(), **kw)
    full = rk.recommend(job, load_gpus(), load_offers(), exhaustive=True, **kw)
    assert pruned.recommendations == full.recommendations
    exhaustive = {r.gpu_slug: r for r in full.rejected}
    got = {r.gpu_slug: r for r in pruned.rejected}
    past = [s for s, r in got.items() if r.code == "deadline"]
    assert {"nvidia-a10", "nvidia-rtx-a4000", "nvidia-quadro-p6000"} <= set(past)
    assert all(got[s] == exhaustive[s] for s in past)
    assert any(r.code == "outranked" and "not evaluated in full" in r.reason
               for r in pruned.rejected)  # the others are still skipped


def test_balanced_probes_take_the_likeliest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # the balanced stop test probes every GPU whose floors are below the minima found so far;
    # taken furthest below first, the minima fall early, so the GPUs probed are (nearly) only
    # those below the final minima, which any order must probe. In the catalog's order ~half
    # the probes were of GPUs the final minima would have let go (14 of 30 for serving, 13 of
    # 14 for ResNet-50, 6 of 9 for FP64 on this catalog); now none
    searches: list[BalancedSearch] = []
    run = BalancedSearch.run

    def kept(self: BalancedSearch) -> list[Skipped]:
        out = run(self)
        searches.append(self)
        return out

    monkeypatch.setattr(BalancedSearch, "run", kept)
    gpus, offers = synthetic()
    probed = wasted = 0
    for name in ("llama-3.1-8b-serve", "resnet-50-int8", "fp64-compute"):
        rk.recommend(WORKLOADS[name], gpus, offers, objective="balanced", limit=LIMIT)
        s = searches.pop()
        c_min, t_min = s.mins.money, s.mins.time
        blockers = [j for j in s.probed if j not in s.trimmed]
        probed += len(blockers)
        wasted += sum(1 for j in blockers
                      if not (s.order[j].lb_cost < c_min or s.order[j].lb_time < t_min))
    # (9 blockers: fewer since a decoder's request floor stops at its batch ceiling)
    assert probed >= 5
    assert wasted <= probed // 10, (wasted, probed)


@pytest.mark.parametrize("name", ["fp64-compute", "llama-2-70b-pretrain"])
def test_a_gpu_missing_cost_limits_reports_the_failure_the_full_walk_does(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # where every count of a job's GPU type misses a cost limit, the walk builds only the
    # count whose failure it reports (figures.Missed's stage and overage); the answers, every
    # rejection included, are those of building every count and keeping the closest failure
    workload = WORKLOADS[name]
    gpus, offers = load_gpus(), load_offers()
    cases = [Constraints(deadline_hours=d) for d in (0.5, 3.0, 40.0)] + [
        Constraints(budget_usd=b) for b in (300.0, 3e3, 3e4)] + [
        Constraints(max_usd_per_hour=u) for u in (20.0, 200.0)] + [
        Constraints(deadline_hours=3.0, budget_usd=3e3),
        Constraints(deadline_hours=10.0, max_usd_per_hour=100.0, deployment="on_prem")]
    failures = sum(_as_the_full_walk(workload, gpus, offers, c, monkeypatch,
                                     ("deadline", "budget")) for c in cases)
    assert failures >= 50, failures


def _as_the_full_walk(workload: Workload, gpus: list[GpuSpec],
                      offers: list[Offer], c: Constraints,
                      monkeypatch: pytest.MonkeyPatch, codes: tuple[str, ...],
                      objectives: tuple[Objective, ...] = ("cost", "time", "balanced"),
                      limit: int = LIMIT) -> int:
    """Under each of ``objectives``, pruned and exhaustive: the answer with
    ranking._nearest_missed's shortcut is the answer building every count; returns how many
    rejections have one of ``codes``."""
    failures = 0
    for objective in objectives:
        for exhaustive in (False, True):
            kw: dict[str, Any] = {"objective": objective, "constraints": c,
                                  "limit": limit, "exhaustive": exhaustive}
            got = rk.recommend(workload, gpus, offers, **kw)
            with monkeypatch.context() as m:
                m.setattr(rk, "_nearest_missed", lambda counts, light: None)
                want = rk.recommend(workload, gpus, offers, **kw)
            assert got == want, (c, objective, exhaustive)
            failures += sum(r.code in codes for r in got.rejected)
    return failures


@pytest.mark.parametrize("name", ["resnet-50-int8", "llama-2-70b-pretrain"])
def test_balanced_gpus_are_probed_against_the_cut_first(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # once a stop test has set a cut, a GPU whose bound is under it is first probed at the
    # counts whose floors reach the cut (or a minimum); where their options all score above
    # it, the GPU is passed over without estimating its other counts. The answer is the one
    # of evaluating every such GPU in full, with fewer counts estimated (serving: memoized
    # serving figures; jobs: rows of light figures): on the synthetic catalog 91 -> 71 for
    # ResNet-50, 326 -> 211 for Llama-2-70B pre-training
    gpus, offers = synthetic()
    estimated = [0]
    serving_figures, figures_of = fg.serving_figures, fg.figures_of

    def serving(*args: Any, **kw: Any) -> Any:
        estimated[0] += 1
        return serving_figures(*args, **kw)

    def jobs(workload: Workload, gpu: GpuSpec, rows: list[Any], *args: Any, **kw: Any) -> Any:
        estimated[0] += len(rows) if workload.kind != "inference" else 0
        return figures_of(workload, gpu, rows, *args, **kw)

    monkeypatch.setattr(fg, "serving_figures", serving)
    monkeypatch.setattr(fg, "figures_of", jobs)
    runs = {}
    for trim in (True, False):
        monkeypatch.setattr(BalancedSearch, "trim", trim)
        estimated[0] = 0
        rec = rk.recommend(WORKLOADS[name], gpus, offers, objective="balanced", limit=LIMIT)
        runs[trim] = (rec, estimated[0])
    (trimmed, n_trimmed), (full, n_full) = runs[True], runs[False]
    assert trimmed.recommendations == full.recommendations
    assert len(trimmed.recommendations) == LIMIT
    assert n_trimmed <= 0.85 * n_full, (n_trimmed, n_full)


@pytest.mark.parametrize("catalog", ["seeded", "synthetic"])
@pytest.mark.parametrize("target", (2.0, 20.0, 120.0))
def test_type_floors_hold_for_every_option(catalog: str, target: float) -> None:
    """The balanced bound of a serving GPU before its counts' floors (bounds.type_pairs, from
    its load floors alone): every priced option of the GPU is at or above one of its pairs in
    both cost and time, and the pairs say more than its own floors (lb_cost, lb_time) for
    most GPUs (a busy replica's latency is only reached by paying for more copies)."""
    from service.engine.choice import screen as sc

    base = WORKLOADS["llama-3.1-8b-serve"]
    assert base.inference is not None
    workload = dataclasses.replace(base, inference=dataclasses.replace(
        base.inference, target_requests_per_s=target))
    gpus, offers = synthetic() if catalog == "synthetic" else (load_gpus(), load_offers())
    index = OfferIndex(offers)
    req = rk.Request(workload, Constraints(), CostSettings(), "balanced", Memo(), False, index)
    pending, _ = sc.screen(workload, list(gpus), index, req.constraints, req.settings,
                           "balanced", False, rk.CAP_INFERENCE_GPUS, req.memo)
    checked = tighter = gpus_with = 0
    has, all_costs, all_times = rk.type_floor_arrays(req, pending)
    found = {p.gpu.slug: k for k, p in enumerate(q for q, h in zip(pending, has.tolist(),
                                                                      strict=True) if h)}
    for p in pending:
        k = found.get(p.gpu.slug)
        if k is None:
            continue
        costs, times = all_costs[k], all_times[k]
        gpus_with += 1
        tighter += bool(np.all((costs > p.lb_cost * 1.01) | (times > p.lb_time * 1.01)))
        options, _, _ = rk._evaluate_gpu(req, p)
        for o in options:
            if o.money is None:
                continue
            assert np.any((costs <= o.money) & (times <= o.time)), (
                p.gpu.slug, o.gpu_count, o.money, o.time, costs.min(), times.min())
            checked += 1
    assert gpus_with >= 10 and checked >= gpus_with, (gpus_with, checked)
    assert tighter >= gpus_with // 2, (tighter, gpus_with)


def test_a_serving_gpu_missing_limits_reports_the_failure_the_full_walk_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # where every count of a serving GPU type misses a latency or cost limit, the walk builds
    # only the count whose failure it reports (figures.Missed from the serving figures); the
    # answers, every rejection included, are those of building every count
    base = WORKLOADS["llama-3.1-8b-serve"]
    assert base.inference is not None
    gpus, offers = load_gpus(), load_offers()
    failures = 0
    for ttft, tpot in ((500.0, 50.0), (300.0, 12.0), (150.0, 30.0), (2000.0, 8.0)):
        workload = dataclasses.replace(base, inference=dataclasses.replace(
            base.inference, max_ttft_ms=ttft, max_tpot_ms=tpot))
        for c in (Constraints(), Constraints(max_usd_per_hour=12.0),
                  Constraints(max_gpus=2)):
            failures += _as_the_full_walk(workload, gpus, offers, c, monkeypatch,
                                          ("latency", "budget", "constraint"))
    assert failures >= 100, failures


@pytest.mark.parametrize("case", ["pinned-tp4-fixed-batch", "padded-replicas"])
def test_the_shortcut_passes_over_the_counts_the_walk_passes_over(
        case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the walk skips a serving count whose option leaves GPUs idle, or holds more replicas
    # than the load needs past the smallest count, failure and all: where such a count
    # misses a limit the shortcut must not report it (found by a reviewer's random cases)
    model = PRESETS["llama-2-13b"].model
    if case == "pinned-tp4-fixed-batch":
        spec = InferenceSpec(prompt_tokens=1024, output_tokens=1, batch_size=8,
                             max_tpot_ms=15.0, target_requests_per_s=2.0, tensor_parallel=4)
        workload = Workload(kind="inference", precision="bf16", model=model, inference=spec)
        failures = _as_the_full_walk(workload, load_gpus(), load_offers(), Constraints(),
                                     monkeypatch, ("latency",), ("cost",), limit=3)
    else:
        spec = InferenceSpec(prompt_tokens=453, output_tokens=256, max_tpot_ms=67.6,
                             target_requests_per_s=2.51)
        workload = Workload(kind="inference", precision="int8", model=model, inference=spec)
        gpus, offers = synthetic()
        failures = sum(_as_the_full_walk(workload, g, o, Constraints(max_usd_per_hour=usd),
                                         monkeypatch, ("budget",), ("cost", "energy"))
                       for usd in (2.0, 9.12) for g, o in ((load_gpus(), load_offers()),
                                                           (list(gpus), list(offers))))
    assert failures >= 3, failures


def test_a_latency_miss_is_stated_from_the_light_figures() -> None:
    """A serving count whose light figures miss a latency limit (figures.Missed, stage 1)
    carries the latencies its full estimate has, and explain.latency_failure of them is the
    full option's failure, reason and fix included: a GPU type whose every count misses is
    rejected with it without building an estimate. Random serving workloads (fixed batches
    too: the reason names the batch), every seeded GPU type, every planned count."""
    from service.engine.choice import explain as ex

    r = random.Random(29)
    index = OfferIndex(load_offers())
    stated = fixed = 0
    for _ in range(10):
        workload = _serving_workload(r)
        assert workload.inference is not None
        batch = r.choice((None, 1, 8))
        workload = dataclasses.replace(workload, inference=dataclasses.replace(
            workload.inference, batch_size=batch, max_tpot_ms=None if batch is None and
            workload.inference.output_tokens == 0 else r.choice((8.0, 30.0))))
        assert workload.inference is not None
        for req, p, plan in _planned(workload, Constraints(), index):
            for n in sorted(plan):
                fig = rk._serving_figures(req, p, n, *plan[n])
                if not isinstance(fig, fg.Missed) or fig.latencies is None:
                    continue
                _, failure = rk._full_option(req, p, n, *plan[n], False)
                assert failure is not None and failure.stage == 1, (p.gpu.slug, n)
                got = ex.latency_failure(workload, *fig.latencies, workload.inference.batch_size)
                assert got == failure, (p.gpu.slug, n, got, failure)
                stated += 1
                fixed += batch is not None
    assert stated >= 20 and fixed >= 5, (stated, fixed)


def test_balanced_bounds_in_blocks_and_type_floors_in_part_are_those_of_one_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a stop test takes its GPUs' bounds as arrays, a block at a time, and a GPU's type
    # floors are asked for it and the next GPUs it may need them for, not for every GPU at
    # once: the answer, rejections and their bounds included, is the one of taking each
    # bound alone and every GPU's type floors at the first need, with fewer GPUs' type
    # floors asked (a small batch here, so the synthetic catalog shows it)
    from service.engine.choice import search as se

    asked: list[int] = []
    type_floors = rk.type_floor_arrays

    def counted(req: rk.Request, pending: list[Pending], cap: int | None = None) -> Any:
        asked.append(len(pending))
        return type_floors(req, pending, cap)

    monkeypatch.setattr(rk, "type_floor_arrays", counted)
    gpus, offers = synthetic()
    runs = []
    for block, batch, bounds in ((4, 16, None),
                                 (se.BOUNDS_BLOCK, 10**9, BalancedSearch._bounds_one_by_one)):
        monkeypatch.setattr(se, "BOUNDS_BLOCK", block)
        monkeypatch.setattr(se, "TYPE_FLOORS_BATCH", batch)
        if bounds is not None:
            monkeypatch.setattr(BalancedSearch, "_bounds", bounds)
        asked.clear()
        rec = rk.recommend(WORKLOADS["llama-3.1-8b-serve"], gpus, offers,
                           objective="balanced", limit=LIMIT)
        runs.append((rec, sum(asked), len(asked)))
    (lazy, n_lazy, calls), (whole, n_whole, _) = runs
    assert lazy.recommendations == whole.recommendations
    assert lazy.rejected == whole.rejected
    assert sum("not evaluated in full" in r.reason for r in lazy.rejected) >= 50
    assert calls >= 3 and n_lazy < n_whole, (calls, n_lazy, n_whole)


def test_pareto_pairs_keep_every_least_balanced_floor() -> None:
    rng = random.Random(7)
    for _ in range(300):
        pairs = [(rng.choice((1.0, 2.0, rng.uniform(0.5, 4.0))),
                  rng.choice((3.0, rng.uniform(1.0, 9.0), math.inf)))
                 for _ in range(rng.randint(1, 12))]
        kept = pareto(pairs)
        assert set(kept) <= set(pairs)
        for c, t in pairs:  # every pair dropped is at or above one kept, in both figures
            assert any(kc <= c and kt <= t for kc, kt in kept)
        for a in kept:  # none kept is at or above another kept one
            assert not any(b != a and b[0] <= a[0] and b[1] <= a[1] for b in kept)
        for c_min, t_min in ((1.0, 1.0), (0.3, 7.0), (rng.uniform(0.1, 5), 2.5)):
            assert min(balanced_floor(c, t, c_min, t_min) for c, t in kept) == min(
                balanced_floor(c, t, c_min, t_min) for c, t in pairs)
    assert pareto([(1.0, math.nan), (2.0, 3.0)]) == [(1.0, math.nan), (2.0, 3.0)]


def test_counts_known_padded_before_their_figures_are_padded_and_skipping_them_keeps_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a balanced probe and a count walk skip a count past the smallest that the split
    # table's capacity batches (found at the GPU's other counts) already prove padded:
    # whatever its figures, they would drop it. Each skip is checked against the figures it
    # skipped, and the answers, rejections and their bounds included, are those of
    # estimating every count
    known = rk.known_padded_point
    proven: list[bool] = []

    def checked(workload: Workload, gpu: GpuSpec, n: int, memo: Memo) -> bool:
        found = known(workload, gpu, n, memo)
        if found:
            point = serving_point(workload, gpu, n, memo)
            spec = workload.inference
            assert point is not None and spec is not None
            assert more_replicas_than_needed(spec.target_requests_per_s, point.requests_s,
                                             point.replicas), (gpu.slug, n)
        proven.append(found)
        return found

    gpus, offers = synthetic()
    base = WORKLOADS["llama-3.1-8b-serve"]
    spec = base.inference
    assert spec is not None
    # balanced probes and walks; cost walks; a budget few counts meet (GPU types left with
    # no feasible count are walked again, every count estimated)
    for target, objective, constraints in ((3.0, "balanced", None), (10.0, "balanced", None),
                                           (40.0, "balanced", None), (10.0, "cost", None),
                                           (40.0, "time", None),
                                           (40.0, "balanced", Constraints(max_usd_per_hour=8.0))):
        workload = dataclasses.replace(
            base, inference=dataclasses.replace(spec, target_requests_per_s=target))
        runs = []
        for prove in (checked, lambda *a: False):
            monkeypatch.setattr(rk, "known_padded_point", prove)
            runs.append(rk.recommend(workload, gpus, offers, objective=objective,
                                     constraints=constraints, limit=LIMIT))
        skipping, every = runs
        assert skipping.recommendations == every.recommendations
        assert skipping.rejected == every.rejected
    assert sum(proven) >= 50 and len(proven) > sum(proven), (sum(proven), len(proven))


def test_a_count_is_known_padded_only_where_its_figures_are_padded() -> None:
    # every GPU type of the synthetic catalog at loads from a fraction of a replica's
    # capacity to hundreds of replicas: each count asked before its figures (the capacity
    # batches found at the smaller counts), then figured
    rng = random.Random(11)
    gpus, _ = synthetic()
    base = WORKLOADS["llama-3.1-8b-serve"]
    spec = base.inference
    assert spec is not None
    tally = {(k, r): 0 for k in (False, True) for r in (False, True)}
    for gpu in gpus[::7]:
        target = 10 ** rng.uniform(-0.5, 3.0)
        workload = dataclasses.replace(
            base, inference=dataclasses.replace(spec, target_requests_per_s=target))
        memo = Memo()
        for n in (1, 2, 4, 8, 16, 24, 32, 64):
            known = known_padded_point(workload, gpu, n, memo)
            point = serving_point(workload, gpu, n, memo)
            real = point is not None and more_replicas_than_needed(
                target, point.requests_s, point.replicas)
            tally[known, real] += 1
    assert tally[True, False] == 0, tally
    assert tally[True, True] >= 30, tally


@pytest.mark.parametrize("catalog", ["seeded", "synthetic"])
def test_count_floors_taken_together_are_those_of_one_gpu_at_a_time(catalog: str) -> None:
    """ranking.planned_floors_many (every count of many GPUs in one compiled call,
    load_floors.count_pairs_many) keeps for each GPU exactly the plan and (cost, time) pairs
    ranking._planned_floors takes for it alone, float for float: random transformer serving
    workloads with a target, the GPUs asked in random subsets."""
    from service.engine.choice import screen as sc

    r = random.Random(41)
    gpus, offers = synthetic() if catalog == "synthetic" else (load_gpus(), load_offers())
    index = OfferIndex(offers)
    together = pairs = ranged = 0
    for _ in range(6):
        workload = _serving_workload(r)
        assert workload.inference is not None
        workload = dataclasses.replace(workload, inference=dataclasses.replace(
            workload.inference, target_requests_per_s=round(10 ** r.uniform(-0.5, 3), 2)))
        req = rk.Request(workload, Constraints(), CostSettings(), "balanced", Memo(), False,
                         index)
        pending, _ = sc.screen(workload, list(gpus), index, req.constraints, req.settings,
                               "balanced", False, rk.CAP_INFERENCE_GPUS, req.memo)
        rk.type_floor_arrays(req, pending)  # the search asks for them first, as here
        asked = [p for p in pending if r.random() < 0.7]
        rk.planned_floors_many(req, asked)
        # one GPU at a time, in a request of its own that never took them together
        alone = rk.Request(workload, Constraints(), CostSettings(), "balanced", Memo(), False,
                           index)
        sc.screen(workload, list(gpus), index, alone.constraints, alone.settings, "balanced",
                  False, rk.CAP_INFERENCE_GPUS, alone.memo)
        for p in pending:
            key = (workload, p.gpu, req.constraints, p.counts, p.cap)
            kept = req.memo.peek("planned_count_floors", key) is not None
            expected = rk._planned_floors(alone, p)
            assert rk._planned_floors(req, p) == expected, p.gpu.slug
            together += kept
            pairs += sum(len(x) for x in expected[1]) if kept else 0
            ranged += sum(len(x) > 1 for x in expected[1]) if kept else 0
    assert together >= 20 and ranged >= 20, (together, pairs, ranged)


@pytest.mark.parametrize("target", (2.0, 20.0, 120.0))
def test_counts_floors_taken_ahead_keep_the_answer(target: float,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # the balanced search takes the counts' floors of the GPUs it will bound next, and of the
    # GPUs it probes next, together (ranking.planned_floors_many): the answer, rejections and
    # their bounds included, is the one of taking each GPU's alone where first needed, with
    # (nearly) none taken alone
    base = WORKLOADS["llama-3.1-8b-serve"]
    assert base.inference is not None
    workload = dataclasses.replace(base, inference=dataclasses.replace(
        base.inference, target_requests_per_s=target))
    gpus, offers = synthetic()
    alone: list[int] = []
    count_floors = rk._count_floors

    def counted(*args: Any) -> Any:
        alone.append(1)
        return count_floors(*args)

    monkeypatch.setattr(rk, "_count_floors", counted)
    rec = rk.recommend(workload, gpus, offers, objective="balanced", limit=LIMIT)
    n_ahead = len(alone)
    monkeypatch.setattr(rk, "planned_floors_many", lambda req, pending: None)
    alone.clear()
    each = rk.recommend(workload, gpus, offers, objective="balanced", limit=LIMIT)
    assert rec.recommendations == each.recommendations
    assert rec.rejected == each.rejected
    assert len(alone) >= 30 and n_ahead <= len(alone) // 10, (n_ahead, len(alone))


def _drawn_options(r: random.Random, n: int) -> list[Any]:
    """``n`` options as :func:`ranking.choose` reads them: money (None: unpriced), time,
    energy, proxy, USD/h, count, slug, quote; figures drawn from a few values, so rounded
    scores tie often and the rest of the key decides."""
    out = []
    for _ in range(n):
        priced = r.random() < 0.8
        usd_h = r.choice((1.0, 2.0, 4.0)) if priced else None
        out.append(SimpleNamespace(
            money=r.choice((10.0, 20.0, 20.0 * (1 + 1e-12), 40.0, math.inf)) if priced else None,
            time=r.choice((1.0, 2.0, 2.0 * (1 + 1e-12), 4.0, math.inf)),
            energy=r.choice((3.0, 5.0, math.inf)),
            proxy=r.choice((8.0, 16.0)), usd_per_hour=usd_h, gpu_count=r.choice((1, 2, 8)),
            gpu=SimpleNamespace(slug=r.choice(("a", "b"))),
            offer=SimpleNamespace(quote_id=r.randrange(3)) if priced else None))
    return out


def _choose_reference(opts: list[Any], objective: Any, mins: Any, constraints: Constraints,
                      rnd: Any) -> Any:
    """:func:`ranking.choose` as it was written first: every option's whole key taken."""
    def key(o: Any) -> tuple[object, ...]:
        return rk._key(o, rk._value(o, objective, mins), objective, rnd)

    if objective == "time":
        fastest = min(o.time for o in opts)
        edge = rnd(fastest * (1 + constraints.time_tolerance))
        window = [o for o in opts if rnd(o.time) <= edge]
        pick = min(window, key=lambda o: (rk._cheapness(o), o.time, key(o)))
        if pick.money is not None:
            cheaper = [o for o in opts if o.money is not None
                       and o.time < pick.time * (1 + rk.COST_GUARD_TIME)
                       and o.money * rk.COST_GUARD_RATIO <= pick.money]
            if cheaper:
                pick = min(cheaper, key=lambda o: (rk._cheapness(o), o.time, key(o)))
        return pick
    if objective == "cost":
        tier, least = min(rk._cheapness(o) for o in opts)
        edge = rnd(least * (1 + rk.COST_TIE))
        window = [o for o in opts if rk._cheapness(o)[0] == tier
                  and rnd(rk._cheapness(o)[1]) <= edge]
        return min(window, key=lambda o: (o.time, key(o)))
    return min(opts, key=key)


@pytest.mark.parametrize("objective", ["balanced", "energy", "cost", "time"])
def test_choose_takes_whole_keys_only_of_ties_and_picks_the_same(objective: Any) -> None:
    """:func:`ranking.choose` (each objective's order first, the whole key only of the options
    tied on it) picks the option its reference (every option's whole key) picks: the same
    object, over drawn options whose figures tie often, unpriced ones and NaN-free and
    infinite figures included."""
    r = random.Random(5)
    by_tail = 0
    for _ in range(3000):
        opts = _drawn_options(r, r.randint(1, 7))
        mins = rk._minima(opts)
        constraints = Constraints(time_tolerance=r.choice((0.0, 0.05, 1.0)))
        want = _choose_reference(opts, objective, mins, constraints, rk.rounder())
        got = rk.choose(opts, objective, mins, constraints, rk.rounder())
        assert got is want
        # the options that tie on the objective's own figures, told apart by the key's rest
        by_tail += sum(o is not want and o.money == want.money and o.time == want.time
                       for o in opts) > 0
    assert by_tail > 100
