"""Memo tables for the engine, owned by whoever calls it (the service keeps one per process).

The engine keeps no module-global caches. Two kinds of memo exist:

* :class:`EngineCache`: results that are pure functions of frozen inputs and are themselves
  immutable (estimates, the smallest GPU count that fits, the fastest training layout and
  splits, serving timings and batch limits, ranking floors). Shared across requests and
  threads: bounded per table, inserts under a lock, clearable.
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

_MISSING: Any = object()
DEFAULT_MAX_ENTRIES = 16_384
"""Entries per table: three times the GPU types of the largest catalog benchmarked (5,000);
an entry is a few hundred bytes, so a full table is a few MB per process."""


TABLE_LIMITS: dict[str, int] = {"offer_index": 2, "layer_ops": 4096}
"""Per-table overrides of :data:`DEFAULT_MAX_ENTRIES`. A full :class:`Estimate` is ~1-2 KB, so
the largest ordinary table stays under ~30 MB per process; an ``offer_index`` entry holds a
whole offer list (tens of MB at 200,000 quotes), so two: the current snapshot's and the last.
A ``layer_ops`` entry (one model's layer GEMM shapes on one device and TP degree) is ~2 KB:
4,096 of them, ~8 MB."""


class EngineCache:
    """Bounded, thread-safe tables of immutable engine results.

    Reads take no lock (a dict lookup is atomic under CPython's GIL, and values are never
    mutated); inserts and evictions hold one lock. Each table keeps at most its limit of
    entries, evicting the oldest insertions first (FIFO: a hit costs one dict lookup, which is
    what keeps a cached recommendation cheaper than recomputing it)."""

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

    def get(self, table: str, key: Hashable, compute: Callable[[], V]) -> V:
        """The memoized value of ``compute()`` for ``key`` in ``table``. ``compute`` runs
        outside the lock (two threads may compute the same value; both results are equal)."""
        entries = self._tables.get(table)
        if entries is not None:
            found = entries.get(key, _MISSING)
            if found is not _MISSING:
                value: V = found
                return value
        value = compute()
        with self._lock:
            entries = self._tables.get(table)
            if entries is None:
                entries = self._tables[table] = OrderedDict()
            entries[key] = value
            limit = self.table_limits.get(table, self.max_entries)
            while len(entries) > limit:
                # O(1): a plain dict's first key is found by scanning past the slots of
                # every key deleted before it (3 us an insert in a full table, ~1-3 ms of a
                # request that inserts hundreds of entries)
                entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._tables = {}

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
