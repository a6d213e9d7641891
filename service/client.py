"""A typed HTTP client for gpu-advisor (httpx), for bots and scripts.

    with AdvisorClient("http://127.0.0.1:8000", api_key="gpa_...") as api:
        result = api.recommend({"kind": "inference", "model": {"preset": "llama-3.1-8b"}, ...})
        print(result.recommendations[0].gpu.slug)

Errors come back as :class:`ApiError`, carrying the RFC 9457 problem document.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from service.catalog.models import GpuPublic
from service.common import Page
from service.estimates.schemas import EstimateOut
from service.quotes.models import QuotePublic
from service.workloads.models import RunSummary, WorkloadPublic
from service.workloads.results import RecommendationResult, RunOut

M = TypeVar("M", bound=BaseModel)


class ApiError(Exception):
    """A non-2xx answer: ``status``, and the problem document in ``problem``."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        fields = ", ".join(e.get("field", "") for e in problem.get("errors", []))
        detail = problem.get("detail") or problem.get("title") or ""
        super().__init__(f"{status} {detail}" + (f" [{fields}]" if fields else ""))


class AdvisorClient:
    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s,
                                  transport=transport)

    def __enter__(self) -> AdvisorClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        resp = self._http.request(method, path, **kwargs)
        if resp.status_code >= 400:
            try:
                problem = resp.json()
            except ValueError:
                problem = {"title": resp.text[:200]}
            raise ApiError(resp.status_code, problem)
        return resp

    def _model(self, model: type[M], method: str, path: str, **kwargs: Any) -> M:
        return model.model_validate(self._call(method, path, **kwargs).json())

    # catalog
    def list_gpus(self, **filters: Any) -> Page[GpuPublic]:
        return self._model(Page[GpuPublic], "GET", "/v1/gpus", params=filters)

    def get_gpu(self, slug: str) -> GpuPublic:
        return self._model(GpuPublic, "GET", f"/v1/gpus/{slug}")

    def create_gpu(self, gpu: dict[str, Any]) -> GpuPublic:
        return self._model(GpuPublic, "POST", "/v1/gpus", json=gpu)

    def patch_gpu(self, slug: str, changes: dict[str, Any], *, version: int) -> GpuPublic:
        return self._model(GpuPublic, "PATCH", f"/v1/gpus/{slug}", json=changes,
                           headers={"If-Match": f'"{version}"'})

    def delete_gpu(self, slug: str) -> None:
        self._call("DELETE", f"/v1/gpus/{slug}")

    # quotes
    def list_quotes(self, **filters: Any) -> Page[QuotePublic]:
        return self._model(Page[QuotePublic], "GET", "/v1/quotes", params=filters)

    def get_quote(self, quote_id: int) -> QuotePublic:
        return self._model(QuotePublic, "GET", f"/v1/quotes/{quote_id}")

    def create_quote(self, quote: dict[str, Any]) -> QuotePublic:
        return self._model(QuotePublic, "POST", "/v1/quotes", json=quote)

    def patch_quote(self, quote_id: int, changes: dict[str, Any], *, version: int) -> QuotePublic:
        return self._model(QuotePublic, "PATCH", f"/v1/quotes/{quote_id}", json=changes,
                           headers={"If-Match": f'"{version}"'})

    def delete_quote(self, quote_id: int) -> None:
        self._call("DELETE", f"/v1/quotes/{quote_id}")

    def import_quotes(self, content: bytes | str, *, provider: str, format: str = "skypilot",
                      dry_run: bool = False, content_type: str = "text/csv") -> dict[str, Any]:
        resp = self._call(
            "POST", "/v1/quotes/import", content=content,
            params={"provider": provider, "format": format, "dry_run": dry_run},
            headers={"Content-Type": content_type},
        )
        data: dict[str, Any] = resp.json()
        return data

    # models, estimates, recommendations
    def list_models(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = self._call("GET", "/v1/models").json()
        return data

    def estimate(self, workload: dict[str, Any], gpu_slug: str, gpu_count: int = 1) -> EstimateOut:
        body = {"workload": workload, "gpu_slug": gpu_slug, "gpu_count": gpu_count}
        return self._model(EstimateOut, "POST", "/v1/estimates", json=body)

    def recommend(self, workload: dict[str, Any], **options: Any) -> RecommendationResult:
        return self._model(RecommendationResult, "POST", "/v1/recommendations",
                           json={**workload, **options})

    # workloads
    def submit_workload(self, workload: dict[str, Any], *,
                        idempotency_key: str | None = None) -> WorkloadPublic:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return self._model(WorkloadPublic, "POST", "/v1/workloads", json=workload,
                           headers=headers)

    def get_workload(self, workload_id: str) -> WorkloadPublic:
        return self._model(WorkloadPublic, "GET", f"/v1/workloads/{workload_id}")

    def list_workloads(self, *, limit: int = 50, offset: int = 0) -> Page[WorkloadPublic]:
        return self._model(Page[WorkloadPublic], "GET", "/v1/workloads",
                           params={"limit": limit, "offset": offset})

    def delete_workload(self, workload_id: str) -> None:
        self._call("DELETE", f"/v1/workloads/{workload_id}")

    def run_recommendations(self, workload_id: str, *, objective: str | None = None,
                            limit: int = 10) -> RunOut:
        params: dict[str, Any] = {"limit": limit}
        if objective:
            params["objective"] = objective
        return self._model(RunOut, "GET", f"/v1/workloads/{workload_id}/recommendations",
                           params=params)

    def list_runs(self, workload_id: str) -> Page[RunSummary]:
        return self._model(Page[RunSummary], "GET", f"/v1/workloads/{workload_id}/runs")

    def get_run(self, workload_id: str, run_id: str) -> RunOut:
        return self._model(RunOut, "GET", f"/v1/workloads/{workload_id}/runs/{run_id}")
