"""Small helpers shared by the domain packages (time, ETags, pagination)."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Header, Query, Request, Response
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field
from sqlmodel import Session, SQLModel

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

ETAG_HEADER_DOC = ('The ETag from the last GET of this resource, e.g. "3" (strong comparison: '
                   'only * or the exact current tag matches; weak W/ tags never do). '
                   'Required for updates.')


class SnapshotCache(Generic[K, V]):
    """A small thread-safe LRU for an app's snapshots of database state.

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


def capped_limit(request: Request, limit: int) -> int:
    """``limit`` if within GPU_ADVISOR_MAX_PAGE_SIZE, else a 422 naming query.limit."""
    cap = request.app.state.settings.max_page_size
    if limit > cap:
        from service.errors import Unprocessable, field_error

        raise Unprocessable(errors=[field_error("query.limit", f"must be <= {cap}")])
    return limit


def table_fingerprint(session: Session, table: Any) -> tuple[object, ...]:
    """Changes whenever a row of ``table`` (``gpus`` or ``quotes``) is added, removed or
    updated: its counter in ``table_revisions``, which the database's own triggers bump in
    the writing transaction (service/revisions.py, migration 0007): one indexed read. Without
    that row, (count, max id, sum of versions, latest update) of the table, as before: a full
    scan (~40 ms at 200,000 quotes)."""
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


def as_date(value: date | str) -> date:
    """A DATE column's value as a ``date`` (a raw SQLite read can hand back the text)."""
    return value if isinstance(value, date) else date.fromisoformat(value)


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


LATEST_TIMEZONE_OFFSET = timedelta(hours=14)
"""UTC+14 (Kiribati, Line Islands): the furthest ahead any local calendar date runs of UTC's."""
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def latest_today(now: datetime | None = None) -> date:
    """The latest calendar date anywhere on Earth at ``now``: a later date is in the future
    for everyone."""
    return ((now or utcnow()) + LATEST_TIMEZONE_OFFSET).date()


def _date_only(value: object) -> object:
    """Only a calendar date: a ``date`` or ``YYYY-MM-DD``; no timestamps or numbers."""
    if isinstance(value, datetime):
        raise ValueError("must be a date (YYYY-MM-DD), not a date and time")
    if isinstance(value, date):
        return value
    if isinstance(value, str) and _ISO_DATE.fullmatch(value.strip()):
        return value.strip()
    raise ValueError("must be a date written YYYY-MM-DD")


def _not_future(value: date) -> date:
    if value.year < EARLIEST_YEAR:
        raise ValueError(f"year must be {EARLIEST_YEAR} or later")
    today = latest_today()
    if value > today:
        raise ValueError(f"{value.isoformat()} is in the future (the latest date anywhere on "
                         f"Earth is {today.isoformat()})")
    return value


ObservedDate = Annotated[date, BeforeValidator(_date_only), AfterValidator(_not_future)]
"""The day a source observed something: a past (or today's) calendar date, ``YYYY-MM-DD``."""


def etag_for(version: int) -> str:
    return f'"{version}"'


_ENTITY_TAG = re.compile(r'\s*(W/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*')
"""RFC 9110 8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE."""


@dataclass(frozen=True)
class EntityTags:
    """A parsed If-Match / If-None-Match field: ``*`` or a list of entity tags."""

    raw: str
    any: bool
    tags: tuple[tuple[bool, str], ...]
    """(weak, opaque tag without quotes) per listed tag; malformed members are left out (they
    can never match)."""

    def strong_match(self, etag: str) -> bool:
        """If-Match (RFC 9110 13.1.1): ``*``, or a listed strong tag equal character for
        character to ``etag``; weak tags never match."""
        opaque = etag.strip('"')
        return self.any or any(not weak and tag == opaque for weak, tag in self.tags)

    def weak_match(self, etag: str) -> bool:
        """If-None-Match (RFC 9110 13.1.2): ``*``, or any listed tag with the same opaque tag,
        weak or not."""
        opaque = etag.removeprefix("W/").strip('"')
        return self.any or any(tag == opaque for _, tag in self.tags)


def parse_entity_tags(value: str | None) -> EntityTags | None:
    """None when the header is absent; otherwise ``*`` or the comma-separated tags."""
    if value is None:
        return None
    raw = value.strip()
    if raw == "*":
        return EntityTags(raw=raw, any=True, tags=())
    tags = []
    for member in _split_tags(raw):
        match = _ENTITY_TAG.fullmatch(member)
        if match:
            tags.append((match.group(1) is not None, match.group(2)))
    return EntityTags(raw=raw, any=False, tags=tuple(tags))


def _split_tags(raw: str) -> list[str]:
    """Split on commas outside quotes (an opaque tag may not hold a quote, but may a comma)."""
    members: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in raw:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            members.append("".join(current))
            current = []
        else:
            current.append(ch)
    members.append("".join(current))
    return [m for m in members if m.strip()]


parse_if_match = parse_entity_tags


def check_version(if_match: EntityTags | None, current: int) -> int:
    """The version a conditional write must find: ``current`` when If-Match is absent, ``*``
    or lists the current ETag (strong comparison); else 412 echoing what was sent."""
    if if_match is None or if_match.strong_match(etag_for(current)):
        return current
    from service.errors import PreconditionFailed

    sent = if_match.raw if len(if_match.raw) <= 200 else if_match.raw[:200] + "..."
    raise PreconditionFailed(
        f"If-Match {sent} does not match the current ETag {etag_for(current)}"
    )


def conditional_get(request: Request, response: Response, etag: str) -> Response | None:
    """Set ``etag`` on the response; a 304 (no body) when If-None-Match matches it."""
    response.headers["ETag"] = etag
    condition = parse_entity_tags(request.headers.get("if-none-match"))
    if condition is not None and condition.weak_match(etag):
        return Response(status_code=304, headers={"ETag": etag})
    return None


NOT_MODIFIED: dict[int | str, dict[str, Any]] = {
    304: {"description": "Not modified: If-None-Match lists the current ETag (no body)"}
}


IfMatch = Annotated[str | None, Header(alias="If-Match", description=ETAG_HEADER_DOC)]
IfNoneMatch = Annotated[str | None, Header(
    alias="If-None-Match", description="ETags the caller holds; 304 when one is current")]
Offset = Annotated[int, Query(ge=0, le=10_000_000, description="Rows to skip")]


class Page(BaseModel, Generic[T]):
    """One page of a list, with the total matching rows."""

    data: list[T] = Field(description="The rows of this page")
    total: int = Field(description="Rows matching the filters, across all pages")
    limit: int = Field(description="Rows asked for at most [count]")
    offset: int = Field(description="Rows skipped before this page [count]")
