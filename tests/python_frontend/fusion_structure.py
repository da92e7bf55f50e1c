"""The canonical structure of a fusion's text form (docs/text_form.md), for tests
that compare two fusions built by different code: equal canonical forms mean equal fusions up
to value names and the order of their statements and inputs.

``canonical_form(text, labels)`` reads the printer's output (one statement per expression,
nested calls already flattened) and writes it again with

- every input named by ``labels`` (input name -> a role such as ``param0``), listed sorted by
  role with its type: the two fusions' inputs are matched by role, not by position;
- every expression named ``v<n>`` by a canonical order: by depth (the longest path from an
  input), then by its text with its operands' canonical names. Expressions with equal text
  compute the same value; they are written once, with ``# x<k>`` when the fusion computes it
  k times, so that a fusion that computes something twice still differs from one that
  computes it once;
- the ``copy_`` statements sorted by destination, the ``return`` as it is (the order of plain
  outputs is part of a fusion's interface).

Literals, dtypes and attributes are kept as the printer wrote them: ``1`` (a weak integer) and
``1.0`` (a weak double) differ, as they do in the IR."""

from __future__ import annotations

import re
from collections import Counter

_HEADER = re.compile(r"fusion\s+([A-Za-z_][A-Za-z0-9_]*)\s*\((.*?)\)\s*\{", re.S)
_STATEMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([A-Za-z_][A-Za-z0-9_]*)\((.*)\)$")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _split_arguments(text: str) -> list[str]:
    """The comma-separated arguments of a call, brackets kept whole ([2, 4] is one)."""
    arguments, depth, current = [], 0, ""
    for character in text:
        if character in "[{(":
            depth += 1
        elif character in "]})":
            depth -= 1
        if character == "," and depth == 0:
            arguments.append(current.strip())
            current = ""
        else:
            current += character
    if current.strip():
        arguments.append(current.strip())
    return arguments


def parse(text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, list[str]]],
                              list[tuple[str, str]], list[str]]:
    """(inputs as (name, type), statements as (name, op, arguments), copies as (source,
    destination), returned names) of the printer's text form."""
    header = _HEADER.search(text)
    assert header, f"not a fusion's text form:\n{text[:200]}"
    inputs = []
    for parameter in _split_arguments(header.group(2)):
        name, _, type_text = parameter.partition(":")
        inputs.append((name.strip(), " ".join(type_text.split())))
    statements, copies, returned = [], [], []
    body = text[header.end():text.rindex("}")]
    for line in body.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("copy_("):
            source, destination = _split_arguments(line[len("copy_("):-1])
            copies.append((source, destination))
        elif line.startswith("return "):
            returned = [name.strip() for name in line[len("return "):].split(",")]
        else:
            match = _STATEMENT.match(line)
            assert match, f"unexpected statement: {line}"
            statements.append((match.group(1), match.group(2), _split_arguments(match.group(3))))
    return inputs, statements, copies, returned


def canonical_form(text: str, labels: dict[str, str]) -> str:
    """The canonical text of a fusion's text form (see the module's docstring); `labels` names
    every input by its role."""
    inputs, statements, copies, returned = parse(text)
    names = {name for name, _ in inputs}
    assert set(labels) == names, f"labels for {sorted(labels)}, inputs {sorted(names)}"
    canonical = {name: labels[name] for name in names}
    depth = {name: 0 for name in names}

    def rename(argument: str) -> str:
        # An operand is a value name or a literal; a bracketed shape may hold value names.
        return _IDENTIFIER.sub(lambda m: canonical.get(m.group(0), m.group(0)), argument)

    for name, _, arguments in statements:
        depth[name] = 1 + max((depth[word] for argument in arguments
                               for word in _IDENTIFIER.findall(argument) if word in depth),
                              default=0)
    lines = [f"{labels[name]}: {type_text}" for name, type_text in
             sorted(inputs, key=lambda item: labels[item[0]])]
    by_depth: dict[int, list[tuple[str, str]]] = {}
    for name, op, arguments in statements:
        by_depth.setdefault(depth[name], []).append((name, op))
    count = 0
    for level in sorted(by_depth):
        # Operands are shallower: their canonical names are known.
        rendered = {name: f"{op}({', '.join(rename(a) for a in arguments)})"
                    for name, op, arguments in statements if depth[name] == level}
        multiplicity = Counter(rendered.values())
        for text_of_value in sorted(multiplicity):
            value = f"v{count}"
            count += 1
            times = multiplicity[text_of_value]
            lines.append(f"{value} = {text_of_value}" + (f"  # x{times}" if times > 1 else ""))
            for name, rendered_text in rendered.items():
                if rendered_text == text_of_value:
                    canonical[name] = value
    lines += [f"copy_({canonical[source]}, {canonical[destination]})"
              for source, destination in sorted(copies, key=lambda c: canonical[c[1]])]
    if returned:
        lines.append("return " + ", ".join(canonical[name] for name in returned))
    return "\n".join(lines) + "\n"
