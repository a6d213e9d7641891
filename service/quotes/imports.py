"""Apply a parsed quote file to the database in bulk, all or nothing, and record the import.

One SELECT of the provider's existing quotes, then executemany INSERT / UPDATE in chunks: the
cost is a few statements per ``CHUNK`` rows, not one query per row. The caller's session owns
the transaction (SessionDep commits on success, rolls back on any error).
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import IO, Any

from sqlalchemy import Table, bindparam, insert, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from service.catalog.service import all_gpus
from service.core.errors import Conflict, Unprocessable, field_error
from service.core.times import as_date, as_utc, utcnow
from service.quotes.importers import (
    CatalogGpu,
    GpuMatcher,
    ImportFormatError,
    ParsedQuote,
    ParseResult,
    Skipped,
    Unmatched,
    check_utf8,
    looks_like_json,
    parse_generic,
    parse_skypilot,
)
from service.quotes.models import (
    AddedQuote,
    ImportFormat,
    ImportResult,
    Quote,
    QuoteImport,
    QuoteImportPublic,
    QuotePriceChange,
    SkippedRow,
    UnmatchedRow,
    UpdatedQuote,
    observed_default,
)
from service.quotes.networks import fill_network

CHUNK = 5_000
"""Rows per executemany batch: large enough to amortize round trips, small enough for memory."""

QUOTES: Table = Quote.__table__  # type: ignore[attr-defined]
HISTORY: Table = QuotePriceChange.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Existing:
    id: int
    gpu_slug: str
    gpu_count: int
    price_usd_per_hour: float | None
    purchase_price_usd: float | None
    valid_until: datetime | None
    captured_at: datetime
    observed_at: date


@dataclass
class _Plan:
    inserts: list[ParsedQuote] = field(default_factory=list)
    updates: list[tuple[_Existing, ParsedQuote]] = field(default_factory=list)
    refresh: list[tuple[_Existing, ParsedQuote]] = field(default_factory=list)
    unchanged: int = 0


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), CHUNK):
        yield items[i:i + CHUNK]


def catalog_gpus(session: Session) -> list[CatalogGpu]:
    return [CatalogGpu(g.slug, g.memory_gb, g.form_factor, tuple(g.aliases))
            for g in all_gpus(session)]


def parse_file(
    session: Session, *, body: bytes | IO[bytes], content_type: str | None, fmt: ImportFormat,
    provider: str | None, source: str, captured_at: datetime, observed_at: date | None = None,
) -> ParseResult:
    """Parse ``body`` (bytes, or a seekable binary file such as the route's spooled upload).
    A CSV is read row by row from the file: memory grows with the quotes it yields, not with
    the file's size (a JSON file is read whole)."""
    stream = io.BytesIO(body) if isinstance(body, bytes) else body
    try:
        check_utf8(stream)
        gpus = catalog_gpus(session)
        if fmt == "skypilot" and not provider:
            raise ImportFormatError("provider is required for format=skypilot",
                                    [("query.provider", "required for skypilot files")])
        text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
        try:
            if fmt == "skypilot":
                assert provider is not None
                return parse_skypilot(text, provider=provider, matcher=GpuMatcher(gpus))
            is_json = looks_like_json(stream.read(64), content_type)
            stream.seek(0)
            return parse_generic(text, is_json=is_json, provider=provider,
                                 captured_at=captured_at, source=source,
                                 known_slugs={g.slug for g in gpus}, observed_at=observed_at)
        finally:
            text.detach()  # the caller owns (and closes) the file
    except ImportFormatError as exc:
        raise Unprocessable(str(exc), errors=[field_error(f, m) for f, m in exc.errors]) from exc


def _existing(session: Session, providers: set[str]) -> dict[tuple[str, str, str, str], _Existing]:
    """One SELECT: every quote of the file's providers, by its unique key."""
    if not providers:
        return {}
    c = QUOTES.c
    stmt = core_select(c.provider, c.region, c.instance_type, c.pricing, c.id, c.gpu_slug,
                  c.gpu_count, c.price_usd_per_hour, c.purchase_price_usd, c.valid_until,
                  c.captured_at, c.observed_at).where(c.provider.in_(sorted(providers)))
    return {
        (r[0], r[1], r[2], r[3]): _Existing(r[4], r[5], r[6], r[7], r[8],
                                            as_utc(r[9]) if r[9] else None, as_utc(r[10]),
                                            as_date(r[11]))
        for r in session.execute(stmt)
    }


def _plan(quotes: list[ParsedQuote], existing: dict[tuple[str, str, str, str], _Existing],
          captured_at: datetime, observed_at: date) -> _Plan:
    plan = _Plan()
    for q in quotes:
        old = existing.get(q.key)
        if old is None:
            plan.inserts.append(q)
            continue
        changed = (
            not _same(old.price_usd_per_hour, q.price_usd_per_hour)
            or not _same(old.purchase_price_usd, q.purchase_price_usd)
            or (old.gpu_slug, old.gpu_count) != (q.gpu_slug, q.gpu_count)
            or old.valid_until != q.valid_until
        )
        if changed:
            plan.updates.append((old, q))
        else:
            plan.unchanged += 1
            if ((q.captured_at or captured_at) > old.captured_at
                    or (q.observed_at or observed_at) > old.observed_at):
                plan.refresh.append((old, q))
    return plan


def _apply(session: Session, plan: _Plan, *, import_id: int, who: str, now: datetime,
           captured_at: datetime, observed_at: date, source: str) -> None:
    conn = session.connection()
    c = QUOTES.c
    # the file has no network columns: each row gets its instance family's sourced default;
    # the rows are built a chunk at a time (a dict per quote for the whole file is ~1 KB each)
    for chunk in _chunks(plan.inserts):
        conn.execute(insert(QUOTES), [fill_network({
            "gpu_slug": q.gpu_slug, "provider": q.provider, "region": q.region,
            "instance_type": q.instance_type, "gpu_count": q.gpu_count, "pricing": q.pricing,
            "price_usd_per_hour": q.price_usd_per_hour,
            "purchase_price_usd": q.purchase_price_usd,
            "source": q.source if q.captured_at else source,
            "captured_at": q.captured_at or captured_at, "valid_until": q.valid_until,
            "observed_at": q.observed_at or observed_at, "version": 1, "created_at": now,
            "updated_at": now,
        }) for q in chunk])

    set_price = update(QUOTES).where(c.id == bindparam("b_id")).values({
        c.gpu_slug: bindparam("b_gpu_slug"), c.gpu_count: bindparam("b_gpu_count"),
        c.price_usd_per_hour: bindparam("b_price"), c.purchase_price_usd: bindparam("b_purchase"),
        c.valid_until: bindparam("b_valid_until"), c.source: bindparam("b_source"),
        c.captured_at: bindparam("b_captured_at"), c.observed_at: bindparam("b_observed_at"),
        c.version: c.version + 1, c.updated_at: now,
    })
    params = [{
        "b_id": old.id, "b_gpu_slug": q.gpu_slug, "b_gpu_count": q.gpu_count,
        "b_price": q.price_usd_per_hour, "b_purchase": q.purchase_price_usd,
        "b_valid_until": q.valid_until, "b_source": q.source if q.captured_at else source,
        "b_captured_at": q.captured_at or captured_at,
        "b_observed_at": q.observed_at or observed_at,
    } for old, q in plan.updates]
    for chunk in _chunks(params):
        conn.execute(set_price, list(chunk))

    history = [{
        "quote_id": old.id, "import_id": import_id, "changed_at": now, "changed_by": who,
        "old_price_usd_per_hour": old.price_usd_per_hour,
        "new_price_usd_per_hour": q.price_usd_per_hour,
        "old_purchase_price_usd": old.purchase_price_usd,
        "new_purchase_price_usd": q.purchase_price_usd, "old_captured_at": old.captured_at,
    } for old, q in plan.updates
        if not (_same(old.price_usd_per_hour, q.price_usd_per_hour)
                and _same(old.purchase_price_usd, q.purchase_price_usd))]
    for chunk in _chunks(history):
        conn.execute(insert(HISTORY), list(chunk))

    # the same price seen again: each date moves forward, never back
    touch = update(QUOTES).where(c.id == bindparam("b_id")).values({
        c.captured_at: bindparam("b_captured_at"), c.observed_at: bindparam("b_observed_at"),
        c.source: bindparam("b_source"), c.version: c.version + 1, c.updated_at: now,
    })
    refresh = [{"b_id": old.id,
                "b_captured_at": max(q.captured_at or captured_at, old.captured_at),
                "b_observed_at": max(q.observed_at or observed_at, old.observed_at),
                "b_source": q.source if q.captured_at else source} for old, q in plan.refresh]
    for chunk in _chunks(refresh):
        conn.execute(touch, list(chunk))


def run_import(
    session: Session, *, body: bytes | IO[bytes], content_type: str | None, fmt: ImportFormat,
    provider: str | None, dry_run: bool, source: str, captured_at: datetime | None, who: str,
    observed_at: date | None = None,
) -> ImportResult:
    """Parse, diff against the stored quotes, and (unless ``dry_run``) write it all.

    ``observed_at``: the day the file's prices were observed, for rows without their own
    (a SkyPilot catalog has no date column); default the UTC date of ``captured_at``."""
    return import_file(session, body=body, content_type=content_type, fmt=fmt,
                       provider=provider, dry_run=dry_run, source=source,
                       captured_at=captured_at, who=who, observed_at=observed_at).result()


@dataclass
class ImportOutcome:
    """What an import did: its figures, and the parsed quotes and plan its lists are made of,
    as :meth:`result` (an ImportResult) or :meth:`json_chunks` (the same JSON, streamed)."""

    summary: dict[str, Any]
    parsed: ParseResult
    plan: _Plan

    def _lists(self) -> dict[str, tuple[Sequence[Any], Any]]:
        return {"added_quotes": (self.plan.inserts, _added),
                "updated": (self.plan.updates, _updated),
                "skipped": (self.parsed.skipped, _skipped),
                "unmatched": (self.parsed.unmatched, _unmatched)}

    def result(self) -> ImportResult:
        return ImportResult.model_validate({**self.summary, **{
            name: [build(item) for item in items]
            for name, (items, build) in self._lists().items()}})

    def json_chunks(self) -> Iterator[bytes]:
        """The JSON of :meth:`result`, a chunk of list items at a time: a 60 MB file's answer
        (tens of MB) is never held whole, nor as one model per listed quote."""
        lists = self._lists()
        scalars = ImportResult.model_validate(
            {**self.summary, **{name: [] for name in lists}}).model_dump(mode="json")
        yield b"{"
        for i, name in enumerate(ImportResult.model_fields):
            yield (b"," if i else b"") + json.dumps(name).encode() + b":"
            if name not in lists:
                yield json.dumps(scalars[name]).encode()
                continue
            items, build = lists[name]
            yield b"["
            for k, chunk in enumerate(_chunks(items)):
                yield (b"," if k else b"") + b",".join(
                    build(item).model_dump_json().encode() for item in chunk)
            yield b"]"
        yield b"}"


def _added(q: ParsedQuote) -> AddedQuote:
    return AddedQuote(
        row=q.row, gpu_slug=q.gpu_slug, region=q.region, instance_type=q.instance_type,
        gpu_count=q.gpu_count, pricing=q.pricing, price_usd_per_hour=q.price_usd_per_hour,
        purchase_price_usd=q.purchase_price_usd)


def _updated(pair: tuple[_Existing, ParsedQuote]) -> UpdatedQuote:
    old, q = pair
    return UpdatedQuote(
        quote_id=old.id, gpu_slug=q.gpu_slug, region=q.region,
        instance_type=q.instance_type, pricing=q.pricing,
        old_price_usd_per_hour=old.price_usd_per_hour,
        new_price_usd_per_hour=q.price_usd_per_hour, old_gpu_slug=old.gpu_slug,
        old_gpu_count=old.gpu_count, gpu_count=q.gpu_count)


def _skipped(s: Skipped) -> SkippedRow:
    return SkippedRow(row=s.row, reason=s.reason)


def _unmatched(u: Unmatched) -> UnmatchedRow:
    return UnmatchedRow(row=u.row, accelerator_name=u.accelerator_name,
                        instance_type=u.instance_type, reason=u.reason)


def import_file(
    session: Session, *, body: bytes | IO[bytes], content_type: str | None, fmt: ImportFormat,
    provider: str | None, dry_run: bool, source: str, captured_at: datetime | None, who: str,
    observed_at: date | None = None,
) -> ImportOutcome:
    """:func:`run_import`, answering an :class:`ImportOutcome`."""
    start = time.perf_counter()
    now = utcnow()
    captured = as_utc(captured_at) if captured_at else now
    try:
        observed = observed_at or observed_default(captured)
    except ValueError as exc:
        raise Unprocessable(str(exc), errors=[field_error("query.captured_at", str(exc))]) from exc
    provider = provider.lower() if provider else None
    parsed = parse_file(session, body=body, content_type=content_type, fmt=fmt,
                        provider=provider, source=source, captured_at=captured,
                        observed_at=observed_at)
    existing = _existing(session, {q.provider for q in parsed.quotes})
    plan = _plan(parsed.quotes, existing, captured, observed)
    del existing
    import_id: int | None = None
    record: QuoteImport | None = None
    if not dry_run:
        record = QuoteImport(
            created_at=now, api_key_name=who[:100], source=source, format=fmt,
            provider=provider, captured_at=captured, rows_read=parsed.rows_read,
            added=len(plan.inserts), updated=len(plan.updates), unchanged=plan.unchanged,
            skipped=len(parsed.skipped), unmatched=len(parsed.unmatched),
        )
        session.add(record)
        try:
            session.flush()
            import_id = record.id
            assert import_id is not None
            _apply(session, plan, import_id=import_id, who=who[:100], now=now,
                   captured_at=captured, observed_at=observed, source=source)
        except IntegrityError as exc:
            raise Conflict("Quotes changed during the import (a concurrent write); retry",
                           errors=[field_error("body", "unique key taken concurrently")]) from exc
    duration_ms = round((time.perf_counter() - start) * 1000, 3)
    if record is not None:
        record.duration_ms = duration_ms
        session.add(record)
        session.flush()
        session.expire_all()  # the bulk statements bypassed the identity map
    summary = {
        "import_id": import_id, "dry_run": dry_run, "provider": provider, "format": fmt,
        "captured_at": captured, "observed_at": observed, "rows_read": parsed.rows_read,
        "quotes_in_file": len(parsed.quotes), "added": len(plan.inserts),
        "unchanged": plan.unchanged, "ignored_rows": parsed.ignored_rows,
        "duration_ms": duration_ms,
    }
    return ImportOutcome(summary, parsed, plan)


def list_imports(session: Session, *, limit: int, offset: int, show_names: bool = True,
                 ) -> tuple[list[QuoteImportPublic], int]:
    """Newest first. ``show_names`` false (a caller who is not an admin): ``api_key_name`` is
    null."""
    total = session.exec(select(func.count()).select_from(QuoteImport)).one()
    rows = session.exec(select(QuoteImport).order_by(col(QuoteImport.id).desc())
                        .limit(limit).offset(offset)).all()
    out = [QuoteImportPublic.model_validate({
        **r.model_dump(), "created_at": as_utc(r.created_at),
        "captured_at": as_utc(r.captured_at),
        "api_key_name": r.api_key_name if show_names else None}) for r in rows]
    return out, int(total)
