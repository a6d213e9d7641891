"""Branch and bound over GPU types: evaluate best bound first, stop once no remaining type
can reach the top ``limit`` (bounds: :mod:`service.engine.choice.bounds`; the exactness argument:
:mod:`service.engine.choice.ranking` and :func:`_search_balanced`)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from service.engine.choice.bounds import (
    BALANCED_RECHECK,
    BALANCED_WEIGHT,
    INF,
    PRUNE_MARGIN,
    Pending,
)
from service.engine.choice.explain import Option
from service.engine.recommend_types import Rejection
from service.engine.types import Fix, GpuSpec

Evaluate = Callable[[Pending], list[Option] | None]
"""Evaluates one GPU in full: its feasible options (None: rejected)."""
Value = Callable[[Option, Mapping[str, float]], float]
"""The objective's score of an option given the balanced minima (unused by other objectives)."""
Probe = Callable[[Pending, float, float], tuple[list[Option], list[tuple[float, float]]]]
"""Balanced: evaluates only the counts of a GPU whose (cost, time) floors are below the given
minima (C, T); returns their feasible priced options and the floors of the counts left out."""


@dataclass(frozen=True)
class Skipped:
    """A GPU left unevaluated: its best-case score cannot beat the ``limit``-th one."""

    gpu: GpuSpec
    best_case: float
    """Lower bound of its score under the objective (lower is better)."""
    threshold: float
    """The ``limit``-th best score when the search stopped."""


def outranked(s: Skipped, limit: int, objective: str) -> Rejection:
    """Why a skipped GPU is not in the answer, with the figures that prove it."""
    if s.best_case == INF:
        reason = f"has no usable price quote, so it ranks after the top {limit} priced GPUs"
    else:
        reason = (f"not in the top {limit} under {objective}: its best case scores "
                  f">= {s.best_case:.4g}, worse than #{limit}'s {s.threshold:.4g} "
                  "(lower is better), so it was not evaluated in full")
    return Rejection(s.gpu.slug, s.gpu.name, reason,
                     Fix("limit", None, f"ask for more results (limit > {limit}) to see it "
                         "ranked", "limit"), "outranked")


def search(
    pending: list[Pending], objective: str, limit: int, evaluate: Evaluate, value: Value,
    probe: Probe | None = None, slack: float = 1.0,
) -> list[Skipped]:
    """Evaluate ``pending`` best bound first until no remaining GPU can reach the top
    ``limit`` (``limit`` < 1: every GPU); returns the GPUs skipped, with their bounds.
    ``slack``: a GPU is skipped only when its bound exceeds the ``limit``-th best value times
    ``slack`` (cost and time rank within a tolerance of the best, not by the value alone:
    :func:`service.engine.choice.ranking.ranking_slack`)."""
    if objective == "balanced":
        return _search_balanced(pending, limit, evaluate, value, probe)
    order = sorted(pending, key=lambda p: (p.tier, p.lb, p.gpu.slug))
    worst: list[tuple[int, float]] = []  # the `limit` best (tier, value), negated: a max-heap
    for i, p in enumerate(order):
        if limit >= 1 and len(worst) >= limit:
            tier, threshold = -worst[0][0], -worst[0][1]
            if p.tier > tier or (
                    p.tier == tier and p.lb > threshold * slack * (1.0 + PRUNE_MARGIN)):
                # sorted by (tier, bound): every later one is worse
                # (a later tier is unpriced: its bound is GPU-hours, not comparable)
                return [Skipped(q.gpu, q.lb if q.tier == tier else INF, threshold)
                        for q in order[i:]]
        options = evaluate(p)
        if options:
            item = (-p.tier, -min(value(o, {}) for o in options))
            if len(worst) < max(limit, 1):
                heapq.heappush(worst, item)
            else:
                heapq.heappushpop(worst, item)
    return []


def _search_balanced(
    pending: list[Pending], limit: int, evaluate: Evaluate, value: Value, probe: Probe | None
) -> list[Skipped]:
    """Balanced scores are relative to the minimum cost C and time T over every priced option,
    and evaluating more GPUs can only lower C and T (raising every score). So the search may
    stop before a GPU only when, for every GPU not yet evaluated (priced; unpriced ones rank
    after every priced one): its cost bound >= C and time bound >= T, so none can move the
    minima and the current C, T (hence every evaluated score) are final; and its balanced bound
    0.5 LBc/C + 0.5 LBt/T is above the limit-th best evaluated score by PRUNE_MARGIN. Any
    stop test that fails just means evaluating more, never a different answer.

    A GPU whose bounds are below C or T is first only probed (``probe``): just its counts whose
    own floors are below C or T are estimated, so it can no longer lower them; its bound is then
    the best of those options' scores and its other counts' balanced floors. A GPU whose bound
    is above the last test's cut is passed over (every later test still checks it); if the
    search runs out with some passed over, those are evaluated best bound first."""
    priced = [p for p in pending if p.tier == 0]
    c_ref = min((p.lb_cost for p in priced if p.lb_cost > 0), default=1.0)
    t_ref = min((p.lb_time for p in priced if p.lb_time > 0), default=1.0)

    def order_key(p: Pending) -> tuple[int, float, str]:
        if p.tier:
            return 1, 0.0, p.gpu.slug
        score = BALANCED_WEIGHT * p.lb_cost / c_ref
        return 0, score + (1 - BALANCED_WEIGHT) * p.lb_time / t_ref, p.gpu.slug

    order = sorted(pending, key=order_key)
    done: list[list[Option]] = []
    seen: set[int] = set()  # indices into order evaluated ahead of their turn
    probed: dict[int, tuple[list[Option], list[tuple[float, float]]]] = {}
    c_min = t_min = INF

    def lower(money: list[Option]) -> None:
        nonlocal c_min, t_min
        c_min = min(c_min, *(o.money for o in money if o.money is not None))
        t_min = min(t_min, *(o.time for o in money))

    def run(p: Pending) -> None:
        money = [o for o in evaluate(p) or () if o.money is not None]
        if money:
            done.append(money)
            lower(money)

    def settle(j: int) -> None:
        if probe is None:
            seen.add(j)
            run(order[j])
            return
        probed[j] = probe(order[j], c_min, t_min)
        if probed[j][0]:
            lower(probed[j][0])

    def bound(j: int, q: Pending, mins: Mapping[str, float]) -> float:
        if q.tier:
            return INF
        if not (c_min > 0 and t_min > 0):
            return 0.0  # a minimum underflowed to zero: no finite bound, never passed over
        floors = [(q.lb_cost, q.lb_time)]
        best = INF
        if j in probed:
            opts, floors = probed[j]
            best = best_score(opts, mins)
        for lbc, lbt in floors:
            best = min(best, BALANCED_WEIGHT * lbc / c_min + (1 - BALANCED_WEIGHT) * lbt / t_min)
        return best

    deferred: list[int] = []  # probed GPUs passed over: their bound was above the cut
    maybe = [j for j, q in enumerate(order) if q.tier == 0]  # unprobed possible blockers
    cut = INF

    best_scores: dict[int, tuple[float, float, float, list[Option]]] = {}

    def best_score(opts: list[Option], mins: Mapping[str, float]) -> float:
        """min(value(o, mins) for o in opts) (INF for none), kept per evaluated or probed
        GPU while the minima stay the same (a stop test re-scored every evaluated option: a
        third of a balanced ranking's time)."""
        c, t = mins["money"], mins["time"]
        found = best_scores.get(id(opts))
        if found is not None and found[3] is opts and found[0] == c and found[1] == t:
            return found[2]
        score = min((value(o, mins) for o in opts), default=INF)
        best_scores[id(opts)] = (c, t, score, opts)  # the list held: its id is not reused
        return score

    def stop(rest: list[int]) -> list[Skipped] | None:
        """The stop test before the GPUs ``rest`` (see above); None: keep evaluating."""
        nonlocal cut
        # GPUs that might still lower a minimum are probed now, out of turn (the set
        # evaluated, not the order, decides the answer); each one only lowers the minima,
        # so the blocking set shrinks and this ends
        while True:
            # only shrinks (the minima only fall): later tests filter what is left of it
            maybe[:] = [j for j in maybe if j not in seen and j not in probed
                        and (order[j].lb_cost < c_min or order[j].lb_time < t_min)]
            if not maybe:
                break
            for j in list(maybe):
                settle(j)
        if maybe or not 0 < t_min < INF:
            return None
        mins = {"money": c_min, "time": t_min}
        scores = sorted(best_score(opts, mins) for opts in done)
        cut = scores[limit - 1] * (1.0 + PRUNE_MARGIN)
        left = [j for j in rest if j not in seen] + deferred
        # best bound first: a failing test usually stops at the first GPUs
        if any(bound(j, order[j], mins) <= cut for j in left):
            return None
        return [Skipped(order[j].gpu, bound(j, order[j], mins), scores[limit - 1])
                for j in left]

    def sweep(queue: list[int], defer: bool) -> list[Skipped] | None:
        """Evaluate ``queue`` in turn, testing every so often; ``defer``: pass over GPUs whose
        bound is above the last test's cut (the tests still check them)."""
        next_test = 0
        for k, i in enumerate(queue):
            if i in seen:
                continue
            if limit >= 1 and len(done) >= limit and k >= next_test and 0 < c_min < INF:
                skipped = stop(queue[k:])
                if skipped is not None:
                    return skipped
                next_test = k + max(1, (len(done) + len(deferred)) // BALANCED_RECHECK)
                if i in seen:  # evaluated just now as a blocker
                    continue
            if defer and bound(i, order[i], {"money": c_min, "time": t_min}) > cut:
                deferred.append(i)
                continue
            seen.add(i)
            run(order[i])
        return None

    skipped = sweep(list(range(len(order))), True)
    if skipped is None and deferred:
        # the cut rose (the minima fell) past some deferred bounds: those, best bound first
        mins = {"money": c_min, "time": t_min}
        queue = sorted(deferred, key=lambda j: bound(j, order[j], mins))
        deferred.clear()
        skipped = sweep(queue, False)
    return skipped or []
