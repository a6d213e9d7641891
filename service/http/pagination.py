"""Paged lists: the offset parameter, the page limit and the page model."""

from __future__ import annotations

from typing import Annotated, Generic, TypeVar

from fastapi import Query, Request
from pydantic import BaseModel, Field

from service.core.errors import Unprocessable, field_error

T = TypeVar("T")

Offset = Annotated[int, Query(ge=0, le=10_000_000, description="Rows to skip")]


def capped_limit(request: Request, limit: int) -> int:
    """``limit`` if within GPU_ADVISOR_MAX_PAGE_SIZE, else a 422 naming query.limit."""
    cap = request.app.state.settings.max_page_size
    if limit > cap:
        raise Unprocessable(errors=[field_error("query.limit", f"must be <= {cap}")])
    return limit


class Page(BaseModel, Generic[T]):
    """One page of a list, with the total matching rows."""

    data: list[T] = Field(description="The rows of this page")
    total: int = Field(description="Rows matching the filters, across all pages")
    limit: int = Field(description="Rows asked for at most [count]")
    offset: int = Field(description="Rows skipped before this page [count]")
