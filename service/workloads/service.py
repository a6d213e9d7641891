"""Workloads, recommendation runs, and the bridge from catalog rows and quotes to the ranker."""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import and_, delete, func
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session, col, select

from service.catalog.service import REVISION_TABLE as CATALOG_TABLE
from service.catalog.service import CatalogSnapshot, catalog_snapshot
from service.core.config import Settings
from service.core.errors import Conflict, NotFound
from service.core.security import ApiKey, owner_scope
from service.core.snapshots import revisions_read, table_fingerprints
from service.core.tables import lock_row
from service.core.text import is_clean
from service.core.times import as_date, as_utc
from service.engine.choice.fleet import Fleet, plan_fleet
from service.engine.choice.ranking import recommend
from service.engine.physics import precompile
from service.engine.recommend_types import Constraints, CostSettings, Offer, Recommendation
from service.engine.types import Workload
from service.quotes.service import REVISION_TABLE as QUOTES_TABLE
from service.quotes.service import OfferSnapshot, offer_snapshot
from service.quotes.service import age_days as quote_age_days
from service.workloads.answers import Answer, to_json
from service.workloads.caches import AppCaches, OfferLists
from service.workloads.convert import to_engine_workload
from service.workloads.models import (
    ConstraintsIn,
    RecommendationRun,
    RunRequest,
    RunSummary,
    StoredWorkload,
    WorkloadPublic,
    WorkloadSubmission,
)
from service.workloads.results import RecommendationResult, stale_price_warnings


def request_hash(submission: WorkloadSubmission) -> str:
    canonical = json.dumps(submission.model_dump(mode="json"), sort_keys=True,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def to_public(row: StoredWorkload) -> WorkloadPublic:
    return WorkloadPublic(
        id=row.id, name=row.name, objective=row.objective,
        kind=row.kind, created_at=as_utc(row.created_at), owner_key_id=row.owner_key_id,
        workload=row.spec,
    )


def create_workload(
    session: Session, *, submission: WorkloadSubmission, idempotency_key: str | None,
    caller: ApiKey,
) -> tuple[StoredWorkload, bool]:
    """Store a workload owned by ``caller``; with an Idempotency-Key, a repeat by the same key
    gives back the first one.

    Returns (row, replayed). The same key with another body is a 409.
    """
    to_engine_workload(submission, prefix="body")  # 422 before anything is stored
    digest = request_hash(submission)
    owner = caller.id
    if idempotency_key is not None:
        existing = _by_key(session, idempotency_key, owner)
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
        owner_key_id=owner,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        # A concurrent request with the same key won the race: answer as a replay.
        existing = _by_key(session, idempotency_key or "", owner)
        if existing is None:
            raise
        return _replay(existing, digest, idempotency_key or ""), True
    return row, False


def _by_key(session: Session, key: str, owner: int | None) -> StoredWorkload | None:
    return session.exec(select(StoredWorkload).where(
        StoredWorkload.idempotency_key == key, StoredWorkload.owner_key_id == owner)).first()


def _replay(existing: StoredWorkload, digest: str, key: str) -> StoredWorkload:
    if existing.request_hash != digest:
        raise Conflict(
            f"Idempotency-Key '{key}' was used with a different body (workload {existing.id})"
        )
    return existing


def get_workload(session: Session, *, workload_id: str, caller: ApiKey) -> StoredWorkload:
    """The workload if ``caller`` may see it (its own, or any for an admin); else 404, so
    another team's workload ids are not even confirmed to exist."""
    # An id with control characters names no workload (and PostgreSQL refuses NUL in a query).
    row = session.get(StoredWorkload, workload_id) if is_clean(workload_id) else None
    owner = owner_scope(caller)
    if row is None or (owner is not None and row.owner_key_id != owner):
        raise NotFound(f"No workload with id '{workload_id}'")
    return row


def list_workloads(
    session: Session, *, limit: int, offset: int, caller: ApiKey
) -> tuple[list[StoredWorkload], int]:
    stmt = select(StoredWorkload)
    owner = owner_scope(caller)
    if owner is not None:
        stmt = stmt.where(StoredWorkload.owner_key_id == owner)
    total = session.exec(select(func.count()).select_from(stmt.subquery())).one()
    rows = session.exec(
        stmt.order_by(col(StoredWorkload.created_at).desc(), col(StoredWorkload.id))
        .limit(limit).offset(offset)
    ).all()
    return list(rows), int(total)


def delete_workload(session: Session, *, workload_id: str, caller: ApiKey) -> None:
    row = lock_row(session, StoredWorkload,
                   get_workload(session, workload_id=workload_id, caller=caller).id,
                   missing=f"No workload with id '{workload_id}'")
    for run in session.exec(
        select(RecommendationRun).where(RecommendationRun.workload_id == workload_id)
    ).all():
        session.delete(run)
    session.delete(row)
    session.flush()


def _revision(gpus: tuple[object, ...], quotes: tuple[object, ...]) -> str:
    return hashlib.sha256(repr((*gpus, *quotes)).encode()).hexdigest()[:16]


_log = logging.getLogger(__name__)


def offers_at(snapshot: OfferSnapshot, *, now: datetime, stale_days: float,
              cache: OfferLists) -> list[Offer]:
    """The snapshot's rows as engine offers, with age and staleness at ``now`` (to the minute).

    Cached in ``cache`` per snapshot and minute: building 30,000 offers is ~50 ms at the
    5,000-GPU scale.
    """
    minute = now.replace(second=0, microsecond=0)
    key = (snapshot.key, snapshot.built_at, minute, stale_days)
    cached = cache.get(key)
    if cached is not None:
        return cached
    offers = []
    for q in snapshot.rows:
        observed = as_date(q.observed_at)
        age = quote_age_days(observed, minute)
        offers.append(Offer(
            quote_id=q.id, gpu_slug=q.gpu_slug, provider=q.provider, region=q.region,
            instance_type=q.instance_type, gpu_count=q.gpu_count, pricing=q.pricing,
            price_usd_per_hour=q.price_usd_per_hour, purchase_price_usd=q.purchase_price_usd,
            age_days=age, stale=age > stale_days, observed_at=observed,
            network_gbps=q.network_gbps,
            fabric=q.network_fabric, multi_node=bool(q.multi_node),
            network_source=q.network_source,
        ))
    cache.put(key, offers)
    return offers


def warm_up(engine: Engine, settings: Settings, caches: AppCaches, *,
            now: datetime | None = None) -> bool:
    """Build the catalog and offer snapshots into the app's ``caches`` before the first request.

    Returns False when the database cannot be read now: serving starts anyway and builds the
    snapshots on first use. The server's start-up (service/app/serving.py) calls this before
    it accepts a request, then freezes what is alive."""
    try:
        with Session(engine) as session:
            at = now or datetime.now(UTC)
            catalog_snapshot(session, cache=caches.catalog)
            offers_at(offer_snapshot(session, now=at, cache=caches.offers), now=at,
                      stale_days=settings.stale_quote_days, cache=caches.offer_lists)
    except (SQLAlchemyError, OSError) as exc:
        _log.warning("warm-up skipped: %s", type(exc).__name__)
        return False
    finally:
        precompile.warm_up()  # the engine's compiled loops, before a request waits for them
    return True


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
        "time_tolerance": c.time_tolerance,
    }
    if c.pricing is not None:
        kwargs["pricing"] = tuple(c.pricing)
    return Constraints(**kwargs)


def snapshots(session: Session, *, now: datetime, settings: Settings, caches: AppCaches,
              end_read: bool = False) -> tuple[CatalogSnapshot, OfferSnapshot, list[Offer]]:
    """The catalog, the quotes and their offers at ``now``, checked against the database with
    one statement (both tables' revisions) and rebuilt only when one moved.

    ``end_read``: the caller only reads, so the session's transaction ends here, in the
    caller's thread, and its connection goes back to the pool before the ranking runs (the
    session dependency then has nothing to commit: no trip to the thread pool). When the
    session (bound to the engine) has not begun yet, the revisions are read on a pooled
    connection without it (:func:`revisions_read`), and the session touches the database only
    if a snapshot must be rebuilt."""
    fingerprints = None
    bind = session.get_bind()
    # a session bound to a Connection (a caller's transaction: tests) reads on that one
    if end_read and isinstance(bind, Engine) and not session.in_transaction():
        fingerprints = revisions_read(bind, CATALOG_TABLE, QUOTES_TABLE)
    if fingerprints is None:
        fingerprints = table_fingerprints(session, CATALOG_TABLE, QUOTES_TABLE)
    catalog_fp, quotes_fp = fingerprints
    catalog = catalog_snapshot(session, cache=caches.catalog, fingerprint=catalog_fp)
    quotes = offer_snapshot(session, now=now, cache=caches.offers, fingerprint=quotes_fp)
    if end_read and session.in_transaction():
        session.commit()
    offers = offers_at(quotes, now=now, stale_days=settings.stale_quote_days,
                       cache=caches.offer_lists)
    return catalog, quotes, offers


def rank_for(
    session: Session,
    *,
    submission: WorkloadSubmission,
    objective: str,
    limit: int,
    settings: Settings,
    caches: AppCaches,
    now: datetime,
    metrics: Any = None,
    end_read: bool = False,
    explained: bool = True,
) -> Answer:
    """Rank every catalog GPU for the submission on the current catalog and quotes, with
    the app's ``caches``; the answer in any view (``end_read``: see :func:`snapshots`;
    ``explained`` False: only for the ``summary`` view, which shows no reasons or
    provisioning, so they are not built: ``recommend(explained=False)``)."""
    workload = to_engine_workload(submission, prefix="body")
    catalog, quotes, offers = snapshots(session, now=now, settings=settings, caches=caches,
                                        end_read=end_read)
    started = time.perf_counter()
    constraints = _constraints(submission.constraints)
    cost_settings = CostSettings(
        electricity_usd_per_kwh=settings.electricity_usd_per_kwh,
        amortization_years=settings.amortization_years,
    )
    # the ranking is a pure function of these (the offers' ages are taken to the minute)
    key = (workload, objective, constraints, cost_settings, limit, catalog.fingerprint,
           quotes.fingerprint, now.replace(second=0, microsecond=0), settings.stale_quote_days,
           explained)
    rec = caches.rankings.get(key)
    if rec is None:
        with caches.ranking_lock:
            rec = _recommend(workload, catalog, offers, objective, constraints, cost_settings,
                             limit, caches, explained, key)
    fleet = None
    if workload.inference is not None and workload.inference.traffic:
        fleet = _fleet(workload, catalog.specs, offers, constraints, cost_settings,
                       submission.constraints, key, caches, catalog.skypilot_names,
                       objective)
    if metrics is not None:
        metrics.recommendation_seconds.observe(time.perf_counter() - started)
    return Answer(
        rec=rec,
        constraints=submission.constraints,
        catalog_revision=_revision(catalog.fingerprint, quotes.fingerprint),
        generated_at=now,
        warnings=stale_price_warnings(rec.recommendations,
                                      stale_days=settings.stale_quote_days),
        fleet=fleet,
    )


def _recommend(workload: Workload, catalog: CatalogSnapshot, offers: list[Offer],
               objective: str, constraints: Constraints, cost_settings: CostSettings,
               limit: int, caches: AppCaches, explained: bool, key: tuple[object, ...]
               ) -> Recommendation:
    """The engine's ranking, cached under ``key`` (the caller holds ``caches.ranking_lock``:
    one ranking at a time; a request that waited for it may find the ranking a twin request
    just made)."""
    rec = caches.rankings.get(key)
    if rec is not None:
        return rec
    rec = recommend(
        workload,
        catalog.specs,
        offers,
        objective=objective,  # type: ignore[arg-type]
        constraints=constraints,
        settings=cost_settings,
        limit=limit,
        skypilot_names=catalog.skypilot_names,
        cache=caches.engine,
        validated=True,  # by to_engine_workload above, amounts required
        explained=explained,
    )
    caches.rankings.put(key, rec)
    caches.settle_collector()
    return rec


def _fleet(workload: Workload, gpus: Any, offers: list[Offer], constraints: Constraints,
           cost_settings: CostSettings, given: ConstraintsIn, key: tuple[object, ...],
           caches: AppCaches, skypilot_names: Any, objective: str = "cost") -> Fleet:
    """The cheapest mixed fleet for the workload's traffic histogram (cached like rankings;
    the limit of GPU types from ``constraints.max_gpu_types`` / ``mix``; objective ``time``
    with ``constraints.max_usd_per_hour``: the least mean latency under that budget)."""
    max_types = 1 if not given.mix else given.max_gpu_types
    fkey = (*key, max_types, objective)
    fleet = caches.fleets.get(fkey)
    if fleet is not None:
        return fleet
    with caches.ranking_lock:  # one ranking or fleet at a time (AppCaches.ranking_lock)
        fleet = caches.fleets.get(fkey)  # a twin request may have planned it meanwhile
        if fleet is None:
            fleet = plan_fleet(workload, gpus, offers, constraints=constraints,
                               settings=cost_settings, max_gpu_types=max_types,
                               skypilot_names=skypilot_names, cache=caches.engine,
                               objective=objective)
            caches.fleets.put(fkey, fleet)
    return fleet


def recommend_for(
    session: Session,
    *,
    submission: WorkloadSubmission,
    objective: str,
    limit: int,
    settings: Settings,
    caches: AppCaches,
    now: datetime,
    metrics: Any = None,
) -> RecommendationResult:
    """:func:`rank_for`'s whole answer (the full view) as a validated model."""
    return rank_for(session, submission=submission, objective=objective, limit=limit,
                    settings=settings, caches=caches, now=now, metrics=metrics).result("full")


def recommend_stored(
    session: Session,
    *,
    workload_id: str,
    caller: ApiKey,
    objective: str | None,
    limit: int,
    constraints: ConstraintsIn | None = None,
    settings: Settings,
    caches: AppCaches,
    now: datetime,
    metrics: Any = None,
    end_read: bool = False,
    explained: bool = True,
) -> tuple[StoredWorkload, str, Answer]:
    """Rank a stored workload on the current catalog; nothing is written.

    Returns (workload, objective used, answer). ``constraints`` replaces the stored ones."""
    row = get_workload(session, workload_id=workload_id, caller=caller)
    submission = WorkloadSubmission.model_validate(row.spec)
    if constraints is not None:
        submission = submission.model_copy(update={"constraints": constraints})
    chosen = objective or row.objective
    answer = rank_for(session, submission=submission, objective=chosen, limit=limit,
                      settings=settings, caches=caches, now=now, metrics=metrics,
                      end_read=end_read, explained=explained)
    return row, chosen, answer


def create_run(
    session: Session,
    *,
    workload_id: str,
    caller: ApiKey,
    request: RunRequest,
    settings: Settings,
    caches: AppCaches,
    now: datetime,
    metrics: Any = None,
) -> RecommendationRun:
    """Rank the workload, store the run, then prune its runs to the retention settings."""
    row, chosen, answer = recommend_stored(
        session, workload_id=workload_id, caller=caller, objective=request.objective,
        limit=request.limit, constraints=request.constraints, settings=settings,
        caches=caches, now=now, metrics=metrics)
    result = answer.data("full")
    # Lock the workload until the run is stored and pruned: a racing DELETE waits (or, if it
    # committed first, this is a 404, never a foreign-key 409), and two runs of one workload
    # prune one after the other, so the count never exceeds the cap.
    lock_row(session, StoredWorkload, row.id, missing=f"No workload with id '{workload_id}'")
    run = RecommendationRun(
        id=str(uuid.uuid4()), workload_id=row.id, objective=chosen, result_limit=request.limit,
        catalog_revision=answer.catalog_revision, created_at=now,
        result=orjson.loads(to_json(result)), created_by_key_id=caller.id,
    )
    session.add(run)
    session.flush()
    prune_runs(session, workload_id=row.id, keep=settings.max_runs_per_workload,
               max_age_days=settings.run_retention_days, now=now, stored=run.id)
    return run


def prune_runs(session: Session, *, workload_id: str, keep: int, max_age_days: float | None,
               now: datetime, stored: str | None = None) -> int:
    """Delete the workload's runs beyond the newest ``keep`` and those older than
    ``max_age_days``; return how many went.

    ``stored``, the run just stored, is always kept and counts as the newest: another run may
    carry a later ``created_at`` (a replica whose clock runs ahead, or a request that began
    ranking later and committed first), and the run just answered 201 must not be gone."""
    where = and_(col(RecommendationRun.workload_id) == workload_id,
                 col(RecommendationRun.id) != (stored or ""))
    if stored is not None:
        keep -= 1
    order = (col(RecommendationRun.created_at).desc(), col(RecommendationRun.id).desc())
    doomed = set(session.exec(
        select(RecommendationRun.id).where(where).order_by(*order).offset(keep)).all())
    if max_age_days is not None:
        cutoff = now - timedelta(days=max_age_days)
        doomed |= set(session.exec(select(RecommendationRun.id).where(
            where, col(RecommendationRun.created_at) < cutoff)).all())
    if doomed:
        session.execute(delete(RecommendationRun).where(col(RecommendationRun.id).in_(doomed)))
    return len(doomed)


def list_runs(session: Session, *, workload_id: str, caller: ApiKey, limit: int,
              offset: int) -> tuple[list[RunSummary], int]:
    get_workload(session, workload_id=workload_id, caller=caller)
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


def get_run(session: Session, *, workload_id: str, run_id: str,
            caller: ApiKey) -> RecommendationRun:
    get_workload(session, workload_id=workload_id, caller=caller)
    run = session.get(RecommendationRun, run_id) if is_clean(run_id) else None
    if run is None or run.workload_id != workload_id:
        raise NotFound(f"No run '{run_id}' for workload '{workload_id}'")
    return run
