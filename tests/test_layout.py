"""The package's shape, as docs/architecture.md promises it.

Modules small enough to read in one sitting, no import circles (a circle means a
responsibility sits in the wrong module), and every sub-package named in the
architecture doc's folder table with its role.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"
PACKAGE = SOURCE / "crcr"
MAX_MODULE_LINES = 400


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """Every crcr module `name` imports, lazily or not (a lazy import still ties the two)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in modules:
                    yield target
                elif base in modules:
                    yield base


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return circles


def test_no_module_is_longer_than_one_sitting() -> None:
    lengths = {name: len(path.read_text().splitlines()) for name, path in _modules().items()}
    assert {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES} == {}


def test_no_two_modules_import_each_other_even_through_others() -> None:
    modules = _modules()
    graph = {name: set(_imported(name, path, modules)) - {name} for name, path in modules.items()}
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_says_what_it_is_for() -> None:
    undocumented = [
        name
        for name, path in _modules().items()
        if path.stat().st_size and ast.get_docstring(ast.parse(path.read_text())) is None
    ]
    assert undocumented == []


def test_the_architecture_doc_lists_every_sub_package_with_its_role() -> None:
    table = (ROOT / "docs" / "architecture.md").read_text()
    listed = set(re.findall(r"^\| `src/(crcr/[\w/]+)/` \| \S", table, flags=re.MULTILINE))
    packages = {
        str(path.parent.relative_to(SOURCE))
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE and path.parent.name != "versions"
    }
    assert packages - listed == set()
    assert listed - packages == set()


# Lowest first. A package may import its own layer and those below, never one above, so
# a reader can learn the tree bottom-up; `ops` and the entry points compose everything.
LAYERS: tuple[frozenset[str], ...] = (
    # the reporter runs on a downstream runner with the standard library alone
    frozenset({"crcr", "crcr.config", "crcr.failure_detail", "crcr.reporter"}),
    frozenset({"crcr.web", "crcr.stores", "crcr.github", "crcr.oidc"}),
    frozenset({"crcr.hud"}),
    frozenset({"crcr.relay"}),
    frozenset({"crcr.sandbox", "crcr.init"}),
    frozenset({"crcr.ops", "crcr.demo", "crcr.cli", "crcr.app", "crcr.runtime", "crcr.__main__"}),
)
TOP_LEVEL_MODULES = {"crcr.app", "crcr.cli", "crcr.runtime", "crcr.__main__"}


def _package_of(module: str) -> str:
    """`crcr.relay.callback.accept` → `crcr.relay`: the second level names the part."""
    return ".".join(module.split(".")[:2])


def _layer_of(module: str) -> int:
    package = _package_of(module)
    return next(number for number, layer in enumerate(LAYERS) if package in layer)


def _imports_between_packages() -> dict[tuple[str, str], list[str]]:
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in modules.items():
        for target in set(_imported(name, path, modules)):
            pair = (_package_of(name), _package_of(target))
            if pair[0] != pair[1]:
                edges.setdefault(pair, []).append(f"{name} → {target}")
    return edges


def test_every_package_has_a_layer() -> None:
    packages = {_package_of(name) for name in _modules()}
    layered = set().union(*LAYERS)
    assert packages - layered == set()


def test_no_import_runs_from_a_lower_layer_to_a_higher_one() -> None:
    upward = {
        f"{source} → {target}": found
        for (source, target), found in _imports_between_packages().items()
        if _layer_of(source) < _layer_of(target)
    }
    assert upward == {}


def test_no_two_packages_import_each_other() -> None:
    edges = _imports_between_packages()
    mutual = sorted({tuple(sorted(pair)) for pair in edges if pair[::-1] in edges})
    assert mutual == []


def test_no_loose_module_at_the_top_of_the_package() -> None:
    loose = {
        name
        for name, path in _modules().items()
        if path.parent == PACKAGE and path.name != "__init__.py"
    }
    assert loose <= TOP_LEVEL_MODULES


def _imports_between_children(parent: str) -> dict[tuple[str, str], list[str]]:
    """Imports from one child of `parent` (a sub-package or module) to another."""
    depth = len(parent.split(".")) + 1
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in modules.items():
        if not name.startswith(parent + "."):
            continue
        for target in set(_imported(name, path, modules)):
            if not target.startswith(parent + "."):
                continue
            pair = (".".join(name.split(".")[:depth]), ".".join(target.split(".")[:depth]))
            if pair[0] != pair[1]:
                edges.setdefault(pair, []).append(f"{name} → {target}")
    return edges


# The relay's steps meet in `relay/jobs/` and `relay/results/`, the HUD's in its own root.
@pytest.mark.parametrize("parent", ["crcr.hud", "crcr.relay"])
def test_no_two_sibling_sub_packages_import_each_other(parent: str) -> None:
    edges = _imports_between_children(parent)
    mutual = {
        f"{a} ↔ {b}": sorted(edges[a, b] + edges[b, a])
        for a, b in sorted({tuple(sorted(pair)) for pair in edges if pair[::-1] in edges})
    }
    assert mutual == {}


# Who may name the whole `StateStore`: the stores themselves, and the wiring that opens
# one and hands each component the roles it asks for. The commands that open a store on
# their own (`crcr allowlist`, `crcr audit`, `crcr doctor`, `crcr versions`) go through
# `stores.factory.open_state_store` and never need to name the type.
WHOLE_STORE_ALLOWED = frozenset({"crcr.runtime"})
_QUOTED_ANNOTATION = re.compile(r"[\w.\[\]]+(?: ?[|,] ?[\w.\[\]]+)*")


def _names_the_whole_store(path: Path) -> bool:
    """Whether a module imports, annotates or otherwise names `StateStore` (not in text)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and any(
            alias.name == "StateStore" for alias in node.names
        ):
            return True
        if isinstance(node, ast.Name) and node.id == "StateStore":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "StateStore":
            return True
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.search(r"\bStateStore\b", node.value)
            and _QUOTED_ANNOTATION.fullmatch(node.value)
        ):
            return True  # a quoted annotation
    return False


def _whole_store_takers() -> set[str]:
    return {
        name
        for name, path in _modules().items()
        if not (name == "crcr.stores" or name.startswith("crcr.stores."))
        and _names_the_whole_store(path)
    }


def test_consumers_ask_for_store_roles_not_the_whole_store() -> None:
    takers = _whole_store_takers() - WHOLE_STORE_ALLOWED
    assert takers == set(), "ask for the roles in crcr.stores.roles instead"


def test_the_whole_store_finder_finds_an_annotation(tmp_path: Path) -> None:
    module = tmp_path / "consumer.py"
    module.write_text(
        "import crcr.stores.state as s\n\ndef f(store: 's.StateStore | None') -> None: ...\n"
    )
    assert _names_the_whole_store(module)
    module.write_text('"""Opens the StateStore."""\nfrom x import StateStoreUnavailable\n')
    assert not _names_the_whole_store(module)


def _sub_package_of(module: str, scope: str) -> str | None:
    """`crcr.relay.callback.accept` → `crcr.relay.callback` within `crcr.relay`."""
    parts = module.split(".")
    depth = len(scope.split("."))
    if not module.startswith(scope + ".") or len(parts) <= depth + 1:
        return None  # outside the scope, or a module at its top
    return ".".join(parts[: depth + 1])


def _imports_between_siblings(scope: str) -> dict[tuple[str, str], list[str]]:
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in modules.items():
        source = _sub_package_of(name, scope)
        for target in set(_imported(name, path, modules)):
            destination = _sub_package_of(target, scope)
            if source and destination and source != destination:
                edges.setdefault((source, destination), []).append(f"{name} → {target}")
    return edges


def test_callback_sweeper_and_checks_build_on_the_job_core_not_on_each_other() -> None:
    """They meet in `relay/jobs/` (and `relay/results/`); the sweeper and the webhook too."""
    apart = [
        {"crcr.relay.callback", "crcr.relay.sweeper", "crcr.relay.checks"},
        {"crcr.relay.sweeper", "crcr.relay.webhook"},
    ]
    edges = _imports_between_siblings("crcr.relay")
    leaning = {
        pair: found for pair, found in edges.items() for group in apart if set(pair) <= group
    }
    assert leaning == {}


def test_the_sibling_finder_finds_siblings_leaning_on_each_other() -> None:
    assert _sub_package_of("crcr.relay.callback.accept", "crcr.relay") == "crcr.relay.callback"
    assert _sub_package_of("crcr.relay.openapi_operations", "crcr.relay") is None
    assert _sub_package_of("crcr.hud.write.ingest", "crcr.relay") is None
