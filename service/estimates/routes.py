"""/v1/estimates and /v1/models."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import BaseModel, Field

from service.catalog.service import get_gpu, to_spec
from service.db import SessionDep, reads_database_only
from service.engine import estimate
from service.engine.cache import Memo
from service.errors import NotFound, Unprocessable, field_error, responses
from service.estimates.schemas import EstimateOut, EstimateRequest, estimate_out
from service.estimates.service import ENGINE_CACHE, to_engine_workload
from service.presets.catalog import PRESETS, preset_to_dict
from service.security import ReaderDep
from service.workloads.examples import estimate_body, openapi_examples

router = APIRouter(tags=["estimates"])
models_router = APIRouter(prefix="/v1/models", tags=["models"])
EstimateBody = Annotated[EstimateRequest, Body(openapi_examples=openapi_examples(estimate_body))]


@router.post("/v1/estimates", summary="Estimate one workload on one GPU type and count",
             response_model=EstimateOut, responses=responses(401, 422))
@reads_database_only
def create_estimate(body: EstimateBody, session: SessionDep, _: ReaderDep) -> EstimateOut:
    """Memory per GPU with its breakdown, parallelism, roofline bound, speed, energy, and the
    named constants used. Infeasible is an answer (`fits: false` with reasons), not an error."""
    workload = to_engine_workload(body.workload)
    try:
        gpu = get_gpu(session, slug=body.gpu_slug)
    except NotFound as exc:
        raise Unprocessable(
            f"Unknown GPU '{body.gpu_slug}'",
            errors=[field_error("body.gpu_slug", f"no GPU with slug '{body.gpu_slug}'")],
        ) from exc
    est = estimate(workload, to_spec(gpu), body.gpu_count, memo=Memo(ENGINE_CACHE))
    return estimate_out(est, gpu_name=gpu.name)


class PresetOut(BaseModel):
    id: str = Field(description="Preset id, as given in {\"model\": {\"preset\": id}}")
    name: str = Field(description="Model name")
    family: str = Field(description="Model family, e.g. llama, bert, cnn")
    model_type: str = Field(description="transformer or generic (CNN, detector)")
    model: dict[str, Any] = Field(
        description=(
            "Its architecture numbers (params [count], layers, hidden_size, ...; GFLOP and MB "
            "per sample for generic networks)"
        ),
    )
    source: str = Field(description="Where the numbers come from")
    notes: str = Field(description="How derived figures were computed")


@models_router.get("", summary="List model presets", response_model=list[PresetOut],
                   responses=responses(401))
def list_models(_: ReaderDep) -> list[PresetOut]:
    """Known models with their architecture numbers and sources; use `{"preset": id}`."""
    return [PresetOut.model_validate(preset_to_dict(p)) for p in PRESETS.values()]


@models_router.get("/{preset_id}", summary="Get one model preset", response_model=PresetOut,
                   responses=responses(401, 404))
def get_model(preset_id: str, _: ReaderDep) -> PresetOut:
    """One preset by id."""
    preset = PRESETS.get(preset_id)
    if preset is None:
        raise NotFound(f"No model preset '{preset_id}'; see GET /v1/models")
    return PresetOut.model_validate(preset_to_dict(preset))
