"""The ranking's light figures (service/engine/choice/figures.py) against the reference: for
compute and training jobs, every (GPU, count, offer) of the seeded catalog gets the same
figures from :func:`figures.figures` as from the option built in full (estimate, cost,
``ranking._metrics``, ``explain.limit_failure``), float for float, and no figures exactly
where the full option misses a limit; :func:`figures.figures_of` (a GPU type's counts at once,
as a ranking asks) gives each count's figures too. A ranking ranks on the light figures and
builds only the listed options, so any drift here would reorder answers."""

from __future__ import annotations

import math
import random

import pytest

from service.engine.cache import EngineCache, Memo
from service.engine.choice import bounds as bd
from service.engine.choice import cost as co
from service.engine.choice import figures as figures_module
from service.engine.choice import ranking
from service.engine.choice.figures import Figures, figures
from service.engine.physics.estimate import gpu_count_candidates
from service.engine.recommend_types import Constraints, CostSettings, Offer
from service.engine.types import ComputeSpec, Precision, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import load_gpus, load_offers

GPUS = load_gpus()
OFFERS = load_offers()
TRAINING_PRESETS = ("llama-3.1-8b", "mistral-7b", "llama-2-13b", "gpt-j-6b", "resnet-50")


def _compute(r: random.Random) -> Workload:
    precision: Precision = r.choice(("fp64", "fp32"))
    spec = ComputeSpec(
        total_tflop=10 ** r.uniform(2, 8),
        total_gb_moved=r.choice((0.0, 10 ** r.uniform(1, 7))),
        memory_gb=r.choice((0.0, 10 ** r.uniform(0, 3.5))),
        fp64_units=r.choice(("vector", "matrix")),
        communication=r.choice(("stencil", "allreduce", "none")),
        steps=r.choice((None, 10 ** r.uniform(0, 5))),
        serial_fraction=r.choice((None, r.uniform(0.0, 0.05))),
    )
    return Workload(kind="compute", precision=precision, compute=spec)


def _training(r: random.Random) -> Workload:
    preset = r.choice(TRAINING_PRESETS)
    model = PRESETS[preset].model
    length = r.choice(("tokens", "samples", "none"))
    spec = TrainingSpec(
        batch_size=int(10 ** r.uniform(1, 3.3)),
        seq_len=r.choice((1024, 2048, 4096)) if preset != "resnet-50" else None,
        tokens=10 ** r.uniform(8, 12) if length == "tokens" and preset != "resnet-50" else None,
        samples=10 ** r.uniform(5, 9) if length == "samples" else None,
        activation_checkpointing=r.random() < 0.3,
    )
    return Workload(kind="training", precision=r.choice(("bf16", "fp16")), model=model,
                    training=spec)


def _constraints(r: random.Random) -> Constraints:
    if r.random() < 0.4:
        return Constraints()
    return Constraints(
        max_gpus=r.choice((None, 1, 8, 64)),
        deadline_hours=r.choice((None, 10 ** r.uniform(-1, 3))),
        budget_usd=r.choice((None, 10 ** r.uniform(1, 6))),
        max_usd_per_hour=r.choice((None, 10 ** r.uniform(0, 3))),
        deployment=r.choice(("cloud", "cloud", "on_prem")),
    )


def _cases(seed: int, n: int) -> list[tuple[Workload, Constraints]]:
    r = random.Random(seed)
    return [((_compute if r.random() < 0.6 else _training)(r), _constraints(r))
            for _ in range(n)]


@pytest.mark.parametrize(("workload", "constraints"), _cases(25, 24))
def test_light_figures_are_the_full_options(workload: Workload,
                                            constraints: Constraints) -> None:
    cache = EngineCache()
    memo = Memo(cache)
    settings = CostSettings()
    index = co.offer_index(OFFERS, memo)
    req = ranking.Request(workload, constraints, settings, "cost", memo, False, index)
    compared = light = 0
    for gpu in GPUS:
        usable = index.usable(gpu.slug, constraints)
        cap = constraints.max_gpus or ranking.CAP_TRAINING_GPUS
        counts = gpu_count_candidates(gpu, cap, memo) or (1,)
        plan: dict[int, tuple[Offer | None, int]] = dict(
            co.cheapest_offers(gpu, usable, counts, cap))
        plan.update({n: (None, 1) for n in counts[:3] if n not in plan})
        pending = bd.Pending(gpu, usable, None, counts[0], counts, cap, 0, 0.0, 0.0, 0.0)
        # every count at once, as a ranking asks (its own memo: nothing planned before)
        together = figures_module.figures_of(
            workload, gpu, [(n, *plan[n]) for n in plan], settings, constraints, Memo(cache))
        for (n, (offer, instances)), batched in zip(plan.items(), together, strict=True):
            got = figures(workload, gpu, n, offer, instances, settings, constraints, memo)
            # figures() gives None where figures_of says Missed (a cost limit missed)
            assert repr(batched if isinstance(batched, Figures) else None) == repr(got), (
                gpu.slug, n)
            full, miss = ranking._full_option(req, pending, n, offer, instances, False)
            if isinstance(batched, figures_module.Missed):
                assert miss is not None and (batched.stage, batched.overage) == (
                    miss.stage, miss.overage), (gpu.slug, n)
            compared += 1
            assert (got is None) == (miss is not None) or (
                got is None and miss is None and not full.est.fits), (gpu.slug, n, miss)
            if got is None:
                continue
            light += 1
            assert (got.gpu_count, got.usd_per_hour, got.money, got.time, got.energy,
                    got.proxy) == (full.est.gpu_count, full.cost.usd_per_hour, full.money,
                                   full.time, full.energy, full.proxy), (gpu.slug, n)
    assert compared >= len(GPUS)
    assert light > 0 or constraints != Constraints()


@pytest.mark.parametrize("objective", ["cost", "time", "energy", "balanced"])
def test_a_ranking_builds_only_the_options_it_lists(
        objective: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Of ~200 options of a compute job, only the listed ones get an estimate, and the answer
    is the one a ranking that builds every option in full gives."""
    workload = Workload(kind="compute", precision="fp64", compute=ComputeSpec(
        total_tflop=1e6, total_gb_moved=1e5, memory_gb=200.0))
    built: list[int] = []
    original = ranking._full_option

    def counting(*args: object) -> object:
        built.append(1)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ranking, "_full_option", counting)
    light = ranking.recommend(workload, GPUS, OFFERS, objective=objective,  # type: ignore[arg-type]
                              limit=5)
    assert len(light.recommendations) == 5
    assert len(built) == 5
    monkeypatch.setattr(figures_module, "figures", lambda *args: None)
    monkeypatch.setattr(figures_module, "figures_of",
                        lambda workload, gpu, counts, *args, **kwargs: [None] * len(counts))
    built.clear()
    full = ranking.recommend(workload, GPUS, OFFERS, objective=objective,  # type: ignore[arg-type]
                             limit=5)
    assert len(built) > 20
    assert full == light


@pytest.mark.parametrize("kind", ["compute", "training"])
def test_the_time_cut_leaves_out_only_counts_too_slow_to_be_chosen(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Objective time: a GPU type's counts slower than (1 + tolerance) x (1 + the cost guard's
    10%) x its fastest feasible count are left unfigured (:class:`figures.Slower`), the other
    counts get the figures they get without the cut, and the answer is the one a ranking that
    figures every count gives."""
    if kind == "compute":
        workload = Workload(kind="compute", precision="fp64", compute=ComputeSpec(
            total_tflop=1e6, total_gb_moved=1e5, memory_gb=200.0))
    else:
        workload = Workload(kind="training", precision="bf16",
                            model=PRESETS["llama-3.1-8b"].model, training=TrainingSpec(
                                batch_size=512, seq_len=4096, tokens=1e11))
    settings, constraints = CostSettings(), Constraints()
    cut = ranking._time_cut(constraints)
    assert cut == pytest.approx(1.05 * 1.10)
    memo = Memo(EngineCache())
    index = co.offer_index(OFFERS, memo)
    slower = kept = 0
    for gpu in GPUS:
        usable = index.usable(gpu.slug, constraints)
        counts = gpu_count_candidates(gpu, ranking.CAP_TRAINING_GPUS, memo) or (1,)
        plan = dict(co.cheapest_offers(gpu, usable, counts, ranking.CAP_TRAINING_GPUS))
        asked = [(n, *plan[n]) for n in sorted(plan)]
        every = figures_module.figures_of(workload, gpu, asked, settings, constraints, memo)
        got = figures_module.figures_of(workload, gpu, asked, settings, constraints, memo,
                                        time_cut=cut)
        fastest = min((f.time for f in every if isinstance(f, Figures)), default=math.inf)
        for a, b in zip(every, got, strict=True):
            if isinstance(b, figures_module.Slower):
                assert isinstance(a, Figures) and a.time > fastest * cut, gpu.slug
                slower += 1
            else:
                assert repr(a) == repr(b), gpu.slug
                kept += isinstance(a, Figures)
                assert not isinstance(a, Figures) or a.time <= fastest * cut, gpu.slug
    assert slower >= 5 and kept >= len(GPUS) // 2, (slower, kept)
    cut_answer = ranking.recommend(workload, GPUS, OFFERS, objective="time", limit=8)
    monkeypatch.setattr(ranking, "_time_cut", lambda constraints: math.inf)
    assert ranking.recommend(workload, GPUS, OFFERS, objective="time", limit=8) == cut_answer


@pytest.mark.parametrize(("workload", "constraints"),
                         [c for c in _cases(31, 24) if c[0].kind == "compute"]
                         + [(_compute(random.Random(7)), Constraints())])
def test_kept_plan_networks_are_each_counts_network(workload: Workload,
                                                    constraints: Constraints) -> None:
    """The offer index's arrays of a plan (kept per GPU and place, read only) hold each
    count's network rate as :func:`cost.network_rate` gives it (0 within a node or without a
    rate), and a compute job's figures taken with them are the figures taken without."""
    memo = Memo(EngineCache())
    settings = CostSettings()
    index = co.offer_index(OFFERS, memo)
    cap = constraints.max_gpus or ranking.CAP_TRAINING_GPUS
    spanning = 0
    for gpu in GPUS:
        counts = gpu_count_candidates(gpu, cap, memo) or (1,)
        plan = index.cheapest_offers(gpu, constraints, counts, cap)
        kept = index.plan_networks(gpu, constraints, counts, cap)
        assert index.plan_networks(gpu, constraints, counts, cap) is kept
        ns, nets = kept
        assert not ns.flags.writeable and not nets.flags.writeable
        assert ns.tolist() == [float(n) for n in plan]
        assert nets.tolist() == [co.network_rate(gpu, offer, n) or 0.0
                                 for n, (offer, _) in plan.items()], gpu.slug
        spanning += sum(v > 0 for v in nets.tolist())
        asked = [(n, *plan[n]) for n in plan]
        for cut in (None, ranking._time_cut(constraints)):
            assert repr(figures_module.figures_of(
                workload, gpu, asked, settings, constraints, memo, time_cut=cut,
                networks=kept)) == repr(figures_module.figures_of(
                    workload, gpu, asked, settings, constraints, Memo(EngineCache()),
                    time_cut=cut)), gpu.slug
    assert spanning > 0 or constraints != Constraints()  # the seeded offers join nodes
