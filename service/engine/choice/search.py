"""Branch and bound over GPU types: evaluate best bound first, stop once no remaining type
can reach the top ``limit`` (bounds: :mod:`service.engine.choice.bounds`; the exactness argument:
:mod:`service.engine.choice.ranking` and :class:`BalancedSearch`)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice

import numpy as np
from numpy.typing import NDArray

from service.engine.choice.bounds import (
    BALANCED_RECHECK,
    INF,
    NO_MINIMA,
    PRUNE_MARGIN,
    Minima,
    Pending,
    balanced_floor,
    pareto,
    ratio_to_min,
)
from service.engine.choice.explain import Ranked
from service.engine.recommend_types import Rejection
from service.engine.types import Fix, GpuSpec

TYPE_FLOORS_BATCH = 256
"""GPUs whose :data:`TypeFloors` are asked together at most (:meth:`BalancedSearch._type_pairs`):
a few calls for thousands of GPUs, a few hundred GPUs at most asked for nothing."""

COUNT_FLOORS_BATCH = 256
"""GPUs whose counts' floors are taken together at most (:meth:`BalancedSearch._floors_ahead`)."""

BOUNDS_BLOCK = 32
"""GPUs of a stop test's first block of bounds taken as arrays (:meth:`BalancedSearch._bounds`);
each next block twice the last."""

Evaluate = Callable[[Pending], list[Ranked] | None]
"""Evaluates one GPU in full: its feasible options (None: rejected)."""
Value = Callable[[Ranked, Minima], float]
"""The objective's score of an option given the balanced minima (unused by other objectives)."""
Probe = Callable[[Pending, float, float, float], tuple[list[Ranked], list[tuple[float, float]]]]
"""Balanced: evaluates only the counts of a GPU whose (cost, time) floors are below the given
minima (C, T) or whose balanced floor at them is at most the given cut (INF: none); returns
their feasible priced options and the floors of the counts left out."""
CountFloors = Callable[[Pending], list[tuple[float, float]]]
"""Balanced: the (cost, time) floors of each count of a GPU (:func:`bounds.count_floors`)."""
TypeFloors = Callable[[list[Pending], int], tuple[NDArray[np.bool_], NDArray[np.float64],
                                                 NDArray[np.float64]]]
"""Balanced: (cost, time) floor pairs of the GPUs given that need no count's offer
(:func:`bounds.type_pairs`; the int: the largest :attr:`Pending.cap` of the search's GPUs,
whose floor table they are read from): whether each GPU has them, and their costs and times
[GPU that has them, pair]."""
CountFloorsMany = Callable[[list[Pending]], None]
"""Balanced: take the :data:`CountFloors` of the GPUs given together, ahead of need (each
GPU's are then what :data:`CountFloors` gives for it alone; a GPU it cannot take together is
left to :data:`CountFloors`)."""


@dataclass(frozen=True)
class Skipped:
    """A GPU left unevaluated: its best-case score cannot beat the ``limit``-th one."""

    gpu: GpuSpec
    best_case: float
    """Lower bound of its score under the objective (lower is better)."""
    threshold: float
    """The ``limit``-th best score when the search stopped."""


def outranked_fix(limit: int) -> Fix:
    """The fix every GPU skipped below the top ``limit`` shares (one object per answer)."""
    return Fix("limit", None, f"ask for more results (limit > {limit}) to see it ranked",
               "limit")


def outranked(s: Skipped, limit: int, objective: str, fix: Fix) -> Rejection:
    """Why a skipped GPU is not in the answer, with the figures that prove it (``fix``:
    :func:`outranked_fix` of ``limit``, built once for all the skipped GPUs of an answer)."""
    if s.best_case == INF:
        reason = f"has no usable price quote, so it ranks after the top {limit} priced GPUs"
    else:
        reason = (f"not in the top {limit} under {objective}: its best case scores "
                  f">= {s.best_case:.4g}, worse than #{limit}'s {s.threshold:.4g} "
                  "(lower is better), so it was not evaluated in full")
    return Rejection(s.gpu.slug, s.gpu.name, reason, fix, "outranked")


def outranked_unexplained(gpu: GpuSpec, fix: Fix) -> Rejection:
    """An outranked GPU's rejection in a ranked summary, which shows its slug and code only:
    no reason in words (:func:`outranked` and :func:`ranked_below` format one each, thousands
    at catalog scale). ``fix``: :func:`outranked_fix`'s."""
    return Rejection(gpu.slug, gpu.name, "", fix, "outranked")


def ranked_below(gpu: GpuSpec, rank: int, gpu_count: int, score: float, limit: int,
                 objective: str, fix: Fix) -> Rejection:
    """A GPU evaluated in full whose best option ranks below the top ``limit``: its rank
    among the GPUs evaluated in full (those skipped by their bounds rank below all of them),
    count and score. Under cost and time the order is not the score's alone (options within
    the tolerance of the best rank by the other figure), so no score is compared."""
    plural = "" if gpu_count == 1 else "s"
    reason = (f"ranked #{rank} under {objective}, below the top {limit}: score {score:.4g} "
              f"at {gpu_count} GPU{plural}")
    return Rejection(gpu.slug, gpu.name, reason, fix, "outranked")


def search(
    pending: list[Pending], objective: str, limit: int, evaluate: Evaluate, value: Value,
    probe: Probe | None = None, slack: float = 1.0, floors: CountFloors | None = None,
    type_floors: TypeFloors | None = None, floors_many: CountFloorsMany | None = None,
) -> list[Skipped]:
    """Evaluate ``pending`` best bound first until no remaining GPU can reach the top
    ``limit`` (``limit`` < 1: every GPU); returns the GPUs skipped, with their bounds.
    ``slack``: a GPU is skipped only when its bound exceeds the ``limit``-th best value times
    ``slack`` (cost and time rank within a tolerance of the best, not by the value alone:
    :func:`service.engine.choice.ranking.ranking_slack`). ``floors``: balanced, each count's
    floors of a GPU, which bound it tighter than its own (cost, time) floors; ``floors_many``:
    those of many GPUs at once (:meth:`BalancedSearch._floors_ahead`)."""
    if objective == "balanced":
        return BalancedSearch(pending, limit, evaluate, value, probe, floors, type_floors,
                              floors_many).run()
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
            item = (-p.tier, -min(value(o, NO_MINIMA) for o in options))
            if len(worst) < max(limit, 1):
                heapq.heappush(worst, item)
            else:
                heapq.heappushpop(worst, item)
    return []


@dataclass
class _Scored:
    """The priced options of one GPU (evaluated in full, or probed), with their best balanced
    score kept while the minima stay the same: a stop test re-scores every evaluated GPU, and
    re-scoring every option each time was a third of a balanced ranking's time."""

    options: list[Ranked]
    scored_at: Minima | None = None
    """The minima :attr:`score` was taken at (None: not scored yet)."""
    score: float = INF

    def best(self, mins: Minima, value: Value) -> float:
        """min(value(o, mins) for o in options) (INF for none)."""
        if self.scored_at != mins:
            self.score = min((value(o, mins) for o in self.options), default=INF)
            self.scored_at = mins
        return self.score


@dataclass
class _Probed:
    """A GPU only probed: the options of its counts that could lower a minimum, and the
    (cost, time) floors of its other counts."""

    scored: _Scored
    floors: list[tuple[float, float]]


def _balanced_order(pending: list[Pending]) -> list[Pending]:
    """The search order: priced GPUs by their balanced floor against the least floors (the
    real minima are not known yet: an order only), ties by slug; then unpriced ones by slug."""
    priced = [p for p in pending if p.tier == 0]
    c_ref = min((p.lb_cost for p in priced if p.lb_cost > 0), default=1.0)
    t_ref = min((p.lb_time for p in priced if p.lb_time > 0), default=1.0)

    def order_key(p: Pending) -> tuple[int, float, str]:
        if p.tier:
            return 1, 0.0, p.gpu.slug
        return 0, float(balanced_floor(p.lb_cost, p.lb_time, c_ref, t_ref)), p.gpu.slug

    return sorted(pending, key=order_key)


class BalancedSearch:
    """Branch and bound under the balanced objective (one search, :meth:`run` once).

    Balanced scores are relative to the minimum cost C and time T over every priced option,
    and evaluating more GPUs can only lower C and T (raising every score). So the search may
    stop before a GPU only when, for every GPU not yet evaluated (priced; unpriced ones rank
    after every priced one): its cost bound >= C and time bound >= T, so none can move the
    minima and the current C, T (hence every evaluated score) are final; and its balanced bound
    0.5 LBc/C + 0.5 LBt/T is above the limit-th best evaluated score by PRUNE_MARGIN. Any
    stop test that fails just means evaluating more, never a different answer.

    A GPU whose bounds are below C or T is first only probed (``probe``): just its counts whose
    own floors are below C or T are estimated, so it can no longer lower them; its bound is then
    the best of those options' scores and its other counts' balanced floors (a probe that
    estimated every count and found none feasible is evaluated in full at once: nothing is
    left to bound it by, and its failures are reported). A GPU whose bound
    is above the last test's cut is passed over (every later test still checks it); if the
    search runs out with some passed over, those are evaluated best bound first.

    A GPU's own floors bound its cost and time apart (the cheapest count and the fastest
    one); where that bound is not above the cut, pairs from its load floors alone
    (``type_floors``: TP degree and load level together, asked for a GPU and the next ones
    in order at once) are tried, then its counts' floors (``floors``: each count's cost and
    time together, once per GPU), and its bound is the least of the pairs.

    Once a test has set a cut, a GPU whose bound is under it is first probed at the counts
    that could reach the cut or lower a minimum (:attr:`trim`), and passed over as above where
    their options all score above the cut: its other counts are estimated only if a later
    cut (the minima fall, every score rises) lets it back.

    GPUs are named by their index into :attr:`order`."""

    trim = True
    """Probe a GPU against the cut before evaluating it in full (:meth:`_sweep`)."""

    def __init__(self, pending: list[Pending], limit: int, evaluate: Evaluate, value: Value,
                 probe: Probe | None, floors: CountFloors | None = None,
                 type_floors: TypeFloors | None = None,
                 floors_many: CountFloorsMany | None = None) -> None:
        self.limit = limit
        self.evaluate = evaluate
        self.value = value
        self.probe = probe
        self.floors = floors
        self.count_floors: dict[int, list[tuple[float, float]]] = {}
        """GPU -> its counts' (cost, time) floors, where taken (:meth:`_bound`)."""
        self.type_floors = type_floors
        self.type_pairs: dict[int, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
        """GPU -> its :data:`TypeFloors`, where taken and it has them (:meth:`_type_pairs`)."""
        self.floors_many = floors_many
        self.order = _balanced_order(pending)
        self.lb_costs = np.array([q.lb_cost for q in self.order], dtype=np.float64)
        self.lb_times = np.array([q.lb_time for q in self.order], dtype=np.float64)
        """Each GPU's own (cost, time) floors in :attr:`order`, as arrays: the stop test's
        first pass over thousands of GPUs at catalog scale (:meth:`_bounds`)."""
        self.priced = np.array([q.tier == 0 for q in self.order], dtype=np.bool_)
        self.typed = np.zeros(len(self.order), dtype=np.bool_)
        """Whether each GPU's :data:`TypeFloors` were asked (:meth:`_type_pairs`)."""
        self.tight = np.full(len(self.order), -INF)
        """Each typed GPU's least balanced floor over its :data:`TypeFloors` at the minima
        they were taken at, which only fall, so a floor of its bound from them now (-inf:
        it has none, or not typed)."""
        self.floored = np.zeros(len(self.order), dtype=np.bool_)
        """Whether each GPU's counts' floors were asked (:meth:`_bound`,
        :meth:`_floors_ahead`)."""
        self.cap = max((q.cap for q in self.order if q.tier == 0), default=1)
        self.mins = Minima()
        """C and T: the least cost and time of the priced options found so far (unpriced
        GPUs are never scored here: they rank after every priced one)."""
        self.done: list[_Scored] = []
        """GPUs evaluated in full that have priced options."""
        self.seen: set[int] = set()
        """GPUs evaluated in full (in turn, or ahead of it as blockers)."""
        self.seen_at = np.zeros(len(self.order), dtype=np.bool_)
        """Whether each GPU is in :attr:`seen`, as an array (:meth:`_type_pairs`,
        :meth:`_stop`)."""
        self.probed: dict[int, _Probed] = {}
        self.probed_at = np.zeros(len(self.order), dtype=np.bool_)
        """Whether each GPU is in :attr:`probed`, as an array (:meth:`_bounds`, :meth:`_stop`)."""
        self.trimmed: set[int] = set()
        """GPUs probed against the cut in turn (:meth:`_sweep`), not as blockers."""
        self.deferred: list[int] = []
        """Probed GPUs passed over: their bound was above the cut."""
        self.maybe: NDArray[np.intp] = np.flatnonzero(self.priced)
        """GPUs not yet evaluated or probed that might still lower a minimum, in order; only
        shrinks (the minima only fall), each test filtering what is left of it."""
        self.cut = INF
        """The last stop test's limit-th best score, raised by PRUNE_MARGIN."""

    def run(self) -> list[Skipped]:
        """Search; returns the GPUs skipped, with their bounds."""
        skipped = self._sweep(list(range(len(self.order))), True)
        if skipped is None and self.deferred:
            # the cut rose (the minima fell) past some deferred bounds: those, best bound first
            queue = sorted(self.deferred, key=self._bound)
            self.deferred.clear()
            skipped = self._sweep(queue, False)
        return skipped or []

    def _lower(self, money: list[Ranked]) -> None:
        """Lower the minima to those of the priced options ``money``."""
        c_min, t_min = self.mins.money, self.mins.time
        c_min = min(c_min, *(o.money for o in money if o.money is not None))
        t_min = min(t_min, *(o.time for o in money))
        self.mins = Minima(money=c_min, time=t_min)

    def _evaluate(self, j: int) -> None:
        self.seen.add(j)
        self.seen_at[j] = True
        money = [o for o in self.evaluate(self.order[j]) or () if o.money is not None]
        if money:
            self.done.append(_Scored(money))
            self._lower(money)

    def _settle(self, j: int, cut: float = INF) -> None:
        """Evaluate or probe GPU ``j`` out of turn: it might lower a minimum (``cut``: also
        estimate its counts whose balanced floor is at most it)."""
        if self.probe is None:
            self._evaluate(j)
            return
        opts, floors = self.probe(self.order[j], self.mins.money, self.mins.time, cut)
        if not opts and not floors:
            # every count estimated, none feasible: nothing to bound it by (skipped, it would
            # read as unpriced); evaluated in full now, its failures are reported
            self._evaluate(j)
            return
        self.probed[j] = _Probed(_Scored(opts), pareto(floors))
        self.probed_at[j] = True
        if opts:
            self._lower(opts)

    def _bound(self, j: int) -> float:
        """The least balanced score GPU ``j`` can reach at the current minima."""
        q, mins = self.order[j], self.mins
        if q.tier:
            return INF
        c_min, t_min = mins.money, mins.time
        if not (c_min > 0 and t_min > 0):
            return 0.0  # a minimum underflowed to zero: no finite bound, never passed over
        floors = [(q.lb_cost, q.lb_time)]
        best = INF
        probed = self.probed.get(j)
        if probed is not None:
            floors = probed.floors
            best = probed.scored.best(mins, self.value)
        elif self.floors is not None:
            coarse = float(balanced_floor(q.lb_cost, q.lb_time, c_min, t_min))
            if coarse > self.cut or self.cut == INF:
                return coarse  # no test yet (cut inf): nothing to compare a tighter bound with
            if self.type_floors is not None:
                pairs = self._type_pairs(j)
                if pairs is not None:
                    costs, times = pairs
                    tight = float(np.min(balanced_floor(costs, times, c_min, t_min)))
                    if tight > self.cut:
                        return tight  # no count's offer needed: its counts' floors not taken
            found = self.count_floors.get(j)
            if found is None:
                if self.floors_many is not None and not self.floored[j]:
                    self._floors_ahead(j)
                found = self.count_floors[j] = pareto(self.floors(q))
                self.floored[j] = True
            floors = found or floors
        for lbc, lbt in floors:
            best = min(best, float(balanced_floor(lbc, lbt, c_min, t_min)))
        return best

    def _type_pairs(self, j: int) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        """GPU ``j``'s :data:`TypeFloors` (None: it has none). Asked, where not yet, for it
        and the next :data:`TYPE_FLOORS_BATCH` priced GPUs after it in :attr:`order` not yet
        asked, evaluated or probed whose own floors' balanced floor is at most the cut now
        (the GPUs :meth:`_bound` is likeliest to look up next: tests and sweeps walk the
        order), at once: at catalog scale about a third of the GPUs never need them."""
        assert self.type_floors is not None
        if not self.typed[j]:
            coarse = balanced_floor(self.lb_costs[j:], self.lb_times[j:], self.mins.money,
                                    self.mins.time)
            want = self.priced[j:] & ~self.typed[j:] & ~self.probed_at[j:] & (
                coarse <= self.cut)
            want[0] = True
            at = np.flatnonzero(want & ~self.seen_at[j:])[:TYPE_FLOORS_BATCH] + j
            has, costs, times = self.type_floors([self.order[i] for i in at.tolist()],
                                                 self.cap)
            have = at[has]
            for k, i in enumerate(have.tolist()):
                self.type_pairs[i] = (costs[k], times[k])
            if len(have):
                self.tight[have] = np.min(balanced_floor(costs, times, self.mins.money,
                                                         self.mins.time), axis=1)
            self.typed[at] = True
        return self.type_pairs.get(j)

    def _floors_ahead(self, j: int) -> None:
        """Take GPU ``j``'s counts' floors together with those of the next
        :data:`COUNT_FLOORS_BATCH` GPUs after it in :attr:`order` whose bound :meth:`_bound`
        may take them for next: typed, not yet evaluated, probed or floored, with their own
        floors' and their type floors' balanced floors (:attr:`tight`) at most the cut now
        (one compiled call for all their counts instead of a few dozen small ones each)."""
        assert self.floors_many is not None
        coarse = balanced_floor(self.lb_costs[j:], self.lb_times[j:], self.mins.money,
                                self.mins.time)
        want = self.priced[j:] & self.typed[j:] & ~self.floored[j:] & ~self.seen_at[j:] & \
            ~self.probed_at[j:] & (coarse <= self.cut) & (self.tight[j:] <= self.cut)
        want[0] = True
        self._floors_of(np.flatnonzero(want)[:COUNT_FLOORS_BATCH] + j)

    def _floors_of(self, at: NDArray[np.intp]) -> None:
        """Take the counts' floors of the GPUs ``at`` not floored yet together."""
        assert self.floors_many is not None
        at = at[~self.floored[at]]
        if len(at):
            self.floors_many([self.order[i] for i in at.tolist()])
            self.floored[at] = True

    def _stop(self, queue: list[int], start: int) -> list[Skipped] | None:
        """The stop test before the GPUs ``queue[start:]`` (see the class docstring); None:
        keep evaluating."""
        order, seen = self.order, self.seen
        # GPUs that might still lower a minimum are probed now, out of turn (the set
        # evaluated, not the order, decides the answer); each one only lowers the minima,
        # so the blocking set shrinks and this ends
        while True:
            c_min, t_min = self.mins.money, self.mins.time
            at = self.maybe
            self.maybe = at[~self.seen_at[at] & ~self.probed_at[at] & (
                (self.lb_costs[at] < c_min) | (self.lb_times[at] < t_min))]
            if not len(self.maybe):
                break
            if self.floors_many is not None:  # each is probed next: its counts' floors first
                self._floors_of(self.maybe)
            # the GPU whose floor is furthest below a minimum first: the one likeliest to
            # lower it, so the GPUs after it are more often no longer below (at catalog scale
            # the final minima leave ~a third of the GPUs first found below them)
            for j in sorted(self.maybe.tolist(), key=lambda i: (min(
                    ratio_to_min(order[i].lb_cost, c_min), ratio_to_min(order[i].lb_time, t_min)),
                    i)):
                # the minima fell since the list was taken: a GPU whose floors are no longer
                # below them would be probed for nothing (its counts' floors are its bound)
                q = order[j]
                if q.lb_cost < self.mins.money or q.lb_time < self.mins.time:
                    self._settle(j)
        if len(self.maybe) or not 0 < self.mins.time < INF:
            return None
        mins, limit = self.mins, self.limit
        scores = sorted(d.best(mins, self.value) for d in self.done)
        self.cut = scores[limit - 1] * (1.0 + PRUNE_MARGIN)
        # the GPUs left, taken as the bounds ask for them: a failing test (most of them)
        # reads the first block, not the thousands of a catalog's queue
        left = chain((j for j in islice(queue, start, None) if j not in seen), self.deferred)
        found = self._bounds(left)
        if found is None:
            return None
        return [Skipped(order[j].gpu, b, scores[limit - 1]) for j, b in zip(*found, strict=True)]

    def _bounds(self, left: Iterable[int]) -> tuple[list[int], list[float]] | None:
        """:meth:`_bound` of each of ``left`` (None: one is at most the cut), with the GPUs
        (``left`` is read as far as needed). Where a GPU is neither probed nor unpriced and
        its own floors' balanced floor is above the cut, that is its bound (:meth:`_bound`
        looks no further), taken as arrays over a block of ``left`` at a time (blocks doubling
        from :data:`BOUNDS_BLOCK`; no more GPUs than one block: all one by one); the others
        one by one, in order. Best bound first: a failing test usually stops in the first
        block; a passing one keeps each bound for its Skipped, thousands at catalog scale."""
        c_min, t_min = self.mins.money, self.mins.time
        rest: Iterator[int] = iter(left)
        head = list(islice(rest, BOUNDS_BLOCK + 1))
        if not (c_min > 0 and t_min > 0) or len(head) <= BOUNDS_BLOCK:  # few: one by one
            return self._bounds_one_by_one(chain(head, rest))
        rest = chain(head, rest)
        taken: list[int] = []
        out: list[float] = []
        size = BOUNDS_BLOCK
        while block := list(islice(rest, size)):
            at = np.array(block, dtype=np.intp)
            priced = self.priced[at]
            bounds = np.where(priced, balanced_floor(self.lb_costs[at], self.lb_times[at],
                                                     c_min, t_min), INF)
            simple = ~(priced & self.probed_at[at]) & (bounds > self.cut)
            for k in np.flatnonzero(~simple).tolist():
                bound = self._bound(block[k])
                if bound <= self.cut:
                    return None
                bounds[k] = bound
            taken.extend(block)
            out.extend(bounds.tolist())
            size *= 2
        return taken, out

    def _bounds_one_by_one(self, left: Iterable[int]) -> tuple[list[int], list[float]] | None:
        """:meth:`_bounds` taking each bound alone, in order (None: one is at most the cut)."""
        every = list(left)
        out = []
        for j in every:
            bound = self._bound(j)
            if bound <= self.cut:
                return None
            out.append(bound)
        return every, out

    def _sweep(self, queue: list[int], defer: bool) -> list[Skipped] | None:
        """Evaluate ``queue`` in turn, testing every so often; ``defer``: pass over GPUs whose
        bound is above the last test's cut (the tests still check them)."""
        next_test = 0
        for k, i in enumerate(queue):
            if i in self.seen:
                continue
            if self.limit >= 1 and len(self.done) >= self.limit and k >= next_test \
                    and 0 < self.mins.money < INF:
                skipped = self._stop(queue, k)
                if skipped is not None:
                    return skipped
                next_test = k + max(1, (len(self.done) + len(self.deferred)) // BALANCED_RECHECK)
                if i in self.seen:  # evaluated just now as a blocker
                    continue
            if defer and self._bound(i) > self.cut:
                self.deferred.append(i)
                continue
            if defer and self.trim and self.probe is not None and self.cut < INF \
                    and i not in self.probed:
                # first only the counts that could reach the cut or lower a minimum: where
                # their estimates all score above the cut, the GPU is passed over with
                # them, and its other counts are never estimated unless the cut rises
                self.trimmed.add(i)
                self._settle(i, self.cut)
                if i in self.seen:
                    continue
                if self._bound(i) > self.cut:
                    self.deferred.append(i)
                    continue
            self._evaluate(i)
        return None
