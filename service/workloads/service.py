"""Workloads, recommendation runs, and the bridge from catalog rows and quotes to the ranker."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from service.catalog.service import catalog_snapshot
from service.common import SnapshotCache, as_utc, lock_row
from service.config import Settings
from service.engine.choice.ranking import recommend
from service.engine.recommend_types import Constraints, CostSettings, Offer
from service.errors import Conflict, NotFound
from service.estimates.service import ENGINE_CACHE, to_engine_workload
from service.quotes.service import OfferSnapshot, offer_snapshot
from service.text import is_clean
from service.workloads.models import (
    ConstraintsIn,
    RecommendationRun,
    RunSummary,
    StoredWorkload,
    WorkloadPublic,
    WorkloadSubmission,
)
from service.workloads.results import RecommendationResult, result_out


def request_hash(submission: WorkloadSubmission) -> str:
    canonical = json.dumps(submission.model_dump(mode="json"), sort_keys=True,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def to_public(row: StoredWorkload) -> WorkloadPublic:
    return WorkloadPublic(
        id=row.id, name=row.name, objective=row.objective,
        kind=row.kind, created_at=as_utc(row.created_at), workload=row.spec,
    )


def create_workload(
    session: Session, *, submission: WorkloadSubmission, idempotency_key: str | None
) -> tuple[StoredWorkload, bool]:
    """Store a workload; with an Idempotency-Key, a repeat gives back the first one.

    Returns (row, replayed). The same key with another body is a 409.
    """
    to_engine_workload(submission, prefix="body")  # 422 before anything is stored
    digest = request_hash(submission)
    if idempotency_key is not None:
        existing = _by_key(session, idempotency_key)
        if existing is not None:
            return _replay(existing, digest, idempotency_key), True
    row = StoredWorkload(
        id=str(uuid.uuid4()),
        name=submission.name,
        objective=submission.objective,
        kind=submission.kind,
        spec=submission.model_dump(mode="json", exclude_unset=True),
        idempotency_key=idempotency_key,
        request_hash=digest,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        # A concurrent request with the same key won the race: answer as a replay.
        existing = _by_key(session, idempotency_key or "")
        if existing is None:
            raise
        return _replay(existing, digest, idempotency_key or ""), True
    return row, False


def _by_key(session: Session, key: str) -> StoredWorkload | None:
    return session.exec(select(StoredWorkload).where(StoredWorkload.idempotency_key == key)).first()


def _replay(existing: StoredWorkload, digest: str, key: str) -> StoredWorkload:
    if existing.request_hash != digest:
        raise Conflict(
            f"Idempotency-Key '{key}' was used with a different body (workload {existing.id})"
        )
    return existing


def get_workload(session: Session, *, workload_id: str) -> StoredWorkload:
    # An id with control characters names no workload (and PostgreSQL refuses NUL in a query).
    row = session.get(StoredWorkload, workload_id) if is_clean(workload_id) else None
    if row is None:
        raise NotFound(f"No workload with id '{workload_id}'")
    return row


def list_workloads(
    session: Session, *, limit: int, offset: int
) -> tuple[list[StoredWorkload], int]:
    total = session.exec(select(func.count()).select_from(StoredWorkload)).one()
    rows = session.exec(
        select(StoredWorkload)
        .order_by(col(StoredWorkload.created_at).desc(), col(StoredWorkload.id))
        .limit(limit).offset(offset)
    ).all()
    return list(rows), int(total)


def delete_workload(session: Session, *, workload_id: str) -> None:
    row = lock_row(session, StoredWorkload, get_workload(session, workload_id=workload_id).id)
    if row is None:
        raise NotFound(f"No workload with id '{workload_id}'")
    for run in session.exec(
        select(RecommendationRun).where(RecommendationRun.workload_id == workload_id)
    ).all():
        session.delete(run)
    session.delete(row)
    session.flush()


def _revision(gpus: tuple[object, ...], quotes: tuple[object, ...]) -> str:
    return hashlib.sha256(repr((*gpus, *quotes)).encode()).hexdigest()[:16]


_OFFER_LISTS: SnapshotCache[tuple[object, ...], list[Offer]] = SnapshotCache(slots=8)


def offers_at(snapshot: OfferSnapshot, *, now: datetime, stale_days: float) -> list[Offer]:
    """The snapshot's rows as engine offers, with age and staleness at ``now`` (to the minute).

    Cached per snapshot and minute: building 30,000 offers is ~50 ms at the 5,000-GPU scale.
    """
    minute = now.replace(second=0, microsecond=0)
    key = (snapshot.key, snapshot.built_at, minute, stale_days)
    cached = _OFFER_LISTS.get(key)
    if cached is not None:
        return cached
    offers = []
    for q in snapshot.rows:
        age = (minute - as_utc(q.captured_at)).total_seconds() / 86_400
        offers.append(Offer(
            quote_id=q.id, gpu_slug=q.gpu_slug, provider=q.provider, region=q.region,
            instance_type=q.instance_type, gpu_count=q.gpu_count, pricing=q.pricing,
            price_usd_per_hour=q.price_usd_per_hour, purchase_price_usd=q.purchase_price_usd,
            age_days=max(0.0, age), stale=age > stale_days, network_gbps=q.network_gbps,
            fabric=q.network_fabric, multi_node=bool(q.multi_node),
            network_source=q.network_source,
        ))
    _OFFER_LISTS.put(key, offers)
    return offers


def _constraints(c: ConstraintsIn) -> Constraints:
    def tup(values: list[str] | None) -> tuple[str, ...] | None:
        return tuple(values) if values is not None else None

    kwargs: dict[str, Any] = {
        "max_gpus": c.max_gpus,
        "gpu_slugs": tup(c.gpu_slugs),
        "exclude_gpu_slugs": tuple(c.exclude_gpu_slugs),
        "vendors": tup(c.vendors),
        "form_factors": tup(c.form_factors),  # type: ignore[arg-type]
        "deployment": c.deployment,
        "max_power_w": c.max_power_w,
        "providers": tup([p.lower() for p in c.providers] if c.providers else None),
        "regions": tup(c.regions),
        "budget_usd": c.budget_usd,
        "max_usd_per_hour": c.max_usd_per_hour,
        "deadline_hours": c.deadline_hours,
        "require_fast_interconnect": c.require_fast_interconnect,
    }
    if c.pricing is not None:
        kwargs["pricing"] = tuple(c.pricing)
    return Constraints(**kwargs)


def recommend_for(
    session: Session,
    *,
    submission: WorkloadSubmission,
    objective: str,
    limit: int,
    settings: Settings,
    now: datetime,
    metrics: Any = None,
) -> RecommendationResult:
    """Rank every catalog GPU for the submission on the current catalog and quotes."""
    workload = to_engine_workload(submission, prefix="body")
    catalog = catalog_snapshot(session)
    quotes = offer_snapshot(session, now=now)
    offers = offers_at(quotes, now=now, stale_days=settings.stale_quote_days)
    started = time.perf_counter()
    rec = recommend(
        workload,
        catalog.specs,
        offers,
        objective=objective,  # type: ignore[arg-type]
        constraints=_constraints(submission.constraints),
        settings=CostSettings(
            electricity_usd_per_kwh=settings.electricity_usd_per_kwh,
            amortization_years=settings.amortization_years,
        ),
        limit=limit,
        skypilot_names=catalog.skypilot_names,
        cache=ENGINE_CACHE,
    )
    if metrics is not None:
        metrics.recommendation_seconds.observe(time.perf_counter() - started)
    return result_out(
        rec,
        constraints=submission.constraints,
        catalog_revision=_revision(catalog.fingerprint, quotes.fingerprint),
        generated_at=now,
        extra_warnings=[],
    )


def run_for_workload(
    session: Session,
    *,
    workload_id: str,
    objective: str | None,
    limit: int,
    settings: Settings,
    now: datetime,
    metrics: Any = None,
) -> RecommendationRun:
    # Keep the workload until its run is stored: a racing DELETE waits (or, if it committed
    # first, this is a 404), never a foreign-key 409 on the insert.
    row = lock_row(session, StoredWorkload, get_workload(session, workload_id=workload_id).id,
                   shared=True)
    if row is None:
        raise NotFound(f"No workload with id '{workload_id}'")
    submission = WorkloadSubmission.model_validate(row.spec)
    chosen = objective or row.objective
    result = recommend_for(session, submission=submission, objective=chosen, limit=limit,
                           settings=settings, now=now, metrics=metrics)
    run = RecommendationRun(
        id=str(uuid.uuid4()), workload_id=row.id, objective=chosen, result_limit=limit,
        catalog_revision=result.catalog_revision, created_at=now,
        result=result.model_dump(mode="json"),
    )
    session.add(run)
    session.flush()
    return run


def list_runs(session: Session, *, workload_id: str, limit: int,
              offset: int) -> tuple[list[RunSummary], int]:
    get_workload(session, workload_id=workload_id)
    where = RecommendationRun.workload_id == workload_id
    total = session.exec(select(func.count()).select_from(RecommendationRun).where(where)).one()
    rows = session.exec(
        select(RecommendationRun).where(where)
        .order_by(col(RecommendationRun.created_at).desc(), col(RecommendationRun.id))
        .limit(limit).offset(offset)
    ).all()
    return [_summary(r) for r in rows], int(total)


def _summary(run: RecommendationRun) -> RunSummary:
    top = (run.result.get("recommendations") or [None])[0]
    return RunSummary(
        id=run.id, workload_id=run.workload_id, objective=run.objective,
        limit=run.result_limit, catalog_revision=run.catalog_revision,
        created_at=as_utc(run.created_at),
        top_gpu_slug=top["gpu"]["slug"] if top else None,
        top_gpu_count=top["gpu_count"] if top else None,
    )


def get_run(session: Session, *, workload_id: str, run_id: str) -> RecommendationRun:
    run = session.get(RecommendationRun, run_id) if is_clean(run_id) else None
    if run is None or run.workload_id != workload_id:
        raise NotFound(f"No run '{run_id}' for workload '{workload_id}'")
    return run
