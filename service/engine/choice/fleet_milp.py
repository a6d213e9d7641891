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

Why SciPy's ``milp`` (HiGHS): SciPy is already a dependency of the service, HiGHS is an exact
branch-and-cut MILP solver with a time limit and a reported MIP gap, and it needs no other
native library (OR-Tools would add a ~30 MB wheel for the same answer on programs this size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

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

    def types_used(self, types: Sequence[int]) -> set[int]:
        return {types[p] for p, y in enumerate(self.counts) if y > 0}


def upper_counts(rates: Sequence[float], caps: Sequence[Sequence[float]],
                 max_count: int | None) -> list[int]:
    """U_p: copies of option p that carry every bucket it serves by itself."""
    n_opts = len(caps[0]) if caps else 0
    out = []
    for p in range(n_opts):
        need = sum(r / caps[b][p] for b, r in enumerate(rates) if caps[b][p] > 0)
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
) -> Solution | None:
    """The least-cost fleet (see the module docstring); None when no fleet exists (a bucket
    no option can serve, or ``max_count`` too small) or the solver found none in time.

    ``rates[b]`` [requests/s], ``costs[p]`` [USD/h per copy], ``caps[b][p]`` [requests/s per
    copy], ``types[p]``: the GPU type index of option p (for ``max_types``).
    ``upper_usd_per_hour``: the cost of a fleet known to exist (e.g. the best single type):
    options that cannot be in a fleet this cheap are left out first (:func:`useful_options`),
    which leaves the optimum unchanged and makes the program much smaller."""
    if upper_usd_per_hour is not None:
        keep = useful_options(rates, costs, caps, upper_usd_per_hour)
        if len(keep) < len(costs):
            sub = solve(rates, [costs[p] for p in keep], [[row[p] for p in keep] for row in caps],
                        [types[p] for p in keep], max_types=max_types, max_count=max_count,
                        time_limit_s=time_limit_s)
            return None if sub is None else _widen(sub, keep, len(costs))
    n_b, n_p = len(rates), len(costs)
    if n_b == 0 or n_p == 0:
        return None
    cap = np.asarray(caps, dtype=float).reshape(n_b, n_p)
    rate = np.asarray(rates, dtype=float)
    if not (cap > 0).any(axis=1).all():
        return None
    upper = upper_counts(rates, cap.tolist(), max_count)
    bs, ps = np.nonzero(cap > 0)
    n_x = len(bs)
    type_ids = sorted(set(types))
    limit_types = max_types is not None and max_types < len(type_ids)
    n_z = len(type_ids) if limit_types else 0
    n_var = n_p + n_x + n_z
    # rows: n_b equalities, n_p capacities, then (types) n_p links + 1 budget of types
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    x_cols = n_p + np.arange(n_x)
    rows.append(bs)
    cols.append(x_cols)
    vals.append(np.ones(n_x))
    rows.append(n_b + ps)
    cols.append(x_cols)
    vals.append(rate[bs] / cap[bs, ps])
    rows.append(n_b + np.arange(n_p))
    cols.append(np.arange(n_p))
    vals.append(-np.ones(n_p))
    lb = [1.0] * n_b + [-np.inf] * n_p
    ub = [1.0] * n_b + [0.0] * n_p
    # sum_b x[b,p] <= n_b y_p: an option that serves anything has a copy. Implied by the
    # capacity rows in exact arithmetic, but at tiny loads (r / cap ~ 1e-8) those rows fit
    # inside the solver's feasibility tolerance with y_p = 0; these rows do not.
    used0 = len(lb)
    rows += [used0 + ps, used0 + np.arange(n_p)]
    cols += [x_cols, np.arange(n_p)]
    vals += [np.ones(n_x), -float(n_b) * np.ones(n_p)]
    lb += [-np.inf] * n_p
    ub += [0.0] * n_p
    if limit_types:
        assert max_types is not None
        index = {t: i for i, t in enumerate(type_ids)}
        link0 = len(lb)
        rows += [link0 + np.arange(n_p), link0 + np.arange(n_p)]
        cols += [np.arange(n_p), n_p + n_x + np.array([index[t] for t in types])]
        vals += [np.ones(n_p), -np.asarray(upper, dtype=float)]
        rows.append(np.full(n_z, link0 + n_p))
        cols.append(n_p + n_x + np.arange(n_z))
        vals.append(np.ones(n_z))
        lb += [-np.inf] * n_p + [-np.inf]
        ub += [0.0] * n_p + [float(max_types)]
    a = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(len(lb), n_var)).tocsr()
    c = np.concatenate([np.asarray(costs, dtype=float), np.zeros(n_x + n_z)])
    integrality = np.concatenate([np.ones(n_p), np.zeros(n_x), np.ones(n_z)])
    bounds = Bounds(np.zeros(n_var),
                    np.concatenate([np.asarray(upper, dtype=float), np.ones(n_x + n_z)]))
    res = milp(c, constraints=LinearConstraint(a, lb, ub), integrality=integrality,
               bounds=bounds,
               options={"time_limit": time_limit_s, "mip_rel_gap": MIP_REL_GAP,
                        "disp": False})
    if res.x is None:
        return None
    counts = [int(round(v)) for v in res.x[:n_p]]
    shares = np.zeros((n_b, n_p))
    shares[bs, ps] = np.clip(res.x[n_p:n_p + n_x], 0.0, None)
    served = shares.sum(axis=1, keepdims=True)
    if not np.all(np.isfinite(res.x)) or not np.all(served > 0):
        return None  # numerically broken answer: the caller falls back
    shares /= served
    gap = getattr(res, "mip_gap", None)
    status = "optimal" if res.status == 0 else "time_limit"
    return Solution(tuple(counts), tuple(tuple(float(v) for v in row) for row in shares),
                    float(np.dot(costs, counts)), status,
                    None if gap is None else max(0.0, float(gap)))


def _widen(sol: Solution, keep: list[int], n_p: int) -> Solution:
    """A solution over the options ``keep`` as one over all ``n_p`` options."""
    counts = [0] * n_p
    for i, p in enumerate(keep):
        counts[p] = sol.counts[i]
    shares = []
    for row in sol.shares:
        full = [0.0] * n_p
        for i, p in enumerate(keep):
            full[p] = row[i]
        shares.append(tuple(full))
    return replace(sol, counts=tuple(counts), shares=tuple(shares))


def best_single_type(rates: Sequence[float], costs: Sequence[float],
                     caps: Sequence[Sequence[float]], types: Sequence[int], *,
                     max_count: int | None = None,
                     time_limit_s: float = TIME_LIMIT_S) -> Solution | None:
    """The cheapest fleet of one GPU type: each type's own program, in the order of its LP
    bound, until the next bound is no better than the best fleet found (exact: a type's
    fleet costs at least its bound). The greedy fleet is the first upper bound."""
    best = greedy_single(rates, costs, caps)
    if max_count is not None and best is not None and max(best.counts) > max_count:
        best = None
    order = []
    for t in sorted(set(types)):
        idx = [p for p, tp in enumerate(types) if tp == t]
        sub_caps = [[row[p] for p in idx] for row in caps]
        bound, _ = lp_bound(rates, [costs[p] for p in idx], sub_caps)
        if math.isfinite(bound):
            order.append((bound, t, idx))
    for bound, _, idx in sorted(order):
        if best is not None and bound >= best.usd_per_hour * (1.0 - 1e-9):
            break
        sub = solve(rates, [costs[p] for p in idx], [[row[p] for p in idx] for row in caps],
                    [types[p] for p in idx], max_count=max_count, time_limit_s=time_limit_s,
                    upper_usd_per_hour=None if best is None else best.usd_per_hour)
        if sub is not None and (best is None or sub.usd_per_hour < best.usd_per_hour):
            best = _widen(sub, idx, len(costs))
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
                    caps: Sequence[Sequence[float]]) -> bool:
    """Every bucket is served in full, only by options that can serve it and have a copy, and
    no option's copies carry more than their capacity (to :data:`CAPACITY_SLACK`)."""
    n_b = len(rates)
    for b in range(n_b):
        if abs(sum(sol.shares[b]) - 1.0) > 1e-6:
            return False
        if any(s > 1e-12 and (caps[b][p] <= 0 or sol.counts[p] < 1)
               for p, s in enumerate(sol.shares[b])):
            return False
    for p, y in enumerate(sol.counts):
        used = sum(rates[b] * sol.shares[b][p] / caps[b][p]
                   for b in range(n_b) if caps[b][p] > 0)
        if used > y * (1.0 + CAPACITY_SLACK) + 1e-9:
            return False
    return True
