"""The project's import graph, read from the source (nothing is imported): which module imports which."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "accounts",
    "alerts",
    "chains",
    "config",
    "core",
    "invoices",
    "notifications",
    "payments",
    "security",
    "webhooks",
    "withdrawals",
)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported project module
    line: int
    top_level: bool  # runs when the module is imported (not inside a function or TYPE_CHECKING)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Every module of the project's packages, tests and migrations aside."""
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if {"tests", "migrations"} & set(path.relative_to(ROOT).parts):
                continue
            modules[_module_name(path)] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module a dotted name lands in (a name imported from a module is that module)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _hidden(node: ast.AST) -> bool:
    """Code that does not run when the module is imported: a function body, an `if TYPE_CHECKING:` block."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return True
    return isinstance(node, ast.If) and _is_type_checking(node)


def _walk(node: ast.AST, top_level: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if _hidden(child):
            yield from _walk(child, False)
        else:
            yield child, top_level
            yield from _walk(child, top_level)


def imports_of(module: str, modules: dict[str, Path]) -> Iterator[Import]:
    tree = ast.parse(modules[module].read_text(), filename=str(modules[module]))
    package = module if modules[module].name == "__init__.py" else module.rpartition(".")[0]
    for node, top_level in _walk(tree, True):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            target = _resolve(name, modules)
            if target is not None and target != module:
                yield Import(module, target, node.lineno, top_level)


def import_graph() -> list[Import]:
    modules = project_modules()
    return [edge for module in sorted(modules) for edge in imports_of(module, modules)]


def cycles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
