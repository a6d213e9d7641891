"""Where a varied recommendation's time goes, stage by stage, per workload kind.

Run: ``.venv/bin/python -m bench.profile_engine [-n N] [--seed S]``; results:
bench/results/profile_engine.json.

The same bodies and request path as :mod:`bench.cpu_per_request` (seeded SQLite catalog, the
app's caches, two warm-up bodies per kind). Each stage below is timed (``perf_counter``) each
time it runs, excluding the stages it calls (so the stages add up to what they cover; a
stage's time includes anything else it calls), per request: the ranking's screen and the
bounds it takes, the options built in full (estimate and cost) and what they cover -- the
serving searches (the limit batch's scalar checks, the capacity grid, the operating batch,
the array serving model they call), scalar serving timings, training plans, compute jobs' and
training jobs' light figures -- the order and the listed candidates' explanations. ``rest``
is the request minus every stage: parsing, snapshots, the search's bookkeeping, the answer.
Wrapping a function costs ~1 us a call, which the figures include.
"""

from __future__ import annotations

import importlib
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench import cpu_per_request
from bench.profile_request import request_by_stage, seeded_catalog
from bench.record import stamped, varied_args, write_result

STAGES: tuple[tuple[str, str, str], ...] = (
    ("service.engine.choice.screen", "screen", "screen"),
    ("service.engine.choice.bounds", "floors", "screen: bounds"),
    ("service.engine.choice.ranking", "_new_option", "options built in full"),
    ("service.engine.choice.figures", "figures_of", "light figures"),
    ("service.engine.choice.figures", "figures", "light figures (one count)"),
    ("service.engine.physics.training", "plan_training", "training plans"),
    ("service.engine.physics.serving", "largest_meeting", "serving: limit batch"),
    ("service.engine.physics.serving:ServingModel", "check", "serving: scalar latency checks"),
    ("service.engine.physics.serving:Context", "capacity_batch", "serving: capacity grid"),
    ("service.engine.physics.estimate", "operating_batch", "serving: operating batch"),
    ("service.engine.physics.serving:Context", "requests_per_s_at", "serving: rates lookup"),
    ("service.engine.physics.batched", "requests_per_s", "serving: array model"),
    ("service.engine.physics.serving:Context", "timing", "serving: scalar timings"),
    ("service.engine.choice.ranking", "order", "order"),
    ("service.engine.choice.explain", "candidate", "listed candidates"),
    ("service.engine.choice.search", "search", "search (outer)"),
)
"""(module[:class], function, stage): a function this tree lacks is left out, so an older
tree (``python -m bench.profile_engine`` run from its checkout with this file copied in)
gives its own profile for a before/after comparison."""


def _owner(path: str) -> Any | None:
    module, _, cls = path.partition(":")
    try:
        owner: Any = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(owner, cls, None) if cls else owner


class Timer:
    """Exclusive time per stage: a stage's own time less the stages it called."""

    def __init__(self) -> None:
        self.own: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._stack: list[list[Any]] = []
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)
        stack, own, calls = self._stack, self.own, self.calls

        def timed(*args: Any, **kwargs: Any) -> Any:
            frame = [0.0]
            stack.append(frame)
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                stack.pop()
                own[label] += elapsed - frame[0]
                calls[label] += 1
                if stack:
                    stack[-1][0] += elapsed

        setattr(owner, name, timed)
        self._undo.append((owner, name, original))

    def restore(self) -> None:
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)
        self._undo.clear()


def profile(n: int, seed: int) -> dict[str, Any]:
    engine, settings, caches = seeded_catalog()
    out: dict[str, Any] = {}
    quiet: Callable[[str], None] = lambda stage: None  # noqa: E731
    for kind in cpu_per_request.KINDS:
        for text in cpu_per_request.bodies(kind, seed + 99, 2):
            request_by_stage(engine, text, settings, caches, quiet)
        timer = Timer()
        for path, name, label in STAGES:
            owner = _owner(path)
            if owner is not None and hasattr(owner, name):
                timer.wrap(owner, name, label)
        total = 0.0
        try:
            for text in cpu_per_request.bodies(kind, seed, n):
                start = time.perf_counter()
                request_by_stage(engine, text, settings, caches, quiet)
                total += time.perf_counter() - start
        finally:
            timer.restore()
        stages = {label: {"ms_per_request": round(ms * 1e3 / n, 3),
                          "calls_per_request": round(timer.calls[label] / n, 1)}
                  for label, ms in timer.own.most_common()}
        covered = sum(timer.own.values())
        stages["rest"] = {"ms_per_request": round((total - covered) * 1e3 / n, 3),
                          "calls_per_request": 1.0}
        out[kind] = {"bodies": n, "ms_per_request": round(total * 1e3 / n, 3),
                     "stages": stages}
    engine.dispose()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = varied_args(__doc__.split("\n\n")[0], argv, 40)
    result = stamped(clock="wall (perf_counter), exclusive per stage", seed=args.seed,
                     kinds=profile(args.n, args.seed))
    write_result("profile_engine.json", result)
    for kind, row in result["kinds"].items():
        print(f"{kind}: {row['ms_per_request']:.2f} ms per request")
        for label, st in row["stages"].items():
            print(f"  {label:34s} {st['ms_per_request']:8.3f} ms  "
                  f"{st['calls_per_request']:7.1f} calls")
    return result


if __name__ == "__main__":
    main()
