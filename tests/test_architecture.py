"""The house rules, checked on the source: import direction, no cycles, module size, the share of payments,
and documentation that a clone of the repository can follow."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.imports import PACKAGES, ROOT, Import, cycles, import_graph, project_modules

MAX_MODULE_LINES = 450
PAYMENTS_MAX_SHARE = 0.25
EDGE_PARTS = {"api", "dashboard", "management"}
EDGE_MODULES = {"views", "urls", "forms", "tasks", "admin"}


def _app(module: str) -> str:
    return module.partition(".")[0]


def _layer(module: str) -> str:
    """edge (pages, API, tasks, commands) -> core (services, selectors, rules...) -> models."""
    parts = module.split(".")
    if parts[0] == "config":
        return "config"
    if EDGE_PARTS & set(parts) or parts[-1] in EDGE_MODULES:
        return "edge"
    if parts[-1] == "models":
        return "models"
    return "core"


@pytest.fixture(scope="module")
def edges() -> list[Import]:
    return import_graph()


def test_the_graph_sees_imports_inside_functions(edges: list[Import]) -> None:
    # The direction rule counts lazy imports too: a module cannot dodge it by importing in a function.
    lazy = [edge for edge in edges if not edge.top_level]
    assert lazy, "no function-level import found: the reader would not see a lazy import either"
    assert any(edge.source == "payments.apps" for edge in lazy)


def test_core_imports_no_app(edges: list[Import]) -> None:
    # The ground floor: every app may use it, it uses none of them (nor config, the top floor).
    upward = [edge for edge in edges if _app(edge.source) == "core" and _app(edge.target) != "core"]
    assert upward == []


def test_payments_imports_only_core(edges: list[Import]) -> None:
    # Merchants, the ledger and balances: one floor above core, below every other app.
    upward = [
        edge
        for edge in edges
        if _app(edge.source) == "payments" and _app(edge.target) not in {"core", "payments"}
    ]
    assert upward == []


def test_chains_never_imports_withdrawals_or_invoices(edges: list[Import]) -> None:
    # What chains asks of the payouts above it goes through chains.payout_book, which withdrawals fills.
    upward = [
        edge
        for edge in edges
        if _app(edge.source) == "chains" and _app(edge.target) in {"withdrawals", "invoices"}
    ]
    assert upward == []


def _app_loops(edges: list[Import]) -> list[list[str]]:
    """Loops of app-level imports (config, the top floor that wires every app, left out)."""
    between = {
        (_app(edge.source), _app(edge.target))
        for edge in edges
        if _app(edge.source) != _app(edge.target) and "config" not in {_app(edge.source), _app(edge.target)}
    }
    return cycles([Import(source, target, 0, True) for source, target in sorted(between)])


def test_no_app_level_import_loop(edges: list[Import]) -> None:
    assert _app_loops(edges) == []


def test_the_app_loop_finder_finds_a_loop() -> None:
    loop = [
        Import("chains.status", "withdrawals.models", 1, True),
        Import("withdrawals.payouts", "chains.base", 1, True),
    ]
    assert _app_loops(loop) == [["chains", "withdrawals"]]


def test_no_import_cycles(edges: list[Import]) -> None:
    assert cycles(edges) == []


def test_cycle_finder_finds_a_cycle() -> None:
    loop = [Import("a", "b", 1, True), Import("b", "c", 1, False), Import("c", "a", 1, True)]
    assert cycles([*loop, Import("c", "d", 1, True)]) == [["a", "b", "c"]]


@pytest.mark.parametrize("low", ["payments", "webhooks"])
def test_payments_and_webhooks_never_import_invoices_or_withdrawals(edges: list[Import], low: str) -> None:
    upward = [
        edge
        for edge in edges
        if _app(edge.source) == low and _app(edge.target) in {"invoices", "withdrawals"}
    ]
    assert upward == []


def test_services_and_models_never_import_pages_api_or_tasks(edges: list[Import]) -> None:
    wrong = [
        edge
        for edge in edges
        if _layer(edge.target) == "edge"
        and _layer(edge.source) in {"core", "models"}
        and not edge.source.endswith(".apps")  # AppConfig.ready registers tasks and handlers
    ]
    assert wrong == []


def test_models_import_no_services(edges: list[Import]) -> None:
    wrong = [
        edge
        for edge in edges
        if _layer(edge.source) == "models" and edge.target.rpartition(".")[2] in {"services", "selectors"}
    ]
    assert wrong == []


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_over_the_limit() -> None:
    tools = {
        str(path.relative_to(ROOT)): path
        for path in (ROOT / "tools").rglob("*.py")
        if "migrations" not in path.parts
    }
    modules = {**project_modules(), **tools}  # the apps and the tools beside them (the bench)
    long = {name: _lines(path) for name, path in modules.items() if _lines(path) > MAX_MODULE_LINES}
    assert long == {}


def test_payments_holds_under_the_share_of_the_code() -> None:
    sizes = {name: _lines(path) for name, path in project_modules().items()}
    payments = sum(size for name, size in sizes.items() if _app(name) == "payments")
    assert payments / sum(sizes.values()) < PAYMENTS_MAX_SHARE


OUTSIDE_DOCUMENTS = re.compile(r"API\.md|DECISIONS\.md|ARCHITECTURE\.md|STYLE\.md|shared/")


def _source_files() -> list[Path]:
    skip = {".venv", ".git", "node_modules", "var", "staticfiles"}
    return [
        path
        for pattern in ("*.py", "*.html")
        for path in ROOT.rglob(pattern)
        if not skip & set(path.relative_to(ROOT).parts)
    ]


def test_code_cites_no_document_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    hits = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _source_files()
        if path != this
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE_DOCUMENTS.search(line)
    ]
    assert hits == []


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def test_there_are_documents() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in _documents()}
    assert {
        "README.md",
        "docs/api.md",
        "docs/architecture.md",
        "docs/decisions.md",
        "docs/operations.md",
    } <= names


def test_every_link_in_the_documents_resolves_inside_the_repository() -> None:
    broken = []
    for document in _documents():
        text = re.sub(r"```.*?```", "", document.read_text(), flags=re.DOTALL)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http(s):, mailto: ... are not files
                continue
            file, _, anchor = target.partition("#")
            path = (document.parent / file).resolve() if file else document
            if not path.is_relative_to(ROOT) or not path.exists():
                broken.append(f"{document.relative_to(ROOT)}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{document.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_every_app_with_tests_is_collected_and_packaged() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    testpaths = set(project["tool"]["pytest"]["ini_options"]["testpaths"])
    packaged = project["tool"]["setuptools"]["packages"]["find"]["include"]
    with_tests = {package for package in PACKAGES if (ROOT / package / "tests").is_dir()}
    assert with_tests <= testpaths
    assert all(f"{package}*" in packaged for package in PACKAGES)


def test_every_project_app_is_in_the_import_graph() -> None:
    """An app left out of PACKAGES would escape every check above (loops, floors, sizes)."""
    from django.conf import settings

    project_apps = {
        app.split(".")[0] for app in settings.INSTALLED_APPS if (ROOT / app.split(".")[0]).is_dir()
    }
    assert project_apps - {"tools"} <= set(PACKAGES)


# --- the chain backend contract (chains.backend) ---------------------------------------------------------

# Only a backend's own package may name it; everyone else asks the backend (its capabilities, its methods).
BACKEND_PACKAGES = ("chains/sandbox.py", "chains/bitcoincore/", "chains/evm/", "chains/tron/")
BACKEND_SWITCH = re.compile(
    r"""[=!]=\s*["'](?:sandbox|bitcoincore|evm|tron)["']"""  # .name == "evm", backend != "sandbox", ...
    r"""|["'](?:sandbox|bitcoincore|evm|tron)["']\s*[=!]="""
    r"""|\bbackend\s*[=!]=\s*["']"""
    r"""|\b(?:get|has)attr\(\s*(?:backend\b|get_backend\()"""
)


def _backend_switches(text: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if BACKEND_SWITCH.search(line)]


def test_the_backend_switch_finder_finds_switches() -> None:
    switches = [
        'if get_backend(code).name == "evm":',
        "    if backend == 'bitcoincore':",
        'ready = "sandbox" != name',
        'size = getattr(backend, "max_outputs", 1)',
        'together = getattr(get_backend(code), "scan_codes", None)',
    ]
    fine = ['if asset.family == "ton":', "backend.max_outputs", 'if host.name == "localhost":']
    assert _backend_switches("\n".join(switches)) == [1, 2, 3, 4, 5]
    assert _backend_switches("\n".join(fine)) == []


def test_no_module_outside_a_backends_package_switches_on_a_backend() -> None:
    hits = [
        f"{relative}:{number}"
        for path in _source_files()
        if path.suffix == ".py"
        and not {"tests", "migrations"} & set((relative := path.relative_to(ROOT).as_posix()).split("/"))
        and not path.name.startswith("test_")
        and path.name != "conftest.py"
        and not relative.startswith(BACKEND_PACKAGES)
        for number in _backend_switches(path.read_text())
    ]
    assert hits == []


def _private_owner(name: str, modules: dict[str, Path]) -> str | None:
    """The package a dotted name is private to, when a part of it is private (`_name`, not a dunder): the
    package it lies in (a module's private name belongs to the module's package)."""
    parts = name.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            prefix = ".".join(parts[:index])
            path = modules.get(prefix)
            return prefix if path is None or path.name == "__init__.py" else prefix.rpartition(".")[0]
    return None


def test_no_module_imports_another_packages_private_names() -> None:
    # A package's private modules and names (payments.ledger._statement, the ledger's own SQL) are used only
    # inside it: what other packages need, it offers by a public name.
    modules = project_modules()
    wrong = []
    for module, path in sorted(modules.items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                owner = _private_owner(name, modules)
                if (
                    owner is not None
                    and owner.partition(".")[0] in PACKAGES
                    and not (module == owner or module.startswith(f"{owner}."))
                ):
                    wrong.append(f"{module}:{node.lineno} imports {name}")
    assert wrong == []
