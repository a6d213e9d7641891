"""The app's caches: one :class:`AppCaches` per app, on ``app.state.caches``.

Every cache the service keeps between requests lives here, so two apps in one process (tests,
benchmarks) never share one, and the app that made them can report (``/metrics``) and clear
them. Routes reach it through :data:`CachesDep`; service functions take the piece they need as
a keyword argument and read no module globals.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from service.catalog.service import CatalogSnapshots
from service.core.snapshots import SnapshotCache
from service.engine.cache import EngineCache
from service.engine.choice.fleet import Fleet
from service.engine.recommend_types import Offer, Recommendation
from service.quotes.service import OfferSnapshots

OfferLists = SnapshotCache[tuple[object, ...], list[Offer]]
"""An offer snapshot's rows as engine offers, keyed by snapshot, minute and staleness."""
Rankings = SnapshotCache[tuple[object, ...], Recommendation]
"""The engine's ranking of a request, keyed by everything it was computed from."""
Fleets = SnapshotCache[tuple[object, ...], Fleet]
"""The mixed fleet of a traffic histogram, keyed like a ranking."""

RANKING_SLOTS = 32
"""Rankings kept: a portal or bot that repeats a query within the minute is answered without
ranking again (a ranking is 5-100 ms of CPU); each holds a few hundred KB of frozen engine
objects, so 32 stay under ~10 MB and add little for the collector to walk."""

SNAPSHOT_SLOTS = 8
"""Snapshots kept per kind (one per database and revision in use)."""

FREEZE_GROWTH = 5_000
"""Engine cache entries added since :meth:`AppCaches.settle_collector` last looked before it
looks again. A ranking over the seeded catalog adds a few dozen to a few hundred; one over
5,000 GPU types adds 10,000-60,000 (a device, layer GEMMs, packed serving figures or a CNN's
layer table per type: up to ~1 million objects the collector would walk). The tables are
bounded (~300,000 entries in all), so it looks a bounded number of times in a process's
life."""
FREEZE_PAUSE_S = 0.05
"""A full collection at least this long [s] means the heap it walked is worth freezing
(5,000 GPU types: 0.25-0.8 s; the seeded catalog's: a few ms, where freezing gained nothing
and the more frequent full collections that follow a freeze cost ~3% of a ranking)."""


@dataclass
class AppCaches:
    """Bounded, thread-safe caches shared by one app's request threads.

    Every key carries what its value was built from (database URL and table fingerprint, or
    the frozen engine inputs), so a hit is never stale; clearing only costs the next request
    the time to rebuild."""

    engine: EngineCache = field(default_factory=EngineCache)
    """The engine's memo tables (GPU devices, layer GEMMs, offer indexes, provisioning text)."""
    catalog: CatalogSnapshots = field(
        default_factory=lambda: SnapshotCache(slots=SNAPSHOT_SLOTS))
    """The catalog as the engine sees it, per database and fingerprint."""
    offers: OfferSnapshots = field(default_factory=lambda: SnapshotCache(slots=SNAPSHOT_SLOTS))
    """The quotes a recommendation can pick, per database and fingerprint."""
    offer_lists: OfferLists = field(default_factory=lambda: SnapshotCache(slots=SNAPSHOT_SLOTS))
    """An offer snapshot's rows as engine offers, per snapshot and minute."""
    rankings: Rankings = field(default_factory=lambda: SnapshotCache(slots=RANKING_SLOTS))
    """Recent rankings, keyed by workload, objective, constraints, cost settings, limit,
    catalog and quote fingerprints and the minute their offers' ages were taken at."""
    fleets: Fleets = field(default_factory=lambda: SnapshotCache(slots=RANKING_SLOTS))
    """Recent mixed fleets (traffic histograms), keyed like the rankings."""
    settled_entries: int = 0
    """Engine cache entries when :meth:`settle_collector` last looked."""
    ranking_lock: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                         compare=False)
    """Held while one ranking (or mixed fleet) is computed: a worker process computes one at a
    time. The engine is pure Python under the GIL, so two rankings on two threads take as
    long as one after the other, and interleaved every switch interval they each lose their
    caches' warmth: measured on the varied LLM bodies (8 clients, one worker, 2 admitted at
    once), server CPU per request 11.95 ms with both running, 9.30 ms with one admitted at a
    time, 9.80 ms with this lock, under which requests still overlap everything else
    (parsing, the database, writing the answer)."""
    _freeze_lock: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                         compare=False)

    def settle_collector(self, pause_s: float = FREEZE_PAUSE_S) -> bool:
        """After a ranking: when the engine cache has grown by :data:`FREEZE_GROWTH` entries
        since the last look, collect once, and if that took ``pause_s`` or longer, move
        everything alive into the collector's permanent generation (``gc.freeze``); returns
        whether it froze.

        Why: the server freezes its start-up state (``warm_up_and_freeze``), but a catalog of
        thousands of GPU types fills the engine's tables on its first rankings with ~1 million
        objects that every later full collection walked again: 0.25-0.8 s inside about one
        ranking in two at 5,000 types. Cache entries are immutable and acyclic, so
        refcounting still frees a frozen one when its table evicts it. The collection first
        frees the garbage cycles there are; a cycle that an in-flight request forms later out
        of objects alive now would not be collected, and the tables are bounded, so this
        happens a bounded number of times (see :data:`FREEZE_GROWTH`: once full, FIFO
        eviction keeps their size) and such a leak cannot grow with time."""
        total = sum(self.engine.sizes().values())
        if total - self.settled_entries < FREEZE_GROWTH:
            return False
        with self._freeze_lock:
            total = sum(self.engine.sizes().values())
            if total - self.settled_entries < FREEZE_GROWTH:
                return False  # another thread looked meanwhile
            self.settled_entries = total
            start = time.perf_counter()
            gc.collect()
            if time.perf_counter() - start < pause_s:
                return False
            gc.freeze()
        return True

    def clear(self) -> None:
        self.engine.clear()
        self.catalog.clear()
        self.offers.clear()
        self.offer_lists.clear()
        self.rankings.clear()
        self.fleets.clear()
        self.settled_entries = 0


async def get_caches(request: Request) -> AppCaches:
    """Async, so FastAPI calls it on the event loop: a sync dependency is a trip to the thread
    pool (a GIL hand-over each way) for one attribute read."""
    caches: AppCaches = request.app.state.caches
    return caches


CachesDep = Annotated[AppCaches, Depends(get_caches)]
