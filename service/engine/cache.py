"""Memo tables for the engine, owned by whoever calls it (the service keeps one per process).

The engine keeps no module-global caches. Two kinds of memo exist:

* :class:`EngineCache`: results that are pure functions of frozen inputs and are themselves
  immutable (the smallest GPU count that fits, the fastest training layout, the training
  splits). Shared across requests and threads: bounded (LRU per table), guarded by a lock,
  clearable, with hit/miss counters.
* :class:`Memo`: one call's scratch space (the per-GPU inference contexts, whose own memo
  dicts fill as a recommendation walks the GPU counts). Never shared between requests; it
  reads and fills the shared :class:`EngineCache` it was given, if any.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

V = TypeVar("V")

DEFAULT_MAX_ENTRIES = 65_536
"""Entries per table: more than the GPU types of the largest catalog benchmarked (5,000) times
a few workloads; an entry is a few hundred bytes."""


TABLE_LIMITS = {"estimate": 16_384}
"""Smaller bounds for tables whose values are large: a full :class:`Estimate` is ~1-2 KB."""


class EngineCache:
    """Bounded, thread-safe LRU tables of immutable engine results."""

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        table_limits: dict[str, int] | None = None,
    ) -> None:
        if max_entries < 1 or any(v < 1 for v in (table_limits or {}).values()):
            raise ValueError("table sizes must be >= 1")
        self.max_entries = max_entries
        self.table_limits = dict(TABLE_LIMITS if table_limits is None else table_limits)
        self._lock = threading.Lock()
        self._tables: dict[str, OrderedDict[Hashable, Any]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, table: str, key: Hashable, compute: Callable[[], V]) -> V:
        """The memoized value of ``compute()`` for ``key`` in ``table``. ``compute`` runs
        outside the lock (two threads may compute the same value; both results are equal)."""
        with self._lock:
            entries = self._tables.get(table)
            if entries is not None and key in entries:
                entries.move_to_end(key)
                self.hits += 1
                value: V = entries[key]
                return value
            self.misses += 1
        value = compute()
        with self._lock:
            entries = self._tables.setdefault(table, OrderedDict())
            entries[key] = value
            entries.move_to_end(key)
            limit = self.table_limits.get(table, self.max_entries)
            while len(entries) > limit:
                entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()
            self.hits = self.misses = 0

    def sizes(self) -> dict[str, int]:
        with self._lock:
            return {name: len(t) for name, t in self._tables.items()}


class Memo:
    """One call's memo: private scratch tables plus the shared :class:`EngineCache`."""

    def __init__(self, shared: EngineCache | None = None) -> None:
        self.shared = shared
        self._local: dict[tuple[str, Hashable], Any] = {}

    def get(self, table: str, key: Hashable, compute: Callable[[], V]) -> V:
        """Shared when an :class:`EngineCache` was given, else memoized for this call only."""
        if self.shared is not None:
            return self.shared.get(table, key, compute)
        return self.scratch(table, key, compute)

    def scratch(self, table: str, key: Hashable, compute: Callable[[], V]) -> V:
        """Memoized for this call only (for mutable values such as inference contexts)."""
        full = (table, key)
        if full in self._local:
            value: V = self._local[full]
            return value
        value = compute()
        self._local[full] = value
        return value


def memo_of(memo: Memo | None) -> Memo:
    """``memo`` or a fresh one (no sharing) for callers that gave none."""
    return memo if memo is not None else Memo()
