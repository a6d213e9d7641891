"""Sync and async HTTP clients for gpu-advisor: httpx + pydantic, nothing of the server.

    from gpu_advisor_client import AdvisorClient, WorkloadSubmission

    with AdvisorClient("http://advisor:8000", api_key="gpa_...") as api:
        wl = api.submit_workload(WorkloadSubmission(kind="inference", model={"preset": ...}))
        run = api.create_run(wl.id, limit=3)

Idempotent calls (GET, PUT, DELETE, the stateless POSTs /v1/estimates and /v1/recommendations,
and POST /v1/workloads, which always carries an Idempotency-Key) are retried on 503 / 429 and on
connection errors, waiting what Retry-After says (capped) or an exponential backoff.
Other writes are sent once. Errors are :class:`ApiError` with the RFC 9457 problem document.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import httpx
from pydantic import BaseModel

from gpu_advisor_client.calls import (
    RETRY_STATUSES,
    ApiError,
    R,
    Retry,
    _Call,
    _Calls,
    _problem,
    _run_request,
)
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
    RunSummary,
    StoredWorkload,
    View,
    Workload,
    WorkloadSubmission,
)

__all__ = ["AdvisorClient", "ApiError", "AsyncAdvisorClient", "Retry"]


class AdvisorClient:
    """Blocking client. ``sleep`` is how it waits between retries (tests pass their own)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 30.0,
                 retry: Retry | None = None, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s,
                                  transport=transport)
        self.retry = retry or Retry()
        self._sleep = sleep

    def __enter__(self) -> AdvisorClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: _Call[R]) -> R:
        attempts = self.retry.attempts if call.idempotent else 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                resp = self._http.request(call.method, call.path, params=call.params,
                                          json=call.json, content=call.content,
                                          headers=call.headers)
            except httpx.TransportError:
                if last:
                    raise
                self._sleep(self.retry.wait_s(attempt, None))
                continue
            if resp.status_code in RETRY_STATUSES and not last:
                self._sleep(self.retry.wait_s(attempt, resp))
                continue
            if resp.status_code >= 400:
                raise _problem(resp)
            return call.parse(resp)
        raise AssertionError("unreachable")  # pragma: no cover

    # catalog
    def list_gpus(self, **filters: Any) -> Page[Gpu]:
        return self._send(_Calls.list_gpus(**filters))

    def get_gpu(self, slug: str) -> Gpu:
        return self._send(_Calls.get_gpu(slug))

    def create_gpu(self, gpu: Mapping[str, Any]) -> Gpu:
        return self._send(_Calls.create_gpu(gpu))

    def patch_gpu(self, slug: str, changes: Mapping[str, Any], *, version: int | str) -> Gpu:
        return self._send(_Calls.patch_gpu(slug, changes, version))

    def delete_gpu(self, slug: str, *, version: int | str | None = None) -> None:
        self._send(_Calls.delete_gpu(slug, version))

    # quotes
    def list_quotes(self, **filters: Any) -> Page[Quote]:
        return self._send(_Calls.list_quotes(**filters))

    def get_quote(self, quote_id: int) -> Quote:
        return self._send(_Calls.get_quote(quote_id))

    def create_quote(self, quote_: Mapping[str, Any]) -> Quote:
        return self._send(_Calls.create_quote(quote_))

    def patch_quote(self, quote_id: int, changes: Mapping[str, Any], *,
                    version: int | str) -> Quote:
        return self._send(_Calls.patch_quote(quote_id, changes, version))

    def delete_quote(self, quote_id: int, *, version: int | str | None = None) -> None:
        self._send(_Calls.delete_quote(quote_id, version))

    def quote_history(self, quote_id: int, *, limit: int = 100,
                      offset: int = 0) -> Page[PriceChange]:
        return self._send(_Calls.quote_history(quote_id, limit, offset))

    def import_quotes(self, content: bytes | str, *, provider: str, format: str = "skypilot",
                      dry_run: bool = False, content_type: str = "text/csv") -> dict[str, Any]:
        return self._send(_Calls.import_quotes(content, provider, format, dry_run,
                                               content_type))

    # models, estimates, recommendations
    def list_models(self, *, limit: int = 100, offset: int = 0,
                    family: str | None = None) -> Page[Preset]:
        return self._send(_Calls.list_models(limit, offset, family))

    def get_model(self, preset_id: str) -> Preset:
        return self._send(_Calls.get_model(preset_id))

    def estimate(self, workload: Workload | Mapping[str, Any], gpu_slug: str,
                 gpu_count: int = 1) -> Estimate:
        return self._send(_Calls.estimate(workload, gpu_slug, gpu_count))

    def recommend(self, workload: WorkloadSubmission | Mapping[str, Any], *,
                  limit: int | None = None,
                  view: View = "compact") -> RecommendationResult:
        """The whole explained answer (estimates, reasons, fixes, provisioning snippets)."""
        return self._send(_Calls.recommend(workload, limit, view))

    def recommend_summary(self, workload: WorkloadSubmission | Mapping[str, Any], *,
                          limit: int | None = None) -> RecommendationSummary:
        """The ranked summary (the server's default view): GPU, count, offer, cost, time."""
        return self._send(_Calls.recommend_summary(workload, limit))

    # workloads and runs
    def submit_workload(self, workload: WorkloadSubmission | Mapping[str, Any], *,
                        idempotency_key: str | None = None) -> StoredWorkload:
        return self._send(_Calls.submit_workload(workload, idempotency_key))

    def get_workload(self, workload_id: str) -> StoredWorkload:
        return self._send(_Calls.get_workload(workload_id))

    def list_workloads(self, *, limit: int = 50, offset: int = 0) -> Page[StoredWorkload]:
        return self._send(_Calls.list_workloads(limit, offset))

    def delete_workload(self, workload_id: str) -> None:
        self._send(_Calls.delete_workload(workload_id))

    def recommend_stored(self, workload_id: str, *, objective: str | None = None,
                         limit: int = 10,
                         view: View = "compact") -> RecommendationResult:
        return self._send(_Calls.recommend_stored(workload_id, objective, limit, view))

    def recommend_stored_summary(self, workload_id: str, *, objective: str | None = None,
                                 limit: int = 10) -> RecommendationSummary:
        return self._send(_Calls.recommend_stored_summary(workload_id, objective, limit))

    def create_run(self, workload_id: str, *, objective: str | None = None,
                   limit: int | None = None,
                   constraints: Mapping[str, Any] | BaseModel | None = None) -> Run:
        return self._send(_Calls.create_run(workload_id,
                                            _run_request(objective, limit, constraints)))

    def list_runs(self, workload_id: str, *, limit: int = 50,
                  offset: int = 0) -> Page[RunSummary]:
        return self._send(_Calls.list_runs(workload_id, limit, offset))

    def get_run(self, workload_id: str, run_id: str) -> Run:
        return self._send(_Calls.get_run(workload_id, run_id))


class AsyncAdvisorClient:
    """The same calls for asyncio (``async with AsyncAdvisorClient(...) as api``)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 30.0,
                 retry: Retry | None = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout_s,
                                       transport=transport)
        self.retry = retry or Retry()
        self._sleep = sleep

    async def __aenter__(self) -> AsyncAdvisorClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: _Call[R]) -> R:
        attempts = self.retry.attempts if call.idempotent else 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                resp = await self._http.request(call.method, call.path, params=call.params,
                                                json=call.json, content=call.content,
                                                headers=call.headers)
            except httpx.TransportError:
                if last:
                    raise
                await self._sleep(self.retry.wait_s(attempt, None))
                continue
            if resp.status_code in RETRY_STATUSES and not last:
                await self._sleep(self.retry.wait_s(attempt, resp))
                continue
            if resp.status_code >= 400:
                raise _problem(resp)
            return call.parse(resp)
        raise AssertionError("unreachable")  # pragma: no cover

    # catalog
    async def list_gpus(self, **filters: Any) -> Page[Gpu]:
        return await self._send(_Calls.list_gpus(**filters))

    async def get_gpu(self, slug: str) -> Gpu:
        return await self._send(_Calls.get_gpu(slug))

    async def create_gpu(self, gpu: Mapping[str, Any]) -> Gpu:
        return await self._send(_Calls.create_gpu(gpu))

    async def patch_gpu(self, slug: str, changes: Mapping[str, Any], *,
                        version: int | str) -> Gpu:
        return await self._send(_Calls.patch_gpu(slug, changes, version))

    async def delete_gpu(self, slug: str, *, version: int | str | None = None) -> None:
        await self._send(_Calls.delete_gpu(slug, version))

    # quotes
    async def list_quotes(self, **filters: Any) -> Page[Quote]:
        return await self._send(_Calls.list_quotes(**filters))

    async def get_quote(self, quote_id: int) -> Quote:
        return await self._send(_Calls.get_quote(quote_id))

    async def create_quote(self, quote_: Mapping[str, Any]) -> Quote:
        return await self._send(_Calls.create_quote(quote_))

    async def patch_quote(self, quote_id: int, changes: Mapping[str, Any], *,
                          version: int | str) -> Quote:
        return await self._send(_Calls.patch_quote(quote_id, changes, version))

    async def delete_quote(self, quote_id: int, *, version: int | str | None = None) -> None:
        await self._send(_Calls.delete_quote(quote_id, version))

    async def quote_history(self, quote_id: int, *, limit: int = 100,
                            offset: int = 0) -> Page[PriceChange]:
        return await self._send(_Calls.quote_history(quote_id, limit, offset))

    async def import_quotes(self, content: bytes | str, *, provider: str,
                            format: str = "skypilot", dry_run: bool = False,
                            content_type: str = "text/csv") -> dict[str, Any]:
        return await self._send(_Calls.import_quotes(content, provider, format, dry_run,
                                                     content_type))

    # models, estimates, recommendations
    async def list_models(self, *, limit: int = 100, offset: int = 0,
                          family: str | None = None) -> Page[Preset]:
        return await self._send(_Calls.list_models(limit, offset, family))

    async def get_model(self, preset_id: str) -> Preset:
        return await self._send(_Calls.get_model(preset_id))

    async def estimate(self, workload: Workload | Mapping[str, Any], gpu_slug: str,
                       gpu_count: int = 1) -> Estimate:
        return await self._send(_Calls.estimate(workload, gpu_slug, gpu_count))

    async def recommend(self, workload: WorkloadSubmission | Mapping[str, Any], *,
                        limit: int | None = None,
                        view: View = "compact") -> RecommendationResult:
        """The whole explained answer (estimates, reasons, fixes, provisioning snippets)."""
        return await self._send(_Calls.recommend(workload, limit, view))

    async def recommend_summary(self, workload: WorkloadSubmission | Mapping[str, Any], *,
                                limit: int | None = None) -> RecommendationSummary:
        """The ranked summary (the server's default view): GPU, count, offer, cost, time."""
        return await self._send(_Calls.recommend_summary(workload, limit))

    # workloads and runs
    async def submit_workload(self, workload: WorkloadSubmission | Mapping[str, Any], *,
                              idempotency_key: str | None = None) -> StoredWorkload:
        return await self._send(_Calls.submit_workload(workload, idempotency_key))

    async def get_workload(self, workload_id: str) -> StoredWorkload:
        return await self._send(_Calls.get_workload(workload_id))

    async def list_workloads(self, *, limit: int = 50,
                             offset: int = 0) -> Page[StoredWorkload]:
        return await self._send(_Calls.list_workloads(limit, offset))

    async def delete_workload(self, workload_id: str) -> None:
        await self._send(_Calls.delete_workload(workload_id))

    async def recommend_stored(self, workload_id: str, *, objective: str | None = None,
                               limit: int = 10,
                               view: View = "compact") -> RecommendationResult:
        return await self._send(_Calls.recommend_stored(workload_id, objective, limit, view))

    async def recommend_stored_summary(self, workload_id: str, *,
                                       objective: str | None = None,
                                       limit: int = 10) -> RecommendationSummary:
        return await self._send(_Calls.recommend_stored_summary(workload_id, objective, limit))

    async def create_run(self, workload_id: str, *, objective: str | None = None,
                         limit: int | None = None,
                         constraints: Mapping[str, Any] | BaseModel | None = None) -> Run:
        return await self._send(_Calls.create_run(
            workload_id, _run_request(objective, limit, constraints)))

    async def list_runs(self, workload_id: str, *, limit: int = 50,
                        offset: int = 0) -> Page[RunSummary]:
        return await self._send(_Calls.list_runs(workload_id, limit, offset))

    async def get_run(self, workload_id: str, run_id: str) -> Run:
        return await self._send(_Calls.get_run(workload_id, run_id))
