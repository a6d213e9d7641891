"""Turning a submitted workload into the engine's, with problem+json errors."""

from __future__ import annotations

from service.core.errors import Unprocessable, field_error
from service.engine.cache import EngineCache
from service.engine.types import Workload
from service.workloads.schemas import WorkloadError, WorkloadSpec


def to_engine_workload(spec: WorkloadSpec, *, prefix: str = "body.workload",
                       require_amount: bool = True) -> Workload:
    """Resolve presets and check consistency, as a 422 naming each bad field."""
    try:
        return spec.to_engine(require_amount=require_amount)
    except WorkloadError as exc:
        raise Unprocessable(
            "The workload's numbers are inconsistent or unknown",
            errors=[field_error(f"{prefix}.{f}", msg) for f, msg in exc.errors],
        ) from exc


ENGINE_CACHE = EngineCache()
"""This process's engine memo tables (the smallest fitting GPU count, training layouts and
splits per workload and GPU): bounded LRU tables behind a lock, keyed by the frozen workload
and GPU figures, so a catalog edit can never be served a stale entry. The service owns it;
``ENGINE_CACHE.clear()`` empties it (benchmarks measure cold runs that way)."""
