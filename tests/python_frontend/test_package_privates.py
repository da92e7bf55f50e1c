"""No module of the widefuse package reads or writes another module's private attributes.

The rule, checked on the source with ``ast`` (nothing is imported):

- A *private name* begins with an underscore and is not a dunder (``_inputs``, ``_running``,
  ``__mangled``; not ``__init__``).
- A module *owns* a private name that it binds itself: at module level (an assignment, a
  ``def``, a ``class``; not an import), in the body of a class it defines (an assignment, a
  ``def``, an entry of ``__slots__``), or through the first parameter of a method of such a
  class (``self._x = ...``, ``cls._x = ...``, ``setattr(self, "_x", ...)``,
  ``object.__setattr__(self, "_x", ...)``).
- A module *uses* a private name where it reads, writes or deletes it as an attribute
  (``x._name``; ``getattr``, ``setattr``, ``delattr`` or ``hasattr`` with the name as a
  literal string) or imports it from a module of the package (``from .m import _name``).
- A module may use the private names it owns, on any object. It may not use a private name
  that only other modules of the package own: that is reaching into another module's object
  (``fd._running(...)``, ``execution._prepared``), whatever the object is; ``self._x`` in a
  subclass of another module's class counts too, since the base class owns ``_x``.

Private names that no module of the package owns belong to a dependency or to the extension
(torch's ``grad._version``, Thunder's ``jitted._lc_cs``, ``_widefuse._Executor``, whose
underscore marks the extension's interface to the package) and are outside this rule. The
rule is by name: a module that owns ``_options`` itself is not told when it reads another
module's ``_options``; both modules then bind the name, which a reader can find.

The fields of a traced value (``definition``, ``handle``, ``depends``, ...) are public fields
of the extension's ``_widefuse.TracedValue``, which ``widefuse.values.Value`` extends; no
module of the package owns them, and the extension reads no attribute of the package
(test_binding_attribute_reads.py).
"""

import ast
from pathlib import Path
from typing import Optional

from test_package_layers import module_names

PACKAGE = Path(__file__).resolve().parents[2] / "python_frontend" / "widefuse"
_NAME_FUNCTIONS = ("getattr", "setattr", "delattr", "hasattr")


def is_private(name: str) -> bool:
    """True for `_name` and `__name`; dunders (`__init__`) are not private."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _literal_name(call: ast.Call, position: int) -> str:
    """The literal string argument `position` of `call`, or ''."""
    if len(call.args) > position and isinstance(call.args[position], ast.Constant) and \
            isinstance(call.args[position].value, str):
        return call.args[position].value
    return ""


def _is_named(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _bound_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds (a, (a, b), [a, *b])."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _bound_names(element)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _statement_names(statement: ast.stmt) -> list[str]:
    """The names one statement of a module or class body binds."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if isinstance(statement, ast.Assign):
        return [name for target in statement.targets for name in _bound_names(target)]
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        return _bound_names(statement.target)
    if isinstance(statement, (ast.If, ast.Try)):  # `if sys.platform ...:`, `try: ...`
        nested = [*statement.body, *statement.orelse, *getattr(statement, "finalbody", [])]
        for handler in getattr(statement, "handlers", []):
            nested.extend(handler.body)
        return [name for inner in nested for name in _statement_names(inner)]
    return []


def _slots(statement: ast.stmt) -> list[str]:
    """The entries of a class body's ``__slots__ = (...)``."""
    if isinstance(statement, ast.Assign) and any(_is_named(t, "__slots__")
                                                 for t in statement.targets):
        value = statement.value
        elements = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
        return [e.value for e in elements
                if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _owned_through(method: ast.AST, receiver: str) -> list[str]:
    """The attributes a method binds on its first parameter `receiver`."""
    names = []
    for node in ast.walk(method):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                _is_named(node.value, receiver):
            names.append(node.attr)
        elif isinstance(node, ast.Call):
            function = node.func
            if _is_named(function, "setattr") and node.args and \
                    _is_named(node.args[0], receiver):
                names.append(_literal_name(node, 1))
            elif isinstance(function, ast.Attribute) and function.attr == "__setattr__" and \
                    _is_named(function.value, "object") and node.args and \
                    _is_named(node.args[0], receiver):
                names.append(_literal_name(node, 1))
    return names


def owned_names(tree: ast.Module) -> set[str]:
    """The private names a module owns (see the module's docstring)."""
    names = [name for statement in tree.body for name in _statement_names(statement)]
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            names.extend(_statement_names(statement))
            names.extend(_slots(statement))
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    statement.args.args:
                names.extend(_owned_through(statement, statement.args.args[0].arg))
    return {name for name in names if is_private(name)}


def _package_module(node: ast.ImportFrom, module: str, is_package: bool,
                    modules: dict) -> bool:
    """True when `from ... import ...` statement `node` of `module` imports from a module of
    the package (as test_package_layers resolves relative imports)."""
    if node.level:
        base = module.split(".")
        base = base[:len(base) - node.level + (1 if is_package else 0)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return source in modules


def used_names(tree: ast.Module, module: str, is_package: bool,
               modules: dict) -> list[tuple[str, int]]:
    """Each private name a module uses, with its line."""
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            uses.append((node.attr, node.lineno))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in _NAME_FUNCTIONS and is_private(_literal_name(node, 1)):
            uses.append((_literal_name(node, 1), node.lineno))
        elif isinstance(node, ast.ImportFrom) and \
                _package_module(node, module, is_package, modules):
            uses.extend((alias.name, node.lineno) for alias in node.names
                        if is_private(alias.name))
    return uses


def foreign_private_uses(root: Path, package: str,
                         allowed: Optional[dict] = None) -> list[str]:
    """Every use of a private name that the using module does not own and another module of
    the package does, as "module:line: _name (owned by module, ...)"; `allowed[module]`: the
    names module may use all the same."""
    modules = module_names(root, package)
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in modules.items()}
    owners: dict[str, list[str]] = {}
    owned = {}
    for name, tree in trees.items():
        owned[name] = owned_names(tree)
        for private in owned[name]:
            owners.setdefault(private, []).append(name)
    found = set()
    for name, tree in trees.items():
        is_package = modules[name].name == "__init__.py"
        for private, line in used_names(tree, name, is_package, modules):
            if private not in owned[name] and private in owners and \
                    private not in (allowed or {}).get(name, ()):
                found.add((name, line, private))
    return [f"{name}:{line}: {private} (owned by {', '.join(sorted(owners[private]))})"
            for name, line, private in sorted(found)]


def test_no_module_uses_another_modules_privates():
    # The walk must see the package: the owners below are what the rule compares against.
    trees = {name: ast.parse(path.read_text())
             for name, path in module_names(PACKAGE, "widefuse").items()}
    assert "_runner" in owned_names(trees["widefuse.fusion_definition"])
    assert "_builder" in owned_names(trees["widefuse.fusion_definition"])
    found = foreign_private_uses(PACKAGE, "widefuse")
    assert not found, "private attributes used across modules:\n" + "\n".join(found)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_reading_writing_or_importing_another_modules_private_is_found(tmp_path):
    _write(tmp_path, {
        "__init__.py": "",
        "owner.py": ("_TABLE = {}\n\nclass Owner:\n    __slots__ = ('_slot',)\n"
                     "    _flag = False\n\n    def __init__(self):\n"
                     "        self._state = 1\n        object.__setattr__(self, '_frozen', 2)\n"
                     "\n    def _helper(self):\n        return self._state\n"),
        "user.py": ("from .owner import Owner, _TABLE\n\n"
                    "def use(owner):\n    owner._state = owner._slot\n"
                    "    del owner._frozen\n    return getattr(owner, '_flag', None)\n\n"
                    "class Sub(Owner):\n    def run(self):\n        return self._helper()\n"),
    })
    assert owned_names(ast.parse((tmp_path / "owner.py").read_text())) == {
        "_TABLE", "_slot", "_flag", "_state", "_frozen", "_helper"}
    assert foreign_private_uses(tmp_path, "pkg") == [
        "pkg.user:1: _TABLE (owned by pkg.owner)",
        "pkg.user:4: _slot (owned by pkg.owner)",
        "pkg.user:4: _state (owned by pkg.owner)",
        "pkg.user:5: _frozen (owned by pkg.owner)",
        "pkg.user:6: _flag (owned by pkg.owner)",
        "pkg.user:10: _helper (owned by pkg.owner)",
    ]


def test_own_privates_and_a_dependencys_are_allowed(tmp_path):
    _write(tmp_path, {
        "__init__.py": "",
        "owner.py": "class Owner:\n    def __init__(self):\n        self._state = 1\n",
        # Its own _state (on any object), a dependency's privates, dunders.
        "user.py": ("import sys\n\nclass Other:\n    def __init__(self):\n"
                    "        self._state = 0\n\n"
                    "def use(a, b, grad):\n    a._state = b._state\n"
                    "    frame = sys._getframe()\n    return grad._version, a.__class__\n"),
    })
    assert foreign_private_uses(tmp_path, "pkg") == []
