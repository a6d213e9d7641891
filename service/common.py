"""Small helpers shared by the domain packages (time, ETags, pagination)."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Header, Query, Request
from pydantic import AfterValidator, BaseModel, Field
from sqlmodel import Session, SQLModel, func, select

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
M = TypeVar("M", bound=SQLModel)

SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Named constraints, so migrations can drop them on every database (Alembic docs)."""

ETAG_HEADER_DOC = 'The ETag from the last GET of this resource, e.g. "3". Required for updates.'


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
        # requests' garbage cycles included, which then are never collected (issue 10, finding
        # 9: a long-running server leaked). The price: a full collection re-walks the snapshots
        # (~0.1 s at 5,000 GPUs), and CPython runs one only when long-lived objects grew by a
        # quarter since the last, i.e. about once per snapshot rebuild, not per request.

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def capped_limit(request: Request, limit: int) -> int:
    """``limit`` if within GPU_ADVISOR_MAX_PAGE_SIZE, else a 422 naming query.limit."""
    cap = request.app.state.settings.max_page_size
    if limit > cap:
        from service.errors import Unprocessable, field_error

        raise Unprocessable(errors=[field_error("query.limit", f"must be <= {cap}")])
    return limit


def table_fingerprint(session: Session, table: Any) -> tuple[object, ...]:
    """Changes whenever a row of ``table`` (a model with id, version, updated_at) is added,
    removed or updated (every update bumps version): (count, max id, sum of versions, latest
    update); a collision needs all four to match."""
    count, max_id, versions, latest = session.exec(
        select(func.count(), func.max(table.id), func.sum(table.version),
               func.max(table.updated_at))
    ).one()
    return int(count), max_id, int(versions or 0), str(latest) if latest else None


def lock_row(session: Session, model: type[M], key: object, *, shared: bool = False) -> M | None:
    """The row, re-read and locked until the transaction ends; None when a concurrent transaction
    deleted it first. PostgreSQL: SELECT ... FOR UPDATE waits for that transaction, so of two
    racing DELETEs one is 204 and the other 404, as on SQLite, whose writers hold the database
    lock from BEGIN IMMEDIATE (SQLAlchemy's SQLite dialect renders no FOR UPDATE).
    ``shared``: FOR KEY SHARE, for a row that must outlive rows inserted to refer to it (it
    blocks a DELETE, not other readers or sharers)."""
    lock: bool | dict[str, bool] = {"read": True, "key_share": True} if shared else True
    return session.get(model, key, with_for_update=lock, populate_existing=True)


def database_key(session: Session) -> str:
    """Which database a session reads (part of every snapshot cache key)."""
    return str(session.get_bind().engine.url)


def utcnow() -> datetime:
    """Timezone-aware now, truncated to microseconds (PostgreSQL's resolution)."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


EARLIEST_YEAR, LATEST_YEAR = 1990, 2200
"""Datetimes outside these years are typos (and 0001/9999 overflow once moved to UTC)."""


def _assume_utc(value: object) -> object:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        try:
            value = value.astimezone(UTC)
        except OverflowError as exc:
            raise ValueError("date out of range") from exc
        if not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
            raise ValueError(f"year must be between {EARLIEST_YEAR} and {LATEST_YEAR}")
    return value


UtcDatetime = Annotated[datetime, AfterValidator(_assume_utc)]
"""A datetime; one without an offset is taken as UTC."""


def etag_for(version: int) -> str:
    return f'"{version}"'


ANY_VERSION = 0
"""What ``If-Match: *`` parses to: any current version matches (RFC 9110 13.1.1)."""
_ETAG = re.compile(r'(?:W/)?"?([0-9]{1,9})"?')


def parse_if_match(value: str | None) -> int | None:
    """The row version an If-Match header names: None when absent, ANY_VERSION for ``*``,
    -1 (matches nothing) when it is not one of our ETags."""
    if value is None:
        return None
    tag = value.strip()
    if tag == "*":
        return ANY_VERSION
    match = _ETAG.fullmatch(tag)
    return int(match.group(1)) if match else -1


def check_version(if_match: int | None, current: int) -> int:
    """The version a conditional write must find: ``current`` when If-Match is absent or ``*``;
    412 when If-Match names another version."""
    if if_match is None or if_match == ANY_VERSION:
        return current
    if if_match != current:
        from service.errors import PreconditionFailed

        raise PreconditionFailed(
            f'If-Match "{if_match}" does not match the current ETag "{current}"'
        )
    return if_match


IfMatch = Annotated[str | None, Header(alias="If-Match", description=ETAG_HEADER_DOC)]
Offset = Annotated[int, Query(ge=0, le=10_000_000, description="Rows to skip")]


class Page(BaseModel, Generic[T]):
    """One page of a list, with the total matching rows."""

    data: list[T] = Field(description="The rows of this page")
    total: int = Field(description="Rows matching the filters, across all pages")
    limit: int = Field(description="Rows asked for at most [count]")
    offset: int = Field(description="Rows skipped before this page [count]")
