"""Memo tables for the engine, owned by whoever calls it (the service keeps one per app).

The engine keeps no module-global caches. Two kinds of memo exist:

* :class:`EngineCache`: results that are pure functions of frozen inputs that many requests
  share -- a GPU's :class:`~physics.kernels.Device`, a model shape's layer GEMMs on it, a
  GPU's network figures, the offer index of a quote snapshot, rendered provisioning text:
  the tables of :data:`SHARED_TABLES`, keyed by shapes and catalog rows, never by a whole
  workload. Shared across requests and threads: bounded per table, inserts under a lock,
  clearable, measured (:meth:`EngineCache.stats`, exported on ``/metrics``).
* :class:`Memo`: one call's scratch space. Everything keyed by the request's workload
  (estimates, serving timings and batch searches, ranking floors and options, the per-GPU
  inference contexts) lives here and is dropped with the request: a varied stream of
  workloads would only fill a shared table with entries no later request asks for, and keep
  them for the collector to walk.
"""

from __future__ import annotations

import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable
from itertools import islice
from typing import Any, TypeVar

V = TypeVar("V")

_MISSING: Any = object()
DEFAULT_MAX_ENTRIES = 16_384
"""Entries per table: three times the GPU types of the largest catalog benchmarked (5,000);
an entry is a few hundred bytes, so a full table is a few MB per app."""


TABLE_LIMITS: dict[str, int] = {"offer_index": 2, "layer_ops": 16384, "training_tables": 512,
                                "serving_stack": 16384, "cnn_network": 8192, "cnn_columns": 4,
                                "training_packed": 4096}
"""Per-table overrides of :data:`DEFAULT_MAX_ENTRIES` (the shared tables hold devices, network
figures and provisioning text of a few hundred bytes to a few KB each). An ``offer_index``
entry holds a whole offer list (tens of MB at 200,000 quotes), so two: the current snapshot's
and the last.
A ``layer_ops`` entry (one model's layer GEMM shapes on one device and TP degree) is ~2 KB:
16,384 of them, up to ~32 MB (a serving ranking's bounds take one per GPU type at TP 1: at
4,096 a 5,000-type catalog rebuilt all of them on every request, ~0.4 s of its profile). A
``training_tables`` entry (a model's training GEMM rows on one device for each TP degree,
:mod:`physics.compiled_training`) is 8-14 KB: 512 of them, ~6 MB. A ``serving_stack`` entry (a
context's packed serving splits, :class:`physics.compiled_serving.SplitStack`: 43 floats and a
~5 KB GEMM table per split asked so far, one row each) is ~10 KB as ``stats`` counts it:
16,384 of them. It replaced one entry per split (``serving_base``, which needed 40,960 entries
at 5,000 GPU types, where FIFO eviction of a smaller table kept none of a ranking's working
set); the synthetic 5,000-type catalog's LLM rankings keep 1,195 stacks, ~12 MB (the split
entries were 3,347, ~25 MB with the GEMM tables ``layer_ops`` also holds).
A ``cnn_network`` entry (a CNN's layer table on one device for inference, :class:`physics.cnn.Net`,
~31 KB; ~0.4 ms to build) : 8,192 of them, up to ~250 MB, only on a catalog of thousands of
GPU types (one per type and CNN model); the seeded catalog's CNN rankings keep a few dozen.
A ``cnn_columns`` entry (a catalog's CNN layer tables as arrays, :mod:`choice.cnn_floors`) is
~4 MB at 5,000 GPU types and ~30 KB on the seeded catalog: 4 of them (a request may name a
model of its own).
A ``training_packed`` entry (a transformer job shape's packed layout-walk figures on one GPU as
a count runs it, :func:`physics.training.job_shape`) is ~1 KB of its own, plus the
``training_tables`` entry it shares (``stats`` counts ~15 KB with the key's model and that
table): 4,096 of them, a few MB of their own (a seeded training ranking asks ~17; 60 varied
training requests of 6 presets and 4 lengths left 396)."""


SHARED_TABLES = frozenset({
    "device", "training_device", "layer_ops", "network_gpu", "offer_index", "count_candidates",
    "skypilot_yaml", "training_micro_step", "exchange", "peak_share", "training_tables",
    "serving_stack", "cnn_network", "cnn_columns", "compute_pack_gpu", "serving_splits",
    "layout", "training_packed",
})
"""The tables kept across requests in the :class:`EngineCache` (keys: GPU figures, model
shapes, offer snapshots, provisioning tasks; ``training_micro_step``: three floats per (step
shape, device, micro-batch, TP), :func:`physics.training.step_shape`; ``exchange``: the links and
process grid of a compute job's step on a (GPU, count), :class:`physics.scaling.Exchange`;
``peak_share``: a float per (GPU, peak rate), the power model's sustained share of the peak;
``training_tables``: a model's training GEMM rows per TP degree on one device;
``serving_stack``: a serving context's splits' packed figures less the request's lengths and
limits, :meth:`physics.serving.Context.split_stack`; ``cnn_network``: a CNN's tabulated
layers on one device, its batch memo left out, :meth:`physics.cnn.Net.fresh`;
``cnn_columns``: a catalog's CNN layer tables as arrays,
:meth:`choice.screen.ScreenTable.cnn_columns`; ``compute_pack_gpu``: a GPU type's row of a
compute job's compiled scaling figures, 22 floats, :func:`physics.compiled_scaling.pack_gpu`;
``serving_splits``: the serving splits of a model's heads and layers on a node shape and
count, :func:`physics.serving.split_candidates`; ``layout``: the parallelism record of a
(GPU, count, TP, PP, sharding), :func:`physics.parallelism.layout`; ``training_packed``: a
transformer job's packed layout-walk figures less its batch and floor FLOPs, per job shape
(:func:`physics.training.job_shape`), GPU, rate and recomputation,
:func:`physics.compiled_training.with_batch`); every other table is
one call's (:meth:`Memo.get`)."""

SAMPLED_ENTRIES = 8
"""Entries per table whose size :meth:`EngineCache.stats` measures (the mean stands for all)."""


_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
             types.MethodType)


def deep_size(obj: object, limit: int = 20_000) -> int:
    """Bytes of ``obj`` and of the objects it references (each counted once; classes, modules
    and functions not counted; at most ``limit`` objects walked)."""
    seen: set[int] = set()
    stack, total = [obj], 0
    while stack and len(seen) < limit:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _NOT_DATA):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list | tuple | set | frozenset):
            stack.extend(o)
        else:
            fields = getattr(o, "__dict__", None)
            if isinstance(fields, dict):
                stack.append(fields)
            for slot in getattr(type(o), "__slots__", ()):
                if hasattr(o, slot):
                    stack.append(getattr(o, slot))
    return total


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
        self.put(table, key, value)
        return value

    def find(self, table: str, key: Hashable) -> Any:
        """The value kept for ``key`` in ``table``, or None."""
        entries = self._tables.get(table)
        return None if entries is None else entries.get(key)

    def put(self, table: str, key: Hashable, value: object) -> None:
        """Keep ``value`` for ``key`` in ``table``, replacing what was kept (a value that
        grows is published as a new object, never changed in place: readers holding the old
        one keep reading it)."""
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

    def clear(self) -> None:
        with self._lock:
            self._tables = {}

    def sizes(self) -> dict[str, int]:
        with self._lock:
            return {name: len(t) for name, t in self._tables.items()}

    def stats(self) -> dict[str, tuple[int, int]]:
        """Per table: (entries, estimated bytes): the mean :func:`deep_size` of up to
        :data:`SAMPLED_ENTRIES` entries (key and value) times the entries. Values shared
        between entries (a Device inside every LayerOps) count in each: an upper estimate."""
        with self._lock:
            tables = {name: list(islice(reversed(t.items()), SAMPLED_ENTRIES))
                      for name, t in self._tables.items()}
            counts = {name: len(t) for name, t in self._tables.items()}
        out: dict[str, tuple[int, int]] = {}
        for name, sample in tables.items():
            if not sample:
                out[name] = (0, 0)
                continue
            mean = sum(deep_size(item) for item in sample) / len(sample)
            out[name] = (counts[name], int(mean * counts[name]))
        return out


class Memo:
    """One call's memo: private scratch tables plus the shared :class:`EngineCache`."""

    def __init__(self, shared: EngineCache | None = None) -> None:
        self.shared = shared
        self._local: dict[tuple[str, Hashable], Any] = {}

    def get(self, table: str, key: Hashable, compute: Callable[[], V]) -> V:
        """Kept in the shared :class:`EngineCache` when ``table`` is one of
        :data:`SHARED_TABLES` and a cache was given, else memoized for this call only."""
        if self.shared is not None and table in SHARED_TABLES:
            return self.shared.get(table, key, compute)
        return self.scratch(table, key, compute)

    def find(self, table: str, key: Hashable) -> Any:
        """What :meth:`get` keeps for ``(table, key)``, or None (nothing kept)."""
        if self.shared is not None and table in SHARED_TABLES:
            return self.shared.find(table, key)
        return self._local.get((table, key))

    def put(self, table: str, key: Hashable, value: object) -> None:
        """Keep ``value`` for ``(table, key)`` where :meth:`get` keeps it, replacing what was
        kept."""
        if self.shared is not None and table in SHARED_TABLES:
            self.shared.put(table, key, value)
        else:
            self._local[(table, key)] = value

    def scratch(self, table: str, key: Hashable, compute: Callable[[], V]) -> V:
        """Memoized for this call only (for mutable values such as inference contexts)."""
        full = (table, key)
        found = self._local.get(full, _MISSING)  # one hash of the key, not two
        if found is not _MISSING:
            value: V = found
            return value
        value = compute()
        self._local[full] = value
        return value

    def peek(self, table: str, key: Hashable) -> object | None:
        """What :meth:`scratch` keeps for ``(table, key)``, or None (nothing computed)."""
        found = self._local.get((table, key), _MISSING)
        return None if found is _MISSING else found


def memo_of(memo: Memo | None) -> Memo:
    """``memo`` or a fresh one (no sharing) for callers that gave none."""
    return memo if memo is not None else Memo()
