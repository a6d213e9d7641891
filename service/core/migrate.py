"""Run Alembic migrations programmatically (used by the CLI and the tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from service.core.db import pg_connect_args

_SOURCE_ROOT = Path(__file__).resolve().parents[2]
ROOT = _SOURCE_ROOT if (_SOURCE_ROOT / "alembic.ini").is_file() else Path.cwd()
"""Where alembic.ini and migrations/ are: the source tree, or, for a regular (non-editable)
install such as the image's, the working directory (the Dockerfile puts both in /app)."""


def alembic_config(url: str) -> Config:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)


STARTUP_LOCK_KEY = 0x6770_7561_6476  # "gpuadv": the advisory lock replicas take at start-up


@contextmanager
def startup_lock(url: str, *, connect_timeout_s: float = 3.0) -> Iterator[None]:
    """Serialize migrate + seed across replicas starting at once on one PostgreSQL database
    (without it, two `serve`s on an empty database race on CREATE TABLE and on the seed rows).
    SQLite needs none: its writers are serialized by the file lock.

    Connecting is bounded (GPU_ADVISOR_DB_CONNECT_TIMEOUT_S): against a black-holed database
    `serve` used to wait for the lock's connection for minutes; it now fails at once with the
    driver's error. Waiting for the lock itself is not bounded: another replica may be
    migrating."""
    if not url.startswith("postgresql"):
        yield
        return
    engine = create_engine(url, isolation_level="AUTOCOMMIT", pool_size=1,
                           connect_args=pg_connect_args(connect_timeout_s))
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": STARTUP_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": STARTUP_LOCK_KEY})
    finally:
        engine.dispose()
