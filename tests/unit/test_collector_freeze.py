"""AppCaches.settle_collector: once the engine's tables have grown by FREEZE_GROWTH entries (a
catalog of thousands of GPU types fills them with ~1 million objects that every full collection
walked again), not before, it collects and, where that pass took long, freezes the heap; a
frozen entry is still freed by reference counting when its table lets it go."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from service.workloads.caches import FREEZE_GROWTH, AppCaches


class _Entry:
    """A cache value a weak reference can watch."""

    def __init__(self, i: int) -> None:
        self.i = i


@pytest.fixture
def caches() -> Iterator[AppCaches]:
    yield AppCaches()
    gc.unfreeze()  # what a test froze goes back to the collector


def _fill(caches: AppCaches, start: int, n: int) -> None:
    for i in range(start, start + n):
        caches.engine.get("device", ("entry", i), lambda i=i: (float(i),))


def test_freezes_once_the_tables_grew_by_the_threshold(caches: AppCaches) -> None:
    before = gc.get_freeze_count()
    _fill(caches, 0, FREEZE_GROWTH - 1)
    assert not caches.settle_collector(pause_s=0.0)
    assert gc.get_freeze_count() == before and caches.settled_entries == 0
    _fill(caches, FREEZE_GROWTH - 1, 1)
    assert caches.settle_collector(pause_s=0.0)
    assert gc.get_freeze_count() > before
    assert caches.settled_entries == FREEZE_GROWTH
    # measured from the last look: the same growth again, not the total
    _fill(caches, FREEZE_GROWTH, FREEZE_GROWTH - 1)
    assert not caches.settle_collector(pause_s=0.0)
    _fill(caches, 2 * FREEZE_GROWTH - 1, 1)
    assert caches.settle_collector(pause_s=0.0)
    assert caches.settled_entries == 2 * FREEZE_GROWTH


def test_a_quick_collection_freezes_nothing(caches: AppCaches) -> None:
    """A heap the collector walks quickly (the seeded catalog's) is not frozen: after a freeze
    CPython runs full collections more often, which cost more than they save there."""
    before = gc.get_freeze_count()
    _fill(caches, 0, FREEZE_GROWTH)
    assert not caches.settle_collector(pause_s=60.0)
    assert gc.get_freeze_count() == before
    assert caches.settled_entries == FREEZE_GROWTH  # looked: the next look needs more growth


def test_a_frozen_entry_is_freed_when_its_table_drops_it(caches: AppCaches) -> None:
    watch = weakref.ref(caches.engine.get("layer_ops", "watched", lambda: _Entry(1)))
    _fill(caches, 0, FREEZE_GROWTH)
    assert caches.settle_collector(pause_s=0.0)
    assert watch() is not None  # held by the table
    caches.clear()
    assert watch() is None  # refcounting freed it, frozen or not
    assert caches.settled_entries == 0  # growth is counted from the emptied tables again
