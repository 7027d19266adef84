"""The import graph of app/voxtray/: no cycles between modules, layers imported only
downwards, and no Qt in the core.

Two graphs: module-level imports (what runs at import time; `if TYPE_CHECKING:` blocks left
out), and every import, function-level ones included (a deferred import hides a cycle
rather than removing it). Neither may have a cycle, and in neither may a module import a
layer above its own (`LAYERS`). The Qt check counts every import.
A real import of what the tray's start loads checks that it leaves heavy modules out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.audio import REPO

APP = REPO / "app" / "voxtray"


def _module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(APP.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _absolute(node: ast.ImportFrom, module: str) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imported(node: ast.Import | ast.ImportFrom, module: str) -> Iterator[str]:
    """Every module name an import statement loads, app's or not."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    source = _absolute(node, module)
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        yield submodule if submodule in MODULES else source


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            yield from _top_level_imports(node.body)
            yield from _top_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _top_level_imports(block)
            for handler in node.handlers:
                yield from _top_level_imports(handler.body)


def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"), str(MODULES[module]))


def _all_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def import_graph(*, deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the app modules it imports at module level (also in functions if `deferred`)."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        tree = _tree(module)
        nodes = _all_imports(tree) if deferred else _top_level_imports(tree.body)
        targets = set()
        for node in nodes:
            targets.update(name for name in _imported(node, module) if name in MODULES)
        graph[module] = targets - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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
    return sorted(found)


def test_the_graph_sees_known_imports() -> None:
    graph = import_graph()
    assert "voxtray.choices" in graph["voxtray.config"]
    assert "voxtray.errors" in graph["voxtray.config"]
    assert "voxtray.ui.worker" in graph["voxtray.ui.app"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _describe(found: list[list[str]]) -> str:
    return "; ".join(" <-> ".join(component) for component in found)


def test_no_import_cycles_at_module_level() -> None:
    found = cycles(import_graph())
    assert found == [], f"import cycles: {_describe(found)}"


def test_no_import_cycles_through_function_level_imports() -> None:
    found = cycles(import_graph(deferred=True))
    assert found == [], f"import cycles (counting function-level imports): {_describe(found)}"


LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("entry", frozenset({"voxtray.entry", "voxtray.__main__"})),
    ("front ends", frozenset({"voxtray.cli", "voxtray.ui"})),
    ("applications", frozenset({"voxtray.dictation", "voxtray.serve", "voxtray.bench"})),
    (
        "services",
        frozenset({"voxtray.cleanup", "voxtray.history", "voxtray.transcripts", "voxtray.control"}),
    ),
    ("inference", frozenset({"voxtray.inference"})),
    ("models", frozenset({"voxtray.models"})),
    (
        "settings",
        frozenset(
            {
                "voxtray.config",
                "voxtray.settings_writer",
                "voxtray.settings_schema",
                "voxtray.settings_checks",
                "voxtray.settings_spec",
                "voxtray.modes",
            }
        ),
    ),
    (
        "devices",
        frozenset(
            {"voxtray.audio", "voxtray.gpu", "voxtray.desktop", "voxtray.hotkeys", "voxtray.output"}
        ),
    ),
    ("text", frozenset({"voxtray.text"})),
    (
        "foundation",
        frozenset(
            {
                "voxtray",
                "voxtray.errors",
                "voxtray.paths",
                "voxtray.fileio",
                "voxtray.memory",
                "voxtray.resources",
                "voxtray.choices",
                "voxtray.scoring",
            }
        ),
    ),
)
"""The packages and modules of app/voxtray/ from the top layer down: a module may import its
own layer and those below it, never one above. A name stands for itself and, unless it is
`voxtray`, everything under it; the longest name that matches a module decides its layer."""


def layer_of(module: str) -> int:
    """The index in `LAYERS` (0 is the top) of the longest name covering `module`."""
    best, depth = -1, -1
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            covers = module == name or (name != "voxtray" and module.startswith(name + "."))
            if covers and len(name) > depth:
                best, depth = index, len(name)
    return best


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a layer above the importer's, as `importer (layer) -> imported (layer)`."""
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer_of(target) < layer_of(module):
                found.append(
                    f"{module} ({LAYERS[layer_of(module)][0]}) -> "
                    f"{target} ({LAYERS[layer_of(target)][0]})"
                )
    return found


def test_every_module_has_a_layer() -> None:
    assert [module for module in MODULES if layer_of(module) < 0] == []
    assert layer_of("voxtray.gpu.providers") == layer_of("voxtray.audio")
    assert layer_of("voxtray.scoring.wer") > layer_of("voxtray.bench.runner")
    assert upward_imports({"voxtray.errors": {"voxtray.cli.main"}, "voxtray.cli.main": set()})


def test_no_module_imports_a_layer_above_its_own() -> None:
    found = upward_imports(import_graph())
    assert found == [], "imports of a higher layer: " + "; ".join(found)


def test_no_function_level_import_reaches_a_layer_above() -> None:
    found = upward_imports(import_graph(deferred=True))
    assert found == [], "imports of a higher layer (function level): " + "; ".join(found)


def test_the_core_never_imports_qt() -> None:
    offenders = []
    for module in MODULES:
        if module == "voxtray.ui" or module.startswith("voxtray.ui."):
            continue
        for node in _all_imports(_tree(module)):
            if any(name.split(".")[0] == "PySide6" for name in _imported(node, module)):
                offenders.append(f"{module} (line {node.lineno})")
    assert offenders == [], "Qt imported outside app/voxtray/ui: " + ", ".join(offenders)


_TRAY_START = """
import sys
import voxtray.cli.main
import voxtray.ui.app
voxtray.cli.main.get_args([])  # `voxtray` with no arguments builds the whole parser first
heavy = ("asyncio", "ssl", "importlib.metadata", "email", "http.client", "onnx", "tarfile")
print(" ".join(name for name in heavy if name in sys.modules))
"""


def test_the_tray_start_leaves_heavy_modules_unloaded() -> None:
    # Each is resident memory the tray keeps for nothing: asyncio with ssl ~9 MB,
    # importlib.metadata with email ~3 MB, onnx ~11 MB (docs/reliability.md, "Memory").
    done = subprocess.run(
        [sys.executable, "-c", _TRAY_START],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def test_no_test_module_imports_another() -> None:
    """What tests share lives in tests/support; a test module importing another test module
    would run that module's tests' set-up and hide a helper where nobody looks for it."""
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith("tests.") and not name.startswith("tests.support"):
                    offenders.append(f"{path.relative_to(REPO)} imports {name}")
    assert offenders == []
