"""`gpu-advisor import-quotes FILE|--url URL`: the bulk quote import from the command line."""

from __future__ import annotations

import argparse
import getpass
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError
from sqlmodel import Session

from service.core.config import command_settings
from service.core.errors import ProblemError
from service.core.times import ObservedDate


def cmd_import_quotes(args: argparse.Namespace) -> int:
    import httpx

    from service.core.db import make_engine
    from service.quotes.imports import run_import

    if args.url:
        resp = httpx.get(args.url, follow_redirects=True, timeout=60.0)
        resp.raise_for_status()
        body, content_type = resp.content, resp.headers.get("content-type")
        source = args.source or args.url
    else:
        path = Path(args.file)
        body = path.read_bytes()
        content_type = "application/json" if path.suffix.lower() == ".json" else "text/csv"
        source = args.source or str(path)
    captured = datetime.fromisoformat(args.captured_at) if args.captured_at else None
    try:
        observed = (TypeAdapter(ObservedDate).validate_python(args.observed_at)
                    if args.observed_at else None)
    except ValidationError as exc:
        print(f"--observed-at: {exc.errors()[0]['msg']}", file=sys.stderr)
        return 2
    engine = make_engine(command_settings(args.database_url).database_url)
    with Session(engine, expire_on_commit=False) as session:
        try:
            result = run_import(
                session, body=body, content_type=content_type, fmt=args.format,
                provider=args.provider, dry_run=args.dry_run, source=source,
                captured_at=captured, observed_at=observed, who=f"cli:{getpass.getuser()}",
            )
        except ProblemError as exc:
            session.rollback()
            print(f"import rejected: {exc.detail or exc.title}", file=sys.stderr)
            for err in exc.errors[:20]:
                print(f"  {err.field}: {err.message}", file=sys.stderr)
            return 1
        if args.dry_run:
            session.rollback()
        else:
            session.commit()
    _print_summary(result.model_dump())
    return 0


def _print_summary(r: dict[str, Any]) -> None:
    head = "dry run (nothing written)" if r["dry_run"] else f"import {r['import_id']}"
    print(f"{head}: {r['format']} {r['provider'] or ''} - {r['rows_read']} rows, "
          f"{r['quotes_in_file']} quotes: {r['added']} added, {len(r['updated'])} updated, "
          f"{r['unchanged']} unchanged, {len(r['skipped'])} skipped, "
          f"{len(r['unmatched'])} unmatched ({r['duration_ms']:.0f} ms)")
    for u in r["updated"][:20]:
        print(f"  updated {u['quote_id']} {u['region']} {u['instance_type']} {u['pricing']}: "
              f"{u['old_price_usd_per_hour']} -> {u['new_price_usd_per_hour']}")
    names: dict[str, int] = {}
    for u in r["unmatched"]:
        names[u["accelerator_name"]] = names.get(u["accelerator_name"], 0) + 1
    for name, n in sorted(names.items()):
        print(f"  unmatched {name}: {n} row(s)")


def add_import_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from service.quotes.models import ImportFormat

    p = sub.add_parser("import-quotes", help="Import quotes from a SkyPilot or generic file")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("file", nargs="?", help="CSV or JSON file")
    src.add_argument("--url", help="Fetch the file over HTTP(S) instead")
    p.add_argument("--format", choices=get_args(ImportFormat), default="skypilot")
    p.add_argument("--provider", help="The cloud (required for skypilot): aws, lambda, gcp...")
    p.add_argument("--dry-run", action="store_true", help="Report changes; write nothing")
    p.add_argument("--source", help="Where the prices came from (default: the file or URL)")
    p.add_argument("--captured-at", help="ISO time the prices were read (default: now)")
    p.add_argument("--observed-at", help="YYYY-MM-DD the source observed the prices, e.g. a "
                   "SkyPilot catalog's commit date (default: the captured-at date)")
    p.set_defaults(func=cmd_import_quotes)
