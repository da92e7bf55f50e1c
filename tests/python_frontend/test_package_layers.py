"""The widefuse package's modules form layers: no import cycle, counting every import.

Module-level imports, imports under ``if TYPE_CHECKING:`` and imports inside functions all
count, since each one is a dependency a reader has to follow. The graph is read from the
source with ``ast``; nothing is imported.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python_frontend" / "widefuse"
# Modules of the package built from C++ (no source to parse; they import nothing of it).
EXTENSIONS = ("widefuse._widefuse",)


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under `root` by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join([package, *parts])] = path
    return modules


def _imported(node: ast.AST, module: str, is_package: bool, modules: dict) -> list[str]:
    """The modules of `modules` that import statement `node` of `module` names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            # The package a relative import starts from: the module's own for __init__.
            base = module.split(".")
            base = base[:len(base) - node.level + (1 if is_package else 0)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        # `from . import values` imports the module values; `from .values import Tensor`
        # imports the module .values.
        names = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix
                 for alias in node.names]
    else:
        return []
    # Modules outside the package (numpy, torch) are no nodes of the graph.
    return [name for name in names if name in modules and name != module]


def import_graph(root: Path, package: str, extensions=()) -> dict[str, set[str]]:
    """Each module's imports of other modules of the package, wherever in the file they are;
    `extensions` names the package's compiled modules."""
    modules: dict = {**module_names(root, package), **dict.fromkeys(extensions)}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        if path is None:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            graph[name].update(_imported(node, name, path.name == "__init__.py", modules))
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as [a, b, ..., a], or [] when the graph has none."""
    state: dict[str, str] = {}  # "open" while on the path, "done" once fully explored
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = "done"
        return []

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return []


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE, "widefuse", EXTENSIONS)
    # The walk must see the package: a graph without the frontend's edges would pass vacuously.
    assert "widefuse.values" in graph["widefuse.fusion_definition"]
    assert "widefuse.fusion_definition" in graph["widefuse.tracer"]
    cycle = find_cycle(graph)
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_optim_and_thunder_are_the_top_layer():
    """widefuse.optim and widefuse.thunder (the top layer of docs/architecture.md's table)
    build on the rest of the package: no other module imports them, nor either the other."""
    graph = import_graph(PACKAGE, "widefuse", EXTENSIONS)
    tops = ("widefuse.optim", "widefuse.thunder")

    def top_of(module: str) -> str:
        return next((top for top in tops if module == top or module.startswith(top + ".")), "")

    # Both are subpackages the walk sees.
    assert "widefuse.thunder.regions" in graph["widefuse.thunder.jit_function"]
    assert "widefuse.optim.step_fusion" in graph["widefuse.optim.pointwise_optimizer"]
    for module, imported in sorted(graph.items()):
        for target in sorted(imported):
            if top_of(target):
                assert top_of(module) == top_of(target), f"{module} imports {target}"


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_imports_in_functions_and_under_type_checking_count(tmp_path):
    _write(tmp_path, {
        "__init__.py": "",
        "low.py": "def late():\n    from .high import thing\n",
        "high.py": "from . import low\n",
    })
    assert find_cycle(import_graph(tmp_path, "pkg")) == ["pkg.high", "pkg.low", "pkg.high"]
    _write(tmp_path, {"low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                "    import pkg.high\n"})
    assert find_cycle(import_graph(tmp_path, "pkg")) == ["pkg.high", "pkg.low", "pkg.high"]
    _write(tmp_path, {"low.py": "import numpy\n"})
    assert find_cycle(import_graph(tmp_path, "pkg")) == []


def test_relative_imports_from_a_subpackage_resolve(tmp_path):
    _write(tmp_path, {
        "__init__.py": "from .sub import worker\n",
        "base.py": "def late():\n    from .sub.worker import run\n",
        "sub/__init__.py": "from . import worker\n",
        "sub/worker.py": "from ..base import late\nfrom .. import base\n",
    })
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg"] == {"pkg.sub.worker"}
    assert graph["pkg.sub"] == {"pkg.sub.worker"}
    assert graph["pkg.sub.worker"] == {"pkg.base"}
    assert graph["pkg.base"] == {"pkg.sub.worker"}
    assert find_cycle(graph) == ["pkg.sub.worker", "pkg.base", "pkg.sub.worker"]
