"""Database engine and the request's session dependency; nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

STATEMENT_TIMEOUT_MS = 30_000
"""No request's query should run longer; the largest (a 100,000-row import) takes ~2 s."""


def make_engine(url: str, *, connect_timeout_s: float = 3.0) -> Engine:
    """Create the engine; same code for SQLite and PostgreSQL."""
    connect_args: dict[str, Any] = {}
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if url.startswith("sqlite"):
        connect_args["check_same_thread"] = False
        connect_args["timeout"] = 30
    elif url.startswith("postgresql"):
        connect_args["connect_timeout"] = max(1, int(connect_timeout_s))
        # A peer that stops answering mid-connection must not hang a request for the kernel's
        # TCP timeout (minutes): keepalives + TCP_USER_TIMEOUT bound a dead link, and
        # statement_timeout bounds a stuck query (libpq parameters, PostgreSQL docs 34.1.2).
        connect_args.update(
            keepalives=1, keepalives_idle=5, keepalives_interval=2, keepalives_count=2,
            tcp_user_timeout=int(connect_timeout_s * 1000) + 2000,
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
        )
        kwargs["pool_timeout"] = connect_timeout_s
    engine = create_engine(url, connect_args=connect_args, **kwargs)
    if url.startswith("sqlite"):
        _fix_sqlite_transactions(engine)
    return engine


def _fix_sqlite_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not pysqlite, issue BEGIN, so SAVEPOINTs and all-or-nothing writes work.

    See the SQLAlchemy docs, "Serializable isolation / Savepoints / Transactional DDL" (pysqlite).
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")


def get_session(request: Request) -> Iterator[Session]:
    """One session per request; it commits on success and rolls back on any error."""
    engine: Engine = request.app.state.engine
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
"""Commits before the response is sent, so a failed commit is the response."""
