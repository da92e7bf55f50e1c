"""NumPy oracles for every op of fd.ops: the dtypes NumPy models, the typing rules of
docs/ir_reference.md, and per op the expected values (exact rational arithmetic where NumPy
rounds differently), for test_ops.py.
"""

import fractions
import math
from typing import Callable, NamedTuple

import ml_dtypes
import numpy as np
import pytest

from widefuse import DataType


# The 12 types NumPy (with ml_dtypes' bfloat16) models here; Int64 is an alias of Int. The fp8
# types are checked against torch's conversions in test_torch_float8.py, and every op on them
# against the reference by the host backend's tests; the complex types, on which most of these
# ops are not defined, against torch in test_complex.py.
DTYPES = [d for d in DataType if not d.value.startswith("f8") and not d.is_complex]
INTEGER = [d for d in DTYPES if d is not DataType.Bool and not d.is_floating_point]
BACKENDS = ("host", "reference")
F16, BF16, F32, F64 = map(np.dtype, (np.float16, ml_dtypes.bfloat16, np.float32, np.float64))
FLOAT_NP = (F16, BF16, F32, F64)
# Transcendental ops and floating pow may be this many units in the last place of the result
# dtype away from the correctly rounded result: libm's f32/f64 functions are within 1 ulp (the
# most seen here), and an f16/bf16 result can move by one more next to a rounding boundary.
# Where the exact result is zero, infinite or NaN, it must match exactly.
TRANSCENDENTAL_ULPS = 2

# The typing rules of docs/ir_reference.md section 5, for operands of one dtype.
_RULES = [
    ("neg abs floor ceil round trunc sign add sub mul pow fmod fma clamp relu frac div remainder",
     lambda d: d is not DataType.Bool),
    ("maximum minimum set where isnan isinf isfinite eq ne lt le gt ge logical_not logical_and "
     "logical_or sqrt rsqrt reciprocal exp exp2 log log2 log1p expm1 sin cos tanh sigmoid atan2 "
     "hypot copysign truediv acos acosh asin asinh atan atanh cosh sinh tan log10 erf erfc erfinv "
     "erfcinv lgamma signbit isneginf isposinf isreal real", lambda d: True),
    ("bitwise_not bitwise_and bitwise_or bitwise_xor",
     lambda d: d is DataType.Bool or d in INTEGER),
    ("shift_left shift_right logical_right_shift gcd", lambda d: d in INTEGER),
    ("nextafter", lambda d: d in (DataType.Float, DataType.Double)),
    ("lerp", lambda d: d.is_floating_point),
    # The complex parts (test_complex.py has the complex operands): real of a real value is the
    # value, imag of one is refused, complex(re, im) takes f32 or f64 parts.
    ("imag", lambda d: False),
    ("complex", lambda d: d in (DataType.Float, DataType.Double)),
]
ACCEPTS = {op: rule for ops, rule in _RULES for op in ops.split()}
# Tested on their own: ops with attributes, and the reductions (test_reductions.py, the block
# scope and expand_blocks included; test_codebook_ops.py, code_value and nearest_code;
# test_element_index.py, element_index).
ATTRIBUTE_OPS = {"cast", "bitcast", "broadcast_in_dim", "size", "expand_blocks", "sum", "max",
                 "min", "any", "all", "code_value", "nearest_code", "element_index"}
NVFUSER_NAME = {"shift_left": "bitwise_left_shift", "shift_right": "bitwise_right_shift"}

# ---- expected values -------------------------------------------------------------------------


def _exact(x):  # floating arrays as f64 (exact); integer and bool arrays unchanged
    return x.astype(F64) if x.dtype in FLOAT_NP else x


def _c(x):  # to the compute type of the array's own dtype (f32 for f16/bf16)
    return x.astype(F32) if x.dtype in (F16, BF16) else x


def _fc(x):  # to the compute type of FloatMath and div (integers and bool: f32)
    return x if x.dtype in (F32, F64) else x.astype(F32)


def _float_result(x):  # the result dtype of FloatMath and div
    return x.dtype if x.dtype in FLOAT_NP else F32


def _truth(x):
    return _exact(x) != 0


def _store(value, dtype):  # f32 -> f16/bf16 rounds to nearest even
    with np.errstate(all="ignore"):
        return value.astype(dtype)


def _odd_f32(x):
    """f64 -> f32 rounded to odd, after which rounding to f16/bf16 is exact (ml_dtypes rounds
    f64 -> bf16 through f32, rounding twice to nearest)."""
    x = np.asarray(x, F64)
    with np.errstate(all="ignore"):
        t = x.astype(F32)
        too_far = np.isfinite(x) & (np.abs(t.astype(F64)) > np.abs(x))
        t = np.where(too_far, np.nextafter(t, F32.type(0)), t)
    inexact = np.isfinite(x) & (t.astype(F64) != x)
    return (t.view(np.uint32) | inexact.astype(np.uint32)).view(F32)


def _round(values, dtype):
    """Exact (f64) values rounded once to floating `dtype`."""
    values = np.asarray(values, F64)
    return _store(_odd_f32(values) if dtype in (F16, BF16) else values, dtype)


def _wrap(ints, dtype):
    """Python integers modulo 2^width in an integer dtype."""
    modulus = 1 << (8 * dtype.itemsize)
    unsigned = np.dtype(f"u{dtype.itemsize}")
    return np.array([v % modulus for v in ints], np.uint64).astype(unsigned).view(dtype)


def _oracle(function, *xs):
    """`function` in long double (64-bit significand), rounded to the compute type of xs."""
    with np.errstate(all="ignore"):
        return function(*(x.astype(np.longdouble) for x in xs)).astype(xs[0].dtype)


def _extremum(a, b, greater):
    """maximum/minimum as documented: NaN propagates, a tie gives the second operand."""
    with np.errstate(all="ignore"):
        pick = np.where(a > b if greater else a < b, a, b)
        if a.dtype in FLOAT_NP:
            pick = np.where(np.isnan(a) | np.isnan(b), np.nan, pick).astype(a.dtype)
    return pick


def _fma_exact(x, y, z, single):
    """x * y + z rounded once to f64, or for `single` to odd in f64 (exact rationals)."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return x * y + z
    if not math.isfinite(z):
        return z
    exact = fractions.Fraction(x) * fractions.Fraction(y) + fractions.Fraction(z)
    if exact == 0:
        return x * y + z  # the IEEE sign of an exact zero
    try:
        r = float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf
    if single and fractions.Fraction(r) != exact:
        if abs(fractions.Fraction(r)) > abs(exact):
            r = float(np.nextafter(r, 0.0))
        r = (np.array([r]).view(np.uint64) | np.uint64(1)).view(F64)[0].item()
    return r


def _fma(a, b, c):
    if a.dtype not in FLOAT_NP:
        return (a * b + c).astype(a.dtype)  # NumPy wraps integer arrays
    a32, b32, c32 = _c(a), _c(b), _c(c)
    single = a32.dtype == F32
    out = [_fma_exact(x, y, z, single) for x, y, z in zip(a32.tolist(), b32.tolist(), c32.tolist())]
    return _store(_store(np.array(out, F64), a32.dtype), a.dtype)


def _pow(a, e):
    if a.dtype in FLOAT_NP:
        return _store(_oracle(np.power, _c(a), _c(e)), a.dtype)
    modulus = 1 << (8 * a.dtype.itemsize)  # wrapping; a negative exponent gives 1 for 1,
    return _wrap([pow(x, k, modulus) if k >= 0 else  # +-1 for -1 and 0 for the rest
                  1 if x == 1 else (-1 if k % 2 else 1) if x == -1 else 0
                  for x, k in zip(a.tolist(), e.tolist())], a.dtype)


def _fmod(a, b):
    if a.dtype in FLOAT_NP:  # fmod is exact, so computing it in f64 changes nothing
        with np.errstate(all="ignore"):
            return _store(np.fmod(_exact(a), _exact(b)), a.dtype)
    zero = (b == 0) | ((b == -1) if a.dtype.kind == "i" else False)  # both give 0
    return np.where(zero, 0, np.fmod(a, np.where(zero, 1, b).astype(b.dtype))).astype(a.dtype)


def _shift(a, s, left):
    """Amounts below 0 or from the width up shift everything out (sign fill to the right)."""
    k = s.astype(np.int64)
    valid = (k >= 0) & (k < 8 * a.dtype.itemsize)
    k = np.where(valid, k, 0)
    if left:  # in 64 bits, then wrapped to a's width
        shifted = np.where(valid, a.astype(np.uint64) << k.astype(np.uint64), 0)
        return shifted.astype(f"u{a.dtype.itemsize}").view(a.dtype)
    shifted = a >> k.astype(a.dtype)  # arithmetic for signed types
    return np.where(valid, shifted, np.where(a < 0, -1, 0)).astype(a.dtype)


def _int_div(a, b):
    """Truncating integer division; a / 0 gives 0 and lowest / -1 wraps (docs section 5)."""
    if a.dtype in FLOAT_NP:
        with np.errstate(all="ignore"):
            return _store(_c(a) / _c(b), a.dtype)
    return _wrap([0 if y == 0 else abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                  for x, y in zip(a.tolist(), b.tolist())], a.dtype)


def _remainder(a, b):
    """fmod, moved by b where its sign differs from b's (torch.remainder)."""
    m = _fmod(a, b)
    if a.dtype.kind == "u":
        return m
    with np.errstate(all="ignore"):
        move = (m != 0) & ((_c(b) < 0) != (_c(m) < 0))
        return np.where(move, _store(_c(m) + _c(b), a.dtype), m).astype(a.dtype)


def _gcd(a, b):
    return _wrap([math.gcd(x, y) for x, y in zip(a.tolist(), b.tolist())], a.dtype)


def _logical_shift(a, s):
    """The bits of a shifted in as zeros; amounts below 0 or from the width up give 0."""
    k = s.astype(np.int64)
    valid = (k >= 0) & (k < 8 * a.dtype.itemsize)
    unsigned = a.view(f"u{a.dtype.itemsize}")
    shifted = unsigned >> np.where(valid, k, 0).astype(unsigned.dtype)
    return np.where(valid, shifted, 0).astype(unsigned.dtype).view(a.dtype)


def _lgamma(x):
    """log|gamma(x)| by mpmath (CPython's math.lgamma is off by several ulps)."""
    x = float(x)
    if math.isnan(x) or math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return abs(x) if not math.isnan(x) and x != 0 and math.isinf(x) else (
            math.nan if math.isnan(x) else math.inf)  # lgamma(+-inf) = inf, poles give inf
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workprec(200):
        return float(mpmath.re(mpmath.loggamma(x)))


def _mp_inverse(name):
    """erfinv / erfcinv by mpmath (from torch's dependencies), exact enough for any input."""
    def function(x):
        if name == "erfinv" and x == 0:
            return float(x)  # erfinv(-0) = -0; mpmath has no negative zero
        mpmath = pytest.importorskip("mpmath")
        with mpmath.workprec(1200):  # 1 - y is exact even for subnormal y
            y = mpmath.mpf(float(x))
            t = y if name == "erfinv" else 1 - y
            if t < -1 or t > 1 or mpmath.isnan(t):
                return math.nan
            return float(mpmath.erfinv(t)) if abs(t) < 1 else math.copysign(math.inf, t)
    return np.vectorize(function, otypes=[np.float64])


def _arith(function):
    """Arithmetic rule: computed in the operands' compute type, stored in their dtype."""
    def expect(*xs):
        with np.errstate(all="ignore"):
            return _store(function(*map(_c, xs)), xs[0].dtype)
    return expect


def _float_math(function, oracle=False):
    """FloatMath and div: integers and bool compute in f32; transcendentals via _oracle."""
    def expect(*xs):
        with np.errstate(all="ignore"):
            value = _oracle(function, *map(_fc, xs)) if oracle else function(*map(_fc, xs))
        return _store(value, _float_result(xs[0]))
    return expect


def _rounding(function):  # floor, ceil, round, trunc leave integers unchanged
    return lambda a: a if a.dtype not in FLOAT_NP else _store(function(_c(a)), a.dtype)


# ---- the ops ---------------------------------------------------------------------------------
# Operands: a, b, c of the dtype under test; s small integers of that dtype (shift amounts and
# exponents, some out of range); q a Bool condition.


def _complex_of(re, im):  # complex(re, im) exactly, NaNs and infinities as given
    result = np.empty(re.shape, np.complex64 if re.dtype == F32 else np.complex128)
    result.real, result.imag = re, im
    return result


class Spec(NamedTuple):
    key: str  # the output's name; the op's name unless an op is tested twice
    op: str
    args: str
    expect: Callable
    ulps: int = 0
    floating_only: bool = False


U = TRANSCENDENTAL_ULPS
SPECS = [
    Spec("neg", "neg", "a", _arith(np.negative)),
    Spec("abs", "abs", "a", _arith(np.abs)),
    Spec("sqrt", "sqrt", "a", _float_math(np.sqrt)),
    Spec("rsqrt", "rsqrt", "a", _float_math(lambda x: 1 / np.sqrt(x))),
    Spec("reciprocal", "reciprocal", "a", _float_math(lambda x: 1 / x)),
    *(Spec(op, op, "a", _float_math(getattr(np, op), oracle=True), U)
      for op in ("exp", "exp2", "log", "log2", "log1p", "expm1", "sin", "cos", "tanh")),
    Spec("sigmoid", "sigmoid", "a", _float_math(lambda x: 1 / (1 + _oracle(np.exp, -x))), U),
    *(Spec(op, op, "a", _float_math(getattr(np, name), oracle=True), U)
      for op, name in [("acos", "arccos"), ("acosh", "arccosh"), ("asin", "arcsin"),
                       ("asinh", "arcsinh"), ("atan", "arctan"), ("atanh", "arctanh"),
                       ("cosh", "cosh"), ("sinh", "sinh"), ("tan", "tan"), ("log10", "log10")]),
    # glibc's erff/erfcf/lgammaf are within a few ulps (lgammaf up to 7 near its zeros).
    Spec("erf", "erf", "a", _float_math(np.vectorize(math.erf, otypes=[F64]), oracle=True), 4),
    Spec("erfc", "erfc", "a", _float_math(np.vectorize(math.erfc, otypes=[F64]), oracle=True), 4),
    Spec("lgamma", "lgamma", "a", _float_math(np.vectorize(_lgamma, otypes=[F64]), oracle=True),
         8),
    Spec("erfinv", "erfinv", "a", _float_math(_mp_inverse("erfinv"), oracle=True), U),
    Spec("erfcinv", "erfcinv", "a", _float_math(_mp_inverse("erfcinv"), oracle=True), U),
    Spec("relu", "relu", "a", _arith(lambda x: np.where(x <= 0, x.dtype.type(0), x))),
    Spec("frac", "frac", "a", lambda a: (np.zeros_like(a) if a.dtype not in FLOAT_NP else
                                         _store(_c(a) - np.trunc(_c(a)), a.dtype))),
    Spec("signbit", "signbit", "a", lambda a: np.signbit(_exact(a).astype(F64))),
    Spec("isneginf", "isneginf", "a", lambda a: np.isneginf(_exact(a).astype(F64))),
    Spec("isposinf", "isposinf", "a", lambda a: np.isposinf(_exact(a).astype(F64))),
    Spec("isreal", "isreal", "a", lambda a: np.ones(a.shape, bool)),
    Spec("floor", "floor", "a", _rounding(np.floor)),
    Spec("ceil", "ceil", "a", _rounding(np.ceil)),
    Spec("round", "round", "a", _rounding(np.rint)),  # ties to even
    Spec("trunc", "trunc", "a", _rounding(np.trunc)),
    Spec("sign", "sign", "a", _arith(lambda x: (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype))),
    Spec("isnan", "isnan", "a", lambda a: np.isnan(_exact(a).astype(F64))),
    Spec("isinf", "isinf", "a", lambda a: np.isinf(_exact(a).astype(F64))),
    Spec("isfinite", "isfinite", "a", lambda a: np.isfinite(_exact(a).astype(F64))),
    Spec("logical_not", "logical_not", "a", lambda a: ~_truth(a)),
    Spec("bitwise_not", "bitwise_not", "a", np.invert),
    Spec("set", "set", "a", lambda a: a),
    Spec("real", "real", "a", lambda a: a),
    Spec("imag", "imag", "a", lambda a: np.zeros_like(a)),  # refused for every type here
    Spec("complex", "complex", "ab", lambda a, b: _complex_of(a, b)),
    Spec("add", "add", "ab", _arith(np.add)),
    Spec("sub", "sub", "ab", _arith(np.subtract)),
    Spec("mul", "mul", "ab", _arith(np.multiply)),
    Spec("div", "div", "ab", _int_div),
    Spec("truediv", "truediv", "ab", _float_math(np.divide)),
    Spec("remainder", "remainder", "ab", _remainder),
    Spec("nextafter", "nextafter", "ab", lambda a, b: np.nextafter(a, b)),
    Spec("gcd", "gcd", "ab", _gcd),
    Spec("logical_right_shift", "logical_right_shift", "as", _logical_shift),
    Spec("pow", "pow", "as", _pow, U),
    Spec("pow_real", "pow", "ab", _pow, U, floating_only=True),
    Spec("fmod", "fmod", "ab", _fmod),
    Spec("maximum", "maximum", "ab", _arith(lambda x, y: _extremum(x, y, True))),
    Spec("minimum", "minimum", "ab", _arith(lambda x, y: _extremum(x, y, False))),
    Spec("atan2", "atan2", "ab", _float_math(np.arctan2, oracle=True), U),
    Spec("hypot", "hypot", "ab", _float_math(np.hypot, oracle=True), U),
    Spec("copysign", "copysign", "ab", _float_math(np.copysign)),
    *(Spec(op, op, "ab", lambda a, b, f=getattr(np, name): f(_exact(a), _exact(b)))
      for op, name in [("eq", "equal"), ("ne", "not_equal"), ("lt", "less"),
                       ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")]),
    Spec("logical_and", "logical_and", "ab", lambda a, b: _truth(a) & _truth(b)),
    Spec("logical_or", "logical_or", "ab", lambda a, b: _truth(a) | _truth(b)),
    Spec("bitwise_and", "bitwise_and", "ab", np.bitwise_and),
    Spec("bitwise_or", "bitwise_or", "ab", np.bitwise_or),
    Spec("bitwise_xor", "bitwise_xor", "ab", np.bitwise_xor),
    Spec("shift_left", "shift_left", "as", lambda a, s: _shift(a, s, left=True)),
    Spec("shift_right", "shift_right", "as", lambda a, s: _shift(a, s, left=False)),
    Spec("where", "where", "qab", np.where),
    Spec("lerp", "lerp", "abc", _arith(  # every operation rounded on its own
        lambda s, e, w: np.where(np.abs(w) < 0.5, s + w * (e - s), e - (e - s) * (1 - w)))),
    Spec("fma", "fma", "abc", _fma),
    Spec("clamp", "clamp", "abc",
         _arith(lambda x, lo, hi: _extremum(_extremum(x, lo, True), hi, False))),
]


def _specs_for(dtype):
    return [s for s in SPECS
            if ACCEPTS[s.op](dtype) and (dtype.is_floating_point or not s.floating_only)]
