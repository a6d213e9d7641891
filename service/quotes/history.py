"""Price history: the old price of every quote whose price changed (by an import or a PATCH)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from service.core.times import as_utc
from service.quotes.models import PriceChangePublic, Quote, QuotePriceChange


def price_changed(quote: Quote, *, hourly: float | None, purchase: float | None) -> bool:
    return (quote.price_usd_per_hour, quote.purchase_price_usd) != (hourly, purchase)


def record_price_change(
    session: Session, *, quote: Quote, new_hourly: float | None, new_purchase: float | None,
    changed_by: str, changed_at: datetime, import_id: int | None = None,
    event: str = "price_change",
) -> QuotePriceChange:
    """Keep ``quote``'s current (old) price, and who it is, before it is overwritten or
    deleted (``event="deleted"``)."""
    assert quote.id is not None
    row = QuotePriceChange(
        quote_id=quote.id, event=event, gpu_slug=quote.gpu_slug, provider=quote.provider,
        region=quote.region, instance_type=quote.instance_type, pricing=quote.pricing,
        import_id=import_id, changed_at=changed_at, changed_by=changed_by,
        old_price_usd_per_hour=quote.price_usd_per_hour, new_price_usd_per_hour=new_hourly,
        old_purchase_price_usd=quote.purchase_price_usd, new_purchase_price_usd=new_purchase,
        old_captured_at=quote.captured_at,
    )
    session.add(row)
    return row


def has_history(session: Session, *, quote_id: int) -> bool:
    return session.exec(
        select(QuotePriceChange.id).where(QuotePriceChange.quote_id == quote_id).limit(1)
    ).first() is not None


def list_price_history(
    session: Session, *, quote_id: int | None = None, limit: int, offset: int,
    gpu_slug: str | None = None, provider: str | None = None, event: str | None = None,
    show_names: bool = True,
) -> tuple[list[PriceChangePublic], int]:
    """Oldest change first, so prices read in the order they moved; of one quote, or of all
    (deleted quotes included) filtered by GPU, provider and event. ``show_names`` false (a
    caller who is not an admin): ``changed_by`` is null."""
    where: list[Any] = []
    if quote_id is not None:
        where.append(QuotePriceChange.quote_id == quote_id)
    if gpu_slug is not None:
        where.append(QuotePriceChange.gpu_slug == gpu_slug)
    if provider is not None:
        where.append(QuotePriceChange.provider == provider.lower())
    if event is not None:
        where.append(QuotePriceChange.event == event)
    total = session.exec(select(func.count()).select_from(QuotePriceChange).where(*where)).one()
    rows = session.exec(
        select(QuotePriceChange).where(*where)
        .order_by(col(QuotePriceChange.changed_at), col(QuotePriceChange.id))
        .limit(limit).offset(offset)
    ).all()
    out = [
        PriceChangePublic.model_validate({
            **r.model_dump(), "changed_at": as_utc(r.changed_at),
            "old_captured_at": as_utc(r.old_captured_at) if r.old_captured_at else None,
            "changed_by": r.changed_by if show_names else None,
        })
        for r in rows
    ]
    return out, int(total)
