"""/healthz, /readyz and /metrics."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, Field
from sqlalchemy import text
from sqlalchemy.engine import Engine

from service.core.errors import ServiceUnavailable, responses
from service.core.security import MetricsReaderDep

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str = Field(description="ok when healthy")


def _ping(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


@router.get("/healthz", summary="Liveness", response_model=Health)
async def healthz() -> Health:
    """The process is up (does not touch the database)."""
    # async and without dependencies: answered on the event loop, never queued behind the
    # thread pool or the database, so it stays fast under any load.
    return Health(status="ok")


@router.get("/readyz", summary="Readiness", response_model=Health, responses=responses(503))
async def readyz(request: Request) -> Health:
    """The database answers within the connect timeout; 503 problem+json otherwise."""
    settings = request.app.state.settings
    try:
        await asyncio.wait_for(
            asyncio.to_thread(_ping, request.app.state.engine),
            timeout=settings.db_connect_timeout_s + 1,
        )
    except Exception as exc:
        raise ServiceUnavailable(
            f"Database unreachable: {type(exc).__name__}", headers={"Retry-After": "5"}
        ) from exc
    return Health(status="ready")


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text"},
               **responses(401)},
)
def metrics(request: Request, _: MetricsReaderDep) -> Response:
    """Request counts and latency histograms per route, recommendation compute time: the whole
    server's (every worker's, under `gpu-advisor serve`), so consecutive scrapes agree; the
    engine cache gauges are the answering worker's. Needs a key unless
    GPU_ADVISOR_METRICS_PUBLIC (unset: GPU_ADVISOR_PUBLIC_READS) is true."""
    body = request.app.state.metrics.exposition()
    return Response(body, media_type=CONTENT_TYPE_LATEST)
