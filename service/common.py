"""Small helpers shared by the domain packages (time, ETags, pagination)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Generic, TypeVar

from fastapi import Header, Query
from pydantic import AfterValidator, BaseModel, Field
from sqlmodel import SQLModel

T = TypeVar("T")

SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Named constraints, so migrations can drop them on every database (Alembic docs)."""

ETAG_HEADER_DOC = 'The ETag from the last GET of this resource, e.g. "3". Required for updates.'


def utcnow() -> datetime:
    """Timezone-aware now, truncated to microseconds (PostgreSQL's resolution)."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _assume_utc(value: object) -> object:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


UtcDatetime = Annotated[datetime, AfterValidator(_assume_utc)]
"""A datetime; one without an offset is taken as UTC."""


def etag_for(version: int) -> str:
    return f'"{version}"'


def parse_if_match(value: str | None) -> int | None:
    """The row version an If-Match header names, or None when absent; -1 when unparseable."""
    if value is None:
        return None
    tag = value.strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    tag = tag.strip('"')
    return int(tag) if tag.isdigit() else -1


IfMatch = Annotated[str | None, Header(alias="If-Match", description=ETAG_HEADER_DOC)]
Offset = Annotated[int, Query(ge=0, le=10_000_000, description="Rows to skip")]


class Page(BaseModel, Generic[T]):
    """One page of a list, with the total matching rows."""

    data: list[T]
    total: int = Field(description="Rows matching the filters, across all pages")
    limit: int
    offset: int
