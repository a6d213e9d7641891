"""Price history: the old price of every quote whose price changed (by an import or a PATCH)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func
from sqlmodel import Session, col, select

from service.common import as_utc
from service.quotes.models import PriceChangePublic, Quote, QuotePriceChange


def price_changed(quote: Quote, *, hourly: float | None, purchase: float | None) -> bool:
    return (quote.price_usd_per_hour, quote.purchase_price_usd) != (hourly, purchase)


def record_price_change(
    session: Session, *, quote: Quote, new_hourly: float | None, new_purchase: float | None,
    changed_by: str, changed_at: datetime, import_id: int | None = None,
) -> QuotePriceChange:
    """Keep ``quote``'s current (old) price before it is overwritten."""
    assert quote.id is not None
    row = QuotePriceChange(
        quote_id=quote.id, import_id=import_id, changed_at=changed_at, changed_by=changed_by,
        old_price_usd_per_hour=quote.price_usd_per_hour, new_price_usd_per_hour=new_hourly,
        old_purchase_price_usd=quote.purchase_price_usd, new_purchase_price_usd=new_purchase,
        old_captured_at=quote.captured_at,
    )
    session.add(row)
    return row


def list_price_history(
    session: Session, *, quote_id: int, limit: int, offset: int
) -> tuple[list[PriceChangePublic], int]:
    """Oldest change first, so prices read in the order they moved."""
    where = QuotePriceChange.quote_id == quote_id
    total = session.exec(select(func.count()).select_from(QuotePriceChange).where(where)).one()
    rows = session.exec(
        select(QuotePriceChange).where(where)
        .order_by(col(QuotePriceChange.changed_at), col(QuotePriceChange.id))
        .limit(limit).offset(offset)
    ).all()
    out = [
        PriceChangePublic.model_validate({
            **r.model_dump(), "changed_at": as_utc(r.changed_at),
            "old_captured_at": as_utc(r.old_captured_at) if r.old_captured_at else None,
        })
        for r in rows
    ]
    return out, int(total)
