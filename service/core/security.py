"""API keys and roles: keys are stored hashed, compared in constant time, revocable.

A key looks like ``gpa_<prefix>_<secret>``. Only the prefix (to find the row) and the SHA-256 of
the whole key are stored; keys are 256-bit random, so a fast hash is safe (no dictionary to try).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import String
from sqlmodel import Field, Session, SQLModel, select
from starlette.concurrency import run_in_threadpool

import service.core.tables  # noqa: F401  (the naming convention, before any table)
from service.core.db import SessionDep
from service.core.errors import Forbidden, Unauthorized
from service.core.times import utcnow

log = logging.getLogger("gpu_advisor")
Role = Literal["admin", "submitter", "reader"]
"""reader: catalog, quotes, models, stateless estimates and recommendations; submitter: that,
plus its own workloads and runs; admin: everything, every owner's workloads."""
Caller = Literal["anonymous", Role]
"""Who calls: a key's role, or anonymous (no key), let through only where reads are public."""
READERS: tuple[Caller, ...] = ("anonymous", "reader", "submitter", "admin")
SUBMITTERS: tuple[Role, ...] = ("submitter", "admin")
ADMINS: tuple[Role, ...] = ("admin",)
KEY_PREFIX = "gpa"

_Dependency = TypeVar("_Dependency", bound=Callable[..., Any])
_ACCESS_ATTR = "access_callers"


def access(*callers: Caller) -> Callable[[_Dependency], _Dependency]:
    """Declare, on an access dependency, who it lets through. Each operation's `x-roles` in
    the OpenAPI document is read from the declaration on the dependency its route uses
    (directly or inside another dependency), so a renamed or wrapped dependency keeps its
    documented roles."""
    def declare(dependency: _Dependency) -> _Dependency:
        setattr(dependency, _ACCESS_ATTR, callers)
        return dependency
    return declare


def declared_access(dependency: object) -> tuple[Caller, ...] | None:
    """The callers ``dependency`` was declared to let through (:func:`access`), or None."""
    callers: tuple[Caller, ...] | None = getattr(dependency, _ACCESS_ATTR, None)
    return callers


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_keys"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=100)
    role: str = Field(sa_type=String(16))
    prefix: str = Field(sa_type=String(16), unique=True, index=True)
    key_hash: str = Field(sa_type=String(64))
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _split(key: str) -> str | None:
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1]


def create_key(session: Session, *, name: str, role: Role) -> tuple[ApiKey, str]:
    """Store a new key; return the row and the plain key (shown once, never stored)."""
    prefix = secrets.token_hex(6)
    key = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKey(name=name, role=role, prefix=prefix, key_hash=hash_key(key))
    session.add(row)
    session.flush()
    return row, key


def install_key(session: Session, *, key: str, name: str, role: Role) -> ApiKey:
    """Install a key chosen elsewhere (the bootstrap admin key), idempotently."""
    prefix = _split(key) or hash_key(key)[:12]
    row = session.exec(select(ApiKey).where(ApiKey.prefix == prefix)).first()
    if row is None:
        row = ApiKey(name=name, role=role, prefix=prefix, key_hash=hash_key(key))
        session.add(row)
    elif row.revoked_at is not None:
        # A revoked key stays revoked: restarting with the old env var must not revive it.
        log.warning("bootstrap key '%s' (prefix %s) is revoked; not reinstalled", name, prefix)
    else:
        row.key_hash, row.role = hash_key(key), role
    session.flush()
    return row


def revoke_key(session: Session, *, prefix_or_name: str) -> int:
    """Revoke every active key with that prefix or name; return how many."""
    rows = session.exec(
        select(ApiKey).where(
            (ApiKey.prefix == prefix_or_name) | (ApiKey.name == prefix_or_name),
            ApiKey.revoked_at.is_(None),  # type: ignore[union-attr]
        )
    ).all()
    for row in rows:
        row.revoked_at = utcnow()
    session.flush()
    return len(rows)


def authenticate(session: Session, key: str) -> ApiKey | None:
    prefix = _split(key) or hash_key(key)[:12]
    row = session.exec(select(ApiKey).where(ApiKey.prefix == prefix)).first()
    if row is None or row.revoked_at is not None:
        return None
    if not hmac.compare_digest(row.key_hash, hash_key(key)):
        return None
    return row


_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer gpa_...`")
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def reads_api_key(dependency: object) -> bool:
    """Whether ``dependency`` is the one that reads the caller's API key: a dependency that
    depends on it checks access and must declare who it lets through (:func:`access`)."""
    return dependency is _bearer


def _caller(session: Session, creds: HTTPAuthorizationCredentials) -> ApiKey:
    row = authenticate(session, creds.credentials)
    if row is None:
        raise Unauthorized("Unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    return row


PREAUTH_STATE_KEY = "api_key"
"""``request.state`` entry where service/http/bodies.py's PreAuthMiddleware leaves the
(key, row) it authenticated before the body was read, so the dependency does not look it up
again."""


async def _caller_of(request: Request, session: Session,
                     creds: HTTPAuthorizationCredentials | None) -> ApiKey | None:
    """:func:`_caller`, off the event loop only when there is a key to look up: the access
    dependencies are async so that an anonymous read costs no thread-pool round trip (a sync
    dependency is run in the pool, and each trip is a GIL hand-over between the loop and a
    worker: bench/results/http.json, the floor routes)."""
    if creds is None:
        return None
    found = request.scope.get("state", {}).get(PREAUTH_STATE_KEY)
    if found is not None and found[0] == creds.credentials:
        row: ApiKey = found[1]
        return row
    return await run_in_threadpool(_caller, session, creds)


def _anonymous(caller: ApiKey | None, *, public: bool, what: str) -> ApiKey | None:
    if caller is None and not public:
        raise Unauthorized(f"This service needs an API key for {what}",
                           headers={"WWW-Authenticate": "Bearer"})
    return caller


@access(*READERS)
async def require_reader(request: Request, session: SessionDep,
                         creds: BearerDep) -> ApiKey | None:
    """Reads are public unless GPU_ADVISOR_PUBLIC_READS=false; a given key must be valid."""
    return _anonymous(await _caller_of(request, session, creds),
                      public=request.app.state.settings.public_reads, what="reads")


@access(*READERS)
async def require_metrics_reader(request: Request, session: SessionDep,
                                 creds: BearerDep) -> ApiKey | None:
    """/metrics is public when GPU_ADVISOR_METRICS_PUBLIC is true; unset, it follows the read
    rule (GPU_ADVISOR_PUBLIC_READS). Any valid key (reader or admin) may scrape it."""
    settings = request.app.state.settings
    public = settings.public_reads if settings.metrics_public is None else settings.metrics_public
    return _anonymous(await _caller_of(request, session, creds), public=public,
                      what="/metrics")


@access(*ADMINS)
async def require_admin(request: Request, session: SessionDep, creds: BearerDep) -> ApiKey:
    caller = await _caller_of(request, session, creds)
    if caller is None:
        raise Unauthorized("This route needs an admin API key",
                           headers={"WWW-Authenticate": "Bearer"})
    if caller.role not in ADMINS:
        raise Forbidden(f"Key '{caller.name}' has role '{caller.role}'; this route needs "
                        "'admin'")
    return caller


@access(*SUBMITTERS)
async def require_submitter(request: Request, session: SessionDep,
                            creds: BearerDep) -> ApiKey:
    """A submitter or admin key: workloads and runs belong to the key that created them."""
    caller = await _caller_of(request, session, creds)
    if caller is None:
        raise Unauthorized("Workloads need a submitter or admin API key",
                           headers={"WWW-Authenticate": "Bearer"})
    if caller.role not in SUBMITTERS:
        raise Forbidden(f"Key '{caller.name}' has role '{caller.role}'; workloads need "
                        "'submitter' or 'admin'")
    return caller


def owner_scope(caller: ApiKey) -> int | None:
    """The owner whose workloads ``caller`` may see: its own key id, or None (all) for admins."""
    return None if caller.role == "admin" else caller.id


ReaderDep = Annotated[ApiKey | None, Depends(require_reader)]
SubmitterDep = Annotated[ApiKey, Depends(require_submitter)]
MetricsReaderDep = Annotated[ApiKey | None, Depends(require_metrics_reader)]
AdminDep = Annotated[ApiKey, Depends(require_admin)]
