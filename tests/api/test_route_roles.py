"""Each route's documented roles (`x-roles`) come from the access dependency it uses, as
declared on that dependency, not from the dependency's name."""

from __future__ import annotations

import functools
from typing import Annotated, Any

import pytest
from fastapi import APIRouter, Depends
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from service.app.factory import _routers, route_roles
from service.core import security
from service.core.security import AdminDep, ApiKey, BearerDep, SubmitterDep, access


def _routes() -> list[APIRoute]:
    return [r for router in _routers() for r in router.routes if isinstance(r, APIRoute)]


def _reads_key(dependant: Dependant) -> bool:
    return any(security.reads_api_key(d.call) or _reads_key(d) for d in dependant.dependencies)


def _route(endpoint: Any) -> APIRoute:
    router = APIRouter()
    router.get("/probe")(endpoint)
    route = router.routes[0]
    assert isinstance(route, APIRoute)
    return route


def test_every_route_that_reads_a_key_documents_its_roles() -> None:
    routes = _routes()
    assert any(_reads_key(r.dependant) for r in routes)
    for route in routes:
        documented = route_roles(route)
        if _reads_key(route.dependant):
            assert documented != ["anyone"], route.path
            assert set(documented) <= {"anonymous", "reader", "submitter", "admin"}, route.path
        else:
            assert documented == ["anyone"], route.path


def test_renaming_a_dependency_keeps_its_documented_roles(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = {(r.path, tuple(r.methods)): route_roles(r) for r in _routes()}
    assert ["admin"] in before.values() and ["submitter", "admin"] in before.values()
    for dependency in (security.require_admin, security.require_submitter,
                       security.require_reader, security.require_metrics_reader):
        monkeypatch.setattr(dependency, "__name__", f"renamed_{dependency.__name__}")
        monkeypatch.setattr(dependency, "__qualname__", f"renamed_{dependency.__qualname__}")
    assert {(r.path, tuple(r.methods)): route_roles(r) for r in _routes()} == before


# Dependencies and endpoints a route could be written with. Module level: FastAPI resolves
# the (postponed) annotations in the module's globals.
async def staff_only(caller: AdminDep) -> ApiKey:
    """A differently named dependency around require_admin."""
    return caller


@functools.wraps(security.require_submitter)
async def own_workloads(caller: SubmitterDep) -> ApiKey:
    """A wrapper that takes require_submitter's name and declaration."""
    return caller


@access("reader", "admin")
async def readers_and_admins(creds: BearerDep) -> None:
    return None


async def undeclared(creds: BearerDep) -> None:
    """Reads the key but declares nobody."""
    return None


async def admin_endpoint(_: Annotated[ApiKey, Depends(staff_only)]) -> None:
    return None


async def submitter_endpoint(_: Annotated[ApiKey, Depends(own_workloads)]) -> None:
    return None


async def declared_endpoint(_: Annotated[None, Depends(readers_and_admins)]) -> None:
    return None


async def undeclared_endpoint(_: Annotated[None, Depends(undeclared)]) -> None:
    return None


async def open_endpoint() -> None:
    return None


def test_a_dependency_wrapping_another_keeps_its_roles() -> None:
    assert route_roles(_route(admin_endpoint)) == ["admin"]
    assert route_roles(_route(submitter_endpoint)) == ["submitter", "admin"]


def test_a_declared_dependency_documents_what_it_declares() -> None:
    assert route_roles(_route(declared_endpoint)) == ["reader", "admin"]


def test_a_key_check_that_declares_no_roles_is_refused() -> None:
    with pytest.raises(RuntimeError, match="declares who it lets through"):
        route_roles(_route(undeclared_endpoint))


def test_a_route_without_a_key_is_open_to_anyone() -> None:
    assert route_roles(_route(open_endpoint)) == ["anyone"]
