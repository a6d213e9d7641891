"""Per-process snapshots of database state: the cache that holds them and the keys that tell
whether one is still the database's."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Generic, TypeVar

from sqlalchemy.engine import Engine
from sqlmodel import Session

K = TypeVar("K")
V = TypeVar("V")


class SnapshotCache(Generic[K, V]):
    """A small thread-safe LRU for per-process snapshots of database state.

    Keys must include what the snapshot was read at (database URL and a fingerprint of the
    rows), so a hit is only ever the same state; the LRU bound keeps memory flat.
    """

    def __init__(self, slots: int) -> None:
        self._slots = slots
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._slots:
                self._data.popitem(last=False)
        # No gc.freeze() here: it freezes every object alive at that moment, in-flight
        # requests' garbage cycles included, which then are never collected (a long-running
        # server would leak). The price: a full collection re-walks the snapshots
        # (~0.1 s at 5,000 GPUs), and CPython runs one only when long-lived objects grew by a
        # quarter since the last, i.e. about once per snapshot rebuild, not per request.

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def table_fingerprint(session: Session, table: Any) -> tuple[object, ...]:
    """Changes whenever a row of ``table`` (``gpus`` or ``quotes``) is added, removed or
    updated: its counter in ``table_revisions``, which the database's own triggers bump in
    the writing transaction (service/core/revisions.py, migration 0007): one indexed read.
    Without that row, (count, max id, sum of versions, latest update) of the table, as before:
    a full scan (~40 ms at 200,000 quotes)."""
    return table_fingerprints(session, table.__table__.name)[0]


def table_fingerprints(session: Session, *names: str) -> tuple[tuple[object, ...], ...]:
    """:func:`table_fingerprint` of each named table, from one read of ``table_revisions``
    (a recommendation checks the catalog and the quotes with one statement)."""
    sql = _REVISIONS_SQL.get(names)
    if sql is None:  # table names are the models' own (constants, never input)
        sql = _REVISIONS_SQL[names] = (
            "SELECT table_name, revision FROM table_revisions WHERE table_name IN ("
            + ", ".join(f"'{n}'" for n in names) + ")")
    # plain SQL on the session's connection: no ORM statement compilation per request
    conn = session.connection()
    found: dict[str, int] = {str(name): int(rev) for name, rev in conn.exec_driver_sql(sql)}
    out: list[tuple[object, ...]] = []
    for name in names:
        if name in found:
            out.append(("revision", found[name]))
            continue
        count, max_id, versions, latest = conn.exec_driver_sql(
            f"SELECT count(*), max(id), sum(version), max(updated_at) FROM {name}").one()
        out.append((int(count), max_id, int(versions or 0), str(latest) if latest else None))
    return tuple(out)


_REVISIONS_SQL: dict[tuple[str, ...], str] = {}
"""The revision read per tuple of table names."""

_DATABASE_KEYS: weakref.WeakKeyDictionary[Engine, str] = weakref.WeakKeyDictionary()


def database_key(session: Session) -> str:
    """Which database a session reads (part of every snapshot cache key)."""
    engine = session.get_bind().engine
    key = _DATABASE_KEYS.get(engine)
    if key is None:
        key = _DATABASE_KEYS[engine] = str(engine.url)
    return key
