"""Shared by the complex-number tests (test_complex.py, test_complex_frontend.py): the
dtypes, the tolerances against torch, the op tables and the input grids."""

import itertools
import math
import warnings

import pytest

from widefuse import DataType

torch = pytest.importorskip("torch")

COMPLEX = [(DataType.ComplexFloat, torch.complex64), (DataType.ComplexDouble, torch.complex128)]
TORCH_PART = {torch.complex64: torch.float32, torch.complex128: torch.float64}
TOLERANCE = {torch.complex64: 1e-5, torch.complex128: 1e-12,
             torch.float32: 1e-5, torch.float64: 1e-12}
# The ops docs/ir_reference.md defines on complex operands (ir/op_kind.cpp, acceptsComplex),
# with torch's function for each; abs, real and imag give the part dtype, the predicates bool.
UNARY = {
    "neg": torch.neg, "abs": torch.abs, "reciprocal": torch.reciprocal, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "exp": torch.exp, "log": torch.log, "log2": torch.log2,
    "log10": torch.log10, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "asinh": torch.asinh,
    "acosh": torch.acosh, "atanh": torch.atanh,
    "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite,
    "isreal": torch.isreal, "logical_not": torch.logical_not, "real": torch.real,
    "imag": torch.imag, "set": torch.clone,
}
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "truediv": torch.true_divide, "pow": torch.pow, "eq": torch.eq, "ne": torch.ne,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or,
}
# Small special values: each part from this list, every combination (100 numbers; 10,000
# pairs for binary ops).
PARTS = [0.0, -0.0, 1e-3, -1e-3, 0.25, -0.25, 1.0, -1.0, 2.718, -2.718]
# The host backend and the reference evaluator (bit for bit equal by design).
BACKENDS = ["host", "reference"]
# Special values with infinities and NaNs (for predicates, equality, casts, and the host
# backend against the reference).
SPECIAL = [0.0, -0.0, 1.0, -2.5, math.inf, -math.inf, math.nan]
# nvFuser's "extremal" parts, and a finite value whose square, exp and cosh overflow: C99
# Annex G's special cases (ir/complex_math.h), against torch's CPU kernels part by part.
EXTREMAL = {torch.complex64: [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e38, -1e38],
            torch.complex128: [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e300,
                               -1e300]}


def _complex(re, im, dtype):
    return torch.complex(torch.as_tensor(re, dtype=torch.float64),
                         torch.as_tensor(im, dtype=torch.float64)).to(dtype)


def _grid(dtype, parts=PARTS):
    re, im = zip(*itertools.product(parts, parts))
    return _complex(re, im, dtype)


def _uniform(dtype, n, seed):
    """Real and imaginary parts uniform in [-9, 9)."""
    parts = torch.rand(2, n, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64) * 18 - 9
    return _complex(parts[0], parts[1], dtype)


def _close(actual, expected, what=""):
    """torch's assert_close at this file's tolerance for the dtype (exact for bool)."""
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    tolerance = TOLERANCE.get(expected.dtype, 0)
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance,
                               equal_nan=True, msg=lambda m: f"{what}: {m}")


def _close_parts(actual, expected, what=""):
    """Part by part (a NaN beside a number is not the complex NaN assert_close would make of
    it): NaN where torch has NaN (of either sign, docs/ir_reference.md), infinities of the
    same sign, finite parts within this file's tolerance."""
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    if expected.is_complex():
        actual, expected = torch.view_as_real(actual), torch.view_as_real(expected)
    tolerance = TOLERANCE.get(expected.dtype, 0)
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance,
                               equal_nan=True, msg=lambda m: f"{what}: {m}")


def _run(fd, inputs, **how):
    with warnings.catch_warnings():  # torch warns when it drops an imaginary part; not here
        warnings.simplefilter("ignore")
        return fd.execute(inputs, **how)


# The torch dtype of each DataType the tests use.
TORCH_DTYPE = {DataType.Float: torch.float32, DataType.Double: torch.float64,
               DataType.Half: torch.float16, DataType.BFloat16: torch.bfloat16,
               DataType.Int32: torch.int32, DataType.Int: torch.int64, DataType.Bool: torch.bool,
               DataType.ComplexFloat: torch.complex64, DataType.ComplexDouble: torch.complex128}
