"""Quote tables and schemas: QuoteBase -> Quote (table), QuoteCreate, QuoteUpdate, QuotePublic."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Literal

from pydantic import ConfigDict, field_validator, model_validator
from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlmodel import Field, SQLModel

import service.core.tables  # noqa: F401  (the naming convention, before any table)
from service.core.text import no_control_chars
from service.core.times import ObservedDate, UtcDatetime, latest_today, utcnow
from service.engine.recommend_types import Fabric, Pricing
from service.quotes.networks import fill_network

MAX_HOURLY_USD = 100_000.0
"""No rentable instance costs more than this per hour (the largest list at ~$100)."""
MAX_PURCHASE_USD = 100_000_000.0

MIN_NETWORK_GBPS = 1.0
"""Slowest instance network accepted [Gb/s]: below it multi-node times overflow to infinity."""
MAX_NETWORK_GBPS = 100_000.0
"""No instance has more than 100 Tb/s of network (the largest list 3.2-6.4 Tb/s)."""
NETWORK_FIELDS = ("network_gbps", "network_fabric", "multi_node", "network_source")

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False, str_strip_whitespace=True)


class QuoteFields(SQLModel):
    provider: str = Field(min_length=1, max_length=40, sa_type=String(40),
                          description="Cloud or seller, lower case: aws, lambda, gcp, nvidia-msrp")
    region: str = Field(
        default="global", min_length=1, max_length=60, sa_type=String(60),
        description="Provider region, or global",
    )
    instance_type: str = Field(
        min_length=1, max_length=100, sa_type=String(100),
        description="The provider's instance (or product) name",
    )
    gpu_count: int = Field(default=1, ge=1, le=1024, description="GPUs in one instance")
    pricing: Pricing = Field(
        sa_type=String(16),
        description="on_demand, spot, reserved_1y, reserved_3y, or purchase",
    )
    price_usd_per_hour: float | None = Field(
        default=None, ge=0, le=MAX_HOURLY_USD,
        description="Whole instance [USD/h]; null for purchase",
    )
    purchase_price_usd: float | None = Field(
        default=None, ge=0, le=MAX_PURCHASE_USD, description="Purchase only: one unit [USD]"
    )
    source: str = Field(
        min_length=1, max_length=2000,
        description="Where the price comes from (URL, price list, import)",
    )
    captured_at: datetime = Field(
        description="When the price was read from its source and recorded; how old the price "
        "is counts from observed_at")
    valid_until: datetime | None = Field(default=None, description="Expiry; null = no expiry")
    network_gbps: float | None = Field(
        default=None, ge=MIN_NETWORK_GBPS, le=MAX_NETWORK_GBPS,
        description="Network bandwidth of one instance [Gb/s] (purchase: of one node); "
        "null = unknown")
    network_fabric: Fabric | None = Field(
        default=None, sa_type=String(16),
        description="Network between instances: infiniband, efa, roce (RDMA fabrics), "
        "ethernet, or none; null = unknown")
    multi_node: bool = Field(
        default=False, description="Clusters of several instances of this type are offered "
        "(multi-node jobs); false = single instances only, or unknown")
    network_source: str | None = Field(
        default=None, max_length=2000,
        description="Where the network figures come from. Omit all four network fields to get "
        "the sourced default for the provider's instance family")


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


OBSERVED_AT = (
    "The day the source observed the price (a catalog's fetch, a price list's date, a launch "
    "announcement), YYYY-MM-DD. age_days and stale count from the start of this day (UTC)")


class Quote(QuoteFields, table=True):
    __tablename__ = "quotes"
    __table_args__ = (
        UniqueConstraint("provider", "region", "instance_type", "pricing"),
        # Ids are never reused (SQLite reuses the largest rowid otherwise): the price history
        # of a deleted quote keeps its id and must never be read as a new quote's.
        {"sqlite_autoincrement": True, "info": {"noun": "price quotes"}},
    )

    id: int | None = Field(default=None, primary_key=True)
    gpu_slug: str = Field(
        sa_type=String(64), sa_column_args=[ForeignKey("gpus.slug", onupdate="CASCADE")],
        index=True,
    )
    observed_at: date = Field(description=OBSERVED_AT)
    version: int = Field(default=1)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


def observed_default(captured_at: datetime) -> date:
    """observed_at when none is given: the UTC day of ``captured_at`` (the price is taken as
    seen when it was read); a future day is refused, as a given observed_at would be."""
    day = captured_at.astimezone(UTC).date()
    if day > latest_today():
        raise ValueError(f"captured_at ({day.isoformat()}) is in the future, so observed_at "
                         "cannot default to its date; send observed_at")
    return day


class QuoteCreate(QuoteFields):
    model_config = _STRICT  # type: ignore[assignment]

    captured_at: UtcDatetime = Field(description="When the price was read (UTC if no offset)")
    valid_until: UtcDatetime | None = Field(default=None, description="Expiry; null = none")
    gpu_slug: str = Field(min_length=1, max_length=64, description="The GPU type (catalog slug)")
    observed_at: ObservedDate | None = Field(
        default=None, description=OBSERVED_AT + "; not in the future. Omitted: the UTC date of "
        "captured_at (the price is taken as seen when it was read)")

    _text = field_validator("*")(no_control_chars)

    @model_validator(mode="after")
    def _shape(self) -> QuoteCreate:
        self.provider = self.provider.lower()
        if self.observed_at is None:
            self.observed_at = observed_default(self.captured_at)
        check_price_shape(self.pricing, self.price_usd_per_hour, self.purchase_price_usd)
        if not (self.model_fields_set & set(NETWORK_FIELDS)):
            for k, v in fill_network(self.model_dump(include={"provider", "instance_type"}))\
                    .items():
                if k in NETWORK_FIELDS:
                    setattr(self, k, v)
        check_network_shape(self.multi_node, self.network_fabric, self.network_gbps)
        return self


def check_network_shape(multi_node: bool | None, fabric: str | None,
                        gbps: float | None) -> None:
    """Multi-node clusters need a known network: a fabric other than none, and its rate."""
    if multi_node and (fabric in (None, "none") or gbps is None):
        raise ValueError("multi_node needs network_fabric (not none) and network_gbps")


class QuoteUpdate(SQLModel):
    model_config = _STRICT  # type: ignore[assignment]

    gpu_slug: str | None = Field(
        default=None, min_length=1, max_length=64,
        description="The GPU type (catalog slug)",
    )
    provider: str | None = Field(
        default=None, min_length=1, max_length=40,
        description="Cloud or seller, e.g. aws, lambda",
    )
    region: str | None = Field(
        default=None, min_length=1, max_length=60,
        description="Provider region, or global",
    )
    instance_type: str | None = Field(
        default=None, min_length=1, max_length=100,
        description="The provider's instance (or product) name",
    )
    gpu_count: int | None = Field(
        default=None, ge=1, le=1024,
        description="GPUs in one instance [count]",
    )
    pricing: Pricing | None = Field(
        default=None,
        description="on_demand, spot, reserved_1y, reserved_3y, or purchase",
    )
    price_usd_per_hour: float | None = Field(
        default=None, ge=0, le=MAX_HOURLY_USD,
        description="Price of one whole instance [USD/hour]",
    )
    purchase_price_usd: float | None = Field(
        default=None, ge=0, le=MAX_PURCHASE_USD,
        description="Price to buy one instance [USD]",
    )
    source: str | None = Field(
        default=None, min_length=1, max_length=2000,
        description="Where the price comes from",
    )
    captured_at: UtcDatetime | None = Field(
        default=None,
        description="When the price was read (UTC if no offset)",
    )
    valid_until: UtcDatetime | None = Field(default=None, description="Expiry; null = none")
    observed_at: ObservedDate | None = Field(
        default=None, description=OBSERVED_AT + "; not in the future. Send it with a new price")
    network_gbps: float | None = Field(default=None, ge=MIN_NETWORK_GBPS, le=MAX_NETWORK_GBPS,
                                       description="Network bandwidth of one instance [Gb/s]")
    network_fabric: Fabric | None = Field(
        default=None, description="infiniband, efa, roce, ethernet or none")
    multi_node: bool | None = Field(
        default=None, description="Clusters of several instances of this type are offered")
    network_source: str | None = Field(default=None, max_length=2000,
                                       description="Where the network figures come from")

    _text = field_validator("*")(no_control_chars)


class QuotePublic(QuoteFields):
    id: int = Field(description="Quote id")
    gpu_slug: str = Field(description="The GPU type (catalog slug)")
    version: int = Field(description="Increases on every change; the ETag")
    created_at: datetime = Field(description="When it was added (UTC)")
    updated_at: datetime = Field(description="When it last changed (UTC)")
    price_usd_per_gpu_hour: float | None = Field(
        default=None, description="price_usd_per_hour / gpu_count"
    )
    observed_at: date = Field(description=OBSERVED_AT)
    age_days: float | None = Field(
        default=None, description="Days since the price was observed (the start of observed_at, "
        "UTC), not since captured_at")
    stale: bool = Field(
        default=False,
        description="age_days is over the configured limit (GPU_ADVISOR_STALE_QUOTE_DAYS)")
    expired: bool = Field(default=False, description="valid_until is in the past")


QUOTE_NOT_NULL = frozenset(
    {"gpu_slug", "provider", "region", "instance_type", "gpu_count", "pricing", "source",
     "captured_at", "observed_at", "multi_node"}
)


# --- imports and price history -------------------------------------------------------------

ImportFormat = Literal["skypilot", "generic"]


class QuoteImport(SQLModel, table=True):
    """One bulk import: who ran it, when, from what, and what it changed."""

    __tablename__ = "quote_imports"

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, description="When the import ran")
    api_key_name: str = Field(max_length=100, description="The caller's API key name (or cli:...)")
    source: str = Field(max_length=2000)
    format: str = Field(sa_type=String(16))
    provider: str | None = Field(default=None, sa_type=String(40))
    captured_at: datetime = Field(description="captured_at given to the imported quotes")
    rows_read: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    unmatched: int = 0
    duration_ms: float = 0.0


HistoryEvent = Literal["price_change", "deleted"]


class QuotePriceChange(SQLModel, table=True):
    """The price a quote had before a change (by an import or a PATCH), or when it was deleted.

    Kept when the quote (or its GPU) is deleted: no foreign key to quotes, and the quote's
    identity is copied into the row."""

    __tablename__ = "quote_price_history"

    id: int | None = Field(default=None, primary_key=True)
    quote_id: int = Field(index=True)
    event: str = Field(default="price_change", sa_type=String(16))
    gpu_slug: str | None = Field(default=None, sa_type=String(64), index=True)
    provider: str | None = Field(default=None, sa_type=String(40))
    region: str | None = Field(default=None, sa_type=String(60))
    instance_type: str | None = Field(default=None, sa_type=String(100))
    pricing: str | None = Field(default=None, sa_type=String(16))
    import_id: int | None = Field(
        default=None, sa_column_args=[ForeignKey("quote_imports.id")], index=True
    )
    changed_at: datetime = Field(default_factory=utcnow)
    changed_by: str = Field(max_length=100)
    old_price_usd_per_hour: float | None = None
    new_price_usd_per_hour: float | None = None
    old_purchase_price_usd: float | None = None
    new_purchase_price_usd: float | None = None
    old_captured_at: datetime | None = None


class QuoteImportPublic(SQLModel):
    id: int = Field(description="Import id")
    created_at: datetime = Field(description="When the import ran (UTC)")
    api_key_name: str | None = Field(
        description="The caller's API key name (or cli:...); null unless the reader is an admin "
                    "(key names are the admins' own business)")
    source: str = Field(description="Where the file came from")
    format: str = Field(description="File format: csv, json, skypilot")
    provider: str | None = Field(description="Provider the rows were for, when one was given")
    captured_at: datetime = Field(description="captured_at given to the imported quotes")
    rows_read: int = Field(description="Data rows read [count]")
    added: int = Field(description="Quotes added [count]")
    updated: int = Field(description="Quotes whose price changed [count]")
    unchanged: int = Field(description="Quotes with the same price [count]")
    skipped: int = Field(description="Rows skipped as invalid [count]")
    unmatched: int = Field(description="Rows naming no catalog GPU [count]")
    duration_ms: float = Field(description="Time the import took [ms]")


class PriceChangePublic(SQLModel):
    id: int = Field(description="Change id")
    quote_id: int = Field(description="The quote whose price changed")
    event: HistoryEvent = Field(
        default="price_change",
        description="price_change: old -> new price; deleted: the quote's last price (new: null)",
    )
    gpu_slug: str | None = Field(default=None, description="The quote's GPU at that time")
    provider: str | None = Field(default=None, description="The quote's provider at that time")
    region: str | None = Field(default=None, description="The quote's region at that time")
    instance_type: str | None = Field(default=None,
                                      description="The quote's instance type at that time")
    pricing: str | None = Field(default=None, description="The quote's pricing kind at that time")
    import_id: int | None = Field(description="The import that changed it; null for a PATCH")
    changed_at: datetime = Field(description="When (UTC)")
    changed_by: str | None = Field(
        description="API key name (or cli:...) that changed it; null unless the reader is an "
                    "admin")
    old_price_usd_per_hour: float | None = Field(description="Previous hourly price [USD/hour]")
    new_price_usd_per_hour: float | None = Field(description="New hourly price [USD/hour]")
    old_purchase_price_usd: float | None = Field(description="Previous purchase price [USD]")
    new_purchase_price_usd: float | None = Field(description="New purchase price [USD]")
    old_captured_at: datetime | None = Field(description="When the old price had been read")


class UpdatedQuote(SQLModel):
    quote_id: int = Field(description="The quote updated")
    gpu_slug: str = Field(description="The GPU type (catalog slug)")
    region: str = Field(description="Provider region")
    instance_type: str = Field(description="The provider's instance name")
    pricing: str = Field(description="Pricing kind")
    old_price_usd_per_hour: float | None = Field(description="Price before [USD/hour]")
    new_price_usd_per_hour: float | None = Field(description="Price now [USD/hour]")
    old_gpu_slug: str = Field(description="Differs from gpu_slug when the GPU was re-matched")
    old_gpu_count: int = Field(description="GPUs per instance before [count]")
    gpu_count: int = Field(description="GPUs per instance now [count]")


class AddedQuote(SQLModel):
    row: int = Field(description="CSV line (header = 1) or JSON position of its first row")
    gpu_slug: str = Field(description="The GPU type (catalog slug)")
    region: str = Field(description="Provider region")
    instance_type: str = Field(description="The provider's instance name")
    gpu_count: int = Field(description="GPUs in one instance [count]")
    pricing: str = Field(description="Pricing kind")
    price_usd_per_hour: float | None = Field(description="Price of one instance [USD/hour]")
    purchase_price_usd: float | None = Field(description="Price to buy one instance [USD]")


class SkippedRow(SQLModel):
    row: int = Field(description="CSV: line of the file (header = 1); JSON: position from 1")
    reason: str = Field(description="Why the row was skipped, naming the field")


class UnmatchedRow(SQLModel):
    row: int = Field(description="CSV line (header = 1) or JSON position")
    accelerator_name: str = Field(description="The GPU name in the row")
    instance_type: str = Field(description="The instance named in the row")
    reason: str = Field(description="Why no catalog GPU matched")


class ImportResult(SQLModel):
    import_id: int | None = Field(description="The import record; null for a dry run")
    dry_run: bool = Field(description="True: nothing was written")
    provider: str | None = Field(description="Provider the rows were for, when one was given")
    format: ImportFormat = Field(description="File format read")
    captured_at: datetime = Field(description="captured_at given to the imported quotes")
    observed_at: date = Field(
        description="observed_at given to the imported quotes that do not carry their own")
    rows_read: int = Field(description="Data rows in the file (header excluded)")
    quotes_in_file: int = Field(description="Quotes the rows make after merging zones")
    added: int = Field(description="Quotes added [count]")
    added_quotes: list[AddedQuote] = Field(
        description="The quotes added (or, for a dry run, that would be added)"
    )
    updated: list[UpdatedQuote] = Field(description="Quotes whose price or size changed")
    unchanged: int = Field(
        description="Same price; captured_at and observed_at moved forward when newer")
    ignored_rows: int = Field(description="CPU-only and host-machine rows, not quotes")
    skipped: list[SkippedRow] = Field(description="Rows skipped as invalid, with reasons")
    unmatched: list[UnmatchedRow] = Field(description="Rows naming no catalog GPU")
    duration_ms: float = Field(description="Time the import took [ms]")
