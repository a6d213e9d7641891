"""All settings in one pydantic-settings class, read from the environment."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GPU_ADVISOR_", extra="ignore")

    database_url: str = Field(
        default="sqlite:///./gpu_advisor.db",
        validation_alias="DATABASE_URL",
        description="SQLAlchemy URL; SQLite file by default, PostgreSQL in production.",
    )
    bootstrap_admin_key: str | None = Field(
        default=None, description="An admin API key installed at start-up (never logged)."
    )
    public_reads: bool = Field(default=True, description="GET routes need no key when true.")
    max_page_size: int = Field(default=500, ge=1, le=10_000)
    max_body_bytes: int = Field(default=5_000_000, ge=1_024)
    """Request bodies above this size get 413 (except the import route, below)."""
    max_import_bytes: int = Field(default=64 * 1024 * 1024, ge=1_024)
    """Body limit of POST /v1/quotes/import: a whole cloud catalog (AWS's is ~2.5 MB)."""
    stale_quote_days: float = Field(default=30.0, gt=0)
    """A quote captured more than this many days ago is used with a warning."""
    electricity_usd_per_kwh: float = Field(default=0.15, ge=0)
    amortization_years: float = Field(default=3.0, gt=0)
    cors_origins: list[str] = Field(default_factory=list)
    db_connect_timeout_s: float = Field(default=3.0, gt=0)
    log_json: bool = True


@lru_cache
def get_settings() -> Settings:
    return Settings()
