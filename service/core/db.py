"""Database engine and the request's session dependency; nothing else."""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, nullcontext
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from fastapi import Depends, Request
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, create_engine

from service.core.errors import ServiceUnavailable

STATEMENT_TIMEOUT_MS = 30_000
"""No request's query should run longer; the largest (a 100,000-row import) takes ~2 s."""


def make_engine(url: str, *, connect_timeout_s: float = 3.0, pool_size: int | None = None,
                pool_timeout_s: float | None = None, busy_timeout_s: float = 30.0) -> Engine:
    """Create the engine; same code for SQLite and PostgreSQL.

    ``pool_size``: connections kept per process; the server passes its thread count, so every
    thread running a sync route can hold one (plus half as many again for requests between two
    threads). ``pool_timeout_s``: longest wait for a free one (then 503, service/core/errors.py).
    ``busy_timeout_s``: SQLite only, longest wait for another connection's write lock (pysqlite's
    ``timeout``, SQLite's busy timeout); the server passes its database deadline
    (GPU_ADVISOR_DB_DEADLINE_S), so a writer queued behind another process gets 503 database-busy
    within it. BEGIN is not under the deadline watchdog (service/core/db_deadline.py): this
    bounds it.
    """
    connect_args: dict[str, Any] = {}
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if pool_size is not None and url.split("?")[0] not in ("sqlite://", "sqlite:///:memory:"):
        kwargs.update(pool_size=pool_size, max_overflow=max(1, pool_size // 2))
    if url.startswith("sqlite"):
        connect_args["check_same_thread"] = False
        connect_args["timeout"] = busy_timeout_s
    elif url.startswith("postgresql"):
        connect_args.update(pg_connect_args(connect_timeout_s),
                            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}")
        kwargs["pool_timeout"] = connect_timeout_s
    if pool_timeout_s is not None and "pool_size" in kwargs:
        kwargs["pool_timeout"] = pool_timeout_s
    engine = create_engine(url, connect_args=connect_args, **kwargs)
    if url.startswith("sqlite"):
        _fix_sqlite_transactions(engine)
    return engine


def pg_connect_args(connect_timeout_s: float) -> dict[str, Any]:
    """libpq parameters that bound connecting and a dead link (PostgreSQL docs 34.1.2): a server
    that accepts the TCP connection and never answers fails the connect in ``connect_timeout``
    (whole seconds, at least 1); keepalives + TCP_USER_TIMEOUT bound a link that stops
    acknowledging, instead of the kernel's TCP timeout (minutes)."""
    return {"connect_timeout": max(1, math.ceil(connect_timeout_s)), "keepalives": 1,
            "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 2,
            "tcp_user_timeout": int(connect_timeout_s * 1000) + 2000}


SQLITE_BEGIN = "gpu_advisor_sqlite_begin"
"""Execution option naming how a SQLite transaction begins: DEFERRED (default) or IMMEDIATE."""

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_WRITES_ATTR = "__gpu_advisor_session_writes__"

E = TypeVar("E", bound=Callable[..., Any])


def _fix_sqlite_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not pysqlite, issue BEGIN, so SAVEPOINTs and all-or-nothing writes work;
    write-ahead logging, and writers that take the write lock when they begin.

    See the SQLAlchemy docs, "Serializable isolation / Savepoints / Transactional DDL" (pysqlite).
    A deferred transaction that reads and then writes cannot wait for the lock: if another writer
    committed since its read, SQLite fails it at once (SQLITE_BUSY, or SQLITE_BUSY_SNAPSHOT in
    WAL mode; https://sqlite.org/lang_transaction.html, https://sqlite.org/wal.html#busy) and no
    busy timeout helps. ``BEGIN IMMEDIATE`` takes the write lock first, so writers queue on the
    busy timeout (pysqlite's ``timeout`` in make_engine) and then read the committed state:
    20 racing PATCHes give one 200 and nineteen 412s, as on PostgreSQL. WAL lets readers run
    beside the one writer; reads stay deferred, so they never wait for a writer.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")  # persistent; "memory" for :memory: databases
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN, "DEFERRED")
        conn.exec_driver_sql("BEGIN IMMEDIATE" if mode == "IMMEDIATE" else "BEGIN")


def reads_database_only(endpoint: E) -> E:
    """Mark an unsafe-method route (a POST that only computes) whose session only reads."""
    setattr(endpoint, _WRITES_ATTR, False)
    return endpoint


def request_writes(request: Request) -> bool:
    """Whether the request's session writes: POST/PUT/PATCH/DELETE, unless the route says."""
    endpoint = getattr(request.scope.get("route"), "endpoint", None)
    declared = getattr(endpoint, _WRITES_ATTR, None)
    return declared if declared is not None else request.method not in SAFE_METHODS


class DatabaseBusy(ServiceUnavailable):
    """SQLite's write lock stayed taken past the busy timeout: overload, not an outage."""

    slug, title = "database-busy", "Database busy"


def _is_sqlite_lock(exc: OperationalError) -> bool:
    code = getattr(exc.orig, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED and their extended codes
    return "locked" in str(exc.orig) or "busy" in str(exc.orig)


_WRITER_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary())
"""One SQLite writer at a time per process and database file, by event loop (a lock is bound to
the loop it first waits on; test clients each run their own)."""


@asynccontextmanager
async def _sqlite_writer_turn(engine: Engine, wait_s: float) -> AsyncIterator[None]:
    """Wait, without holding a thread, for this process's turn to write to a SQLite file.

    A sync route runs its dependencies and its body as separate hops on the thread pool. A writer
    that got SQLite's lock in one hop (the API-key lookup) needs a free thread for the next; if
    every thread is busy-waiting in BEGIN IMMEDIATE for that same lock, none is ever free, and
    all stall until the busy timeout (measured: 20 racing PATCHes, 30 s, then 503s). Queueing
    writers here, on the event loop, leaves the threads to the one writer and to readers; other
    processes' writers are still serialized by SQLite's own lock and busy timeout.
    """
    locks = _WRITER_LOCKS.setdefault(asyncio.get_running_loop(), {})
    lock = locks.setdefault(str(engine.url), asyncio.Lock())
    try:
        async with asyncio.timeout(wait_s):
            await lock.acquire()
    except TimeoutError:
        raise DatabaseBusy(f"Other writes held the database for {wait_s:g} s; retry shortly",
                           headers={"Retry-After": "1"}) from None
    try:
        yield
    finally:
        lock.release()


async def _in_thread(fn: Callable[[], Any]) -> None:
    # A limiter of its own, as FastAPI does for sync dependencies' exits: a commit must not
    # wait for a pool thread while it holds locks that the threads are waiting on. Shielded: a
    # client that hangs up must not leave a transaction (and SQLite's write lock) open.
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(fn, limiter=anyio.CapacityLimiter(1))


class SessionSlots:
    """At most ``limit`` request sessions open at once per process, waited for on the event loop.

    A session holds its pooled connection from its first query until it is closed, across the
    thread-pool hops of the request; with more requests in flight than connections, threads
    blocked in the pool's checkout while the holders waited for a thread, and a flood of
    cheap reads gave "pool exhausted" 503s to everyone. With one slot per
    pooled connection (GPU_ADVISOR_WORKER_THREADS), the pool never runs out for requests and a
    waiting request holds no thread; the pool's overflow is left to the key checks made before a
    body is read and to /readyz."""

    def __init__(self, limit: int, wait_s: float) -> None:
        self.limit = limit
        self.wait_s = wait_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(limit)

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()  # a semaphore belongs to one loop (test clients)
        if loop is not self._loop:
            self._loop, self._slots = loop, asyncio.Semaphore(self.limit)
        return self._slots

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        slots = self._semaphore()
        try:
            async with asyncio.timeout(self.wait_s):
                await slots.acquire()
        except TimeoutError:
            raise Overloaded(f"No database session became free in {self.wait_s:g} s; retry "
                             "shortly", headers={"Retry-After": "1"}) from None
        try:
            yield
        finally:
            slots.release()


class Overloaded(ServiceUnavailable):
    slug, title = "overloaded", "Server overloaded"


async def get_session(request: Request) -> AsyncIterator[Session]:
    """One session per request; it commits on success and rolls back on any error.

    A request that writes begins its SQLite transaction IMMEDIATE (see _fix_sqlite_transactions)
    after its turn among this process's writers; PostgreSQL needs neither: its row locks and
    conditional UPDATEs give the same answers.
    """
    engine: Engine = request.app.state.engine
    sqlite_writer = engine.dialect.name == "sqlite" and request_writes(request)
    wait_s = float(getattr(request.app.state.settings, "db_deadline_s", 5.0))
    slots: SessionSlots | None = getattr(request.app.state, "session_slots", None)
    async with (_sqlite_writer_turn(engine, wait_s) if sqlite_writer else nullcontext(),
                slots.hold() if slots is not None else nullcontext()):
        bind = engine.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"}) if sqlite_writer else engine
        session = Session(bind, expire_on_commit=False)
        try:
            # A session that never began a transaction has nothing to commit or roll back and
            # no connection to give back: it is closed here, without a trip to the thread pool.
            # The ORM begins one on every read and on add, delete or an attribute change.
            try:
                yield session
            except BaseException:
                if session.in_transaction():
                    await _in_thread(session.close)  # closing rolls back what was not committed
                else:
                    session.close()
                raise
            if session.in_transaction():
                await _in_thread(lambda: _commit_and_close(session))
            else:
                session.close()
        except OperationalError as exc:
            if engine.dialect.name == "sqlite" and _is_sqlite_lock(exc):
                raise DatabaseBusy("Other writes held the database; retry shortly",
                                   headers={"Retry-After": "1"}) from exc
            raise


def _commit_and_close(session: Session) -> None:
    try:
        session.commit()
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
"""Commits before the response is sent, so a failed commit is the response."""
