"""Quote tables and schemas: QuoteBase -> Quote (table), QuoteCreate, QuoteUpdate, QuotePublic."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, model_validator
from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlmodel import Field, SQLModel

from service.common import UtcDatetime, utcnow

Pricing = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "purchase"]
PRICINGS: tuple[str, ...] = ("on_demand", "spot", "reserved_1y", "reserved_3y", "purchase")
MAX_HOURLY_USD = 100_000.0
"""No rentable instance costs more than this per hour (the largest list at ~$100)."""
MAX_PURCHASE_USD = 100_000_000.0

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False, str_strip_whitespace=True)


class QuoteFields(SQLModel):
    provider: str = Field(min_length=1, max_length=40, sa_type=String(40),
                          description="Cloud or seller, lower case: aws, lambda, gcp, nvidia-msrp")
    region: str = Field(default="global", min_length=1, max_length=60, sa_type=String(60))
    instance_type: str = Field(min_length=1, max_length=100, sa_type=String(100))
    gpu_count: int = Field(default=1, ge=1, le=1024, description="GPUs in one instance")
    pricing: Pricing = Field(sa_type=String(16))
    price_usd_per_hour: float | None = Field(
        default=None, ge=0, le=MAX_HOURLY_USD,
        description="Whole instance [USD/h]; null for purchase",
    )
    purchase_price_usd: float | None = Field(
        default=None, ge=0, le=MAX_PURCHASE_USD, description="Purchase only: one unit [USD]"
    )
    source: str = Field(min_length=1, max_length=2000)
    captured_at: datetime = Field(description="When the price was read")
    valid_until: datetime | None = Field(default=None, description="Expiry; null = no expiry")


def check_price_shape(pricing: str | None, hourly: float | None, purchase: float | None) -> None:
    if pricing == "purchase":
        if purchase is None:
            raise ValueError("purchase_price_usd is required when pricing is 'purchase'")
        if hourly is not None:
            raise ValueError("price_usd_per_hour must be null when pricing is 'purchase'")
    elif pricing is not None:
        if hourly is None:
            raise ValueError(f"price_usd_per_hour is required when pricing is '{pricing}'")
        if purchase is not None:
            raise ValueError("purchase_price_usd is only for pricing 'purchase'")


class Quote(QuoteFields, table=True):
    __tablename__ = "quotes"
    __table_args__ = (
        UniqueConstraint("provider", "region", "instance_type", "pricing"),
    )

    id: int | None = Field(default=None, primary_key=True)
    gpu_slug: str = Field(
        sa_type=String(64), sa_column_args=[ForeignKey("gpus.slug", onupdate="CASCADE")],
        index=True,
    )
    version: int = Field(default=1)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class QuoteCreate(QuoteFields):
    model_config = _STRICT  # type: ignore[assignment]

    captured_at: UtcDatetime = Field(description="When the price was read (UTC if no offset)")
    valid_until: UtcDatetime | None = Field(default=None, description="Expiry; null = none")
    gpu_slug: str = Field(min_length=1, max_length=64)

    @model_validator(mode="after")
    def _shape(self) -> QuoteCreate:
        self.provider = self.provider.lower()
        check_price_shape(self.pricing, self.price_usd_per_hour, self.purchase_price_usd)
        return self


class QuoteUpdate(SQLModel):
    model_config = _STRICT  # type: ignore[assignment]

    gpu_slug: str | None = Field(default=None, min_length=1, max_length=64)
    provider: str | None = Field(default=None, min_length=1, max_length=40)
    region: str | None = Field(default=None, min_length=1, max_length=60)
    instance_type: str | None = Field(default=None, min_length=1, max_length=100)
    gpu_count: int | None = Field(default=None, ge=1, le=1024)
    pricing: Pricing | None = None
    price_usd_per_hour: float | None = Field(default=None, ge=0, le=MAX_HOURLY_USD)
    purchase_price_usd: float | None = Field(default=None, ge=0, le=MAX_PURCHASE_USD)
    source: str | None = Field(default=None, min_length=1, max_length=2000)
    captured_at: UtcDatetime | None = None
    valid_until: UtcDatetime | None = None


class QuotePublic(QuoteFields):
    id: int
    gpu_slug: str
    version: int
    created_at: datetime
    updated_at: datetime
    price_usd_per_gpu_hour: float | None = Field(
        default=None, description="price_usd_per_hour / gpu_count"
    )
    age_days: float | None = Field(default=None, description="Days since captured_at")
    stale: bool = Field(default=False, description="Older than the configured stale age")
    expired: bool = Field(default=False, description="valid_until is in the past")


QUOTE_NOT_NULL = frozenset(
    {"gpu_slug", "provider", "region", "instance_type", "gpu_count", "pricing", "source",
     "captured_at"}
)
