"""/v1/quotes: price quotes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request, Response, status

from service.common import IfMatch, Offset, Page, etag_for, parse_if_match, utcnow
from service.db import SessionDep
from service.errors import Unprocessable, field_error, responses
from service.quotes import service
from service.quotes.models import Pricing, Quote, QuoteCreate, QuotePublic, QuoteUpdate
from service.security import AdminDep, ReaderDep

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
    "captured_at": "2022-09-20T00:00:00Z",
}


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
    gpu: Annotated[str | None, Query(max_length=64, description="GPU slug")] = None,
    provider: Annotated[str | None, Query(max_length=40)] = None,
    region: Annotated[str | None, Query(max_length=60)] = None,
    pricing: Pricing | None = None,
    max_price_usd_per_hour: Annotated[float | None, Query(ge=0, le=100_000)] = None,
    include_expired: bool = False,
    freshness: Annotated[
        service.Freshness, Query(description="fresh / stale against GPU_ADVISOR_STALE_QUOTE_DAYS")
    ] = "all",
    limit: Annotated[int, Query(ge=1)] = 100,
    offset: Offset = 0,
) -> Page[QuotePublic]:
    """Filter and page through quotes; expired ones only with include_expired=true."""
    settings = request.app.state.settings
    if limit > settings.max_page_size:
        cap = settings.max_page_size
        raise Unprocessable(errors=[field_error("query.limit", f"must be <= {cap}")])
    rows, total = service.list_quotes(
        session, now=utcnow(), stale_days=settings.stale_quote_days, gpu=gpu, provider=provider,
        region=region, pricing=pricing, max_price_usd_per_hour=max_price_usd_per_hour,
        include_expired=include_expired, freshness=freshness, limit=limit, offset=offset,
    )
    return Page(data=[_public(request, r) for r in rows], total=total, limit=limit, offset=offset)


@router.get("/{quote_id}", summary="Get one quote", response_model=QuotePublic,
            responses=responses(401, 404))
def get_quote(quote_id: int, request: Request, session: SessionDep, _: ReaderDep,
              response: Response) -> QuotePublic:
    """One quote by id."""
    quote = service.get_quote(session, quote_id=quote_id)
    response.headers["ETag"] = etag_for(quote.version)
    return _public(request, quote)


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
    responses=responses(401, 403, 404, 409, 412, 422),
)
def patch_quote(
    quote_id: int,
    data: Annotated[
        QuoteUpdate, Body(openapi_examples={"price": {"value": {"price_usd_per_hour": 21.5}}})
    ],
    request: Request,
    session: SessionDep,
    _: AdminDep,
    response: Response,
    if_match: IfMatch = None,
) -> QuotePublic:
    """Change only the given fields (admin); If-Match is checked when sent."""
    quote = service.patch_quote(session, quote_id=quote_id, data=data,
                                if_match=parse_if_match(if_match))
    response.headers["ETag"] = etag_for(quote.version)
    return _public(request, quote)


@router.delete("/{quote_id}", summary="Delete a quote", status_code=status.HTTP_204_NO_CONTENT,
               responses=responses(401, 403, 404))
def delete_quote(quote_id: int, session: SessionDep, _: AdminDep) -> Response:
    """Delete a quote (admin)."""
    service.delete_quote(session, quote_id=quote_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
