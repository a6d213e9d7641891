"""/v1/workloads (stored, with runs) and /v1/recommendations (one-shot)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Header, Query, Request, Response, status

from service.common import Offset, Page, as_utc, capped_limit, utcnow
from service.db import SessionDep, reads_database_only, writes_database
from service.errors import responses
from service.security import AdminDep, ReaderDep
from service.workloads import examples, service
from service.workloads.models import (
    Objective,
    RecommendationQuery,
    RecommendationRun,
    RunSummary,
    WorkloadPublic,
    WorkloadSubmission,
)
from service.workloads.results import RecommendationResult, RunOut

router = APIRouter(prefix="/v1/workloads", tags=["workloads"])
recommendations_router = APIRouter(prefix="/v1/recommendations", tags=["recommendations"])

IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=200,
           description="Same key + same body: the first workload back; other body: 409"),
]
Limit = Annotated[int, Query(ge=1, le=100, description="Recommendations to return")]
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
        limit=run.result_limit, result=RecommendationResult.model_validate(run.result),
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
    _: AdminDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> WorkloadPublic:
    """Store a workload (admin). With `Idempotency-Key`, retries are safe: 200 + the same one."""
    row, replayed = service.create_workload(session, submission=body,
                                            idempotency_key=idempotency_key)
    if replayed:
        response.status_code = status.HTTP_200_OK
        response.headers["Idempotent-Replayed"] = "true"
    response.headers["Location"] = f"/v1/workloads/{row.id}"
    return service.to_public(row)


@router.get("", summary="List workloads, newest first", response_model=Page[WorkloadPublic],
            responses=responses(401, 422))
def list_workloads(request: Request, session: SessionDep, _: ReaderDep,
                   limit: Annotated[int, Query(ge=1)] = 50,
                   offset: Offset = 0) -> Page[WorkloadPublic]:
    """Stored workloads, newest first."""
    rows, total = service.list_workloads(session, limit=capped_limit(request, limit),
                                         offset=offset)
    return Page(data=[service.to_public(r) for r in rows], total=total, limit=limit,
                offset=offset)


@router.get("/{workload_id}", summary="Get a workload", response_model=WorkloadPublic,
            responses=responses(401, 404))
def get_workload(workload_id: str, session: SessionDep, _: ReaderDep) -> WorkloadPublic:
    """One stored workload."""
    return service.to_public(service.get_workload(session, workload_id=workload_id))


@router.delete("/{workload_id}", summary="Delete a workload and its runs",
               status_code=status.HTTP_204_NO_CONTENT, responses=responses(401, 403, 404))
def delete_workload(workload_id: str, session: SessionDep, _: AdminDep) -> Response:
    """Delete a workload and every stored run of it (admin)."""
    service.delete_workload(session, workload_id=workload_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{workload_id}/recommendations", summary="Rank GPUs for a stored workload",
            response_model=RunOut, responses=responses(401, 404, 422))
@writes_database
def recommend_workload(
    workload_id: str,
    request: Request,
    session: SessionDep,
    _: ReaderDep,
    response: Response,
    objective: Objective | None = None,
    limit: Limit = 10,
) -> RunOut:
    """Run the ranking on the current catalog and quotes, store the run, return it.
    `objective` overrides the workload's own."""
    run = service.run_for_workload(
        session, workload_id=workload_id, objective=objective, limit=limit,
        settings=request.app.state.settings, now=utcnow(), metrics=request.app.state.metrics,
    )
    response.headers["Location"] = f"/v1/workloads/{workload_id}/runs/{run.id}"
    return _run_out(run)


@router.get("/{workload_id}/runs", summary="List past recommendation runs",
            response_model=Page[RunSummary], responses=responses(401, 404, 422))
def list_runs(workload_id: str, request: Request, session: SessionDep, _: ReaderDep,
              limit: Annotated[int, Query(ge=1)] = 50, offset: Offset = 0) -> Page[RunSummary]:
    """Past runs of a workload, newest first, with the top pick of each."""
    rows, total = service.list_runs(session, workload_id=workload_id,
                                    limit=capped_limit(request, limit), offset=offset)
    return Page(data=rows, total=total, limit=limit, offset=offset)


@router.get("/{workload_id}/runs/{run_id}", summary="Get a past run, unchanged",
            response_model=RunOut, responses=responses(401, 404))
def get_run(workload_id: str, run_id: str, session: SessionDep, _: ReaderDep) -> RunOut:
    """A stored run exactly as it was returned."""
    return _run_out(service.get_run(session, workload_id=workload_id, run_id=run_id))


@recommendations_router.post("", summary="Rank GPUs for a workload (nothing stored)",
                             response_model=RecommendationResult, responses=responses(401, 422))
@reads_database_only
def recommend_once(body: QueryBody, request: Request, session: SessionDep,
                   _: ReaderDep) -> RecommendationResult:
    """The workload in the body, the ranked and explained answer back; nothing is stored."""
    return service.recommend_for(
        session, submission=body, objective=body.objective, limit=body.limit,
        settings=request.app.state.settings, now=utcnow(), metrics=request.app.state.metrics,
    )
