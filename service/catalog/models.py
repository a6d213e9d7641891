"""GPU catalog tables and API schemas: GpuBase -> Gpu (table), GpuCreate, GpuUpdate, GpuPublic."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any

from pydantic import ConfigDict, StringConstraints, ValidationInfo, field_validator
from sqlalchemy import JSON, Column, String
from sqlmodel import Field, SQLModel

import service.core.tables  # noqa: F401  (the naming convention, before any table)
from service.core.text import no_control_chars
from service.core.times import utcnow
from service.engine.types import FormFactor, Interconnect

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


MIN_TFLOPS = 0.001
"""Smallest peak accepted [TFLOPS] (1 GFLOPS; the smallest catalog figure is 0.25). Below it the
engine's times overflow to infinity (a 5e-324 TFLOPS GPU would make a ranking divide by
zero). Null means the precision is not supported."""
MIN_BANDWIDTH_GB_S = 1.0
"""Smallest memory or GPU-to-GPU bandwidth accepted [GB/s] (catalog minimum: 32), same reason;
a GPU without a fast link has interconnect_bandwidth_gb_s null."""


def _tflops(description: str) -> float | None:
    field: float | None = Field(default=None, ge=MIN_TFLOPS, le=MAX_TFLOPS,
                                description=description)
    return field


SM_COUNT_DESCRIPTION = (
    "Streaming multiprocessors (NVIDIA) or compute units (AMD) [count]; null = unknown"
)
BOOST_CLOCK_DESCRIPTION = (
    "Boost clock [MHz]: NVIDIA's maximum GPU Boost clock, AMD's peak engine clock; the "
    "datasheet vector peaks are quoted at it (some dense tensor peaks at a lower clock: see "
    "notes); null = unknown"
)
BASE_CLOCK_DESCRIPTION = (
    "Base clock [MHz]: the clock guaranteed at the board power limit; must not exceed "
    "boost_clock_mhz; null = unknown"
)
L2_CACHE_DESCRIPTION = (
    "L2 cache, whole device [MB] (AMD MI300: the L2 of all XCDs; the Infinity Cache is "
    "in notes); null = unknown"
)
TENSOR_CORE_GENERATION_DESCRIPTION = (
    "Matrix-unit generation: NVIDIA tensor cores 1 Volta, 2 Turing, 3 Ampere, 4 Ada/Hopper, "
    "5 Blackwell; AMD matrix cores 1 CDNA1, 2 CDNA2, 3 CDNA3; 0 = no tensor/matrix units; "
    "null = unknown"
)


def _sm_count() -> int | None:
    field: int | None = Field(default=None, ge=1, le=100_000, description=SM_COUNT_DESCRIPTION)
    return field


def _clock_mhz(description: str) -> float | None:
    field: float | None = Field(default=None, ge=1, le=10_000, description=description)
    return field


def _l2_cache_mb() -> float | None:
    field: float | None = Field(default=None, ge=0, le=10_000, description=L2_CACHE_DESCRIPTION)
    return field


def _tensor_core_generation() -> int | None:
    field: int | None = Field(
        default=None, ge=0, le=20, description=TENSOR_CORE_GENERATION_DESCRIPTION
    )
    return field


def _base_not_above_boost(value: float | None, info: ValidationInfo) -> float | None:
    """base_clock_mhz <= boost_clock_mhz when both are given (boost is validated first)."""
    boost = info.data.get("boost_clock_mhz")
    if value is not None and boost is not None and value > boost:
        raise ValueError(f"base_clock_mhz {value:g} exceeds boost_clock_mhz {boost:g}")
    return value


class GpuSpecFields(SQLModel):
    """Everything about a GPU except its slug and bookkeeping."""

    name: str = Field(min_length=1, max_length=120, description="Marketing name")
    vendor: str = Field(min_length=1, max_length=40, description="NVIDIA, AMD, ...")
    architecture: str = Field(
        default="", max_length=80,
        description="Chip architecture, e.g. Hopper (GH100)",
    )
    form_factor: FormFactor = Field(sa_type=String(16), description="Module / card class")
    launch_year: int | None = Field(default=None, ge=1990, le=2100, description="Year of release")
    memory_gb: float = Field(gt=0, le=10_000, description=(
        "Device memory, its marketing size [GB]: binary, as GPU makers size it (80 = 80 GiB = "
        "85.9e9 bytes; GDDR datacenter boards with ECC on offer 15/16 of it)"))
    memory_type: str = Field(
        default="", max_length=60,
        description="Memory technology, e.g. HBM3, GDDR6",
    )
    memory_bandwidth_gb_s: float = Field(ge=MIN_BANDWIDTH_GB_S, le=1_000_000,
                                         description="Peak [GB/s]")
    fp64_tflops: float | None = _tflops("FP64 vector peak [TFLOPS]; null = unsupported")
    fp64_tensor_tflops: float | None = _tflops("FP64 tensor-core peak [TFLOPS]; null = none")
    fp32_tflops: float | None = _tflops("FP32 non-tensor peak [TFLOPS]")
    tf32_tflops: float | None = _tflops("TF32 tensor peak, dense [TFLOPS]")
    bf16_tflops: float | None = _tflops("BF16 tensor peak, dense [TFLOPS]")
    fp16_tflops: float | None = _tflops("FP16 tensor peak, dense [TFLOPS]")
    fp8_tflops: float | None = _tflops("FP8 tensor peak, dense [TFLOPS]")
    int8_tops: float | None = _tflops("INT8 tensor peak, dense [TOPS]")
    tdp_w: float = Field(gt=0, le=10_000, description="Board / module power [W]")
    interconnect: Interconnect = Field(
        sa_type=String(20),
        description="GPU-to-GPU link inside a server: nvlink, infinity_fabric, pcie, none",
    )
    interconnect_bandwidth_gb_s: float | None = Field(
        default=None, ge=MIN_BANDWIDTH_GB_S, le=100_000,
        description="Per-GPU GPU-to-GPU bandwidth [GB/s]",
    )
    max_gpus_per_node: int = Field(
        default=8, ge=1, le=1024,
        description="Most GPUs of this type in one server [count]",
    )
    pcie_gen: int | None = Field(
        default=None, ge=1, le=8,
        description="PCIe generation of the host link",
    )
    mig_instances: int = Field(
        default=0, ge=0, le=64,
        description="Hardware partitions (NVIDIA MIG) it can be split into [count]; 0 = none",
    )
    sm_count: int | None = _sm_count()
    boost_clock_mhz: float | None = _clock_mhz(BOOST_CLOCK_DESCRIPTION)
    base_clock_mhz: float | None = _clock_mhz(BASE_CLOCK_DESCRIPTION)
    l2_cache_mb: float | None = _l2_cache_mb()
    tensor_core_generation: int | None = _tensor_core_generation()
    aliases: list[str] = Field(
        default_factory=list,
        sa_column=Column(JSON, nullable=False),
        description="Names used by nvidia-smi, cloud catalogs and people",
    )
    source: str = Field(min_length=1, max_length=2000, description="Where the figures come from")
    source_date: date | None = Field(default=None, description="When the figures were taken")
    notes: str = Field(default="", max_length=4000, description="Free-text remarks on the figures")

    @field_validator("base_clock_mhz")
    @classmethod
    def _base_clock(cls, value: float | None, info: ValidationInfo) -> float | None:
        return _base_not_above_boost(value, info)

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases_count(cls, value: Any) -> Any:
        # Before the items are validated: a list of 1,000,000 non-strings was 1,000,000 errors.
        if isinstance(value, list) and len(value) > 50:
            raise ValueError("at most 50 aliases")
        return value

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
    _text = field_validator("*")(no_control_chars)

    slug: Slug = Field(description="Stable id, e.g. nvidia-h100-sxm5-80gb")


class GpuReplace(GpuSpecFields):
    """PUT body: every field; the slug comes from the path."""

    model_config = _STRICT  # type: ignore[assignment]
    _text = field_validator("*")(no_control_chars)


class GpuUpdate(SQLModel):
    """PATCH body: only the fields to change."""

    model_config = _STRICT  # type: ignore[assignment]

    name: str | None = Field(
        default=None, min_length=1, max_length=120,
        description="Marketing name",
    )
    vendor: str | None = Field(
        default=None, min_length=1, max_length=40,
        description="NVIDIA, AMD, ...",
    )
    architecture: str | None = Field(
        default=None, max_length=80,
        description="Chip architecture, e.g. Hopper (GH100)",
    )
    form_factor: FormFactor | None = Field(default=None, description="Module / card class")
    launch_year: int | None = Field(default=None, ge=1990, le=2100, description="Year of release")
    memory_gb: float | None = Field(default=None, gt=0, le=10_000, description=(
        "Device memory, its marketing size [GB]: binary, as GPU makers size it (80 = 80 GiB = "
        "85.9e9 bytes; GDDR datacenter boards with ECC on offer 15/16 of it)"))
    memory_type: str | None = Field(
        default=None, max_length=60,
        description="Memory technology, e.g. HBM3, GDDR6",
    )
    memory_bandwidth_gb_s: float | None = Field(
        default=None, ge=MIN_BANDWIDTH_GB_S, le=1_000_000,
        description="Peak memory bandwidth [GB/s]",
    )
    fp64_tflops: float | None = _tflops("FP64 vector peak [TFLOPS]")
    fp64_tensor_tflops: float | None = _tflops("FP64 tensor peak [TFLOPS]")
    fp32_tflops: float | None = _tflops("FP32 non-tensor peak [TFLOPS]")
    tf32_tflops: float | None = _tflops("TF32 tensor peak, dense [TFLOPS]")
    bf16_tflops: float | None = _tflops("BF16 tensor peak, dense [TFLOPS]")
    fp16_tflops: float | None = _tflops("FP16 tensor peak, dense [TFLOPS]")
    fp8_tflops: float | None = _tflops("FP8 tensor peak, dense [TFLOPS]")
    int8_tops: float | None = _tflops("INT8 tensor peak, dense [TOPS]")
    tdp_w: float | None = Field(
        default=None, gt=0, le=10_000,
        description="Board / module power [W]",
    )
    interconnect: Interconnect | None = Field(
        default=None,
        description="GPU-to-GPU link inside a server: nvlink, infinity_fabric, pcie, none",
    )
    interconnect_bandwidth_gb_s: float | None = Field(
        default=None, ge=MIN_BANDWIDTH_GB_S, le=100_000,
        description="GPU-to-GPU bandwidth per GPU, one direction [GB/s]",
    )
    max_gpus_per_node: int | None = Field(
        default=None, ge=1, le=1024,
        description="Most GPUs of this type in one server [count]",
    )
    pcie_gen: int | None = Field(
        default=None, ge=1, le=8,
        description="PCIe generation of the host link",
    )
    mig_instances: int | None = Field(
        default=None, ge=0, le=64,
        description="Hardware partitions (NVIDIA MIG) it can be split into [count]; 0 = none",
    )
    sm_count: int | None = _sm_count()
    boost_clock_mhz: float | None = _clock_mhz(BOOST_CLOCK_DESCRIPTION)
    base_clock_mhz: float | None = _clock_mhz(BASE_CLOCK_DESCRIPTION)
    l2_cache_mb: float | None = _l2_cache_mb()
    tensor_core_generation: int | None = _tensor_core_generation()
    aliases: list[str] | None = Field(
        default=None, max_length=50,
        description="Other names it is matched by (quote imports, search)",
    )
    source: str | None = Field(
        default=None, min_length=1, max_length=2000,
        description="Where the figures come from",
    )
    source_date: date | None = Field(default=None, description="When the figures were taken")
    notes: str | None = Field(
        default=None, max_length=4000,
        description="Free-text remarks on the figures",
    )

    _aliases = field_validator("aliases")(GpuSpecFields._aliases.__func__)  # type: ignore[attr-defined]
    _base_clock = field_validator("base_clock_mhz")(_base_not_above_boost)
    _text = field_validator("*")(no_control_chars)


class GpuPublic(GpuSpecFields):
    slug: str = Field(description="Stable id, e.g. nvidia-h100-sxm5-80gb")
    version: int = Field(description="Increases on every change; the ETag")
    created_at: datetime = Field(description="When it was added (UTC)")
    updated_at: datetime = Field(description="When it last changed (UTC)")


NOT_NULL_FIELDS = frozenset(
    {"name", "vendor", "form_factor", "memory_gb", "memory_bandwidth_gb_s", "tdp_w",
     "interconnect", "max_gpus_per_node", "mig_instances", "aliases", "source"}
)
"""PATCH may not set these to null."""
