"""GPU catalog tables and API schemas: GpuBase -> Gpu (table), GpuCreate, GpuUpdate, GpuPublic."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, StringConstraints, field_validator
from sqlalchemy import JSON, Column, String
from sqlmodel import Field, SQLModel

from service.common import utcnow

FormFactor = Literal["sxm", "oam", "pcie", "workstation", "consumer", "edge"]
Interconnect = Literal["nvlink", "infinity_fabric", "pcie", "none"]
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
PRECISION_COLUMN = {
    "fp64": "fp64_tflops",
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "bf16": "bf16_tflops",
    "fp16": "fp16_tflops",
    "fp8": "fp8_tflops",
    "int8": "int8_tops",
}
SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]
MAX_TFLOPS = 1_000_000.0
"""No single accelerator is within 100x of 1 EFLOPS; anything above is a typo."""

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False, str_strip_whitespace=True)


def _tflops(description: str) -> float | None:
    field: float | None = Field(default=None, ge=0, le=MAX_TFLOPS, description=description)
    return field


class GpuSpecFields(SQLModel):
    """Everything about a GPU except its slug and bookkeeping."""

    name: str = Field(min_length=1, max_length=120, description="Marketing name")
    vendor: str = Field(min_length=1, max_length=40, description="NVIDIA, AMD, ...")
    architecture: str = Field(default="", max_length=80)
    form_factor: FormFactor = Field(sa_type=String(16), description="Module / card class")
    launch_year: int | None = Field(default=None, ge=1990, le=2100)
    memory_gb: float = Field(gt=0, le=10_000, description="Device memory [GB]")
    memory_type: str = Field(default="", max_length=60)
    memory_bandwidth_gb_s: float = Field(gt=0, le=1_000_000, description="Peak [GB/s]")
    fp64_tflops: float | None = _tflops("FP64 vector peak [TFLOPS]; null = unsupported")
    fp64_tensor_tflops: float | None = _tflops("FP64 tensor-core peak [TFLOPS]; null = none")
    fp32_tflops: float | None = _tflops("FP32 non-tensor peak [TFLOPS]")
    tf32_tflops: float | None = _tflops("TF32 tensor peak, dense [TFLOPS]")
    bf16_tflops: float | None = _tflops("BF16 tensor peak, dense [TFLOPS]")
    fp16_tflops: float | None = _tflops("FP16 tensor peak, dense [TFLOPS]")
    fp8_tflops: float | None = _tflops("FP8 tensor peak, dense [TFLOPS]")
    int8_tops: float | None = _tflops("INT8 tensor peak, dense [TOPS]")
    tdp_w: float = Field(gt=0, le=10_000, description="Board / module power [W]")
    interconnect: Interconnect = Field(sa_type=String(20))
    interconnect_bandwidth_gb_s: float | None = Field(
        default=None, ge=0, le=100_000, description="Per-GPU GPU-to-GPU bandwidth [GB/s]"
    )
    max_gpus_per_node: int = Field(default=8, ge=1, le=1024)
    pcie_gen: int | None = Field(default=None, ge=1, le=8)
    mig_instances: int = Field(default=0, ge=0, le=64)
    aliases: list[str] = Field(
        default_factory=list,
        sa_column=Column(JSON, nullable=False),
        description="Names used by nvidia-smi, cloud catalogs and people",
    )
    source: str = Field(min_length=1, max_length=2000, description="Where the figures come from")
    source_date: date | None = Field(default=None, description="When the figures were taken")
    notes: str = Field(default="", max_length=4000)

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str] | None) -> list[str] | None:
        if value is None:  # PATCH {"aliases": null}: the service answers 422 (not nullable)
            return None
        if len(value) > 50:
            raise ValueError("at most 50 aliases")
        cleaned: list[str] = []
        for alias in value:
            alias = alias.strip()
            if not alias or len(alias) > 120:
                raise ValueError("each alias must be 1-120 characters")
            if alias.lower() not in {a.lower() for a in cleaned}:
                cleaned.append(alias)
        return cleaned


class Gpu(GpuSpecFields, table=True):
    __tablename__ = "gpus"

    id: int | None = Field(default=None, primary_key=True)
    slug: str = Field(sa_type=String(64), unique=True, index=True)
    version: int = Field(default=1)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class GpuCreate(GpuSpecFields):
    model_config = _STRICT  # type: ignore[assignment]

    slug: Slug = Field(description="Stable id, e.g. nvidia-h100-sxm5-80gb")


class GpuReplace(GpuSpecFields):
    """PUT body: every field; the slug comes from the path."""

    model_config = _STRICT  # type: ignore[assignment]


class GpuUpdate(SQLModel):
    """PATCH body: only the fields to change."""

    model_config = _STRICT  # type: ignore[assignment]

    name: str | None = Field(default=None, min_length=1, max_length=120)
    vendor: str | None = Field(default=None, min_length=1, max_length=40)
    architecture: str | None = Field(default=None, max_length=80)
    form_factor: FormFactor | None = None
    launch_year: int | None = Field(default=None, ge=1990, le=2100)
    memory_gb: float | None = Field(default=None, gt=0, le=10_000)
    memory_type: str | None = Field(default=None, max_length=60)
    memory_bandwidth_gb_s: float | None = Field(default=None, gt=0, le=1_000_000)
    fp64_tflops: float | None = _tflops("FP64 vector peak [TFLOPS]")
    fp64_tensor_tflops: float | None = _tflops("FP64 tensor peak [TFLOPS]")
    fp32_tflops: float | None = _tflops("FP32 non-tensor peak [TFLOPS]")
    tf32_tflops: float | None = _tflops("TF32 tensor peak, dense [TFLOPS]")
    bf16_tflops: float | None = _tflops("BF16 tensor peak, dense [TFLOPS]")
    fp16_tflops: float | None = _tflops("FP16 tensor peak, dense [TFLOPS]")
    fp8_tflops: float | None = _tflops("FP8 tensor peak, dense [TFLOPS]")
    int8_tops: float | None = _tflops("INT8 tensor peak, dense [TOPS]")
    tdp_w: float | None = Field(default=None, gt=0, le=10_000)
    interconnect: Interconnect | None = None
    interconnect_bandwidth_gb_s: float | None = Field(default=None, ge=0, le=100_000)
    max_gpus_per_node: int | None = Field(default=None, ge=1, le=1024)
    pcie_gen: int | None = Field(default=None, ge=1, le=8)
    mig_instances: int | None = Field(default=None, ge=0, le=64)
    aliases: list[str] | None = Field(default=None, max_length=50)
    source: str | None = Field(default=None, min_length=1, max_length=2000)
    source_date: date | None = None
    notes: str | None = Field(default=None, max_length=4000)

    _aliases = field_validator("aliases")(GpuSpecFields._aliases.__func__)  # type: ignore[attr-defined]


class GpuPublic(GpuSpecFields):
    slug: str
    version: int
    created_at: datetime
    updated_at: datetime


NOT_NULL_FIELDS = frozenset(
    {"name", "vendor", "form_factor", "memory_gb", "memory_bandwidth_gb_s", "tdp_w",
     "interconnect", "max_gpus_per_node", "mig_instances", "aliases", "source"}
)
"""PATCH may not set these to null."""
