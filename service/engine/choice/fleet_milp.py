"""The mixed-fleet integer program: how many copies of each pool option to rent, and which
share of each request-size bucket each option serves, at the least cost per hour.

Given buckets b with request rates ``r_b`` [requests/s] and pool options p (a GPU type's
group of GPUs on one offer with one model layout) with an hourly price ``c_p`` [USD/h per
copy] and a capacity ``cap[b][p]`` [requests/s per copy] at bucket b's size within the SLOs
(0: option p cannot serve bucket b)::

    minimise    sum_p c_p y_p
    subject to  sum_p x[b,p] = 1                         every bucket is served in full
                sum_b r_b x[b,p] / cap[b,p] <= y_p       no copy beyond its capacity
                y_p <= U_p z_t(p),  sum_t z_t <= K       at most K GPU types (optional)
                y_p in {0..U_p} integer, x[b,p] >= 0, z_t in {0, 1}

``x[b,p]`` exists only where ``cap[b,p] > 0``. A copy serving several buckets is within
capacity when the fractions of its capacity they take sum to at most 1 (capacity shares add
up linearly: the bin-packing view of Melange, Griggs et al. 2024, sec. 5). ``U_p`` is the
copies that carry every bucket p can serve on its own (more never helps), or the caller's
``max_count``.

Percentile SLOs (``max_outside`` = 1 - percentile/100 > 0): a bucket's requests may also be
served outside the latency limits, at the option's capacity with the limits removed
``cap_any[b,p]`` (taken as at least ``cap[b,p]``), on variables ``v[b,p] >= 0``::

    sum_p x[b,p] + v[b,p] = 1
    sum_b r_b x[b,p] / cap[b,p] + r_b v[b,p] / cap_any[b,p] <= y_p
    sum_b sum_p r_b v[b,p] <= max_outside * sum_b r_b        at most that share outside

The exact reductions stay valid on the relaxation that ignores the last row and serves every
request at ``max(cap, cap_any)``: its LP bound is a lower bound of the program.

Why SciPy's ``milp`` (HiGHS): SciPy is already a dependency of the service, HiGHS is an exact
branch-and-cut MILP solver with a time limit and a reported MIP gap, and it needs no other
native library (OR-Tools would add a ~30 MB wheel for the same answer on programs this size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

TIME_LIMIT_S = 5.0
"""[s] HiGHS's time limit per solve: past it the best integer answer found is used (its gap
reported), else the best single type. The 64-bucket x 33-type benchmark solves in well under
it (bench/bench_fleet.py)."""
MIP_REL_GAP = 1e-7
"""Relative optimality gap at which HiGHS stops (its default is 1e-4): the answer is optimal
to 1e-7 of its cost, far below a cent on any fleet, so tests can compare it with the
exhaustive optimum."""
CAPACITY_SLACK = 1e-6
"""Relative slack allowed when a solution is checked against the capacities: HiGHS's primal
feasibility tolerance is 1e-7 (absolute, on rows of order 1)."""


@dataclass(frozen=True)
class Solution:
    """An integer answer: copies per option and each bucket's split over the options."""

    counts: tuple[int, ...]
    """y_p: copies of each option [count]."""
    shares: tuple[tuple[float, ...], ...]
    """x[b][p]: fraction of bucket b's requests option p serves (each row sums to 1)."""
    usd_per_hour: float
    status: str
    """``optimal``, ``time_limit`` (feasible, not proven optimal), or ``greedy`` (the
    single-type fallback computed without the solver)."""
    mip_gap: float | None
    """(upper - lower bound) / upper of the solve; 0 when proven optimal; None for greedy."""
    outside: tuple[tuple[float, ...], ...] | None = None
    """v[b][p]: the part of ``shares[b][p]`` served outside the latency limits (percentile
    SLOs); None = every request within them."""

    def types_used(self, types: Sequence[int]) -> set[int]:
        return {types[p] for p, y in enumerate(self.counts) if y > 0}


def widest(caps: Sequence[Sequence[float]],
           caps_any: Sequence[Sequence[float]] | None) -> list[list[float]]:
    """``max(cap, cap_any)`` per (bucket, option): the capacity of the relaxation that serves
    every request outside the limits (``caps`` itself when ``caps_any`` is None)."""
    if caps_any is None:
        return [list(row) for row in caps]
    return [[max(a, b) for a, b in zip(r1, r2, strict=True)]
            for r1, r2 in zip(caps, caps_any, strict=True)]


def upper_counts(rates: Sequence[float], caps: Sequence[Sequence[float]],
                 max_count: int | None,
                 caps_any: Sequence[Sequence[float]] | None = None) -> list[int]:
    """U_p: copies of option p that carry every bucket it serves by itself (within the limits
    where it can, else outside them: no assignment loads it more)."""
    n_opts = len(caps[0]) if caps else 0
    wide = widest(caps, caps_any)
    out = []
    for p in range(n_opts):
        need = sum(r / (caps[b][p] if caps[b][p] > 0 else wide[b][p])
                   for b, r in enumerate(rates) if wide[b][p] > 0)
        u = max(1, math.ceil(need - 1e-9))
        out.append(u if max_count is None else min(u, max_count))
    return out


def lp_bound(rates: Sequence[float], costs: Sequence[float],
             caps: Sequence[Sequence[float]]) -> tuple[float, list[float]]:
    """(LB, m): the program's LP relaxation ``LB = sum_b r_b m_b``, where ``m_b = min_p c_p /
    cap[b][p]`` is the least cost of a request/s of bucket b (inf where none serves it)."""
    m = [min((c / row[p] for p, c in enumerate(costs) if row[p] > 0), default=math.inf)
         for row in caps]
    return sum(r * mb for r, mb in zip(rates, m, strict=True)), m


def useful_options(rates: Sequence[float], costs: Sequence[float],
                   caps: Sequence[Sequence[float]], upper: float) -> list[int]:
    """The options that can be in a fleet costing at most ``upper`` [USD/h].

    Any fleet with ``y_p >= 1`` copies of option p costs at least ``LB + (c_p - M_p)``, where
    ``M_p = max_b cap[b][p] m_b`` is the most LP cost one copy's capacity can displace (the
    relaxation's cost of the load it carries is at most ``y_p M_p``, and it pays ``c_p y_p``).
    An option whose bound is above ``upper`` is in no optimal fleet (reduced-cost fixing);
    dropping it leaves the optimum unchanged whenever ``upper`` is the cost of a real fleet."""
    lb, m = lp_bound(rates, costs, caps)
    keep = []
    for p, c in enumerate(costs):
        displaced = max((row[p] * mb for row, mb in zip(caps, m, strict=True) if row[p] > 0),
                        default=0.0)
        if lb + (c - displaced) <= upper * (1.0 + 1e-9) + 1e-12:
            keep.append(p)
    return keep


def solve(
    rates: Sequence[float],
    costs: Sequence[float],
    caps: Sequence[Sequence[float]],
    types: Sequence[int],
    *,
    max_types: int | None = None,
    max_count: int | None = None,
    time_limit_s: float = TIME_LIMIT_S,
    upper_usd_per_hour: float | None = None,
    caps_any: Sequence[Sequence[float]] | None = None,
    max_outside: float = 0.0,
    unproven: list[str] | None = None,
) -> Solution | None:
    """The least-cost fleet (see the module docstring); None when no fleet exists (a bucket
    no option can serve, or ``max_count`` too small) or the solver found none in time.
    ``unproven``: a list this appends to (the reason) when the answer, a fleet or None, is not
    proven optimal (the time limit struck, or the solver's answer was numerically broken).

    ``rates[b]`` [requests/s], ``costs[p]`` [USD/h per copy], ``caps[b][p]`` [requests/s per
    copy within the latency limits], ``types[p]``: the GPU type index of option p (for
    ``max_types``). ``caps_any[b][p]``: capacity with the limits removed, and
    ``max_outside``: the most share of all requests served outside the limits (percentile
    SLOs; 0 = none, ``caps_any`` unused).
    ``upper_usd_per_hour``: the cost of a fleet known to exist (e.g. the best single type):
    options that cannot be in a fleet this cheap are left out first (:func:`useful_options`),
    which leaves the optimum unchanged and makes the program much smaller."""
    if max_outside <= 0.0:
        caps_any = None
    if upper_usd_per_hour is not None:
        keep = useful_options(rates, costs, widest(caps, caps_any), upper_usd_per_hour)
        if len(keep) < len(costs):
            sub = solve(rates, [costs[p] for p in keep], _cols(caps, keep),
                        [types[p] for p in keep], max_types=max_types, max_count=max_count,
                        time_limit_s=time_limit_s,
                        caps_any=None if caps_any is None else _cols(caps_any, keep),
                        max_outside=max_outside, unproven=unproven)
            return None if sub is None else _widen(sub, keep, len(costs))
    n_b, n_p = len(rates), len(costs)
    if n_b == 0 or n_p == 0:
        return None
    cap = np.asarray(caps, dtype=float).reshape(n_b, n_p)
    wide = np.asarray(widest(caps, caps_any), dtype=float).reshape(n_b, n_p)
    rate = np.asarray(rates, dtype=float)
    if not (wide > 0).any(axis=1).all():
        return None
    upper = upper_counts(rates, cap.tolist(), max_count, caps_any)
    bs, ps = np.nonzero(cap > 0)
    n_x = len(bs)
    if caps_any is not None:
        vbs, vps = np.nonzero(wide > 0)
    else:
        vbs, vps = np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    n_v = len(vbs)
    type_ids = sorted(set(types))
    limit_types = max_types is not None and max_types < len(type_ids)
    n_z = len(type_ids) if limit_types else 0
    n_var = n_p + n_x + n_v + n_z
    # rows: n_b equalities, n_p capacities, n_p "used", (percentile) 1 outside budget, then
    # (types) n_p links + 1 budget of types
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    x_cols = n_p + np.arange(n_x)
    v_cols = n_p + n_x + np.arange(n_v)
    rows += [bs, vbs]
    cols += [x_cols, v_cols]
    vals += [np.ones(n_x), np.ones(n_v)]
    rows += [n_b + ps, n_b + vps]
    cols += [x_cols, v_cols]
    vals += [rate[bs] / cap[bs, ps], rate[vbs] / wide[vbs, vps]]
    rows.append(n_b + np.arange(n_p))
    cols.append(np.arange(n_p))
    vals.append(-np.ones(n_p))
    lb = [1.0] * n_b + [-np.inf] * n_p
    ub = [1.0] * n_b + [0.0] * n_p
    # sum_b x[b,p] + v[b,p] <= 2 n_b y_p: an option that serves anything has a copy. Implied
    # by the capacity rows in exact arithmetic, but at tiny loads (r / cap ~ 1e-8) those rows
    # fit inside the solver's feasibility tolerance with y_p = 0; these rows do not.
    used0 = len(lb)
    rows += [used0 + ps, used0 + vps, used0 + np.arange(n_p)]
    cols += [x_cols, v_cols, np.arange(n_p)]
    vals += [np.ones(n_x), np.ones(n_v), -2.0 * n_b * np.ones(n_p)]
    lb += [-np.inf] * n_p
    ub += [0.0] * n_p
    if n_v:
        total = float(rate.sum())
        rows.append(np.full(n_v, len(lb)))
        cols.append(v_cols)
        vals.append(rate[vbs] / total)  # the budget as a share of all requests (order 1)
        lb.append(-np.inf)
        ub.append(max_outside)
    if limit_types:
        assert max_types is not None
        _type_limit_rows((rows, cols, vals, lb, ub), types, type_ids, upper, max_types,
                         z0=n_p + n_x + n_v)
    a = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(len(lb), n_var)).tocsr()
    c = np.concatenate([np.asarray(costs, dtype=float), np.zeros(n_x + n_v + n_z)])
    integrality = np.concatenate([np.ones(n_p), np.zeros(n_x + n_v), np.ones(n_z)])
    bounds = Bounds(np.zeros(n_var),
                    np.concatenate([np.asarray(upper, dtype=float), np.ones(n_x + n_v + n_z)]))
    res = milp(c, constraints=LinearConstraint(a, lb, ub), integrality=integrality,
               bounds=bounds,
               options={"time_limit": time_limit_s, "mip_rel_gap": MIP_REL_GAP,
                        "disp": False})
    if res.x is None:
        if res.status != 2 and unproven is not None:  # 2: proven infeasible
            unproven.append(f"solver status {res.status}: {res.message}")
        return None
    counts = [int(round(v)) for v in res.x[:n_p]]
    x = res.x
    if n_v and float(np.dot(rate[vbs], x[n_p + n_x:n_p + n_x + n_v])) > 0:
        # the same copies, the fewest requests outside the limits (an LP: the counts fixed)
        fixed = np.concatenate([np.asarray(counts, dtype=float), np.zeros(n_x + n_v),
                                np.zeros(n_z)])
        lo = fixed.copy()
        hi = np.concatenate([fixed[:n_p], np.ones(n_x + n_v + n_z)])
        c_out = np.concatenate([np.zeros(n_p + n_x), rate[vbs] / float(rate.sum()),
                                np.zeros(n_z)])
        less = milp(c_out, constraints=LinearConstraint(a, lb, ub), bounds=Bounds(lo, hi),
                    integrality=integrality,
                    options={"time_limit": time_limit_s, "disp": False})
        if less.x is not None and np.all(np.isfinite(less.x)):
            x = less.x
    within = np.zeros((n_b, n_p))
    within[bs, ps] = np.clip(x[n_p:n_p + n_x], 0.0, None)
    out = np.zeros((n_b, n_p))
    out[vbs, vps] = np.clip(x[n_p + n_x:n_p + n_x + n_v], 0.0, None)
    served = (within + out).sum(axis=1, keepdims=True)
    if not np.all(np.isfinite(x)) or not np.all(served > 0):
        if unproven is not None:
            unproven.append("numerically broken answer")
        return None  # the caller falls back
    within /= served
    out /= served
    gap = getattr(res, "mip_gap", None)
    status = "optimal" if res.status == 0 else "time_limit"
    if status != "optimal" and unproven is not None:
        unproven.append("time limit")
    return Solution(tuple(counts), _tuples(within + out),
                    float(np.dot(costs, counts)), status,
                    None if gap is None else max(0.0, float(gap)),
                    _tuples(out) if caps_any is not None else None)


def _tuples(a: np.ndarray) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(v) for v in row) for row in a)


def _cols(caps: Sequence[Sequence[float]], keep: Sequence[int]) -> list[list[float]]:
    return [[row[p] for p in keep] for row in caps]


def _widen(sol: Solution, keep: list[int], n_p: int) -> Solution:
    """A solution over the options ``keep`` as one over all ``n_p`` options."""
    counts = [0] * n_p
    for i, p in enumerate(keep):
        counts[p] = sol.counts[i]
    def spread(rows: tuple[tuple[float, ...], ...]) -> tuple[tuple[float, ...], ...]:
        out = []
        for row in rows:
            full = [0.0] * n_p
            for i, p in enumerate(keep):
                full[p] = row[i]
            out.append(tuple(full))
        return tuple(out)

    return replace(sol, counts=tuple(counts), shares=spread(sol.shares),
                   outside=None if sol.outside is None else spread(sol.outside))


def best_single_type(rates: Sequence[float], costs: Sequence[float],
                     caps: Sequence[Sequence[float]], types: Sequence[int], *,
                     max_count: int | None = None,
                     time_limit_s: float = TIME_LIMIT_S,
                     caps_any: Sequence[Sequence[float]] | None = None,
                     max_outside: float = 0.0) -> Solution | None:
    """The cheapest fleet of one GPU type: each type's own program, in the order of its LP
    bound, until the next bound is no better than the best fleet found (exact: a type's
    fleet costs at least its bound; with percentile SLOs the bound is that of the relaxation
    serving every request at ``max(cap, cap_any)``, still a lower bound). The greedy fleet
    (every request within the limits) is the first upper bound. When the search ends with
    every type either bounded out or solved to optimality, the answer is proven optimal among
    single types: its status is ``optimal`` (gap 0) even where the greedy fleet was it."""
    if max_outside <= 0.0:
        caps_any = None
    wide = widest(caps, caps_any)
    best = greedy_single(rates, costs, caps)
    unproven: list[str] = []
    if max_count is not None and best is not None and max(best.counts) > max_count:
        best = None
    order = []
    for t in sorted(set(types)):
        idx = [p for p, tp in enumerate(types) if tp == t]
        bound, _ = lp_bound(rates, [costs[p] for p in idx], _cols(wide, idx))
        if math.isfinite(bound):
            order.append((bound, t, idx))
    for bound, _, idx in sorted(order):
        if best is not None and bound >= best.usd_per_hour * (1.0 - 1e-9):
            break
        sub = solve(rates, [costs[p] for p in idx], _cols(caps, idx),
                    [types[p] for p in idx], max_count=max_count, time_limit_s=time_limit_s,
                    upper_usd_per_hour=None if best is None else best.usd_per_hour,
                    caps_any=None if caps_any is None else _cols(caps_any, idx),
                    max_outside=max_outside, unproven=unproven)
        if sub is not None and (best is None or sub.usd_per_hour < best.usd_per_hour):
            best = _widen(sub, idx, len(costs))
    if best is not None and not unproven:
        best = replace(best, status="optimal", mip_gap=0.0)
    return best


def greedy_single(rates: Sequence[float], costs: Sequence[float],
                  caps: Sequence[Sequence[float]]) -> Solution | None:
    """The cheapest single option carrying every bucket alone (copies = the load in copies,
    rounded up): a feasible fleet found without the solver, the fallback of last resort."""
    best: Solution | None = None
    n_b, n_p = len(rates), len(costs)
    for p in range(n_p):
        if any(caps[b][p] <= 0 for b in range(n_b)):
            continue
        need = sum(r / caps[b][p] for b, r in enumerate(rates))
        y = max(1, math.ceil(need - 1e-9))
        usd = costs[p] * y
        if best is None or usd < best.usd_per_hour:
            counts = tuple(y if q == p else 0 for q in range(n_p))
            shares = tuple(tuple(1.0 if q == p else 0.0 for q in range(n_p))
                           for _ in range(n_b))
            best = Solution(counts, shares, usd, "greedy", None)
    return best


def within_capacity(sol: Solution, rates: Sequence[float],
                    caps: Sequence[Sequence[float]],
                    caps_any: Sequence[Sequence[float]] | None = None,
                    max_outside: float = 0.0) -> bool:
    """Every bucket is served in full, only by options that can serve it and have a copy, and
    no option's copies carry more than their capacity (to :data:`CAPACITY_SLACK`); the part
    served outside the latency limits (``sol.outside``) is at most ``max_outside`` of all
    requests and uses ``max(cap, cap_any)``."""
    n_b = len(rates)
    out = sol.outside or tuple((0.0,) * len(sol.counts) for _ in range(n_b))
    wide = widest(caps, caps_any if sol.outside is not None else None)
    total = sum(rates)
    outside = sum(rates[b] * v for b in range(n_b) for v in out[b])
    if outside > (max_outside + 1e-7) * total:
        return False
    for b in range(n_b):
        if abs(sum(sol.shares[b]) - 1.0) > 1e-6:
            return False
        for p, s in enumerate(sol.shares[b]):
            inside = s - out[b][p]
            if inside > 1e-12 and caps[b][p] <= 0:
                return False
            if s > 1e-12 and (wide[b][p] <= 0 or sol.counts[p] < 1):
                return False
    for p, y in enumerate(sol.counts):
        used = sum(rates[b] * (sol.shares[b][p] - out[b][p]) / caps[b][p]
                   for b in range(n_b) if caps[b][p] > 0)
        used += sum(rates[b] * out[b][p] / wide[b][p]
                    for b in range(n_b) if out[b][p] > 0 and wide[b][p] > 0)
        if used > y * (1.0 + CAPACITY_SLACK) + 1e-9:
            return False
    return True


@dataclass(frozen=True)
class TimeSolution:
    """A least-latency fleet under a budget: copies per option, each bucket's split over the
    operating points (modes), its mean latency and cost."""

    counts: tuple[int, ...]
    """y_p: copies of each option [count]."""
    shares: tuple[tuple[float, ...], ...]
    """x[b][m]: fraction of bucket b's requests served at mode m (each row sums to 1)."""
    mean_latency_ms: float
    """Request-weighted mean end-to-end latency [ms]."""
    usd_per_hour: float
    status: str
    mip_gap: float | None


def solve_time(
    rates: Sequence[float],
    costs: Sequence[float],
    caps: Sequence[Sequence[float]],
    lats: Sequence[Sequence[float]],
    owner: Sequence[int],
    types: Sequence[int],
    budget_usd_per_hour: float,
    *,
    max_types: int | None = None,
    max_count: int | None = None,
    time_limit_s: float = TIME_LIMIT_S,
) -> TimeSolution | None:
    """The fleet of least request-weighted mean latency costing at most the budget; the
    cheapest such fleet among those of that latency (a second solve). None when no fleet
    fits the budget.

    Modes m are operating points of the options: option ``owner[m]`` serving bucket b at one
    batch, with capacity ``caps[b][m]`` [requests/s per copy] and latency ``lats[b][m]``
    [ms] (0 capacity: not available). A copy time-shares its modes linearly, as the cost
    program shares buckets::

        minimise    sum_{b,m} (r_b / R) lat[b,m] x[b,m]
        subject to  sum_m x[b,m] = 1
                    sum_{b, m of p} r_b x[b,m] / cap[b,m] <= y_p
                    sum_p c_p y_p <= budget,  (types) y_p <= U_p z_t, sum_t z_t <= K

    ``U_p``: the copies the budget buys (or ``max_count``), at most the copies that carry
    every bucket at the option's slowest-capacity mode (more never lowers the latency)."""
    n_b, n_p, n_m = len(rates), len(costs), len(owner)
    if n_b == 0 or n_p == 0 or n_m == 0:
        return None
    cap = np.asarray(caps, dtype=float).reshape(n_b, n_m)
    lat = np.asarray(lats, dtype=float).reshape(n_b, n_m)
    rate = np.asarray(rates, dtype=float)
    own = np.asarray(owner, dtype=int)
    if not (cap > 0).any(axis=1).all():
        return None
    upper = []
    for p in range(n_p):
        mine = own == p
        need = 0.0
        for b in range(n_b):
            row = cap[b, mine]
            if (row > 0).any():
                need += rate[b] / row[row > 0].min()
        u = max(1, math.ceil(need - 1e-9))
        u = min(u, int(math.floor(budget_usd_per_hour / costs[p] + 1e-9)))
        upper.append(u if max_count is None else min(u, max_count))
    upper = [max(0, u) for u in upper]
    bs, ms = np.nonzero(cap > 0)
    n_x = len(bs)
    type_ids = sorted(set(types))
    limit_types = max_types is not None and max_types < len(type_ids)
    n_z = len(type_ids) if limit_types else 0
    n_var = n_p + n_x + n_z
    x_cols = n_p + np.arange(n_x)
    ps = own[ms]
    rows = [bs, n_b + ps, n_b + np.arange(n_p)]
    cols = [x_cols, x_cols, np.arange(n_p)]
    vals = [np.ones(n_x), rate[bs] / cap[bs, ms], -np.ones(n_p)]
    lb = [1.0] * n_b + [-np.inf] * n_p
    ub = [1.0] * n_b + [0.0] * n_p
    used0 = len(lb)  # as in solve: anything served has a copy, whatever the tolerance
    rows += [used0 + ps, used0 + np.arange(n_p)]
    cols += [x_cols, np.arange(n_p)]
    vals += [np.ones(n_x), -float(max(1, n_x)) * np.ones(n_p)]
    lb += [-np.inf] * n_p
    ub += [0.0] * n_p
    budget_row = len(lb)
    rows.append(np.full(n_p, budget_row))
    cols.append(np.arange(n_p))
    vals.append(np.asarray(costs, dtype=float))
    lb.append(-np.inf)
    ub.append(budget_usd_per_hour * (1.0 + 1e-12))
    if limit_types:
        assert max_types is not None
        _type_limit_rows((rows, cols, vals, lb, ub), types, type_ids, upper, max_types,
                         z0=n_p + n_x)
    a = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(len(lb), n_var)).tocsr()
    weight = rate[bs] / float(rate.sum())
    c_lat = np.concatenate([np.zeros(n_p), weight * lat[bs, ms], np.zeros(n_z)])
    integrality = np.concatenate([np.ones(n_p), np.zeros(n_x), np.ones(n_z)])
    bounds = Bounds(np.zeros(n_var),
                    np.concatenate([np.asarray(upper, dtype=float), np.ones(n_x + n_z)]))
    opts = {"time_limit": time_limit_s, "mip_rel_gap": MIP_REL_GAP, "disp": False}
    res = milp(c_lat, constraints=LinearConstraint(a, lb, ub), integrality=integrality,
               bounds=bounds, options=opts)
    if res.x is None or not np.all(np.isfinite(res.x)):
        return None
    x = res.x
    best = float(np.dot(c_lat, x))
    # among the fleets of that latency, the cheapest: latency as a row, cost the objective
    c_cost = np.concatenate([np.asarray(costs, dtype=float), np.zeros(n_x + n_z)])
    cheap = milp(c_cost, constraints=[LinearConstraint(a, lb, ub), LinearConstraint(
                     c_lat[None, :], -np.inf, best * (1.0 + 1e-7) + 1e-9)],
                 integrality=integrality, bounds=bounds, options=opts)
    if cheap.x is not None and np.all(np.isfinite(cheap.x)):
        x = cheap.x
    counts = [int(round(v)) for v in x[:n_p]]
    shares = np.zeros((n_b, n_m))
    shares[bs, ms] = np.clip(x[n_p:n_p + n_x], 0.0, None)
    shares[:, np.asarray(counts)[own] < 1] = 0.0  # tolerance crumbs on options not rented
    served = shares.sum(axis=1, keepdims=True)
    if not np.all(served > 0):
        return None
    shares /= served
    mean = float((rate[:, None] * shares * np.where(cap > 0, lat, 0.0)).sum() / rate.sum())
    gap = getattr(res, "mip_gap", None)
    return TimeSolution(tuple(counts), _tuples(shares), mean, float(np.dot(costs, counts)),
                        "optimal" if res.status == 0 else "time_limit",
                        None if gap is None else max(0.0, float(gap)))


def within_capacity_modes(sol: TimeSolution, rates: Sequence[float],
                          caps: Sequence[Sequence[float]], owner: Sequence[int]) -> bool:
    """Every bucket served in full at available modes of rented options, no option past its
    copies' capacity (to :data:`CAPACITY_SLACK`)."""
    n_b = len(rates)
    used = [0.0] * len(sol.counts)
    for b in range(n_b):
        if abs(sum(sol.shares[b]) - 1.0) > 1e-6:
            return False
        for m, s in enumerate(sol.shares[b]):
            if s <= 1e-12:
                continue
            if caps[b][m] <= 0 or sol.counts[owner[m]] < 1:
                return False
            used[owner[m]] += rates[b] * s / caps[b][m]
    return all(u <= y * (1.0 + CAPACITY_SLACK) + 1e-9 for u, y in zip(used, sol.counts,
                                                                        strict=True))


def _type_limit_rows(
    program: tuple[list[Any], list[Any], list[Any], list[float], list[float]],
    types: Sequence[int], type_ids: Sequence[int], upper: Sequence[float], max_types: int,
    z0: int,
) -> None:
    """Append the GPU-type limit to a program's (rows, cols, vals, lb, ub): option p's copies
    at most its upper count times its type's indicator (z at column ``z0`` + the type's index),
    and at most ``max_types`` indicators set."""
    rows, cols, vals, lb, ub = program
    n_p, n_z = len(types), len(type_ids)
    index = {t: i for i, t in enumerate(type_ids)}
    link0 = len(lb)
    rows += [link0 + np.arange(n_p), link0 + np.arange(n_p)]
    cols += [np.arange(n_p), z0 + np.array([index[t] for t in types])]
    vals += [np.ones(n_p), -np.asarray(upper, dtype=float)]
    rows.append(np.full(n_z, link0 + n_p))
    cols.append(z0 + np.arange(n_z))
    vals.append(np.ones(n_z))
    lb += [-np.inf] * n_p + [-np.inf]
    ub += [0.0] * n_p + [float(max_types)]
