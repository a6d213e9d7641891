"""create_app(): routers, middleware, error handlers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.routing import APIRoute
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from service import __version__
from service.catalog.routes import router as gpus_router
from service.core.config import Settings, get_settings
from service.core.db import SQLITE_BEGIN, SessionSlots, make_engine
from service.core.db_deadline import PING_DEADLINE_S, install_db_deadline
from service.core.errors import PROBLEM_JSON, Problem, install_error_handlers
from service.core.security import declared_access, install_key, reads_api_key
from service.http.bodies import BodyBudgetMiddleware, PreAuthMiddleware, RouteAccess
from service.http.guards import (
    AdmissionMiddleware,
    BodyTimeoutMiddleware,
    HeaderLimitMiddleware,
    MergeConditionalHeadersMiddleware,
    MiddlewareProblemGuard,
    is_list_read,
)
from service.http.headers import HeadAsGetMiddleware, ResponseHeadersMiddleware
from service.http.health import router as health_router
from service.http.observability import (
    BodySizeLimitMiddleware,
    CacheCollector,
    Metrics,
    ObservabilityMiddleware,
    configure_logging,
    mark_worker_exit,
)
from service.quotes.routes import router as quotes_router
from service.web.routes import install_pages
from service.workloads.caches import AppCaches

DESCRIPTION = """
**gpu-advisor** answers: *for this workload, which GPU, how many, from which offer, and why?*

It keeps a GPU catalog (datasheet specs, dense tensor figures, with sources) and price quotes,
estimates memory and speed from first principles, and ranks GPUs with the reasons shown.

Errors are `application/problem+json` (RFC 9457). Keys go in `Authorization: Bearer gpa_...`.

Roles (each operation lists its own in `x-roles`):

| role | may call |
| --- | --- |
| `reader` | catalog, quotes, models, stateless estimates and recommendations |
| `submitter` | what a reader may, plus its own workloads and runs |
| `admin` | everything: catalog writes, every owner's workloads, deleted quotes' history |

Without a key, a caller is a reader while `GPU_ADVISOR_PUBLIC_READS` is true (the default).
Workloads and runs record the key that created them; another submitter's are 404.

People: [the comparison page](/ui) shows the ranked answer, the cost-time trade-off, memory
and rejected GPUs for a workload; the request bodies below have named examples per workload kind.
"""

TAGS = [
    {"name": "gpus", "description": "The GPU catalog (specs, dense tensor peaks, sources)."},
    {"name": "quotes", "description": "Price quotes: per hour for cloud instances, or purchase."},
    {"name": "models", "description": "Known model presets and their architecture numbers."},
    {"name": "estimates", "description": "One workload on one GPU type and count."},
    {"name": "workloads", "description": "Stored workloads and their recommendation runs."},
    {"name": "recommendations", "description": "Ranked, explained GPU choices."},
    {"name": "health", "description": "Liveness, readiness, metrics."},
]


def _operation_id(route: APIRoute) -> str:
    """Stable OpenAPI operation ids, `{tag}-{function}`, which generated clients depend on."""
    tag = route.tags[0] if route.tags else "default"
    return f"{tag}-{route.name}"


def create_app(settings: Settings | None = None, *, engine: Engine | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.log_json)
    engine = engine or make_engine(
        settings.database_url, connect_timeout_s=settings.db_connect_timeout_s,
        pool_size=settings.worker_threads, pool_timeout_s=settings.db_deadline_s,
        busy_timeout_s=settings.db_deadline_s,
    )
    install_db_deadline(engine, seconds=settings.db_deadline_s,
                        ping_seconds=min(PING_DEADLINE_S, settings.db_connect_timeout_s))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Sync routes run on anyio's thread limiter (40 by default); size it to the database
        # pool, so threads never queue on connections (finding: QueuePool overflow -> 500).
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.worker_threads
        if settings.bootstrap_admin_key:
            # A writer from the start (SQLite: BEGIN IMMEDIATE, service/core/db.py):
            # `serve --workers N` starts N lifespans at once, and a deferred read-then-insert
            # fails at once with "database is locked" instead of waiting, so the worker and then
            # serve exited.
            with Session(engine.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})) as session:
                try:
                    install_key(session, key=settings.bootstrap_admin_key,
                                name="bootstrap-admin", role="admin")
                    session.commit()
                except IntegrityError:
                    # Another replica starting at the same moment installed the same key.
                    session.rollback()
        app.state.metrics.gc_pauses.start()  # after the server's start-up collection
        yield
        app.state.metrics.gc_pauses.stop()
        app.state.caches.clear()  # a stopped app keeps no snapshots alive
        mark_worker_exit()

    app = FastAPI(
        title="gpu-advisor",
        version=__version__,
        description=DESCRIPTION,
        openapi_tags=TAGS,
        generate_unique_id_function=_operation_id,
        lifespan=lifespan,
        # Served offline from packaged assets by service.web (the defaults load from a CDN).
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.caches = AppCaches()
    app.state.session_slots = SessionSlots(settings.worker_threads, settings.db_deadline_s)
    app.state.metrics = Metrics()
    app.state.metrics.register_process_collector(CacheCollector(app.state.caches.engine.stats))
    install_error_handlers(app)
    _document_422_as_problem(app)
    _document_roles(app)
    for router in _routers():
        app.include_router(router)
    install_pages(app)
    # The last added runs first: observability, CORS, header and body limits, authentication of
    # writes before their body is read, the body budget and read timeout, then admission (which
    # receives the whole body before it takes a slot), and the app.
    app.add_middleware(MergeConditionalHeadersMiddleware)
    app.add_middleware(AdmissionMiddleware, limit=settings.max_concurrent_reads,
                       max_queued=settings.max_queued_requests,
                       queue_timeout_s=settings.queue_timeout_s, admits=is_list_read,
                       setting="GPU_ADVISOR_MAX_CONCURRENT_READS")
    app.add_middleware(AdmissionMiddleware, limit=settings.max_concurrent_requests,
                       max_queued=settings.max_queued_requests,
                       queue_timeout_s=settings.queue_timeout_s)
    app.add_middleware(BodyTimeoutMiddleware, timeout_s=settings.body_read_timeout_s)
    app.add_middleware(BodyBudgetMiddleware, max_bytes=settings.max_buffered_body_bytes)
    app.add_middleware(PreAuthMiddleware, routes=route_access(), engine=engine,
                       public_reads=settings.public_reads)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes,
                       path_limits={"/v1/quotes/import": settings.max_import_bytes})
    app.add_middleware(HeaderLimitMiddleware, max_bytes=settings.max_header_bytes)
    app.add_middleware(MiddlewareProblemGuard)
    app.add_middleware(HeadAsGetMiddleware)
    if settings.cors_origins:
        # outside every middleware that answers on its own (401, 413, 431, 503): a portal on
        # another origin reads those problems and their Retry-After too
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["ETag", "Location", "X-Request-ID", "Retry-After"],
        )
    app.add_middleware(ObservabilityMiddleware, metrics=app.state.metrics)
    app.add_middleware(ResponseHeadersMiddleware)
    return app


def route_access() -> list[RouteAccess]:
    """(methods, path pattern, callers) of every API route, for PreAuthMiddleware."""
    return [(frozenset(route.methods or ()), route.path_regex, route_roles(route))
            for router in _routers() for route in router.routes if isinstance(route, APIRoute)]


def _document_422_as_problem(app: FastAPI) -> None:
    """FastAPI documents its automatic 422 as application/json HTTPValidationError, but the
    handler answers problem+json; document what is sent (schemathesis found the mismatch)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        problem = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                resp = operation.get("responses", {}).get("422")
                if resp is not None and PROBLEM_JSON not in resp.get("content", {}):
                    resp["content"] = problem
        components = schema.get("components", {}).get("schemas", {})
        if "Problem" not in components:
            components["Problem"] = Problem.model_json_schema(
                ref_template="#/components/schemas/{model}")
            components.update(components["Problem"].pop("$defs", {}))
        text = json.dumps(schema.get("paths", {}))
        for name in ("HTTPValidationError", "ValidationError"):
            if f'"#/components/schemas/{name}"' not in text and name in components:
                text_rest = json.dumps({k: v for k, v in components.items() if k != name})
                if f'"#/components/schemas/{name}"' not in text_rest:
                    del components[name]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def route_roles(route: APIRoute) -> list[str]:
    """The roles that may call ``route``, as declared on its access dependency
    (:func:`service.core.security.access`); a route that never reads an API key: anyone. Raises
    if the route reads a key through dependencies none of which declares who it lets through."""
    stack = list(route.dependant.dependencies)
    reads_key = False
    while stack:
        dep = stack.pop()
        callers = declared_access(dep.call)
        if callers is not None:
            return list(callers)
        reads_key = reads_key or reads_api_key(dep.call)
        stack.extend(dep.dependencies)
    if reads_key:
        raise RuntimeError(f"{route.path} reads an API key, but none of its dependencies "
                           "declares who it lets through (service.core.security.access)")
    return ["anyone"]


def _document_roles(app: FastAPI) -> None:
    """Each operation's `x-roles`: the roles its access dependency lets through."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        # The routers' own routes carry their full path (the app holds included-router
        # wrappers, not APIRoutes, in recent FastAPI).
        for route in (r for router in _routers() for r in router.routes):
            if not isinstance(route, APIRoute) or not route.include_in_schema:
                continue
            for method in route.methods or ():
                operation = schema["paths"].get(route.path_format, {}).get(method.lower())
                if operation is not None:
                    operation["x-roles"] = route_roles(route)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _routers() -> list:  # type: ignore[type-arg]
    from service.estimates.routes import models_router, traffic_router
    from service.estimates.routes import router as estimates_router
    from service.workloads.routes import recommendations_router
    from service.workloads.routes import router as workloads_router

    return [health_router, gpus_router, quotes_router, models_router, traffic_router,
            estimates_router,
            workloads_router, recommendations_router]
