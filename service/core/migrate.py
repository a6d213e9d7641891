"""Run Alembic migrations programmatically (used by the CLI and the tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

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
def startup_lock(url: str) -> Iterator[None]:
    """Serialize migrate + seed across replicas starting at once on one PostgreSQL database
    (without it, two `serve`s on an empty database race on CREATE TABLE and on the seed rows).
    SQLite needs none: its writers are serialized by the file lock."""
    if not url.startswith("postgresql"):
        yield
        return
    engine = create_engine(url, isolation_level="AUTOCOMMIT", pool_size=1)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": STARTUP_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": STARTUP_LOCK_KEY})
    finally:
        engine.dispose()
