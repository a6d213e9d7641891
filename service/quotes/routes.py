"""/v1/quotes: price quotes."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from typing import IO, Annotated

from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse

from service.core.db import SessionDep
from service.core.errors import responses
from service.core.security import AdminDep, ApiKey, ReaderDep
from service.core.text import Text
from service.core.times import ObservedDate, UtcDatetime, utcnow
from service.engine.recommend_types import Pricing
from service.http.etags import (
    NOT_MODIFIED,
    IfMatch,
    IfNoneMatch,
    conditional_get,
    etag_for,
    parse_if_match,
)
from service.http.pagination import Offset, Page, capped_limit
from service.quotes import history, imports, service
from service.quotes.models import (
    HistoryEvent,
    ImportFormat,
    ImportResult,
    PriceChangePublic,
    Quote,
    QuoteCreate,
    QuoteImportPublic,
    QuotePublic,
    QuoteUpdate,
)

QuoteId = Annotated[int, Path(ge=1, le=2_147_483_647, description="Quote id")]
"""Bounded to the id column's range (PostgreSQL INTEGER), so a huge id is a 422, not a 500."""

router = APIRouter(prefix="/v1/quotes", tags=["quotes"])

_EXAMPLE = {
    "gpu_slug": "nvidia-h100-sxm5-80gb",
    "provider": "lambda",
    "region": "us-east-1",
    "instance_type": "gpu_8x_h100_sxm5",
    "gpu_count": 8,
    "pricing": "on_demand",
    "price_usd_per_hour": 23.92,
    "source": "https://lambda.ai/pricing",
    "captured_at": "2026-11-30T00:00:00Z",
    "observed_at": "2026-11-30",
}
_PURCHASE_EXAMPLE = {
    "gpu_slug": "nvidia-rtx-4090",
    "provider": "nvidia-msrp",
    "region": "global",
    "instance_type": "GeForce RTX 4090 Founders Edition",
    "gpu_count": 1,
    "pricing": "purchase",
    "purchase_price_usd": 1599,
    "source": "NVIDIA launch MSRP, 2022-09-20 announcement",
    "captured_at": "2026-11-30T00:00:00Z",
    "observed_at": "2022-09-20",
}


def _is_admin(caller: ApiKey | None) -> bool:
    """Key names (who imported, who changed a price) are shown to admins only."""
    return caller is not None and caller.role == "admin"


def _public(request: Request, quote: Quote) -> QuotePublic:
    return service.to_public(
        quote, now=utcnow(), stale_days=request.app.state.settings.stale_quote_days
    )


@router.get("", summary="List price quotes", response_model=Page[QuotePublic],
            responses=responses(401, 422))
def list_quotes(
    request: Request,
    session: SessionDep,
    _: ReaderDep,
    gpu: Annotated[Text | None, Query(max_length=64, description="GPU slug")] = None,
    provider: Annotated[Text | None, Query(max_length=40)] = None,
    region: Annotated[Text | None, Query(max_length=60)] = None,
    pricing: Pricing | None = None,
    max_price_usd_per_hour: Annotated[float | None, Query(ge=0, le=100_000)] = None,
    include_expired: bool = False,
    freshness: Annotated[
        service.Freshness,
        Query(description="fresh / stale: observed_at within / beyond "
                          "GPU_ADVISOR_STALE_QUOTE_DAYS")
    ] = "all",
    limit: Annotated[int, Query(ge=1)] = 100,
    offset: Offset = 0,
) -> Page[QuotePublic]:
    """Filter and page through quotes; expired ones only with include_expired=true."""
    settings = request.app.state.settings
    capped_limit(request, limit)
    rows, total = service.list_quotes(
        session, now=utcnow(), stale_days=settings.stale_quote_days, gpu=gpu, provider=provider,
        region=region, pricing=pricing, max_price_usd_per_hour=max_price_usd_per_hour,
        include_expired=include_expired, freshness=freshness, limit=limit, offset=offset,
    )
    return Page(data=[_public(request, r) for r in rows], total=total, limit=limit, offset=offset)


_IMPORT_DESCRIPTION = """
Import many quotes at once (admin). The body is the raw file: `text/csv` or `application/json`.
All or nothing: one bad row (a non-numeric price, a negative count) rejects the whole file with
a 422 whose `errors[].field` names the row and column (`row 17.Price`; the CSV header is row 1).
`dry_run=true` reports what would change and writes nothing.

**format=skypilot**: a SkyPilot catalog CSV (`InstanceType, AcceleratorName, AcceleratorCount,
vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region, AvailabilityZone`, in any order);
`provider` is required. The file has no date column: pass `observed_at`, the day the catalog
was fetched (its commit date), or the quotes are dated `captured_at`'s day. Each (region,
instance type) gives one `on_demand` quote and, when a
`SpotPrice` is set, one `spot` quote, at the lowest price over its availability zones. Empty
prices are skipped, CPU-only rows ignored. Accelerators are matched to catalog GPUs by alias,
GpuInfo memory per GPU (within 12%) and the instance type (`pcie`); accelerators not in the
catalog (Inferentia, Trainium, FPGAs, Gaudi, ...) are listed as `unmatched`, not errors. GPUs
priced apart from their host (GCP rows without an instance type) are added to a host machine
row of the same region and zone (the machine family sold with that GPU, else the cheapest
`n1-` machine with at least 4 vCPUs per GPU), as instance type `<host>+<n>x<GPU>`.

**format=generic**: our own quote fields: a CSV with the header of `service/data/quotes.csv`
or a JSON list of quote objects (as for `POST /v1/quotes`). Rows without `captured_at` or
`source` get the query's; rows without `observed_at` get the query's `observed_at`, else their
`captured_at`'s day. Unknown `gpu_slug`s are listed as `unmatched`.

Existing quotes (same provider, region, instance_type, pricing) are updated when the price,
GPU or count differs (the old price is kept in `/v1/quotes/{id}/history`); unchanged ones only
get the newer `captured_at` and `observed_at`. A malformed or future `observed_at` (query or
row) is a 422 naming it. Quotes missing from the file are left alone. Every import is
recorded (`GET /v1/quotes/imports`).
"""

_IMPORT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "text/csv": {"schema": {"type": "string"}, "example": (
                "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,"
                "GpuInfo,SpotPrice\r\ngpu_1x_a10,A10,1.0,30.0,200.0,0.75,us-east-1,\"{'Gpus': "
                "[{'Name': 'A10', 'Manufacturer': 'NVIDIA', 'Count': 1.0, 'MemoryInfo': "
                "{'SizeInMiB': 24576}}], 'TotalGpuMemoryInMiB': 24576}\",\r\n")},
            "application/json": {"schema": {
                "type": "array", "items": {"$ref": "#/components/schemas/QuoteCreate"}}},
        },
    }
}


SPOOL_MEMORY_BYTES = 1 << 20
"""An upload up to this size stays in memory; a larger one goes to a temporary file."""


async def _spooled_body(request: Request) -> AsyncIterator[IO[bytes]]:
    """The request body in a temporary file (in memory up to SPOOL_MEMORY_BYTES), written as
    it arrives: a large import is never held as one bytes object and one decoded string, and
    the parser reads it row by row (service/quotes/imports.parse_file)."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES) as spool:
        async for chunk in request.stream():
            spool.write(chunk)
        spool.seek(0)
        yield spool


@router.post(
    "/import", summary="Import quotes from a SkyPilot catalog or a generic CSV/JSON file",
    description=_IMPORT_DESCRIPTION, response_model=ImportResult,
    responses=responses(401, 403, 409, 413, 422), openapi_extra=_IMPORT_BODY,
)
def import_quotes(
    request: Request,
    session: SessionDep,
    caller: AdminDep,
    body: Annotated[IO[bytes], Depends(_spooled_body)],
    format: Annotated[ImportFormat, Query(description="skypilot or generic")],
    provider: Annotated[
        Text | None,
        Query(min_length=1, max_length=40, description="The cloud: aws, lambda, gcp, ..."),
    ] = None,
    dry_run: Annotated[bool, Query(description="Report what would change; write nothing")] = False,
    source: Annotated[
        Text, Query(min_length=1, max_length=2000, description="Where the file came from")
    ] = "import",
    captured_at: Annotated[
        UtcDatetime | None, Query(description="When the prices were read (UTC if no offset); "
                                           "default now")
    ] = None,
    observed_at: Annotated[
        ObservedDate | None,
        Query(description="The day the file's prices were observed (YYYY-MM-DD; not in the "
                          "future), for rows without their own: a SkyPilot catalog's fetch "
                          "date. Default: captured_at's date (UTC)"),
    ] = None,
) -> Response:
    """Import a price file, all or nothing (admin)."""
    outcome = imports.import_file(
        session, body=body, content_type=request.headers.get("content-type"), fmt=format,
        provider=provider, dry_run=dry_run, source=source, captured_at=captured_at,
        observed_at=observed_at, who=caller.name,
    )
    # Streamed (after SessionDep's commit: it runs when this function returns), a chunk of
    # listed quotes at a time: FastAPI's response_model path built a model and a dict per
    # listed quote and the whole JSON at once (hundreds of MB for a 60 MB file's answer).
    return StreamingResponse(outcome.json_chunks(), media_type="application/json")


@router.get("/imports", summary="List quote imports", response_model=Page[QuoteImportPublic],
            responses=responses(401, 422))
def list_imports(
    session: SessionDep, caller: ReaderDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100, offset: Offset = 0,
) -> Page[QuoteImportPublic]:
    """Every import, newest first: when, source, format, provider and counts; who (the API
    key's name) only for admins."""
    rows, total = imports.list_imports(session, limit=limit, offset=offset,
                                       show_names=_is_admin(caller))
    return Page(data=rows, total=total, limit=limit, offset=offset)


@router.get("/history", summary="Price history of all quotes, deleted ones included (admin)",
            response_model=Page[PriceChangePublic], responses=responses(401, 403, 422))
def all_price_history(
    session: SessionDep, _: AdminDep,
    gpu: Annotated[Text | None, Query(max_length=64, description="GPU slug")] = None,
    provider: Annotated[Text | None, Query(max_length=40)] = None,
    quote_id: Annotated[int | None, Query(ge=1, le=2_147_483_647)] = None,
    event: Annotated[HistoryEvent | None, Query(description="price_change or deleted")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100, offset: Offset = 0,
) -> Page[PriceChangePublic]:
    """Every recorded price change and deletion, oldest first, also of quotes and GPUs that
    no longer exist (admin): each entry names the quote's GPU, provider, region, instance."""
    rows, total = history.list_price_history(session, quote_id=quote_id, gpu_slug=gpu,
                                             provider=provider, event=event, limit=limit,
                                             offset=offset)
    return Page(data=rows, total=total, limit=limit, offset=offset)


@router.get("/{quote_id}/history", summary="Price history of a quote",
            response_model=Page[PriceChangePublic], responses=responses(401, 404, 422))
def quote_history(
    quote_id: QuoteId, session: SessionDep, caller: ReaderDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100, offset: Offset = 0,
) -> Page[PriceChangePublic]:
    """Every price change of the quote, oldest first, with the old and new price. Of a deleted
    quote, admins still get it (ending with its `deleted` entry); others get 404."""
    is_admin = _is_admin(caller)
    if not (is_admin and history.has_history(session, quote_id=quote_id)):
        service.get_quote(session, quote_id=quote_id)
    rows, total = history.list_price_history(session, quote_id=quote_id, limit=limit,
                                             offset=offset, show_names=is_admin)
    return Page(data=rows, total=total, limit=limit, offset=offset)


@router.get("/{quote_id}", summary="Get one quote", response_model=QuotePublic,
            responses={**NOT_MODIFIED, **responses(401, 404)})
def get_quote(quote_id: QuoteId, request: Request, session: SessionDep, _: ReaderDep,
              response: Response, if_none_match: IfNoneMatch = None) -> Response | QuotePublic:
    """One quote by id; `If-None-Match` with its ETag gives 304 while it is unchanged (its
    `age_days` / `stale` still move with the clock)."""
    quote = service.get_quote(session, quote_id=quote_id)
    return conditional_get(request, response, etag_for(quote.version)) or \
        _public(request, quote)


@router.post(
    "", summary="Add a quote", status_code=status.HTTP_201_CREATED, response_model=QuotePublic,
    responses=responses(401, 403, 409, 422),
)
def create_quote(
    data: Annotated[
        QuoteCreate,
        Body(openapi_examples={
            "cloud": {"value": _EXAMPLE}, "purchase": {"value": _PURCHASE_EXAMPLE},
        }),
    ],
    request: Request,
    session: SessionDep,
    _: AdminDep,
    response: Response,
) -> QuotePublic:
    """Add a quote (admin). Unique per provider, region, instance_type and pricing."""
    quote = service.create_quote(session, data=data)
    response.headers["Location"] = f"/v1/quotes/{quote.id}"
    response.headers["ETag"] = etag_for(quote.version)
    return _public(request, quote)


@router.patch(
    "/{quote_id}", summary="Update some fields of a quote", response_model=QuotePublic,
    responses=responses(401, 403, 404, 409, 412, 422, 428),
)
def patch_quote(
    quote_id: QuoteId,
    data: Annotated[
        QuoteUpdate, Body(openapi_examples={"price": {"value": {"price_usd_per_hour": 21.5}}})
    ],
    request: Request,
    session: SessionDep,
    caller: AdminDep,
    response: Response,
    if_match: IfMatch = None,
) -> QuotePublic:
    """Change only the given fields (admin); needs If-Match."""
    quote = service.patch_quote(session, quote_id=quote_id, data=data,
                                if_match=parse_if_match(if_match), changed_by=caller.name)
    response.headers["ETag"] = etag_for(quote.version)
    return _public(request, quote)


@router.delete("/{quote_id}", summary="Delete a quote", status_code=status.HTTP_204_NO_CONTENT,
               responses=responses(401, 403, 404, 412))
def delete_quote(quote_id: QuoteId, session: SessionDep, caller: AdminDep,
                 if_match: IfMatch = None) -> Response:
    """Delete a quote (admin); checks If-Match when sent. Its price history is kept, with a
    `deleted` entry holding its last price (admins: `GET /v1/quotes/history`)."""
    service.delete_quote(session, quote_id=quote_id, if_match=parse_if_match(if_match),
                         deleted_by=caller.name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
