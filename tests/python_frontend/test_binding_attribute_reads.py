"""No C++ source of the extension reads a widefuse Python attribute by name.

The extension (``python_frontend/bindings``, ``python_frontend/*.cpp``) and the package
(``python_frontend/widefuse``) meet through the extension's own classes and functions: the
package calls them and subclasses them (``widefuse.values.Value`` extends
``_widefuse.TracedValue``); the C++ side never looks up what the package defines. Otherwise a
rename in Python breaks C++ silently (the C++ side would decline, or fail, at run time), and
the rule that each module owns its privates (test_package_privates.py) would end at the
language boundary.

The rule, checked on the source (comments and the text of strings aside):

- A *name read* is a string literal naming a Python attribute in C++: the first literal
  argument of a call whose function's name says it reads an attribute (``.attr(...)``,
  ``getattr``/``hasattr``/``setattr``/``delattr``, ``PyObject_{Get,Set,Has,Del}AttrString``,
  a file's own ``attribute(...)`` or ``property(...)`` helper), of
  ``PyUnicode_InternFromString`` and ``PyUnicode_FromString`` (names made for a later
  ``PyObject_GetAttr``),
  ``PyDict_GetItemString`` (a type's ``__dict__``), and a string literal subscript that is
  read, not assigned (``slots["_fd"]`` of a class's ``__dict__``); and ``import_`` of a
  module of the package (``import_("widefuse.values")``).
- The *package's names* are every name widefuse's Python package binds: at module level, in
  a class body (methods, properties, ``__slots__`` entries), through a method's first
  parameter (``self.name = ...``), and its module names.
- A binding source may not read a package name, except those a third-party interface defines
  as well and that a file reads from that library's objects: THIRD_PARTY below lists them by
  file, with the library. (Dunders are Python's and read freely.)
"""

import ast
import re
from pathlib import Path

from test_package_layers import module_names

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python_frontend" / "widefuse"
SOURCES = ROOT / "python_frontend"

# Names that widefuse's package binds too, read by a binding source from another library's
# objects: by file, the names and whose interface they are.
THIRD_PARTY = {
    # torch's public tensor API (the torch module, torch.Tensor, torch._C.TensorBase's
    # properties and methods): see the file's header.
    "torch_tensor_reader.cpp": {"torch", "Tensor", "shape", "dtype", "layout"},
    # NumPy's: numpy.ndarray's dtype, shape (and strides, __array_interface__).
    "array_reader.cpp": {"dtype", "shape"},
    # NumPy's: numpy.ndarray.ndim (a 0-d array given for a number).
    "argument_reader.cpp": {"ndim"},
}

# Calls that name an attribute: any function whose name says so (attr, getattr,
# PyObject_GetAttrString, a file's own attribute() or property() helper, ...), and the
# functions that make or look up a name for a later read.
_READ_CALLS = (r"\w*(?:attr|Attr|attribute|Attribute|property|Property)\w*",
               "PyUnicode_InternFromString", "PyUnicode_FromString", "PyDict_GetItemString",
               "import_")
_LITERAL = r'"((?:[^"\\]|\\.)*)"'
# A call of one of _READ_CALLS with a string literal among its arguments (before the first
# closing parenthesis: the calls above take no nested calls before their name).
_CALL = re.compile(r"\b(" + "|".join(_READ_CALLS) + r")\s*\(([^()]*?)" + _LITERAL)
# A literal subscript that is not assigned to: `x["name"]` but not `facts["name"] = ...`.
_SUBSCRIPT = re.compile(r"\[\s*" + _LITERAL + r"\s*\](?!\s*=[^=])")


def strip_comments(text: str) -> str:
    """C++ source without comments (string literals kept as they are)."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', re.S)
    return pattern.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", text)


def name_reads(text: str) -> list[tuple[str, int, bool]]:
    """Each attribute name a C++ source reads by a string literal, with its line and whether
    it names a module (import_)."""
    code = strip_comments(text)
    reads = []
    for match in _CALL.finditer(code):
        line = code.count("\n", 0, match.start(3)) + 1
        reads.append((match.group(3), line, match.group(1) == "import_"))
    for match in _SUBSCRIPT.finditer(code):
        reads.append((match.group(1), code.count("\n", 0, match.start(1)) + 1, False))
    return sorted(reads, key=lambda read: read[1])


def _bound(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _bound(element)]
    return []


def _body_names(body: list) -> list[str]:
    """The names the statements of a module or class body bind (nested if/try included)."""
    names = []
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(statement.name)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                names.extend(_bound(target))
                if isinstance(target, ast.Name) and target.id == "__slots__" and \
                        isinstance(statement.value, (ast.Tuple, ast.List)):
                    names.extend(e.value for e in statement.value.elts
                                 if isinstance(e, ast.Constant) and isinstance(e.value, str))
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
            names.extend(_bound(statement.target))
        elif isinstance(statement, (ast.If, ast.Try)):
            nested = [*statement.body, *statement.orelse, *getattr(statement, "finalbody", [])]
            for handler in getattr(statement, "handlers", []):
                nested.extend(handler.body)
            names.extend(_body_names(nested))
    return names


def package_names(root: Path, package: str) -> set[str]:
    """Every name the package binds (see the module's docstring)."""
    names = set()
    for module, path in module_names(root, package).items():
        names.update(module.split("."))
        tree = ast.parse(path.read_text(), str(path))
        names.update(_body_names(tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names.update(_body_names(node.body))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)  # self.name = ..., cls.name = ..., module.name = ...
    return {name for name in names if not (name.startswith("__") and name.endswith("__"))}


def package_name_reads(sources: Path, package: str, names: set[str],
                       allowed: dict) -> list[str]:
    """"file:line: name" for each read of one of `names` (or import of a module of `package`)
    that `allowed` does not list."""
    found = []
    for path in sorted([*sources.rglob("*.cpp"), *sources.rglob("*.h")]):
        for name, line, is_module in name_reads(path.read_text()):
            ours = name.split(".")[0] == package if is_module else name in names
            if ours and name not in allowed.get(path.name, ()):
                found.append(f"{path.relative_to(sources)}:{line}: {name}")
    return found


def test_no_binding_source_reads_a_widefuse_attribute_by_name():
    names = package_names(PACKAGE, "widefuse")
    assert {"Tensor", "definition", "pointwise", "values"} <= names  # the walk sees the package
    found = package_name_reads(SOURCES, "widefuse", names, THIRD_PARTY)
    assert not found, "binding sources read widefuse attributes by name:\n" + "\n".join(found)
    # Each third-party entry is still read and still a package name: the lists only shrink.
    for file, listed in THIRD_PARTY.items():
        (path,) = SOURCES.rglob(file)
        read = {name for name, _, _ in name_reads(path.read_text())}
        assert listed <= read & names, (file, listed - (read & names))


def test_reads_by_name_are_found(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "values.py").write_text(
        "class Value:\n    __slots__ = ('_fd',)\n\n    def __init__(self):\n"
        "        self._depends = 1\n\n    def pointwise(self):\n        pass\n")
    names = package_names(tmp_path / "pkg", "pkg")
    assert {"Value", "_fd", "_depends", "pointwise", "values"} <= names
    source = tmp_path / "src"
    source.mkdir()
    (source / "reader.cpp").write_text(
        '// value.attr("pointwise") in a comment is no read\n'
        'nb::object a = value.attr("pointwise");\n'
        'PyObject* b = PyObject_GetAttrString(value, "_depends");\n'
        'nb::object slots = type.attr("__dict__");\nSlot fd(slots["_fd"]);\n'
        'facts["_fd"] = 1;  // a dict the extension writes: no read\n'
        'PyObject* c = PyUnicode_InternFromString("Value");\n'
        'auto d = nb::module_::import_("pkg.values");\n'
        'auto e = nb::module_::import_("numpy").attr("ndarray");  // another library\n'
        'const char* text = "value.attr(\\"_fd\\")";  // text, not a read\n')
    assert package_name_reads(source, "pkg", names, {}) == [
        "reader.cpp:2: pointwise", "reader.cpp:3: _depends", "reader.cpp:5: _fd",
        "reader.cpp:7: Value", "reader.cpp:8: pkg.values"]
    assert package_name_reads(source, "pkg", names, {"reader.cpp": {
        "pointwise", "_depends", "_fd", "Value", "pkg.values"}}) == []
