"""fusion_structure.canonical_form, which the Adam comparison (test_optim_adam_structure.py)
rests on: equal for fusions that differ only in value names and the order of statements and
inputs, different for any other change (an operand's position, a literal's type, an
expression computed twice, a copy_'s destination, the outputs' order, an input's type)."""

import pytest

from widefuse import FusionDefinition

from fusion_structure import canonical_form, parse

BASE = """fusion f(a: f32[4], b: f32[4], s: f64) {
  x = mul(a, s)
  y = sub(x, b)
  z = add(y, 1)
  copy_(z, a)
  return y
}"""


def canonical(text, labels=None):
    # The printer's form, as the comparison reads it (flattened calls, copy_ lines last).
    printed = FusionDefinition.from_text(text).to_text()
    names = [name for name, _ in parse(printed)[0]]
    return canonical_form(printed, labels or {name: name for name in names})


def test_names_statement_order_and_input_order_do_not_count():
    renamed = """fusion g(scale: f64, second: f32[4], first: f32[4]) {
  product = mul(first, scale)
  difference = sub(product, second)
  sum = add(difference, 1)
  copy_(sum, first)
  return difference
}"""
    labels = {"scale": "s", "second": "b", "first": "a"}
    assert canonical(renamed, labels) == canonical(BASE)
    # Independent statements in another order: the same fusion.
    two = "fusion h(a: f32[4], b: f32[4]) {\n  x = neg(a)\n  y = abs(b)\n  return x, y\n}"
    swapped = "fusion h(a: f32[4], b: f32[4]) {\n  y = abs(b)\n  x = neg(a)\n  return x, y\n}"
    assert canonical(two) == canonical(swapped)


@pytest.mark.parametrize("changed", [
    BASE.replace("sub(x, b)", "sub(b, x)"),  # an operand's position
    BASE.replace("add(y, 1)", "add(y, 1.0)"),  # a weak integer is not a weak double
    BASE.replace("add(y, 1)", "add(y, 2)"),  # a literal's value
    BASE.replace("mul(a, s)", "truediv(a, s)"),  # the op
    BASE.replace("copy_(z, a)", "copy_(z, b)"),  # the destination of a copy_
    BASE.replace("return y", "return y, z"),  # the plain outputs
    BASE.replace("b: f32[4]", "b: bf16[4]"),  # an input's type
])
def test_any_other_change_counts(changed):
    assert canonical(changed) != canonical(BASE)


def test_an_expression_computed_twice_differs_from_once():
    once = "fusion f(a: f32[4]) {\n  x = neg(a)\n  y = mul(x, x)\n  return y\n}"
    twice = "fusion f(a: f32[4]) {\n  x = neg(a)\n  x2 = neg(a)\n  y = mul(x, x2)\n  return y\n}"
    assert canonical(once) != canonical(twice)
    assert "# x2" in canonical(twice)


def test_every_input_needs_a_role():
    with pytest.raises(AssertionError, match="labels for"):
        canonical(BASE, {"a": "a", "b": "b"})
