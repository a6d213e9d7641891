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
    metrics_public: bool | None = Field(
        default=None, description="/metrics needs no key when true; unset = as public_reads."
    )
    max_page_size: int = Field(default=500, ge=1, le=10_000)
    max_body_bytes: int = Field(default=5_000_000, ge=1_024)
    """Request bodies above this size get 413 (except the import route, below)."""
    max_import_bytes: int = Field(default=64 * 1024 * 1024, ge=1_024)
    """Body limit of POST /v1/quotes/import: a whole cloud catalog (AWS's is ~2.5 MB)."""
    stale_quote_days: float = Field(default=30.0, gt=0)
    """A quote whose price was observed (observed_at) more than this many days ago is stale:
    used, with a warning naming it."""
    electricity_usd_per_kwh: float = Field(default=0.15, ge=0)
    amortization_years: float = Field(default=3.0, gt=0)
    cors_origins: list[str] = Field(default_factory=list)
    db_connect_timeout_s: float = Field(default=3.0, gt=0)
    db_deadline_s: float = Field(default=5.0, gt=0)
    """Longest one database operation (query, commit, rollback, pool checkout) may take; past it
    the connection is cut and the request gets 503 (a black-holed network never hangs a worker)."""
    max_concurrent_requests: int = Field(default=2, ge=1)
    """Per worker: expensive requests (recommendations, runs, estimates, imports) run at once."""
    max_queued_requests: int = Field(default=32, ge=0)
    """Per worker: expensive requests that may wait for a slot; more get 503 at once."""
    queue_timeout_s: float = Field(default=2.0, gt=0)
    """Longest wait for a slot before 503 with Retry-After."""
    max_concurrent_reads: int = Field(default=4, ge=1)
    """Per worker: list reads (GET /v1/gpus, /v1/quotes, /v1/workloads, ...) run at once; more
    queue (GPU_ADVISOR_MAX_QUEUED_REQUESTS, GPU_ADVISOR_QUEUE_TIMEOUT_S), then 503."""
    max_buffered_body_bytes: int = Field(default=128 * 1024 * 1024, ge=1_024)
    """Per worker: request body bytes held at once, all requests together; over it, 503."""
    worker_threads: int = Field(default=16, ge=1)
    """Threads per worker for sync routes; the database pool holds as many connections."""
    max_header_bytes: int = Field(default=16_384, ge=1_024)
    """Request headers above this total size get 431."""
    header_read_timeout_s: float = Field(default=10.0, gt=0)
    """`serve`: a connection that has not sent a whole request head in this time is closed."""
    body_read_timeout_s: float = Field(default=30.0, gt=0)
    """A request body not received within this time gets 408."""
    keep_alive_timeout_s: float = Field(default=5.0, gt=0)
    """`serve`: idle keep-alive connections are closed after this."""
    max_runs_per_workload: int = Field(default=20, ge=1, le=10_000)
    """Stored runs kept per workload: storing one more deletes the oldest beyond this."""
    run_retention_days: float | None = Field(default=None, gt=0, le=36_500)
    """Runs older than this are deleted when the workload's next run is stored; unset = no
    age limit (only the count). At most 100 years: a larger value (or inf) put the cutoff
    before year 1, and every run stored was a 500."""
    log_json: bool = True


@lru_cache
def get_settings() -> Settings:
    return Settings()


def command_settings(database_url: str | None) -> Settings:
    """The environment's settings, with a command line's ``--database-url`` (when given) in
    place of DATABASE_URL."""
    settings = get_settings()
    if database_url:
        settings = settings.model_copy(update={"database_url": database_url})
    return settings
