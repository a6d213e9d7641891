"""Per-process snapshots of database state: the cache that holds them and the keys that tell
whether one is still the database's."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, TypeVar

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
    name = table.__table__.name
    sql = _FINGERPRINT_SQL.get(name)
    if sql is None:  # the table's own name (a model attribute, never input) in the text
        sql = _FINGERPRINT_SQL[name] = (
            f"SELECT revision FROM table_revisions WHERE table_name = '{name}'",
            f"SELECT count(*), max(id), sum(version), max(updated_at) FROM {name}")
    # plain SQL on the session's connection: no ORM statement compilation per request
    conn = session.connection()
    row = conn.exec_driver_sql(sql[0]).first()
    if row is not None:
        return ("revision", int(row[0]))
    count, max_id, versions, latest = conn.exec_driver_sql(sql[1]).one()
    return int(count), max_id, int(versions or 0), str(latest) if latest else None


_FINGERPRINT_SQL: dict[str, tuple[str, str]] = {}
"""(revision read, aggregate fallback) per table name."""


def database_key(session: Session) -> str:
    """Which database a session reads (part of every snapshot cache key)."""
    return str(session.get_bind().engine.url)
