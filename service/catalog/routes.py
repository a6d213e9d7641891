"""/v1/gpus: the GPU catalog."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query, Request, Response, status

from service.catalog import service
from service.catalog.models import (
    GpuCreate,
    GpuPublic,
    GpuReplace,
    GpuUpdate,
)
from service.core.db import SessionDep
from service.core.errors import responses
from service.core.security import AdminDep, ReaderDep
from service.core.text import Text
from service.engine.types import ComputePrecision, FormFactor
from service.http.bodies import GuardedRoute
from service.http.etags import (
    NOT_MODIFIED,
    IfMatch,
    IfNoneMatch,
    conditional_get,
    etag_for,
    parse_if_match,
)
from service.http.pagination import Offset, Page, capped_limit

router = APIRouter(prefix="/v1/gpus", tags=["gpus"], route_class=GuardedRoute)

_H100 = {
    "slug": "nvidia-h100-sxm5-80gb",
    "name": "NVIDIA H100 SXM5 80GB",
    "vendor": "NVIDIA",
    "architecture": "Hopper (GH100)",
    "form_factor": "sxm",
    "launch_year": 2022,
    "memory_gb": 80,
    "memory_type": "HBM3",
    "memory_bandwidth_gb_s": 3350,
    "fp64_tflops": 34,
    "fp64_tensor_tflops": 67,
    "fp32_tflops": 67,
    "tf32_tflops": 494.7,
    "bf16_tflops": 989.4,
    "fp16_tflops": 989.4,
    "fp8_tflops": 1978.9,
    "int8_tops": 1978.9,
    "tdp_w": 700,
    "interconnect": "nvlink",
    "interconnect_bandwidth_gb_s": 900,
    "max_gpus_per_node": 8,
    "pcie_gen": 5,
    "mig_instances": 7,
    "sm_count": 132,
    "boost_clock_mhz": 1980,
    "base_clock_mhz": 1590,
    "l2_cache_mb": 50,
    "tensor_core_generation": 4,
    "aliases": ["H100", "H100-SXM", "NVIDIA H100 80GB HBM3"],
    "source": "NVIDIA H100 datasheet + whitepaper (dense tensor figures)",
    "source_date": "2026-11-30",
    "notes": "",
}
_CREATE_EXAMPLE = {**_H100, "slug": "my-h100-variant", "aliases": ["my-h100"]}
_REPLACE_EXAMPLE = {k: v for k, v in _H100.items() if k != "slug"}

SortField = Literal[  # type: ignore[valid-type]
    tuple(s for f in service.SORTABLE for s in (f, f"-{f}"))
]


def _with_etag(response: Response, version: int) -> None:
    response.headers["ETag"] = etag_for(version)


@router.get("", summary="List GPUs", response_model=Page[GpuPublic], responses=responses(401, 422))
def list_gpus(
    request: Request,
    session: SessionDep,
    _: ReaderDep,
    vendor: Annotated[Text | None, Query(max_length=40, examples=["NVIDIA"])] = None,
    form_factor: FormFactor | None = None,
    min_memory_gb: Annotated[float | None, Query(ge=0, le=10_000)] = None,
    precision: Annotated[
        ComputePrecision | None,
        Query(description="Only GPUs that support this precision"),
    ] = None,
    q: Annotated[
        Text | None, Query(max_length=100, description="Free text: slug, name, alias, architecture")
    ] = None,
    sort: Annotated[
        SortField,  # type: ignore[valid-type]
        Query(description="Field to sort by; prefix '-' for descending")
    ] = "slug",
    limit: Annotated[int, Query(ge=1, description="Page size (capped by the server)")] = 100,
    offset: Offset = 0,
) -> Page[GpuPublic]:
    """Filter, sort and page through the catalog. Tensor figures are dense."""
    capped_limit(request, limit)
    rows, total = service.list_gpus(
        session, vendor=vendor, form_factor=form_factor, min_memory_gb=min_memory_gb,
        precision=precision, q=q, sort=sort, limit=limit, offset=offset,
    )
    return Page(
        data=[GpuPublic.model_validate(r) for r in rows], total=total, limit=limit, offset=offset
    )


@router.get("/{slug}", summary="Get one GPU", response_model=GpuPublic,
            responses={**NOT_MODIFIED, **responses(401, 404)})
def get_gpu(slug: str, request: Request, session: SessionDep, _: ReaderDep, response: Response,
            if_none_match: IfNoneMatch = None) -> Response | GpuPublic:
    """One GPU by slug; the ETag header is what If-Match needs for updates, and
    `If-None-Match` with it gives 304 while the GPU is unchanged."""
    gpu = service.get_gpu(session, slug=slug)
    return conditional_get(request, response, etag_for(gpu.version)) or \
        GpuPublic.model_validate(gpu)


@router.post(
    "", summary="Add a GPU", status_code=status.HTTP_201_CREATED, response_model=GpuPublic,
    responses=responses(401, 403, 409, 422),
)
def create_gpu(
    data: Annotated[GpuCreate, Body(openapi_examples={"h100": {"value": _CREATE_EXAMPLE}})],
    session: SessionDep,
    _: AdminDep,
    response: Response,
) -> GpuPublic:
    """Add a GPU to the catalog (admin). 409 if the slug exists."""
    gpu = service.create_gpu(session, data=data)
    _with_etag(response, gpu.version)
    response.headers["Location"] = f"/v1/gpus/{gpu.slug}"
    return GpuPublic.model_validate(gpu)


@router.put(
    "/{slug}", summary="Replace a GPU", response_model=GpuPublic,
    responses=responses(401, 403, 404, 412, 422, 428),
)
def replace_gpu(
    slug: str,
    data: Annotated[GpuReplace, Body(openapi_examples={"h100": {"value": _REPLACE_EXAMPLE}})],
    session: SessionDep,
    _: AdminDep,
    response: Response,
    if_match: IfMatch = None,
) -> GpuPublic:
    """Replace every field of a GPU (admin); needs If-Match."""
    gpu = service.replace_gpu(session, slug=slug, data=data, if_match=parse_if_match(if_match))
    _with_etag(response, gpu.version)
    return GpuPublic.model_validate(gpu)


@router.patch(
    "/{slug}", summary="Update some fields of a GPU", response_model=GpuPublic,
    responses=responses(401, 403, 404, 412, 422, 428),
)
def patch_gpu(
    slug: str,
    data: Annotated[
        GpuUpdate, Body(openapi_examples={"bandwidth": {"value": {"tdp_w": 700}}})
    ],
    session: SessionDep,
    _: AdminDep,
    response: Response,
    if_match: IfMatch = None,
) -> GpuPublic:
    """Change only the given fields (admin); needs If-Match."""
    gpu = service.patch_gpu(session, slug=slug, data=data, if_match=parse_if_match(if_match))
    _with_etag(response, gpu.version)
    return GpuPublic.model_validate(gpu)


@router.delete(
    "/{slug}", summary="Delete a GPU", status_code=status.HTTP_204_NO_CONTENT,
    responses=responses(401, 403, 404, 409, 412),
)
def delete_gpu(slug: str, session: SessionDep, _: AdminDep, if_match: IfMatch = None) -> Response:
    """Delete a GPU (admin). 409 while price quotes still refer to it."""
    service.delete_gpu(session, slug=slug, if_match=parse_if_match(if_match))
    return Response(status_code=status.HTTP_204_NO_CONTENT)
