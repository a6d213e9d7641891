"""Per-process snapshots of database state: the cache that holds them and the keys that tell
whether one is still the database's."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import OrderedDict
from typing import Any, Generic, TypeVar

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from service.core.db_deadline import timed

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
    sql = _revisions_sql(names)
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


def revisions_read(engine: Engine, *names: str) -> tuple[tuple[object, ...], ...] | None:
    """:func:`table_fingerprints` of each named table from one read of ``table_revisions`` on
    a pooled DBAPI connection, outside any session or transaction: one statement, so it reads
    one committed state (SQLite autocommit; PostgreSQL's implicit transaction, rolled back
    when the pool takes the connection back). What a read-only ranking route checks before
    it answers from its snapshots, for ~15-35 us instead of a session's ~115 us (checkout,
    BEGIN, SELECT, COMMIT; SQLite, docs/performance.md). The query is under the engine's deadline
    (:func:`db_deadline.timed`), and a DBAPI error is raised as SQLAlchemy's, after the
    connection is invalidated where it is a disconnect, as a session's read would. None when
    a table has no revision row (a database not migrated that far): the caller then reads
    through its session (:func:`table_fingerprints`' full-scan fallback)."""
    sql = _revisions_sql(names)
    dbapi_error = engine.dialect.loaded_dbapi.Error
    try:  # a connect's own DBAPI error (the pool raises it unwrapped here)
        fairy = engine.raw_connection()
    except dbapi_error as exc:
        raise DBAPIError.instance(None, None, exc, dbapi_error, connection_invalidated=True,
                                  dialect=engine.dialect) from exc
    try:
        dbapi_conn = fairy.dbapi_connection
        cursor = fairy.cursor()
        try:
            with timed(engine, dbapi_conn):
                cursor.execute(sql)
                rows = cursor.fetchall()
        except dbapi_error as exc:
            gone = engine.dialect.is_disconnect(exc, dbapi_conn, cursor)
            if gone:
                fairy.invalidate(exc)
            raise DBAPIError.instance(sql, None, exc, dbapi_error, connection_invalidated=gone,
                                      dialect=engine.dialect) from exc
        finally:
            with contextlib.suppress(Exception):
                cursor.close()
    finally:
        fairy.close()
    found = {str(name): int(rev) for name, rev in rows}
    if any(name not in found for name in names):
        return None
    return tuple(("revision", found[name]) for name in names)


def _revisions_sql(names: tuple[str, ...]) -> str:
    sql = _REVISIONS_SQL.get(names)
    if sql is None:  # table names are the models' own (constants, never input)
        sql = _REVISIONS_SQL[names] = (
            "SELECT table_name, revision FROM table_revisions WHERE table_name IN ("
            + ", ".join(f"'{n}'" for n in names) + ")")
    return sql


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
