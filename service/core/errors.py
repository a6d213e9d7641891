"""RFC 9457 problem details for every error: one base class, one renderer."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

PROBLEM_JSON = "application/problem+json"
PROBLEM_BASE = "https://gpu-advisor.dev/problems/"

log = logging.getLogger("gpu_advisor")


class FieldError(BaseModel):
    field: str = Field(description="Dotted path of the bad input: body.memory_gb, query.limit")
    message: str = Field(description="What is wrong with it, in plain words")
    type: str | None = Field(
        default=None,
        description="Machine-readable error type, e.g. greater_than, missing",
    )


class Problem(BaseModel):
    """An RFC 9457 problem document."""

    model_config = ConfigDict(
        json_schema_extra={
            "example": {
                "type": "https://gpu-advisor.dev/problems/validation-error",
                "title": "Request validation failed",
                "status": 422,
                "detail": "1 invalid field",
                "errors": [{"field": "body.memory_gb", "message": "must be > 0"}],
            }
        }
    )

    type: str = Field(description="URI identifying the problem type")
    title: str = Field(description="Short summary of the problem type")
    status: int = Field(description="HTTP status code")
    detail: str | None = Field(default=None, description="What went wrong with this request")
    instance: str | None = Field(default=None, description="The request path")
    errors: list[FieldError] = Field(default_factory=list, description="One entry per bad field")


class ProblemError(Exception):
    """Base class of every expected failure; the handler renders it as problem+json."""

    status = 400
    slug = "bad-request"
    title = "Bad request"

    def __init__(
        self,
        detail: str | None = None,
        *,
        errors: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail or self.title)
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}


class NotFound(ProblemError):
    status, slug, title = 404, "not-found", "Not found"


class Conflict(ProblemError):
    status, slug, title = 409, "conflict", "Conflict"


class PreconditionFailed(ProblemError):
    status, slug, title = 412, "precondition-failed", "Precondition failed"


class PreconditionRequired(ProblemError):
    status, slug, title = 428, "precondition-required", "Precondition required"


class Unauthorized(ProblemError):
    status, slug, title = 401, "unauthorized", "Authentication required"


class Forbidden(ProblemError):
    status, slug, title = 403, "forbidden", "Forbidden"


class Unprocessable(ProblemError):
    status, slug, title = 422, "validation-error", "Request validation failed"


class ServiceUnavailable(ProblemError):
    status, slug, title = 503, "service-unavailable", "Service unavailable"


def field_error(field: str, message: str, type_: str | None = None) -> FieldError:
    return FieldError(field=field, message=message, type=type_)


def problem_response(
    status: int,
    slug: str,
    title: str,
    detail: str | None = None,
    *,
    errors: list[FieldError] | None = None,
    instance: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = Problem(
        type=PROBLEM_BASE + slug,
        title=title,
        status=status,
        detail=detail,
        instance=instance,
        errors=errors or [],
    )
    return JSONResponse(
        body.model_dump(exclude_none=True),
        status_code=status,
        media_type=PROBLEM_JSON,
        headers=headers,
    )


def _loc(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(p) for p in loc)


MAX_LISTED_ERRORS = 50
"""A 422 lists at most this many field errors and says how many more there were: listing
every error made a 157 MB answer out of a 4 MB body."""
MAX_FIELD_CHARS = 200
"""Longest field path or message in a listed error (an unknown key is echoed in its path)."""
MAX_TYPE_CHARS = 64


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def validation_errors(exc: RequestValidationError) -> tuple[list[FieldError], int]:
    """The first :data:`MAX_LISTED_ERRORS` errors, each clipped, and the count of all of them:
    with these bounds a 422 stays under 64 KB whatever the input."""
    raw = exc.errors()
    out = []
    for err in raw[:MAX_LISTED_ERRORS]:
        loc = [p for p in err.get("loc", ()) if not (isinstance(p, str) and "[" in p)]
        kind = err.get("type")
        out.append(FieldError(field=_clip(_loc(loc), MAX_FIELD_CHARS),
                              message=_clip(str(err.get("msg")), MAX_FIELD_CHARS),
                              type=None if kind is None else _clip(str(kind), MAX_TYPE_CHARS)))
    return out, len(raw)


_STATUS_TITLES = {
    400: ("bad-request", "Bad request"),
    401: ("unauthorized", "Authentication required"),
    403: ("forbidden", "Forbidden"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    406: ("not-acceptable", "Not acceptable"),
    408: ("request-timeout", "Request timeout"),
    413: ("payload-too-large", "Request body too large"),
    415: ("unsupported-media-type", "Unsupported media type"),
    431: ("headers-too-large", "Request header fields too large"),
    503: ("overloaded", "Server overloaded"),
}


def status_slug_title(status: int) -> tuple[str, str]:
    """The problem type slug and title for an HTTP status."""
    return _STATUS_TITLES.get(status, ("http-error", "HTTP error"))


_BODY_PARSE_ERROR = "There was an error parsing the body"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def _problem(request: Request, exc: ProblemError) -> JSONResponse:
        return problem_response(
            exc.status,
            exc.slug,
            exc.title,
            exc.detail,
            errors=exc.errors,
            instance=request.url.path,
            headers=exc.headers,
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors, total = validation_errors(exc)
        detail = f"{total} invalid field" + ("s" if total != 1 else "")
        if errors:
            detail += ": " + ", ".join(_clip(e.field, 60) for e in errors[:10])
        if total > len(errors):
            detail += f" (the first {len(errors)} are listed, and {total - len(errors)} more)"
        return problem_response(
            422,
            "validation-error",
            "Request validation failed",
            detail,
            errors=errors,
            instance=request.url.path,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == _BODY_PARSE_ERROR:
            # FastAPI's 400 for a body it cannot decode (not UTF-8, broken form): an invalid
            # body like any other, so the documented 422 (a JSON syntax error is already 422).
            return problem_response(
                422, "validation-error", "Request validation failed",
                "The body could not be parsed", instance=request.url.path,
                errors=[FieldError(field="body", message="could not be parsed",
                                   type="body_parse_error")],
            )
        slug, title = status_slug_title(exc.status_code)
        detail = exc.detail if isinstance(exc.detail, str) else None
        return problem_response(
            exc.status_code,
            slug,
            title,
            detail,
            instance=request.url.path,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(OperationalError)
    async def _db_down(request: Request, exc: OperationalError) -> JSONResponse:
        log.warning("database unavailable: %s", type(exc.orig).__name__ if exc.orig else exc)
        return problem_response(
            503,
            "database-unavailable",
            "Database unavailable",
            "The database cannot be reached; retry later.",
            instance=request.url.path,
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(PoolTimeoutError)
    async def _pool_exhausted(request: Request, exc: PoolTimeoutError) -> JSONResponse:
        # SQLAlchemy's QueuePool found no free connection within pool_timeout: the worker is
        # saturated, not broken. Raised by the first query of the request (or the session
        # dependency), so it reaches this handler like any route error.
        log.warning("database pool exhausted")
        return problem_response(
            503, "overloaded", "Server overloaded",
            "No database connection became free in time; retry later.",
            instance=request.url.path, headers={"Retry-After": "1"},
        )

    @app.exception_handler(IntegrityError)
    async def _integrity(request: Request, exc: IntegrityError) -> JSONResponse:
        # A uniqueness or reference check that a concurrent request won between our own check
        # and the write (e.g. two POSTs of one slug): the state conflicts, nothing was written.
        return problem_response(
            409, "conflict", "Conflict",
            "A concurrent change conflicts with this request (duplicate key or a missing "
            "referenced row); nothing was written. Re-read and retry.",
            instance=request.url.path,
        )

    @app.exception_handler(DBAPIError)
    async def _db_error(request: Request, exc: DBAPIError) -> JSONResponse:
        if exc.connection_invalidated:
            return await _db_down(request, exc)  # type: ignore[arg-type]
        log.exception("database error")
        return problem_response(
            500, "internal-error", "Internal error", instance=request.url.path
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return problem_response(
            500, "internal-error", "Internal error", instance=request.url.path
        )


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {
        "model": Problem,
        "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        "description": desc,
    }
    for code, desc in [
        (401, "No or unknown API key"),
        (403, "The key's role may not do this"),
        (404, "No such resource"),
        (409, "Conflicts with the current state"),
        (412, "If-Match does not match the current ETag"),
        (413, "Request body too large"),
        (422, "Invalid input; `errors` names each bad field"),
        (428, "If-Match header required"),
        (503, "Database unavailable"),
    ]
}


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The declared problem responses for a route."""
    return {c: PROBLEM_RESPONSES[c] for c in codes}
