"""Times and dates: timezone-aware UTC everywhere, and the validated date/datetime types."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator


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
