"""The `gpu-advisor` command: serve, migrate, seed, keys, export-openapi, and more."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from typing import get_args

from sqlmodel import Session

from service.cli.import_quotes import add_import_parser
from service.cli.recommend import add_recommend_parser
from service.core.config import Settings, command_settings
from service.core.db import make_engine
from service.core.security import Role


def _settings(args: argparse.Namespace) -> Settings:
    return command_settings(args.database_url)


def cmd_migrate(args: argparse.Namespace) -> int:
    from service.core.migrate import startup_lock, upgrade

    url = _settings(args).database_url
    with startup_lock(url):
        upgrade(url)
    print(f"migrated {_redact(url)} to head")
    return 0


def cmd_seed(args: argparse.Namespace) -> int:
    from service.app.seeding import seed

    result = seed(make_engine(_settings(args).database_url), force=args.force)
    if result.skipped:
        print("catalog not empty: seed skipped (use --force to add missing seed rows)")
    else:
        print(f"seeded {result.gpus} GPUs and {result.quotes} quotes")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    # Before anything creates a metric: every worker of this server writes its metrics to a
    # directory of this server's own, so /metrics answers the server's totals whichever worker
    # is asked (service/http/observability.py). Created here and removed when serving ends.
    metrics_dir = _metrics_dir()
    try:
        return _serve(args)
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _metrics_dir() -> str:
    """A new, empty multiprocess metrics directory (under $PROMETHEUS_MULTIPROC_DIR when the
    environment names one, e.g. a volume, else the system's temporary directory), exported to
    the workers as PROMETHEUS_MULTIPROC_DIR."""
    from service.http.observability import MULTIPROC_ENV

    parent = os.environ.get(MULTIPROC_ENV) or None
    if parent:
        os.makedirs(parent, exist_ok=True)
    path = tempfile.mkdtemp(prefix="gpu-advisor-metrics-", dir=parent)
    os.environ[MULTIPROC_ENV] = path
    values = sys.modules.get("prometheus_client.values")
    if values is not None:  # imported before the variable was set: pick the file-backed values
        values.ValueClass = values.get_value_class()  # type: ignore[attr-defined]
    return path


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from service.app.seeding import seed
    from service.app.serving import uvicorn_options
    from service.core.migrate import startup_lock, upgrade

    settings = _settings(args)
    engine = make_engine(settings.database_url, connect_timeout_s=settings.db_connect_timeout_s)
    with startup_lock(settings.database_url):
        upgrade(settings.database_url)
        result = seed(engine)
    engine.dispose()
    if not result.skipped:
        print(f"seeded {result.gpus} GPUs and {result.quotes} quotes", file=sys.stderr)
    # Each worker builds its app from the environment (service.app.serving.app_factory).
    os.environ["DATABASE_URL"] = settings.database_url
    port = args.port if args.port is not None else int(os.environ.get("PORT", "8000"))
    base = f"http://{_url_host(args.host)}:{port}"
    print(f"gpu-advisor serving on {base}/  (comparison page {base}/ui, API docs {base}/docs; "
          "Ctrl-C stops)", file=sys.stderr, flush=True)
    uvicorn.run("service.app.serving:app_factory", factory=True, host=args.host, port=port,
                workers=args.workers, log_level="warning", access_log=False,
                **uvicorn_options(settings))
    return 0


def cmd_export_openapi(args: argparse.Namespace) -> int:
    from service.app.factory import create_app
    from service.http.openapi_doc import openapi_json

    text = openapi_json(create_app(Settings(database_url="sqlite://")))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    from service.core.security import ApiKey, create_key, revoke_key

    engine = make_engine(_settings(args).database_url)
    with Session(engine) as session:
        if args.keys_cmd == "create":
            row, key = create_key(session, name=args.name, role=args.role)
            session.commit()
            print(key)
            print(f"created {row.role} key '{row.name}' (prefix {row.prefix}); "
                  "store it now: it is not shown again", file=sys.stderr)
        elif args.keys_cmd == "revoke":
            n = revoke_key(session, prefix_or_name=args.key)
            session.commit()
            print(f"revoked {n} key(s)")
            return 0 if n else 1
        else:
            from sqlmodel import col, select

            for row in session.exec(select(ApiKey).order_by(col(ApiKey.id))).all():
                state = "revoked" if row.revoked_at else "active"
                print(f"{row.prefix}\t{row.role}\t{state}\t{row.name}")
    return 0


def _url_host(host: str) -> str:
    """The host as a browser takes it: a wildcard bind is reached on loopback, IPv6 bracketed."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _redact(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-advisor", description=__doc__)
    parser.add_argument("--database-url", help="Overrides DATABASE_URL")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="Migrate, seed an empty database, and serve HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="Default: $PORT or 8000")
    serve.add_argument("--workers", type=int, default=1,
                       help="Worker processes (each has its own admission limit and pool)")
    serve.set_defaults(func=cmd_serve)

    sub.add_parser("migrate", help="Upgrade the schema to head").set_defaults(func=cmd_migrate)

    seed = sub.add_parser("seed", help="Load the seed catalog and quotes into an empty database")
    seed.add_argument("--force", action="store_true",
                      help="Add missing seed rows to a non-empty DB")
    seed.set_defaults(func=cmd_seed)

    export = sub.add_parser("export-openapi", help="Print the OpenAPI document")
    export.add_argument("-o", "--output")
    export.set_defaults(func=cmd_export_openapi)

    keys = sub.add_parser("keys", help="Manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_cmd", required=True)
    create = keys_sub.add_parser("create", help="Create a key; prints it once")
    create.add_argument("--name", required=True)
    create.add_argument("--role", choices=get_args(Role), required=True)
    revoke = keys_sub.add_parser("revoke", help="Revoke keys by prefix or name")
    revoke.add_argument("key", help="Key prefix (as `keys list` shows) or name")
    keys_sub.add_parser("list", help="List keys (never the secrets)")
    keys.set_defaults(func=cmd_keys)

    add_recommend_parser(sub)
    add_import_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code
