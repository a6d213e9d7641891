"""Every recommendation in tests/data/differential/golden.json is unchanged (tests/differential.py):
recomputed on a fresh seeded SQLite catalog, first with the engine cache empty in a shuffled
order, then forward with the cache warm from that pass, so an answer that depends on which
request came before (a cache keyed on too little) fails too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from service.core.config import Settings
from service.workloads.caches import AppCaches
from tests.differential import in_order, load_golden, mismatches, run_cases, seeded_catalog
from tests.differential_bodies import make_bodies

GOLDEN = load_golden()
SHOWN = 5
"""Mismatches spelled out per pass; the rest are counted."""


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Settings]]:
    engine, settings = seeded_catalog(tmp_path_factory.mktemp("differential"))
    yield engine, settings
    engine.dispose()


def test_answers_are_identical_to_the_golden_ones(catalog: tuple[Engine, Settings]) -> None:
    engine, settings = catalog
    cases = GOLDEN["cases"]
    caches = AppCaches()  # cold for the first pass, warm from it for the second
    failures = []
    for label, order in (("cold cache, shuffled", "shuffled"), ("warm cache, forward", "forward")):
        bad = mismatches(cases, run_cases(engine, settings, in_order(cases, order),
                                          caches=caches))
        if bad:
            more = f"\n... and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
            failures.append(f"{len(bad)} of {len(cases)} answers changed ({label}):\n"
                            + "\n".join(bad[:SHOWN]) + more)
    assert not failures, "\n".join(failures) + (
        "\nAn intended change: `python -m tests.differential regenerate`, and say why.")


def test_the_golden_bodies_are_the_generators() -> None:
    """The committed cases are what the generator draws today (regenerate after editing it)."""
    stored = {case["index"]: case["body"] for case in GOLDEN["cases"] + GOLDEN["oversized"]}
    assert [stored[i] for i in sorted(stored)] == make_bodies()
