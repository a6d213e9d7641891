"""Catalog queries and writes. Keyword-only arguments, callable from routes, CLI and tests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, func, update
from sqlmodel import Session, col, select

from service.catalog.models import (
    NOT_NULL_FIELDS,
    PRECISION_COLUMN,
    Gpu,
    GpuCreate,
    GpuReplace,
    GpuUpdate,
)
from service.core.errors import (
    Conflict,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    Unprocessable,
    field_error,
)
from service.core.snapshots import SnapshotCache, database_key, table_fingerprint
from service.core.tables import lock_row
from service.core.text import fold, is_clean
from service.core.times import utcnow
from service.engine.types import GpuSpec
from service.http.etags import EntityTags, check_version

SORTABLE = (
    "slug", "name", "vendor", "launch_year", "memory_gb", "memory_bandwidth_gb_s",
    "fp64_tflops", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops",
    "int8_tops", "tdp_w", "interconnect_bandwidth_gb_s", "sm_count", "boost_clock_mhz",
    "l2_cache_mb", "created_at", "updated_at",
)


def get_gpu(session: Session, *, slug: str) -> Gpu:
    # A slug with control characters names no GPU (and PostgreSQL refuses NUL in a query).
    gpu = session.exec(select(Gpu).where(Gpu.slug == slug)).first() if is_clean(slug) else None
    if gpu is None:
        raise NotFound(f"No GPU with slug '{slug}'")
    return gpu


def list_gpus(
    session: Session,
    *,
    vendor: str | None = None,
    form_factor: str | None = None,
    min_memory_gb: float | None = None,
    precision: str | None = None,
    q: str | None = None,
    sort: str = "slug",
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[Gpu], int]:
    stmt = select(Gpu)
    if vendor:
        stmt = stmt.where(func.lower(Gpu.vendor) == vendor.lower())
    if form_factor:
        stmt = stmt.where(Gpu.form_factor == form_factor)
    if min_memory_gb is not None:
        stmt = stmt.where(Gpu.memory_gb >= min_memory_gb)
    if precision:
        stmt = stmt.where(getattr(Gpu, PRECISION_COLUMN[precision]).is_not(None))
    if q:
        stmt = stmt.where(col(Gpu.id).in_(_matching_ids(session, q)))
    total = session.exec(select(func.count()).select_from(stmt.subquery())).one()
    descending = sort.startswith("-")
    column = getattr(Gpu, sort.lstrip("-"))
    order = column.desc().nulls_last() if descending else column.asc().nulls_last()
    rows = session.exec(stmt.order_by(order, col(Gpu.slug)).limit(limit).offset(offset)).all()
    return list(rows), int(total)


def _matching_ids(session: Session, q: str) -> list[int]:
    """Ids of the GPUs whose slug, name, architecture or one of whose aliases contains ``q``,
    compared folded (:func:`~service.core.text.fold`: case- and accent-insensitive).

    Matched here, not in SQL: the databases disagree on case-folding beyond ASCII (SQLite's
    lower() leaves "É" alone), neither strips accents without an extension, and the aliases
    are a JSON column whose text (brackets, quotes, commas) must not match ("[" matched every
    GPU). The catalog is small (thousands of rows at most); the four text columns are read."""
    needle = fold(q)
    rows = session.execute(
        select(Gpu.id, Gpu.slug, Gpu.name, Gpu.architecture, Gpu.aliases)  # type: ignore[call-overload]
    ).all()
    return [gid for gid, slug, name, architecture, aliases in rows
            if any(needle in fold(t) for t in (slug, name, architecture or "", *(aliases or ())))]


def create_gpu(session: Session, *, data: GpuCreate) -> Gpu:
    if session.exec(select(Gpu.id).where(Gpu.slug == data.slug)).first() is not None:
        raise Conflict(
            f"A GPU with slug '{data.slug}' already exists",
            errors=[field_error("body.slug", "already exists")],
        )
    gpu = Gpu.model_validate(data)
    session.add(gpu)
    session.flush()
    return gpu


def _compare_and_set(session: Session, *, slug: str, if_match: EntityTags | None,
                     values: dict[str, Any]) -> Gpu:
    """Apply ``values`` only if the row is still at version ``if_match`` (one atomic UPDATE).

    ``If-Match: *`` matches whatever representation is current (RFC 9110 13.1.1): the row is
    locked first, so concurrent `*` writes apply one after the other and all succeed, on
    PostgreSQL as on SQLite (whose writers are serialized from BEGIN IMMEDIATE)."""
    gpu = get_gpu(session, slug=slug)  # 404 before 428
    if if_match is None:
        raise PreconditionRequired("Send If-Match with the ETag from GET /v1/gpus/{slug}")
    if if_match.any:
        gpu = lock_row(session, Gpu, gpu.id, missing=f"No GPU with slug '{slug}'")
    expected = check_version(if_match, gpu.version)
    result = session.execute(
        update(Gpu)
        .where(col(Gpu.slug) == slug, col(Gpu.version) == expected)
        .values(**values, version=col(Gpu.version) + 1, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if result.rowcount == 0:  # type: ignore[attr-defined]
        # Another writer changed the row between our read and our UPDATE (a listed ETag that
        # was current when read; `*` locked the row, so it cannot get here).
        session.expire_all()
        raise PreconditionFailed(
            f"GPU '{slug}' changed concurrently (now ETag \"{get_gpu(session, slug=slug).version}\""
            f"); If-Match {if_match.raw} was checked against ETag \"{expected}\""
        )
    session.expire_all()
    return get_gpu(session, slug=slug)


def replace_gpu(session: Session, *, slug: str, data: GpuReplace,
                if_match: EntityTags | None) -> Gpu:
    return _compare_and_set(session, slug=slug, if_match=if_match, values=data.model_dump())


def patch_gpu(session: Session, *, slug: str, data: GpuUpdate,
              if_match: EntityTags | None) -> Gpu:
    changes = data.model_dump(exclude_unset=True)
    nulls = sorted(k for k, v in changes.items() if v is None and k in NOT_NULL_FIELDS)
    if nulls:
        raise Unprocessable(
            "These fields cannot be null",
            errors=[field_error(f"body.{k}", "may not be null") for k in nulls],
        )
    _check_clocks(session, slug=slug, changes=changes)
    return _compare_and_set(session, slug=slug, if_match=if_match, values=changes)


def _check_clocks(session: Session, *, slug: str, changes: dict[str, Any]) -> None:
    """base_clock_mhz <= boost_clock_mhz on the row as it would be after a PATCH."""
    if not {"base_clock_mhz", "boost_clock_mhz"} & changes.keys():
        return
    gpu = get_gpu(session, slug=slug)
    base = changes.get("base_clock_mhz", gpu.base_clock_mhz)
    boost = changes.get("boost_clock_mhz", gpu.boost_clock_mhz)
    if base is not None and boost is not None and base > boost:
        field = "base_clock_mhz" if "base_clock_mhz" in changes else "boost_clock_mhz"
        raise Unprocessable(
            "The base clock cannot exceed the boost clock",
            errors=[field_error(
                f"body.{field}",
                f"base_clock_mhz {base:g} would exceed boost_clock_mhz {boost:g}",
            )],
        )


def delete_gpu(session: Session, *, slug: str, if_match: EntityTags | None) -> None:
    gpu = lock_row(session, Gpu, get_gpu(session, slug=slug).id,
                   missing=f"No GPU with slug '{slug}'")
    check_version(if_match, gpu.version)
    referring = _referring_rows(session, gpu)
    if referring:
        rows = ", ".join(f"{count} {noun}" for noun, count in referring)
        raise Conflict(f"GPU '{slug}' has {rows}; delete them first")
    session.delete(gpu)
    session.flush()


def _referring_rows(session: Session, gpu: Gpu) -> list[tuple[str, int]]:
    """(what the rows are called, how many) per table with rows whose foreign key refers to
    ``gpu`` (the quotes): the database would refuse the delete; this says why. The catalog
    reads the schema for them, so it depends on no domain that refers to it."""
    gpus: Table = Gpu.__table__  # type: ignore[attr-defined]
    found = []
    for table in gpus.metadata.sorted_tables:
        for fk in table.foreign_keys:
            if fk.column.table is gpus:
                value = getattr(gpu, fk.column.name)
                stmt = select(func.count()).select_from(table).where(fk.parent == value)
                count = int(session.exec(stmt).one())
                if count:
                    found.append((table.info.get("noun", table.name), count))
    return found


def to_spec(gpu: Gpu) -> GpuSpec:
    """The engine's view of a catalog row."""
    return GpuSpec(
        slug=gpu.slug,
        name=gpu.name,
        vendor=gpu.vendor,
        form_factor=gpu.form_factor,
        memory_gb=gpu.memory_gb,
        memory_type=gpu.memory_type or "",
        memory_bandwidth_gb_s=gpu.memory_bandwidth_gb_s,
        tdp_w=gpu.tdp_w,
        fp64_tflops=gpu.fp64_tflops,
        fp64_tensor_tflops=gpu.fp64_tensor_tflops,
        fp32_tflops=gpu.fp32_tflops,
        tf32_tflops=gpu.tf32_tflops,
        bf16_tflops=gpu.bf16_tflops,
        fp16_tflops=gpu.fp16_tflops,
        fp8_tflops=gpu.fp8_tflops,
        int8_tops=gpu.int8_tops,
        interconnect=gpu.interconnect,
        interconnect_bandwidth_gb_s=gpu.interconnect_bandwidth_gb_s,
        max_gpus_per_node=gpu.max_gpus_per_node,
        pcie_gen=gpu.pcie_gen,
        architecture=gpu.architecture,
        sm_count=gpu.sm_count,
        boost_clock_mhz=gpu.boost_clock_mhz,
        base_clock_mhz=gpu.base_clock_mhz,
        l2_cache_mb=gpu.l2_cache_mb,
        tensor_core_generation=gpu.tensor_core_generation,
    )


def all_gpus(session: Session) -> list[Gpu]:
    return list(session.exec(select(Gpu).order_by(col(Gpu.slug))).all())


REVISION_TABLE: str = Gpu.__table__.name  # type: ignore[attr-defined]
"""The table whose revision is the catalog's (:func:`service.core.snapshots.table_fingerprints`)."""


def catalog_fingerprint(session: Session) -> tuple[object, ...]:
    return table_fingerprint(session, Gpu)


_SKYPILOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


def skypilot_name(gpu: Gpu) -> str | None:
    """The SkyPilot accelerator name: the first alias without spaces or an instance prefix;
    None when there is none (never a word of the marketing name: Jetson AGX Orin 64GB is not
    ``64GB``)."""
    for alias in gpu.aliases:
        if _SKYPILOT_NAME.match(alias) and not alias.startswith("gpu_"):
            return alias
    return None


@dataclass(frozen=True)
class CatalogSnapshot:
    """The whole catalog as the engine sees it, at one fingerprint."""

    fingerprint: tuple[object, ...]
    specs: tuple[GpuSpec, ...]
    names: dict[str, str]
    skypilot_names: dict[str, str]


CatalogSnapshots = SnapshotCache[tuple[object, ...], CatalogSnapshot]
"""Snapshots keyed by (database URL, *fingerprint); the app owns one
(:class:`service.caches.AppCaches`)."""


def catalog_snapshot(session: Session, *, cache: CatalogSnapshots,
                     fingerprint: tuple[object, ...] | None = None) -> CatalogSnapshot:
    """The catalog for the engine, rebuilt only when the fingerprint changes.

    Reading and converting every row costs ~0.1 s at 5,000 GPUs; the fingerprint query is one
    aggregate. Each app keeps its own snapshots in ``cache``, and every request checks the
    fingerprint against the database, so replicas never serve a stale catalog
    (``fingerprint``: the one the caller just read, with the quotes', in one statement).
    """
    if fingerprint is None:
        fingerprint = catalog_fingerprint(session)
    key = (database_key(session), *fingerprint)
    snap = cache.get(key)
    if snap is None:
        gpus = all_gpus(session)
        snap = CatalogSnapshot(
            fingerprint=fingerprint,
            specs=tuple(to_spec(g) for g in gpus),
            names={g.slug: g.name for g in gpus},
            skypilot_names={g.slug: name for g in gpus
                            if (name := skypilot_name(g)) is not None},
        )
        # Under READ COMMITTED a commit may land between the two reads: cache only rows known
        # to belong to the fingerprint they are filed under.
        if catalog_fingerprint(session) == fingerprint:
            cache.put(key, snap)
    return snap
