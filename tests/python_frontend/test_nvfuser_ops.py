"""The ops added for nvFuser parity, written as nvFuser's users write them
(``with FusionDefinition() as fd: ... fd.ops.<op>(...)``), run on CPU torch tensors and compared
with torch. Edge values (signed zeros, infinities, NaN, the integer limits, -1 and 0 divisors)
are among the inputs wherever torch defines the result."""

import math

import pytest
import torch

from widefuse import DataType, FusionDefinition

FLOATS = [torch.float32, torch.float64]
SIGNED = [torch.int8, torch.int16, torch.int32, torch.int64]
INTEGERS = [*SIGNED, torch.uint8]
_DTYPE = {torch.float32: DataType.Float, torch.float64: DataType.Double,
          torch.int8: DataType.Int8, torch.int16: DataType.Int16, torch.int32: DataType.Int32,
          torch.int64: DataType.Int, torch.uint8: DataType.UInt8, torch.bool: DataType.Bool}


def _run(op, *inputs):
    """One fd.ops.<op> over tensors shaped like `inputs`, executed on them."""
    with FusionDefinition() as fd:
        tensors = [fd.define_tensor(shape=[-1], contiguity=[True], dtype=_DTYPE[x.dtype])
                   for x in inputs]
        fd.add_output(getattr(fd.ops, op)(*tensors))
    (result,) = fd.execute(list(inputs))
    return result


def _float_values(dtype):
    values = [0.0, -0.0, 0.5, -0.5, 0.25, 0.9, -0.999, 1.0, -1.0, 1.5, 2.5, -2.5, 3.0, 10.0,
              -100.0, 1e-30, math.inf, -math.inf, math.nan]
    return torch.cat([torch.tensor(values, dtype=dtype),
                      torch.randn(64, generator=torch.Generator().manual_seed(3),
                                  dtype=torch.float64).to(dtype) * 4])


def _integer_values(dtype):
    info = torch.iinfo(dtype)
    values = [0, 1, 2, 3, 7, 12, 100, info.max, info.max - 1]
    if info.min < 0:
        values += [-1, -2, -7, -12, -100, info.min, info.min + 1]
    return torch.tensor([v for v in values if info.min <= v <= info.max], dtype=dtype)


def _close(actual, expected, exact=False, **tolerance):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if exact:
        tolerance = {"rtol": 0, "atol": 0}
    torch.testing.assert_close(actual, expected, equal_nan=True, **tolerance)


UNARY_FLOAT = {
    "acos": torch.acos, "acosh": torch.acosh, "asin": torch.asin, "asinh": torch.asinh,
    "atan": torch.atan, "atanh": torch.atanh, "cosh": torch.cosh, "sinh": torch.sinh,
    "tan": torch.tan, "log10": torch.log10, "erf": torch.erf, "erfc": torch.erfc,
    "erfinv": torch.special.erfinv, "lgamma": torch.lgamma,
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_unary_float_math_matches_torch(op, dtype):
    x = _float_values(dtype)
    _close(_run(op, x), UNARY_FLOAT[op](x))


@pytest.mark.parametrize("op", ["acos", "erf", "lgamma", "log10"])
def test_unary_float_math_promotes_integers_to_float(op):
    x = torch.tensor([0, 1, 2, 5, -3], dtype=torch.int32)
    _close(_run(op, x), UNARY_FLOAT[op](x.to(torch.float32)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_erfcinv_is_erfinv_of_one_minus_x(dtype):
    x = torch.tensor([0.0, 1e-5, 0.1, 0.5, 0.75, 1.0, 1.25, 1.5, 1.9, 2.0, -0.5, 2.5, math.nan],
                     dtype=dtype)
    # The reference in float64, where 1 - x loses little at these points.
    expected = torch.special.erfinv(1 - x.to(torch.float64))
    _close(_run("erfcinv", x).to(torch.float64), expected, rtol=2e-6, atol=1e-12)
    # Far in the tail 1 - x rounds to 1; erfcinv still inverts erfc there.
    tiny = 1e-300 if dtype == torch.float64 else 1e-30
    (y,) = _run("erfcinv", torch.tensor([tiny], dtype=dtype)).tolist()
    assert math.isclose(math.erfc(y), float(torch.tensor(tiny, dtype=dtype)), rel_tol=1e-5)


@pytest.mark.parametrize("dtype", [*FLOATS, *INTEGERS], ids=str)
def test_relu_keeps_the_dtype(dtype):
    x = _float_values(dtype) if dtype.is_floating_point else _integer_values(dtype)
    _close(_run("relu", x), torch.relu(x), exact=True)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_frac_is_x_minus_trunc(dtype):
    x = _float_values(dtype)
    _close(_run("frac", x), torch.frac(x), exact=True)


@pytest.mark.parametrize("dtype", [*FLOATS, *INTEGERS], ids=str)
def test_signbit_and_infinity_predicates(dtype):
    x = _float_values(dtype) if dtype.is_floating_point else _integer_values(dtype)
    for op, reference in [("signbit", torch.signbit), ("isneginf", torch.isneginf),
                          ("isposinf", torch.isposinf), ("isreal", torch.isreal)]:
        _close(_run(op, x), reference(x), exact=True)
    if dtype.is_floating_point:
        assert _run("signbit", torch.tensor([-0.0, 0.0], dtype=dtype)).tolist() == [True, False]


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_integer_div_truncates(dtype):
    a = _integer_values(dtype)
    b = torch.roll(a, 3)
    b[b == 0] = 3
    if dtype.is_signed:  # not lowest / -1: torch traps or is undefined there
        b[(a == torch.iinfo(dtype).min) & (b == -1)] = 2
    _close(_run("div", a, b), torch.div(a, b, rounding_mode="trunc"), exact=True)


@pytest.mark.parametrize("dtype", SIGNED, ids=str)
def test_integer_div_edges_are_defined(dtype):
    lowest = torch.iinfo(dtype).min
    a = torch.tensor([7, -7, lowest, lowest, 5, 0], dtype=dtype)
    b = torch.tensor([0, 0, -1, 1, -1, 0], dtype=dtype)
    assert _run("div", a, b).tolist() == [0, 0, lowest, lowest, -5, 0]  # x / 0 = 0, wraps


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_div_and_truediv_on_floats(dtype):
    a, b = _float_values(dtype), torch.roll(_float_values(dtype), 5)
    _close(_run("div", a, b), torch.div(a, b), exact=True)
    _close(_run("truediv", a, b), torch.true_divide(a, b), exact=True)


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_truediv_of_integers_is_float(dtype):
    a, b = _integer_values(dtype), torch.roll(_integer_values(dtype), 2)
    b[b == 0] = 7
    _close(_run("truediv", a, b), torch.true_divide(a.to(torch.float32), b.to(torch.float32)),
           exact=True)


@pytest.mark.parametrize("dtype", [*FLOATS, *INTEGERS], ids=str)
def test_remainder_mod_and_fmod(dtype):
    if dtype.is_floating_point:
        a = _float_values(dtype)
        b = torch.roll(a, 7)
    else:
        a = _integer_values(dtype)
        b = torch.roll(a, 3)
        b[b == 0] = 5
        if dtype.is_signed:
            b[a == torch.iinfo(dtype).min] = 3  # lowest % -1: torch's result is not defined
    _close(_run("remainder", a, b), torch.remainder(a, b), exact=True)
    _close(_run("fmod", a, b), torch.fmod(a, b), exact=True)
    _close(_run("mod", a, b), torch.fmod(a, b), exact=True)  # nvFuser's mod is C's %


@pytest.mark.parametrize("dtype", SIGNED, ids=str)
def test_remainder_by_zero_and_minus_one_is_zero(dtype):
    lowest = torch.iinfo(dtype).min
    a = torch.tensor([7, -7, lowest, lowest], dtype=dtype)
    b = torch.tensor([0, 0, -1, 0], dtype=dtype)
    assert _run("remainder", a, b).tolist() == [0, 0, 0, 0]
    assert _run("mod", a, b).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nextafter(dtype):
    a = _float_values(dtype)
    for b in (torch.roll(a, 4), torch.full_like(a, math.inf), torch.zeros_like(a)):
        _close(_run("nextafter", a, b), torch.nextafter(a, b), exact=True)


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_gcd(dtype):
    a = _integer_values(dtype)
    b = torch.roll(a, 4)
    _close(_run("gcd", a, b), torch.gcd(a, b), exact=True)
    zero = torch.zeros(1, dtype=dtype)
    assert _run("gcd", zero, zero).tolist() == [0]


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_logical_right_shift(dtype):
    width = torch.iinfo(dtype).bits
    a = _integer_values(dtype)
    for amount in range(-1, width + 2):
        s = torch.full_like(a, amount)
        # torch has no logical shift for signed types: shift in int64 and mask the sign fill.
        a64 = a.to(torch.int64)
        if amount == 0:
            expected = a64
        elif 0 < amount < width:
            expected = (a64 >> amount) & ((1 << (width - amount)) - 1)
        else:
            expected = torch.zeros_like(a64)
        _close(_run("logical_right_shift", a, s), expected.to(dtype), exact=True)
