"""Quote queries and writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

from sqlalchemy import func, or_, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from service.catalog.service import get_gpu
from service.core.errors import (
    Conflict,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    Unprocessable,
    field_error,
)
from service.core.snapshots import SnapshotCache, database_key, table_fingerprint
from service.core.tables import lock_row
from service.core.times import as_utc, utcnow
from service.http.etags import EntityTags, check_version
from service.quotes.history import price_changed, record_price_change
from service.quotes.models import (
    QUOTE_NOT_NULL,
    Quote,
    QuoteCreate,
    QuotePublic,
    QuoteUpdate,
    check_network_shape,
    check_price_shape,
)

Freshness = Literal["all", "fresh", "stale"]


def observed_start(observed_at: date) -> datetime:
    """The start (UTC) of the day a price was observed: where its age counts from."""
    return datetime.combine(observed_at, time(), tzinfo=UTC)


def age_days(observed_at: date, now: datetime) -> float:
    """Days from the start (UTC) of the observed day to ``now``; never negative."""
    return max(0.0, (now - observed_start(observed_at)).total_seconds() / 86_400)


def stale_before(now: datetime, stale_days: float) -> date:
    """Quotes observed before this date are stale at ``now``: ``age_days > stale_days``, for
    a day counted from its start, is ``observed_at < stale_before``."""
    cutoff = now.astimezone(UTC) - timedelta(days=stale_days)
    day = cutoff.date()
    return day + timedelta(days=1) if cutoff.time() != time() else day


def to_public(quote: Quote, *, now: datetime, stale_days: float) -> QuotePublic:
    captured = as_utc(quote.captured_at)
    age = age_days(quote.observed_at, now)
    valid_until = as_utc(quote.valid_until) if quote.valid_until else None
    per_gpu = (
        quote.price_usd_per_hour / quote.gpu_count if quote.price_usd_per_hour is not None else None
    )
    return QuotePublic.model_validate(
        {
            **quote.model_dump(),
            "captured_at": captured,
            "valid_until": valid_until,
            "created_at": as_utc(quote.created_at),
            "updated_at": as_utc(quote.updated_at),
            "price_usd_per_gpu_hour": per_gpu,
            "age_days": round(age, 3),
            "stale": age > stale_days,
            "expired": valid_until is not None and valid_until < now,
        }
    )


def get_quote(session: Session, *, quote_id: int) -> Quote:
    quote = session.get(Quote, quote_id)
    if quote is None:
        raise NotFound(f"No quote with id {quote_id}")
    return quote


def list_quotes(
    session: Session,
    *,
    now: datetime,
    stale_days: float,
    gpu: str | None = None,
    provider: str | None = None,
    region: str | None = None,
    pricing: str | None = None,
    max_price_usd_per_hour: float | None = None,
    include_expired: bool = False,
    freshness: Freshness = "all",
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[Quote], int]:
    stmt = select(Quote)
    if gpu:
        stmt = stmt.where(Quote.gpu_slug == gpu)
    if provider:
        stmt = stmt.where(Quote.provider == provider.lower())
    if region:
        stmt = stmt.where(Quote.region == region)
    if pricing:
        stmt = stmt.where(Quote.pricing == pricing)
    if max_price_usd_per_hour is not None:
        stmt = stmt.where(col(Quote.price_usd_per_hour) <= max_price_usd_per_hour)
    if not include_expired:
        stmt = stmt.where(or_(col(Quote.valid_until).is_(None), col(Quote.valid_until) >= now))
    cutoff = stale_before(now, stale_days)
    if freshness == "fresh":
        stmt = stmt.where(col(Quote.observed_at) >= cutoff)
    elif freshness == "stale":
        stmt = stmt.where(col(Quote.observed_at) < cutoff)
    total = session.exec(select(func.count()).select_from(stmt.subquery())).one()
    order = (col(Quote.gpu_slug), col(Quote.provider), col(Quote.region),
             col(Quote.instance_type), col(Quote.pricing))
    rows = session.exec(stmt.order_by(*order).limit(limit).offset(offset)).all()
    return list(rows), int(total)


def _check_gpu_exists(session: Session, slug: str, field: str) -> None:
    try:
        get_gpu(session, slug=slug)
    except NotFound as exc:
        raise Unprocessable(
            f"Unknown GPU '{slug}'", errors=[field_error(field, f"no GPU with slug '{slug}'")]
        ) from exc


def _check_unique(session: Session, key: dict[str, Any], *, exclude_id: int | None) -> None:
    stmt = select(Quote.id).where(
        Quote.provider == key["provider"],
        Quote.region == key["region"],
        Quote.instance_type == key["instance_type"],
        Quote.pricing == key["pricing"],
    )
    if exclude_id is not None:
        stmt = stmt.where(Quote.id != exclude_id)
    existing = session.exec(stmt).first()
    if existing is not None:
        raise Conflict(
            f"Quote {existing} already has this provider, region, instance_type and pricing",
            errors=[field_error("body.instance_type", f"duplicate of quote {existing}")],
        )


def create_quote(session: Session, *, data: QuoteCreate) -> Quote:
    _check_gpu_exists(session, data.gpu_slug, "body.gpu_slug")
    _check_unique(session, data.model_dump(), exclude_id=None)
    quote = Quote.model_validate(data)
    session.add(quote)
    session.flush()
    return quote


def patch_quote(
    session: Session, *, quote_id: int, data: QuoteUpdate, if_match: EntityTags | None,
    changed_by: str = "api",
) -> Quote:
    quote = get_quote(session, quote_id=quote_id)  # 404 before 428
    if if_match is None:
        # Every update route needs If-Match (as /v1/gpus): without it a concurrent writer's
        # change would be silently overwritten, or, under a race, the caller would get a 412
        # for a precondition it never sent.
        raise PreconditionRequired("Send If-Match with the ETag from GET /v1/quotes/{id}")
    if if_match.any:
        # `*` matches the current version whatever it is: lock the row so that concurrent `*`
        # writes apply in turn (all succeed) on PostgreSQL as on SQLite.
        quote = lock_row(session, Quote, quote.id, missing=f"No quote with id {quote_id}")
    expected = check_version(if_match, quote.version)
    changes: dict[str, Any] = data.model_dump(exclude_unset=True)
    nulls = sorted(k for k, v in changes.items() if v is None and k in QUOTE_NOT_NULL)
    if nulls:
        raise Unprocessable(
            "These fields cannot be null",
            errors=[field_error(f"body.{k}", "may not be null") for k in nulls],
        )
    if "provider" in changes:
        changes["provider"] = changes["provider"].lower()
    merged = {**quote.model_dump(), **changes}
    try:
        check_price_shape(
            merged["pricing"], merged["price_usd_per_hour"], merged["purchase_price_usd"]
        )
        check_network_shape(merged["multi_node"], merged["network_fabric"],
                            merged["network_gbps"])
    except ValueError as exc:
        raise Unprocessable(str(exc), errors=[field_error("body", str(exc))]) from exc
    if "gpu_slug" in changes:
        _check_gpu_exists(session, changes["gpu_slug"], "body.gpu_slug")
    if changes:
        _check_unique(session, merged, exclude_id=quote.id)
        new_hourly, new_purchase = merged["price_usd_per_hour"], merged["purchase_price_usd"]
        now = utcnow()
        # One conditional UPDATE: of two concurrent PATCHes read at the same version, exactly
        # one writes (and records history); the other gets 412.
        result = session.execute(
            update(Quote)
            .where(col(Quote.id) == quote.id, col(Quote.version) == expected)
            .values(**changes, version=col(Quote.version) + 1, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        if result.rowcount == 0:  # type: ignore[attr-defined]
            raise PreconditionFailed(
                f"Quote {quote.id} changed since version {expected}; re-read it and retry"
            )
        if price_changed(quote, hourly=new_hourly, purchase=new_purchase):
            record_price_change(session, quote=quote, new_hourly=new_hourly,
                                new_purchase=new_purchase, changed_by=changed_by,
                                changed_at=now)
        session.flush()
        session.expire(quote)
        quote = get_quote(session, quote_id=quote_id)
    return quote


def delete_quote(session: Session, *, quote_id: int, if_match: EntityTags | None = None,
                 deleted_by: str = "api") -> None:
    """Delete the quote; its price history stays, with a `deleted` entry (its last price)."""
    quote = lock_row(session, Quote, get_quote(session, quote_id=quote_id).id,
                     missing=f"No quote with id {quote_id}")
    check_version(if_match, quote.version)
    record_price_change(session, quote=quote, new_hourly=None, new_purchase=None,
                        changed_by=deleted_by, changed_at=utcnow(), event="deleted")
    session.delete(quote)
    session.flush()


REVISION_TABLE: str = Quote.__table__.name  # type: ignore[attr-defined]
"""The table whose revision is the quotes' (:func:`service.core.snapshots.table_fingerprints`)."""


def quotes_fingerprint(session: Session) -> tuple[object, ...]:
    return table_fingerprint(session, Quote)


@dataclass(frozen=True)
class OfferSnapshot:
    key: tuple[object, ...]
    """(database URL, *fingerprint): which database and state the rows were read from."""
    fingerprint: tuple[object, ...]
    rows: tuple[Any, ...]
    built_at: datetime
    valid_until: datetime | None
    """The earliest expiry after ``built_at``: past it, the snapshot is rebuilt."""


OfferSnapshots = SnapshotCache[tuple[object, ...], OfferSnapshot]
"""Snapshots keyed by (database URL, *fingerprint); the app owns one
(:class:`service.caches.AppCaches`)."""


def offer_snapshot(session: Session, *, now: datetime, cache: OfferSnapshots,
                   fingerprint: tuple[object, ...] | None = None) -> OfferSnapshot:
    """The quotes a recommendation can pick, rebuilt only when quotes change or one expires.

    The recommender takes, for each GPU and instance size, the cheapest allowed quote (ties:
    lowest id), after filtering by pricing kind, provider and region. So, of the quotes sharing
    (gpu, GPUs per instance, pricing, provider, region), only the cheapest can ever be picked:
    one window query keeps those (200,000 quotes -> ~29,000 in the 5,000-GPU benchmark).
    ``fingerprint``: the quotes' fingerprint, when the caller has just read it.
    """
    if fingerprint is None:
        fingerprint = quotes_fingerprint(session)
    key = (database_key(session), *fingerprint)
    snap = cache.get(key)
    if snap is not None and now >= snap.built_at and (
        snap.valid_until is None or now < snap.valid_until
    ):
        return snap
    t = Quote.__table__  # type: ignore[attr-defined]
    live = or_(t.c.valid_until.is_(None), t.c.valid_until >= now)
    price = func.coalesce(t.c.price_usd_per_hour, t.c.purchase_price_usd)
    rank = func.row_number().over(
        # an instance that clusters must survive beside a cheaper one that does not
        partition_by=(t.c.gpu_slug, t.c.gpu_count, t.c.pricing, t.c.provider, t.c.region,
                      t.c.multi_node, t.c.network_fabric),
        order_by=(price, t.c.id),
    ).label("rank")
    inner = sa_select(
        t.c.id, t.c.gpu_slug, t.c.provider, t.c.region, t.c.instance_type, t.c.gpu_count,
        t.c.pricing, t.c.price_usd_per_hour, t.c.purchase_price_usd, t.c.observed_at,
        t.c.network_gbps, t.c.network_fabric, t.c.multi_node, t.c.network_source, rank,
    ).where(live).subquery()
    stmt = sa_select(*(c for c in inner.c if c.name != "rank")).where(inner.c.rank == 1)
    rows = tuple(session.execute(stmt.order_by(inner.c.id)).all())
    next_expiry = session.execute(
        sa_select(func.min(t.c.valid_until)).where(t.c.valid_until >= now)
    ).scalar()
    snap = OfferSnapshot(key=key, fingerprint=fingerprint, rows=rows, built_at=now,
                         valid_until=as_utc(next_expiry) if next_expiry else None)
    if quotes_fingerprint(session) == fingerprint:  # no commit landed between the reads
        cache.put(key, snap)
    return snap
