"""The service's import graph has no cycles, and its packages import only downwards.

Read from the source with ``ast`` (nothing is imported): every ``import service...`` and
``from service... import`` at any depth, function-level ones included (one placed in a function
to dodge a cycle is still the cycle), except under ``if TYPE_CHECKING:``, which never runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[2] / "service"

LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer.split()) for layer in (
    "engine",
    "core",
    "http",
    "presets",
    "catalog",
    "quotes",
    "estimates workloads",
    "web",
    "app",
    "cli",
))
"""service/'s packages, lowest first: a package imports from its own layer and those below.
``estimates`` and ``workloads`` share the workload schema, so they form one layer."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in SERVICE.rglob("*.py"):
        parts = path.relative_to(SERVICE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The service modules ``path`` imports (``from pkg import module`` names the module)."""
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                out.add(name if name in modules else node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {name for name in out if name in modules}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (SERVICE / parts[1]).is_dir() else None


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_layers_name_every_package() -> None:
    packages = {p.name for p in SERVICE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set().union(*LAYERS)


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert _cycle(_graph()) is None


def test_packages_import_only_their_own_layer_and_below() -> None:
    layer = {package: i for i, names in enumerate(LAYERS) for package in names}
    upward = sorted(
        f"{module} -> {dep}"
        for module, deps in _graph().items()
        for dep in deps
        if (src := _package(module)) and (dst := _package(dep)) and layer[dst] > layer[src]
    )
    assert upward == []


def test_the_checks_see_function_level_imports() -> None:
    tree = ast.parse("def f():\n    from service.quotes import service\n")
    names = [n.module for n in _runtime_nodes(tree) if isinstance(n, ast.ImportFrom)]
    assert names == ["service.quotes"]
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
