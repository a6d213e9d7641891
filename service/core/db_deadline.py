"""A deadline on every database operation: past it, the connection is cut and the request fails.

A database behind a black-holed network (packets accepted, never answered) hangs a blocking
driver call for as long as the TCP connection lives: PostgreSQL's ``statement_timeout`` runs on
the server, which never sees the query, and keepalives/``tcp_user_timeout`` only fire when the
peer stops acknowledging, which a middlebox that accepts and drops (a proxy, a firewall doing
TCP termination) never does. So one watchdog thread per engine times every query, commit,
rollback and pool pre-ping, and on expiry shuts the connection's socket down (PostgreSQL) or
interrupts it (SQLite, ``sqlite3_interrupt``). The blocked call then raises the driver's
OperationalError, SQLAlchemy invalidates the connection, and the error handler answers 503
with Retry-After; the pool reconnects by itself once the database answers again.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

log = logging.getLogger("gpu_advisor.db")

PING_DEADLINE_S = 1.0
"""Longest wait for the pool's pre-ping (an empty query: well under a millisecond on a LAN, tens
of milliseconds across regions) before the connection is taken for dead and replaced. It was the
connect timeout (3 s): with the reconnect's own connect timeout after it, a black-holed
database took 6.3 s to answer 503, past the 5 s query deadline."""

_WATCHDOGS: weakref.WeakKeyDictionary[Engine, DeadlineWatchdog] = weakref.WeakKeyDictionary()
"""One watchdog per engine, so apps built on a shared engine (tests) do not stack listeners."""


def _cut(dbapi_conn: Any) -> None:
    """Make a blocked driver call on ``dbapi_conn`` return with an error, from another thread."""
    pgconn = getattr(dbapi_conn, "pgconn", None)
    if pgconn is not None:  # psycopg 3: shut the socket down under libpq's feet
        with contextlib.suppress(Exception):
            fd = pgconn.socket
            dup = socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM)
            try:
                dup.shutdown(socket.SHUT_RDWR)  # affects the shared socket, not only the dup
            finally:
                dup.close()
        return
    interrupt = getattr(dbapi_conn, "interrupt", None)
    if interrupt is not None:  # sqlite3: thread-safe by design
        with contextlib.suppress(Exception):
            interrupt()


class DeadlineWatchdog:
    """Times database operations by DBAPI connection; cuts those past their deadline."""

    def __init__(self, seconds: float, ping_seconds: float) -> None:
        self.seconds = seconds
        self.ping_seconds = ping_seconds
        self._armed: dict[int, tuple[float, Any]] = {}
        self._expired: set[int] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def arm(self, dbapi_conn: Any, seconds: float | None = None) -> None:
        deadline = time.monotonic() + (self.seconds if seconds is None else seconds)
        with self._lock:
            self._armed[id(dbapi_conn)] = (deadline, dbapi_conn)
            self._expired.discard(id(dbapi_conn))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="db-deadline", daemon=True)
                self._thread.start()
        self._wake.set()

    def disarm(self, dbapi_conn: Any) -> bool:
        """Stop timing; True when the deadline had passed and the connection was cut."""
        with self._lock:
            self._armed.pop(id(dbapi_conn), None)
            return id(dbapi_conn) in self._expired

    def _run(self) -> None:
        while True:
            now = time.monotonic()
            expired: list[Any] = []
            with self._lock:
                for key, (deadline, conn) in list(self._armed.items()):
                    if deadline <= now:
                        del self._armed[key]
                        self._expired.add(key)
                        expired.append(conn)
                if len(self._expired) > 10_000:  # ids of long-gone connections
                    self._expired.clear()
                nearest = min((d for d, _ in self._armed.values()), default=now + 60.0)
            for conn in expired:
                log.warning("database operation passed its deadline; connection cut")
                _cut(conn)
            self._wake.clear()
            self._wake.wait(timeout=max(0.01, min(nearest - time.monotonic(), 60.0)))


@contextlib.contextmanager
def timed(engine: Engine, dbapi_conn: Any) -> Iterator[None]:
    """A DBAPI call made on ``dbapi_conn`` outside SQLAlchemy's cursor events (a raw
    connection's cursor), under ``engine``'s deadline as the events would put it."""
    watchdog = _WATCHDOGS.get(engine)
    if watchdog is None:
        yield
        return
    watchdog.arm(dbapi_conn)
    try:
        yield
    finally:
        watchdog.disarm(dbapi_conn)


def install_db_deadline(engine: Engine, *, seconds: float, ping_seconds: float) -> None:
    """Put every query, commit, rollback and pre-ping of ``engine`` under a deadline."""
    existing = _WATCHDOGS.get(engine)
    if existing is not None:
        existing.seconds, existing.ping_seconds = seconds, ping_seconds
        return
    watchdog = DeadlineWatchdog(seconds, ping_seconds)
    _WATCHDOGS[engine] = watchdog

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement[:5].upper() == "BEGIN":
            # SQLite's BEGIN IMMEDIATE queues writers on the lock; the busy timeout bounds that
            # wait (service/core/db.py), and a queued writer is not a dead database.
            return
        watchdog.arm(conn.connection.dbapi_connection)

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn: Any, *_: Any) -> None:
        watchdog.disarm(conn.connection.dbapi_connection)

    @event.listens_for(engine, "handle_error")
    def _error(context: Any) -> None:
        conn = context.connection
        if conn is not None and not conn.closed and not conn.invalidated:
            watchdog.disarm(conn.connection.dbapi_connection)

    # The pool's pre-ping, the Session's COMMIT and the pool's reset-on-return ROLLBACK go to
    # the dialect directly, without cursor events: time them here. The dialect is per engine.
    dialect = engine.dialect
    do_ping, do_commit, do_rollback = dialect.do_ping, dialect.do_commit, dialect.do_rollback

    def ping(dbapi_conn: Any) -> bool:
        watchdog.arm(dbapi_conn, watchdog.ping_seconds)
        try:
            return bool(do_ping(dbapi_conn))
        except Exception:
            if watchdog.disarm(dbapi_conn):
                return False  # cut by us: the connection is dead, let the pool reconnect
            raise
        finally:
            watchdog.disarm(dbapi_conn)

    def commit(dbapi_conn: Any) -> None:
        watchdog.arm(dbapi_conn)
        try:
            do_commit(dbapi_conn)
        finally:
            watchdog.disarm(dbapi_conn)

    def rollback(dbapi_conn: Any) -> None:
        watchdog.arm(dbapi_conn)
        try:
            do_rollback(dbapi_conn)
        finally:
            watchdog.disarm(dbapi_conn)

    # Instance attributes shadow the dialect's methods for this engine only.
    setattr(dialect, "do_ping", ping)  # noqa: B010
    setattr(dialect, "do_commit", commit)  # noqa: B010
    setattr(dialect, "do_rollback", rollback)  # noqa: B010
