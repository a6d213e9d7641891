"""Every enumeration is spelled once: the API's enums, the CLI's choices and the comparison
page's options are the values of one Literal each (mostly the engine's)."""

from __future__ import annotations

import argparse
import ast
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, get_args

import pytest
from fastapi import FastAPI

from service.catalog.routes import SortField
from service.cli import build_parser
from service.core.security import Role
from service.engine.recommend_types import (
    Deployment,
    Fabric,
    Objective,
    Pricing,
    RejectionCode,
    WarningCode,
)
from service.engine.types import (
    Bound,
    Communication,
    ComputePrecision,
    FixKind,
    FormFactor,
    Fp64Units,
    Interconnect,
    KvCachePrecision,
    MemoryFormat,
    Optimizer,
    ServingRuntime,
    WeightPrecision,
    WorkloadKind,
)
from service.quotes.models import HistoryEvent, ImportFormat
from service.quotes.service import Freshness
from service.web.pages import comparison_page
from service.workloads.answers import View
from service.workloads.schemas import ShardingChoice
from tests.conftest import REPO_ROOT

SOURCES: list[Any] = [
    Bound, Communication, ComputePrecision, Deployment, Fabric, FixKind, FormFactor, Fp64Units,
    Freshness, HistoryEvent, ImportFormat, Interconnect, KvCachePrecision, MemoryFormat, Objective,
    Optimizer,
    Pricing, RejectionCode, ServingRuntime, ShardingChoice, SortField, View, WarningCode,
    WeightPrecision, WorkloadKind,
]
"""The one definition of each enumeration the API exposes."""

SCHEMA_FIELDS: list[tuple[str, str, Any]] = [
    ("WorkloadSpec", "kind", WorkloadKind),
    ("WorkloadSpec", "precision", ComputePrecision),
    ("WorkloadSpec", "weight_precision", WeightPrecision),
    ("WorkloadSpec", "kv_cache_precision", KvCachePrecision),
    ("WorkloadSubmission", "objective", Objective),
    ("TrainingInput", "optimizer", Optimizer),
    ("TrainingInput", "sharding", ShardingChoice),
    ("TrainingInput", "memory_format", MemoryFormat),
    ("InferenceInput", "runtime", ServingRuntime),
    ("ComputeInput", "fp64_units", Fp64Units),
    ("ComputeInput", "communication", Communication),
    ("ConstraintsIn", "form_factors", FormFactor),
    ("ConstraintsIn", "deployment", Deployment),
    ("ConstraintsIn", "pricing", Pricing),
    ("GpuCreate", "form_factor", FormFactor),
    ("GpuCreate", "interconnect", Interconnect),
    ("QuoteCreate", "pricing", Pricing),
    ("QuoteCreate", "network_fabric", Fabric),
    ("EstimateOut", "bound", Bound),
    ("FixOut", "kind", FixKind),
    ("RejectionOut", "code", RejectionCode),
    ("WarningOut", "code", WarningCode),
]


def _enum(schema: dict[str, Any], doc: dict[str, Any]) -> list[str] | None:
    """The enum of a property schema, through `$ref`, `anyOf` (null aside) and array items."""
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if "enum" in schema:
        return list(schema["enum"])
    if "items" in schema:
        return _enum(schema["items"], doc)
    for branch in schema.get("anyOf", []):
        found = _enum(branch, doc)
        if found is not None:
            return found
    return None


def _property(doc: dict[str, Any], component: str, path: str) -> dict[str, Any]:
    """The schema of the dotted property ``path`` of ``component``, following `$ref`s."""
    schema = doc["components"]["schemas"][component]
    for part in path.split("."):
        schema = schema["properties"][part]
        refs = [b for b in [schema, *schema.get("anyOf", [])] if "$ref" in b]
        if refs and part != path.split(".")[-1]:
            schema = doc["components"]["schemas"][refs[0]["$ref"].rsplit("/", 1)[1]]
    return schema


def _all_enums(node: Any) -> list[list[str]]:
    if isinstance(node, dict):
        found = [list(node["enum"])] if "enum" in node else []
        return found + [e for v in node.values() for e in _all_enums(v)]
    if isinstance(node, list):
        return [e for v in node for e in _all_enums(v)]
    return []


@pytest.fixture
def doc(app: FastAPI) -> dict[str, Any]:
    return app.openapi()


@pytest.mark.parametrize(("component", "field", "literal"), SCHEMA_FIELDS,
                         ids=[f"{c}.{f}" for c, f, _ in SCHEMA_FIELDS])
def test_schema_enum_is_the_literal(doc: dict[str, Any], component: str, field: str,
                                    literal: Any) -> None:
    assert _enum(_property(doc, component, field), doc) == list(get_args(literal))


def test_every_openapi_enum_is_one_of_the_sources(doc: dict[str, Any]) -> None:
    sources = [list(get_args(literal)) for literal in SOURCES]
    assert [e for e in _all_enums(doc) if e not in sources] == []


class _Selects(HTMLParser):
    """The option values of every `<select data-path=...>` in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.options: dict[str, list[str]] = {}
        self._path: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "select":
            self._path = attr.get("data-path")
            if self._path:
                self.options[self._path] = []
        elif tag == "option" and self._path:
            self.options[self._path].append(attr.get("value") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._path = None


PAGE_FIELDS: dict[str, Any] = {
    "kind": WorkloadKind,
    "precision": ComputePrecision,
    "weight_precision": WeightPrecision,
    "objective": Objective,
    "training.optimizer": Optimizer,
    "training.sharding": ShardingChoice,
    "inference.runtime": ServingRuntime,
    "compute.fp64_units": Fp64Units,
    "constraints.deployment": Deployment,
}


def _page_selects() -> dict[str, list[str]]:
    parser = _Selects()
    parser.feed(comparison_page())
    return parser.options


def test_page_options_are_the_literals() -> None:
    selects = _page_selects()
    assert set(selects) == {*PAGE_FIELDS, "model.preset"}
    for path, literal in PAGE_FIELDS.items():
        values = [v for v in selects[path] if v != ""]
        assert sorted(values) == sorted(get_args(literal)), path


def test_page_options_match_the_request_schema(doc: dict[str, Any]) -> None:
    """Each select offers what `POST /v1/recommendations` accepts, and `(not set)` exactly
    where the field may be null."""
    body = doc["paths"]["/v1/recommendations"]["post"]["requestBody"]["content"]
    component = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    for path, values in _page_selects().items():
        if path == "model.preset":
            continue
        schema = _property(doc, component, path)
        nullable = any(b.get("type") == "null" for b in schema.get("anyOf", []))
        assert sorted(v for v in values if v) == sorted(_enum(schema, doc) or []), path
        assert ("" in values) == nullable, path


def _choices(parser: argparse.ArgumentParser, *commands: str, option: str) -> list[str]:
    for command in commands:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[command]
    action = next(a for a in parser._actions if option in a.option_strings)
    return list(action.choices or [])


@pytest.mark.parametrize(("commands", "option", "literal"), [
    (("recommend",), "--objective", Objective),
    (("keys", "create"), "--role", Role),
    (("import-quotes",), "--format", ImportFormat),
], ids=["recommend", "keys-create", "import-quotes"])
def test_cli_choices_are_the_literals(commands: tuple[str, ...], option: str,
                                      literal: Any) -> None:
    assert _choices(build_parser(), *commands, option=option) == list(get_args(literal))


def _is_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "Literal"


def _spelled(tree: ast.AST) -> list[tuple[int, frozenset[str]]]:
    """Every `Literal[...]` and every tuple, list or set display of two or more strings."""
    slices = {id(node.slice) for node in ast.walk(tree) if isinstance(node, ast.Subscript)}
    out = []
    for node in ast.walk(tree):
        items: list[ast.expr] = []
        if isinstance(node, ast.Subscript) and _is_literal(node):
            s = node.slice
            items = list(s.elts) if isinstance(s, ast.Tuple) else [s]
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and id(node) not in slices:
            items = list(node.elts)
        strings = [i.value for i in items if isinstance(i, ast.Constant)
                   and isinstance(i.value, str)]
        if len(strings) >= 2 and len(strings) == len(items):
            out.append((node.lineno, frozenset(strings)))
    return out


def _shell_and_vocabulary() -> list[Path]:
    """The engine's vocabulary (types.py, recommend_types.py) and everything outside the
    engine: the schemas, routes, CLI and page that reuse it. (Inside the engine a tuple like
    ``("int8", "int4")`` is a test on values, not a list of choices.)"""
    service = Path(REPO_ROOT, "service")
    engine = service / "engine"
    return sorted(p for p in service.rglob("*.py") if engine not in p.parents
                  or p in (engine / "types.py", engine / "recommend_types.py"))


def test_no_enumeration_is_spelled_twice() -> None:
    """No two places spell the same set of values (a Literal and its copy, or a list of CLI
    choices): the second one should use the first (typing.get_args)."""
    literals = {frozenset(get_args(literal)) for literal in SOURCES} | {frozenset(get_args(Role))}
    seen: dict[frozenset[str], list[str]] = {}
    for path in _shell_and_vocabulary():
        for line, values in _spelled(ast.parse(path.read_text(encoding="utf-8"))):
            if values in literals:
                seen.setdefault(values, []).append(f"{path.relative_to(REPO_ROOT)}:{line}")
    assert {v: where for v, where in seen.items() if len(where) > 1} == {}
