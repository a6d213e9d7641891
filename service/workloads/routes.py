"""/v1/workloads (stored, with runs) and /v1/recommendations (one-shot)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Header, Query, Request, Response, status

from service.core.db import SessionDep, reads_database_only
from service.core.errors import responses
from service.core.security import ReaderDep, SubmitterDep
from service.core.times import as_utc, utcnow
from service.engine.recommend_types import Objective
from service.http.bodies import GuardedRoute
from service.http.etags import NOT_MODIFIED, conditional_get
from service.http.pagination import Offset, Page, capped_limit
from service.workloads import examples, service
from service.workloads.answers import ANSWER_MODEL, RESPONSES, VIEW_DESCRIPTION, View
from service.workloads.caches import CachesDep
from service.workloads.models import (
    RecommendationQuery,
    RecommendationRun,
    RunRequest,
    RunSummary,
    WorkloadPublic,
    WorkloadSubmission,
)
from service.workloads.results import RecommendationResult, RunOut

router = APIRouter(prefix="/v1/workloads", tags=["workloads"], route_class=GuardedRoute)
recommendations_router = APIRouter(prefix="/v1/recommendations", tags=["recommendations"],
                                   route_class=GuardedRoute)

IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=200,
           description="Same key + same body: the first workload back; other body: 409"),
]
Limit = Annotated[int, Query(ge=1, le=100, description="Recommendations to return")]
ViewQuery = Annotated[View, Query(description=VIEW_DESCRIPTION)]
SubmissionBody = Annotated[
    WorkloadSubmission,
    Body(openapi_examples=examples.openapi_examples(examples.submission_body)),
]
QueryBody = Annotated[
    RecommendationQuery,
    Body(openapi_examples=examples.openapi_examples(
        lambda name: examples.submission_body(name, limit=10))),
]


def _run_out(run: RecommendationRun) -> RunOut:
    return RunOut(
        id=run.id, workload_id=run.workload_id, created_at=as_utc(run.created_at),
        catalog_revision=run.catalog_revision, objective=run.objective,
        limit=run.result_limit, created_by_key_id=run.created_by_key_id,
        result=RecommendationResult.model_validate(run.result),
    )


@router.post("", summary="Submit a workload", status_code=status.HTTP_201_CREATED,
             response_model=WorkloadPublic,
             responses={200: {"model": WorkloadPublic,
                              "description": "Replay: the workload stored earlier under the same "
                                             "Idempotency-Key"},
                        **responses(401, 403, 409, 422)})
def create_workload(
    body: SubmissionBody,
    session: SessionDep,
    caller: SubmitterDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> WorkloadPublic:
    """Store a workload owned by the calling key (submitter or admin). With `Idempotency-Key`,
    retries are safe: 200 + the same one (keys are per API key)."""
    row, replayed = service.create_workload(session, submission=body,
                                            idempotency_key=idempotency_key, caller=caller)
    if replayed:
        response.status_code = status.HTTP_200_OK
        response.headers["Idempotent-Replayed"] = "true"
    response.headers["Location"] = f"/v1/workloads/{row.id}"
    return service.to_public(row)


@router.get("", summary="List workloads, newest first", response_model=Page[WorkloadPublic],
            responses=responses(401, 403, 422))
def list_workloads(request: Request, session: SessionDep, caller: SubmitterDep,
                   limit: Annotated[int, Query(ge=1)] = 50,
                   offset: Offset = 0) -> Page[WorkloadPublic]:
    """Stored workloads, newest first: a submitter's own, every owner's for an admin."""
    rows, total = service.list_workloads(session, limit=capped_limit(request, limit),
                                         offset=offset, caller=caller)
    return Page(data=[service.to_public(r) for r in rows], total=total, limit=limit,
                offset=offset)


@router.get("/{workload_id}", summary="Get a workload", response_model=WorkloadPublic,
            responses={**NOT_MODIFIED, **responses(401, 403, 404)})
def get_workload(workload_id: str, request: Request, session: SessionDep,
                 caller: SubmitterDep, response: Response) -> Response | WorkloadPublic:
    """One stored workload (its owner's or an admin's). A stored workload never changes: its
    ETag is the hash of the submission; `If-None-Match` with it gives 304."""
    row = service.get_workload(session, workload_id=workload_id, caller=caller)
    return conditional_get(request, response, f'"{row.request_hash[:32]}"') or \
        service.to_public(row)


@router.delete("/{workload_id}", summary="Delete a workload and its runs",
               status_code=status.HTTP_204_NO_CONTENT, responses=responses(401, 403, 404))
def delete_workload(workload_id: str, session: SessionDep, caller: SubmitterDep) -> Response:
    """Delete a workload and every stored run of it (its owner or an admin)."""
    service.delete_workload(session, workload_id=workload_id, caller=caller)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{workload_id}/recommendations",
            summary="Rank GPUs for a stored workload (nothing stored)",
            response_model=ANSWER_MODEL,
            responses={**RESPONSES, **responses(401, 403, 404, 422)})
def recommend_workload(
    workload_id: str,
    request: Request,
    session: SessionDep,
    caches: CachesDep,
    caller: SubmitterDep,
    objective: Objective | None = None,
    limit: Limit = 10,
    view: ViewQuery = "summary",
) -> Response:
    """Rank the stored workload on the current catalog and quotes and return the answer; a GET
    stores nothing (to keep one, `POST /v1/workloads/{id}/runs`). `objective` overrides the
    workload's own."""
    _, _, answer = service.recommend_stored(
        session, workload_id=workload_id, caller=caller, objective=objective, limit=limit,
        settings=request.app.state.settings, caches=caches, now=utcnow(),
        metrics=request.app.state.metrics, end_read=True, explained=view != "summary",
    )
    return answer.response(view)


@router.post("/{workload_id}/runs", summary="Rank a stored workload and store the run",
             status_code=status.HTTP_201_CREATED, response_model=RunOut,
             responses=responses(401, 403, 404, 422))
def create_run(
    workload_id: str,
    request: Request,
    session: SessionDep,
    caches: CachesDep,
    caller: SubmitterDep,
    response: Response,
    body: RunRequest | None = None,
) -> RunOut:
    """Rank the workload on the current catalog and quotes, store the run (201 + Location),
    return it. The newest GPU_ADVISOR_MAX_RUNS_PER_WORKLOAD runs are kept (and none older than
    GPU_ADVISOR_RUN_RETENTION_DAYS when set); older ones are deleted as this one is stored."""
    run = service.create_run(
        session, workload_id=workload_id, caller=caller, request=body or RunRequest(),
        settings=request.app.state.settings, caches=caches, now=utcnow(),
        metrics=request.app.state.metrics,
    )
    response.headers["Location"] = f"/v1/workloads/{workload_id}/runs/{run.id}"
    return _run_out(run)


@router.get("/{workload_id}/runs", summary="List past recommendation runs",
            response_model=Page[RunSummary], responses=responses(401, 403, 404, 422))
def list_runs(workload_id: str, request: Request, session: SessionDep, caller: SubmitterDep,
              limit: Annotated[int, Query(ge=1)] = 50, offset: Offset = 0) -> Page[RunSummary]:
    """Past runs of a workload, newest first, with the top pick of each."""
    rows, total = service.list_runs(session, workload_id=workload_id, caller=caller,
                                    limit=capped_limit(request, limit), offset=offset)
    return Page(data=rows, total=total, limit=limit, offset=offset)


@router.get("/{workload_id}/runs/{run_id}", summary="Get a past run, unchanged",
            response_model=RunOut, responses={**NOT_MODIFIED, **responses(401, 403, 404)})
def get_run(workload_id: str, run_id: str, request: Request, session: SessionDep,
            caller: SubmitterDep, response: Response) -> Response | RunOut:
    """A stored run exactly as it was returned. Runs never change: the ETag is the run id;
    `If-None-Match` with it gives 304."""
    run = service.get_run(session, workload_id=workload_id, run_id=run_id, caller=caller)
    return conditional_get(request, response, f'"{run.id}"') or _run_out(run)


@recommendations_router.post("", summary="Rank GPUs for a workload (nothing stored)",
                             response_model=ANSWER_MODEL,
                             responses={**RESPONSES, **responses(401, 422)})
@reads_database_only
def recommend_once(body: QueryBody, request: Request, session: SessionDep, caches: CachesDep,
                   _: ReaderDep, view: ViewQuery = "summary") -> Response:
    """The workload in the body, the ranked and explained answer back; nothing is stored."""
    answer = service.rank_for(
        session, submission=body, objective=body.objective, limit=body.limit,
        settings=request.app.state.settings, caches=caches, now=utcnow(),
        metrics=request.app.state.metrics, end_read=True, explained=view != "summary",
    )
    return answer.response(view)
