"""Load the real seed catalog and quotes (service/data/*.csv) as engine types, for tests.

Only tests read files; the engine never does. Quote ids are the 1-based data row numbers of
quotes.csv (the seed file has no id column), so they are stable for a given file.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, cast

from service.engine.recommend_types import Offer
from service.engine.types import GpuSpec
from service.quotes.networks import network_default

DATA_DIR = Path(__file__).resolve().parents[2] / "service" / "data"

_FLOAT_COLUMNS = (
    "memory_gb",
    "memory_bandwidth_gb_s",
    "tdp_w",
    "fp64_tflops",
    "fp64_tensor_tflops",
    "fp32_tflops",
    "tf32_tflops",
    "bf16_tflops",
    "fp16_tflops",
    "fp8_tflops",
    "int8_tops",
    "interconnect_bandwidth_gb_s",
    "boost_clock_mhz",
    "base_clock_mhz",
    "l2_cache_mb",
)
_INT_COLUMNS = ("pcie_gen", "sm_count", "tensor_core_generation")


def _float_or_none(text: str) -> float | None:
    text = text.strip()
    return float(text) if text else None


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text else None


def _gpu(row: dict[str, str]) -> GpuSpec:
    values: dict[str, Any] = {name: _float_or_none(row[name]) for name in _FLOAT_COLUMNS}
    values.update({name: _int_or_none(row[name]) for name in _INT_COLUMNS})
    return GpuSpec(
        slug=row["slug"],
        name=row["name"],
        vendor=row["vendor"],
        form_factor=cast(Any, row["form_factor"]),
        interconnect=cast(Any, row["interconnect"] or "none"),
        max_gpus_per_node=int(row["max_gpus_per_node"] or 1),
        architecture=row["architecture"],
        memory_type=row["memory_type"],
        **values,
    )


@cache
def _gpu_rows() -> tuple[tuple[GpuSpec, tuple[str, ...]], ...]:
    with (DATA_DIR / "gpus.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return tuple(
        (_gpu(row), tuple(a.strip() for a in row["aliases"].split(";") if a.strip()))
        for row in rows
    )


def load_gpus() -> list[GpuSpec]:
    """Every GPU in service/data/gpus.csv, in file order."""
    return [gpu for gpu, _ in _gpu_rows()]


def gpus_by_slug() -> dict[str, GpuSpec]:
    return {gpu.slug: gpu for gpu in load_gpus()}


def skypilot_names() -> dict[str, str]:
    """slug -> SkyPilot accelerator name: the first alias without spaces (H100, A100-80GB, L4)."""
    names: dict[str, str] = {}
    for gpu, aliases in _gpu_rows():
        short = [a for a in aliases if " " not in a]
        if short:
            names[gpu.slug] = short[0]
    return names


@cache
def _offers() -> tuple[Offer, ...]:
    with (DATA_DIR / "quotes.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return tuple(
        _with_network(Offer(
            quote_id=i,
            gpu_slug=row["gpu_slug"],
            provider=row["provider"],
            region=row["region"],
            instance_type=row["instance_type"],
            gpu_count=int(row["gpu_count"]),
            pricing=cast(Any, row["pricing"]),
            price_usd_per_hour=_float_or_none(row["price_usd_per_hour"]),
            purchase_price_usd=_float_or_none(row["purchase_price_usd"]),
            age_days=0.0,
            stale=False,
        ))
        for i, row in enumerate(rows, start=1)
    )


def _with_network(offer: Offer) -> Offer:
    """The offer with its instance family's sourced network default, as seeding stores it."""
    d = network_default(offer.provider, offer.instance_type)
    if d is None:
        return offer
    return replace(offer, network_gbps=d.network_gbps, fabric=d.network_fabric,
                   multi_node=d.multi_node, network_source=d.network_source)


def load_offers() -> list[Offer]:
    """Every quote in service/data/quotes.csv, in file order."""
    return list(_offers())
