"""/v1/estimates, /v1/models and /v1/traffic-presets."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel, Field

from service.catalog.service import get_gpu, to_spec
from service.core.db import SessionDep, reads_database_only
from service.core.errors import NotFound, Unprocessable, field_error, responses
from service.core.security import ReaderDep
from service.core.text import Text
from service.engine import estimate
from service.engine.cache import Memo
from service.estimates.schemas import EstimateOut, EstimateRequest, estimate_out
from service.http.pagination import Offset, Page
from service.presets.catalog import PRESETS, closest_presets, preset_to_dict
from service.presets.traffic import TRAFFIC_PRESETS, preset_out
from service.workloads.caches import CachesDep
from service.workloads.convert import to_engine_workload
from service.workloads.examples import estimate_body, openapi_examples

router = APIRouter(tags=["estimates"])
models_router = APIRouter(prefix="/v1/models", tags=["models"])
EstimateBody = Annotated[EstimateRequest, Body(openapi_examples=openapi_examples(estimate_body))]


@router.post("/v1/estimates", summary="Estimate one workload on one GPU type and count",
             response_model=EstimateOut, responses=responses(401, 422))
@reads_database_only
def create_estimate(body: EstimateBody, session: SessionDep, caches: CachesDep,
                    _: ReaderDep) -> EstimateOut:
    """Memory per GPU with its breakdown, parallelism, roofline bound, speed, energy, and the
    named constants used. Infeasible is an answer (`fits: false` with reasons), not an error."""
    workload = to_engine_workload(body.workload, require_amount=False)
    try:
        gpu = get_gpu(session, slug=body.gpu_slug)
    except NotFound as exc:
        raise Unprocessable(
            f"Unknown GPU '{body.gpu_slug}'",
            errors=[field_error("body.gpu_slug", f"no GPU with slug '{body.gpu_slug}'")],
        ) from exc
    est = estimate(workload, to_spec(gpu), body.gpu_count, memo=Memo(caches.engine))
    out = estimate_out(est, gpu_name=gpu.name)
    train = workload.training
    if train is not None and train.tokens is None and train.samples is None and (
            train.epochs is None or train.dataset_samples is None):
        out.warnings.append(NO_AMOUNT_NOTE)
    return out


NO_AMOUNT_NOTE = (
    "no amount of training given (training.tokens, training.samples, or training.epochs with "
    "training.dataset_samples): time_to_complete_hours and energy_kwh_total are null; memory, "
    "layout and throughput do not depend on it"
)


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


@models_router.get("", summary="List model presets", response_model=Page[PresetOut],
                   responses=responses(401, 422))
def list_models(
    _: ReaderDep,
    family: Annotated[Text | None, Query(max_length=64,
                                         description="Only this family (llama, mistral, ...)")
                      ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Offset = 0,
) -> Page[PresetOut]:
    """Known models with their architecture numbers and sources, in a stable order, paged like
    every other list; use `{"preset": id}` in a workload."""
    rows = [PresetOut.model_validate(preset_to_dict(p)) for p in PRESETS.values()]
    if family:
        rows = [r for r in rows if r.family.lower() == family.lower()]
    return Page(data=rows[offset:offset + limit], total=len(rows), limit=limit, offset=offset)


@models_router.get("/{preset_id}", summary="Get one model preset", response_model=PresetOut,
                   responses=responses(401, 404))
def get_model(preset_id: str, _: ReaderDep) -> PresetOut:
    """One preset by id; an unknown id names the closest ones."""
    preset = PRESETS.get(preset_id)
    if preset is None:
        close = closest_presets(preset_id)
        hint = f"did you mean {' or '.join(close)}?" if close else "see GET /v1/models"
        raise NotFound(f"No model preset '{preset_id}'; {hint}")
    return PresetOut.model_validate(preset_to_dict(preset))


traffic_router = APIRouter(prefix="/v1/traffic-presets", tags=["models"])


class TrafficBucketOut(BaseModel):
    prompt_tokens: int = Field(description="Prompt size [tokens] (the mean of the bucket)")
    output_tokens: int = Field(description="Output size [tokens] (the mean of the bucket)")
    share: float = Field(description="Fraction of the requests [fraction]")


class TrafficPresetOut(BaseModel):
    id: str = Field(description="Preset id, as given in inference.traffic_preset")
    name: str = Field(description="What traffic it describes")
    buckets: list[TrafficBucketOut] = Field(description="The histogram")
    mean_prompt_tokens: float = Field(description="Share-weighted mean prompt [tokens]")
    mean_output_tokens: float = Field(description="Share-weighted mean output [tokens]")
    source: str = Field(description="The published trace it was computed from")
    notes: str = Field(description="What the mix is like")


@traffic_router.get("", summary="List traffic presets", response_model=list[TrafficPresetOut],
                    responses=responses(401))
def list_traffic_presets(_: ReaderDep) -> list[TrafficPresetOut]:
    """Request-size histograms of published LLM serving traces, with their sources; use
    `{"inference": {"traffic_preset": id}}` in a workload."""
    return [TrafficPresetOut.model_validate(preset_out(p)) for p in TRAFFIC_PRESETS.values()]
