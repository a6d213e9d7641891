"""The one converter from a submitted workload to the engine's, with problem+json errors."""

from __future__ import annotations

from service.core.errors import Unprocessable, field_error
from service.engine.types import Workload
from service.workloads.schemas import WorkloadError, WorkloadSpec


def to_engine_workload(spec: WorkloadSpec, *, prefix: str = "body.workload",
                       require_amount: bool = True) -> Workload:
    """The engine's workload for ``spec``: presets resolved and every number checked
    (:func:`~service.engine.validate_workload` and the API's own inference checks), or a 422
    naming each bad field under ``prefix``.

    Called once per request; a workload it returned with ``require_amount=True`` may be given
    to :func:`~service.engine.choice.ranking.recommend` with ``validated=True``, which then
    does not check it again."""
    try:
        return spec.to_engine(require_amount=require_amount)
    except WorkloadError as exc:
        raise Unprocessable(
            "The workload's numbers are inconsistent or unknown",
            errors=[field_error(f"{prefix}.{f}", msg) for f, msg in exc.errors],
        ) from exc
