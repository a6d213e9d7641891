"""Load the seed catalog and quotes (service/data/*.csv) into an empty database, all or nothing."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from service.catalog.models import Gpu, GpuCreate
from service.quotes.models import Quote, QuoteCreate

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
GPUS_CSV = DATA_DIR / "gpus.csv"
QUOTES_CSV = DATA_DIR / "quotes.csv"
_LIST_FIELDS = {"aliases"}


@dataclass(frozen=True)
class SeedResult:
    gpus: int
    quotes: int
    skipped: bool


def _clean(row: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        value = (value or "").strip()
        if key in _LIST_FIELDS:
            out[key] = [v.strip() for v in value.split(";") if v.strip()]
        elif value != "":
            out[key] = value
        elif key in {"notes", "architecture", "memory_type"}:
            out[key] = ""
    return out


def read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [_clean(row) for row in csv.DictReader(fh)]


def seed_gpus() -> list[GpuCreate]:
    return [GpuCreate.model_validate(row) for row in read_csv(GPUS_CSV)]


def seed_quotes() -> list[QuoteCreate]:
    return [QuoteCreate.model_validate(row) for row in read_csv(QUOTES_CSV)]


def seed(engine: Engine, *, force: bool = False) -> SeedResult:
    """Insert the seed rows if the catalog is empty (or ``force``: add the missing ones)."""
    gpus, quotes = seed_gpus(), seed_quotes()
    with Session(engine) as session:
        existing = session.exec(select(func.count()).select_from(Gpu)).one()
        if existing and not force:
            return SeedResult(0, 0, skipped=True)
        known = set(session.exec(select(Gpu.slug)).all())
        new_gpus = [Gpu.model_validate(g) for g in gpus if g.slug not in known]
        session.add_all(new_gpus)
        session.flush()
        keys = {
            (q.provider, q.region, q.instance_type, q.pricing)
            for q in session.exec(select(Quote)).all()
        }
        new_quotes = [
            Quote.model_validate(q)
            for q in quotes
            if (q.provider, q.region, q.instance_type, q.pricing) not in keys
        ]
        session.add_all(new_quotes)
        session.commit()
        return SeedResult(len(new_gpus), len(new_quotes), skipped=False)
