"""Every route of the API as a :class:`_Call` (what to send, whether it may be repeated, how to
read the answer), the retry policy and the error type; the clients only send the calls."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from gpu_advisor_client.models import (
    Estimate,
    Gpu,
    Page,
    Preset,
    PriceChange,
    Quote,
    RecommendationResult,
    RecommendationSummary,
    Run,
    RunRequest,
    RunSummary,
    StoredWorkload,
    View,
    Workload,
    WorkloadSubmission,
)

R = TypeVar("R")
RETRY_STATUSES = frozenset({429, 503})


class ApiError(Exception):
    """A non-2xx answer: ``status``, and the problem document in ``problem``."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        fields = ", ".join(e.get("field", "") for e in problem.get("errors", []))
        detail = problem.get("detail") or problem.get("title") or ""
        super().__init__(f"{status} {detail}" + (f" [{fields}]" if fields else ""))


@dataclass(frozen=True)
class Retry:
    """How idempotent calls are retried: ``attempts`` in all, ``backoff_s`` doubled each time,
    no wait over ``max_wait_s`` (a longer Retry-After is cut to it)."""

    attempts: int = 4
    backoff_s: float = 0.5
    max_wait_s: float = 30.0

    def wait_s(self, attempt: int, response: httpx.Response | None) -> float:
        header = response.headers.get("retry-after") if response is not None else None
        wait: float = self.backoff_s * 2.0 ** attempt
        if header:
            wait = _retry_after_s(header, default=wait)
        return max(0.0, min(wait, self.max_wait_s))


def _retry_after_s(value: str, *, default: float) -> float:
    """Retry-After is delay-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    try:
        return float(int(value.strip()))
    except OverflowError:  # more seconds than a float holds: as long as allowed
        return float("inf")
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default
    return float(when.timestamp() - time.time())


@dataclass
class _Call(Generic[R]):
    """One API call: what to send, whether it may be repeated, and how to read the answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], R]
    idempotent: bool
    params: Mapping[str, Any] | None = None
    json: Any = None
    content: bytes | str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def _model(model: type[BaseModel]) -> Callable[[httpx.Response], Any]:
    return lambda resp: model.model_validate(resp.json())


def _none(_: httpx.Response) -> None:
    return None


def _body(value: BaseModel | Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """Validate ``value`` as ``model`` (a dict is checked here, before the call) and dump the
    fields that were set."""
    typed = value if isinstance(value, model) else model.model_validate(value)
    out: dict[str, Any] = typed.model_dump(mode="json", exclude_unset=True)
    return out


def _seg(value: str | int) -> str:
    return quote(str(value), safe="")


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _query(workload: WorkloadSubmission | Mapping[str, Any], limit: int | None
           ) -> dict[str, Any]:
    body = _body(workload, WorkloadSubmission)
    if limit is not None:
        body["limit"] = limit
    return body


def _etag(version: int | str) -> str:
    return f'"{version}"' if isinstance(version, int) else version


def _problem(resp: httpx.Response) -> ApiError:
    try:
        problem = resp.json()
    except ValueError:
        problem = {"title": resp.text[:200]}
    if not isinstance(problem, dict):
        problem = {"title": str(problem)[:200]}
    return ApiError(resp.status_code, problem)


class _Calls:
    """Every route as a :class:`_Call`; the sync and async clients only send them."""

    # catalog
    @staticmethod
    def list_gpus(**filters: Any) -> _Call[Page[Gpu]]:
        return _Call("GET", "/v1/gpus", _model(Page[Gpu]), True, params=_params(**filters))

    @staticmethod
    def get_gpu(slug: str) -> _Call[Gpu]:
        return _Call("GET", f"/v1/gpus/{_seg(slug)}", _model(Gpu), True)

    @staticmethod
    def create_gpu(gpu: Mapping[str, Any]) -> _Call[Gpu]:
        return _Call("POST", "/v1/gpus", _model(Gpu), False, json=dict(gpu))

    @staticmethod
    def patch_gpu(slug: str, changes: Mapping[str, Any], version: int | str) -> _Call[Gpu]:
        return _Call("PATCH", f"/v1/gpus/{_seg(slug)}", _model(Gpu), False, json=dict(changes),
                     headers={"If-Match": _etag(version)})

    @staticmethod
    def delete_gpu(slug: str, version: int | str | None) -> _Call[None]:
        headers = {"If-Match": _etag(version)} if version is not None else {}
        return _Call("DELETE", f"/v1/gpus/{_seg(slug)}", _none, True, headers=headers)

    # quotes
    @staticmethod
    def list_quotes(**filters: Any) -> _Call[Page[Quote]]:
        return _Call("GET", "/v1/quotes", _model(Page[Quote]), True, params=_params(**filters))

    @staticmethod
    def get_quote(quote_id: int) -> _Call[Quote]:
        return _Call("GET", f"/v1/quotes/{int(quote_id)}", _model(Quote), True)

    @staticmethod
    def create_quote(quote_: Mapping[str, Any]) -> _Call[Quote]:
        return _Call("POST", "/v1/quotes", _model(Quote), False, json=dict(quote_))

    @staticmethod
    def patch_quote(quote_id: int, changes: Mapping[str, Any],
                    version: int | str) -> _Call[Quote]:
        return _Call("PATCH", f"/v1/quotes/{int(quote_id)}", _model(Quote), False,
                     json=dict(changes), headers={"If-Match": _etag(version)})

    @staticmethod
    def delete_quote(quote_id: int, version: int | str | None) -> _Call[None]:
        headers = {"If-Match": _etag(version)} if version is not None else {}
        return _Call("DELETE", f"/v1/quotes/{int(quote_id)}", _none, True, headers=headers)

    @staticmethod
    def quote_history(quote_id: int, limit: int, offset: int) -> _Call[Page[PriceChange]]:
        return _Call("GET", f"/v1/quotes/{int(quote_id)}/history", _model(Page[PriceChange]),
                     True, params={"limit": limit, "offset": offset})

    @staticmethod
    def import_quotes(content: bytes | str, provider: str, format: str, dry_run: bool,
                      content_type: str) -> _Call[dict[str, Any]]:
        return _Call("POST", "/v1/quotes/import", lambda r: dict(r.json()), False,
                     params={"provider": provider, "format": format, "dry_run": dry_run},
                     content=content, headers={"Content-Type": content_type})

    # models, estimates, recommendations
    @staticmethod
    def list_models(limit: int, offset: int, family: str | None) -> _Call[Page[Preset]]:
        return _Call("GET", "/v1/models", _model(Page[Preset]), True,
                     params=_params(limit=limit, offset=offset, family=family))

    @staticmethod
    def get_model(preset_id: str) -> _Call[Preset]:
        return _Call("GET", f"/v1/models/{_seg(preset_id)}", _model(Preset), True)

    @staticmethod
    def estimate(workload: Workload | Mapping[str, Any], gpu_slug: str,
                 gpu_count: int) -> _Call[Estimate]:
        body = {"workload": _body(workload, Workload), "gpu_slug": gpu_slug,
                "gpu_count": gpu_count}
        return _Call("POST", "/v1/estimates", _model(Estimate), True, json=body)

    @staticmethod
    def recommend(workload: WorkloadSubmission | Mapping[str, Any], limit: int | None,
                  view: View = "compact") -> _Call[RecommendationResult]:
        return _Call("POST", "/v1/recommendations", _model(RecommendationResult), True,
                     json=_query(workload, limit), params={"view": view})

    @staticmethod
    def recommend_summary(workload: WorkloadSubmission | Mapping[str, Any],
                          limit: int | None) -> _Call[RecommendationSummary]:
        return _Call("POST", "/v1/recommendations", _model(RecommendationSummary), True,
                     json=_query(workload, limit), params={"view": "summary"})

    # workloads and runs
    @staticmethod
    def submit_workload(workload: WorkloadSubmission | Mapping[str, Any],
                        idempotency_key: str | None) -> _Call[StoredWorkload]:
        # Always keyed, so a retry after a lost answer stores nothing twice.
        key = idempotency_key or str(uuid.uuid4())
        return _Call("POST", "/v1/workloads", _model(StoredWorkload), True,
                     json=_body(workload, WorkloadSubmission), headers={"Idempotency-Key": key})

    @staticmethod
    def get_workload(workload_id: str) -> _Call[StoredWorkload]:
        return _Call("GET", f"/v1/workloads/{_seg(workload_id)}", _model(StoredWorkload), True)

    @staticmethod
    def list_workloads(limit: int, offset: int) -> _Call[Page[StoredWorkload]]:
        return _Call("GET", "/v1/workloads", _model(Page[StoredWorkload]), True,
                     params={"limit": limit, "offset": offset})

    @staticmethod
    def delete_workload(workload_id: str) -> _Call[None]:
        return _Call("DELETE", f"/v1/workloads/{_seg(workload_id)}", _none, True)

    @staticmethod
    def recommend_stored(workload_id: str, objective: str | None, limit: int,
                         view: View = "compact") -> _Call[RecommendationResult]:
        return _Call("GET", f"/v1/workloads/{_seg(workload_id)}/recommendations",
                     _model(RecommendationResult), True,
                     params=_params(objective=objective, limit=limit, view=view))

    @staticmethod
    def recommend_stored_summary(workload_id: str, objective: str | None,
                                 limit: int) -> _Call[RecommendationSummary]:
        return _Call("GET", f"/v1/workloads/{_seg(workload_id)}/recommendations",
                     _model(RecommendationSummary), True,
                     params=_params(objective=objective, limit=limit, view="summary"))

    @staticmethod
    def create_run(workload_id: str, request: RunRequest) -> _Call[Run]:
        return _Call("POST", f"/v1/workloads/{_seg(workload_id)}/runs", _model(Run), False,
                     json=request.model_dump(mode="json", exclude_unset=True))

    @staticmethod
    def list_runs(workload_id: str, limit: int, offset: int) -> _Call[Page[RunSummary]]:
        return _Call("GET", f"/v1/workloads/{_seg(workload_id)}/runs", _model(Page[RunSummary]),
                     True, params={"limit": limit, "offset": offset})

    @staticmethod
    def get_run(workload_id: str, run_id: str) -> _Call[Run]:
        return _Call("GET", f"/v1/workloads/{_seg(workload_id)}/runs/{_seg(run_id)}",
                     _model(Run), True)


def _run_request(objective: str | None, limit: int | None,
                 constraints: Mapping[str, Any] | BaseModel | None) -> RunRequest:
    values: dict[str, Any] = _params(objective=objective, limit=limit)
    if constraints is not None:
        values["constraints"] = constraints
    return RunRequest.model_validate(values)


