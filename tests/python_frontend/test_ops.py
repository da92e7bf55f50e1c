"""Every op via fd.ops matches NumPy on random inputs for each dtype its typing rule accepts.

One FusionDefinition per dtype holds every op accepted for that dtype, the casts and bitcasts
from it and two broadcasts, each as its own output, so the host compiler runs about a dozen
times. Each fusion runs on the host backend (the default for NumPy arrays) and on the
reference evaluator. Expected values are computed independently with NumPy, ml_dtypes and
exact rational arithmetic, following docs/ir_reference.md: f16/bf16 compute in f32 and round to
nearest even; integers wrap; the documented special cases (sign(NaN) = 0, integer fmod by 0,
out-of-range shifts, saturating float-to-integer casts, ...) are part of the inputs.
"""

import fractions
import functools
import math
from typing import Callable, NamedTuple

import ml_dtypes
import numpy as np
import pytest

import widefuse
from widefuse import DataType, FusionDefinition
from widefuse._widefuse import op_names

DTYPES = list(DataType)  # the 12 types (Int64 is an alias of Int)
FLOATING = [d for d in DTYPES if d.is_floating_point]
INTEGER = [d for d in DTYPES if d is not DataType.Bool and not d.is_floating_point]
BACKENDS = ("host", "reference")
F16, BF16, F32, F64 = (np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64))
FLOAT_NP = (F16, BF16, F32, F64)
# Transcendental ops (and pow) may differ from the correctly rounded result by this many units
# in the last place of the result dtype: libm's f32/f64 functions are within 1 ulp, and an f16
# or bf16 result can move by 1 more when the f32 value sits next to a rounding boundary.
# Where the exact result is zero, infinite or NaN, the bits must match exactly.
TRANSCENDENTAL_ULPS = 2

# ---- the typing rules of docs/ir_reference.md section 5, for operands of one dtype ---------

_ANY = lambda d: True
_RULES = [
    ("neg abs floor ceil round trunc sign add sub mul pow fmod fma clamp", lambda d: d is not DataType.Bool),
    ("maximum minimum set where isnan isinf isfinite eq ne lt le gt ge", _ANY),
    ("sqrt rsqrt reciprocal exp exp2 log log2 log1p expm1 sin cos tanh sigmoid atan2 div", _ANY),
    ("logical_not logical_and logical_or", _ANY),
    ("bitwise_not bitwise_and bitwise_or bitwise_xor", lambda d: d is DataType.Bool or d in INTEGER),
    ("shift_left shift_right", lambda d: d in INTEGER),
    ("lerp", lambda d: d.is_floating_point),
]
ACCEPTS = {op: rule for ops, rule in _RULES for op in ops.split()}
ATTRIBUTE_OPS = {"cast", "bitcast", "broadcast_in_dim"}  # covered by their own tests below
NVFUSER_NAME = {"shift_left": "bitwise_left_shift", "shift_right": "bitwise_right_shift"}

# ---- NumPy helpers ---------------------------------------------------------------------------


def _exact(x):
    """Floating arrays as f64 (exact); integer and bool arrays unchanged."""
    return x.astype(F64) if x.dtype in FLOAT_NP else x


def _c(x):
    """To the compute type of the array's own dtype (f32 for f16/bf16)."""
    return x.astype(F32) if x.dtype in (F16, BF16) else x


def _fc(x):
    """To the floating compute type (FloatMath, div): integers and bool compute in f32."""
    return x if x.dtype in (F32, F64) else x.astype(F64 if x.dtype == F64 else F32)


def _store(value, like):
    """Rounds a compute-type result to `like`'s dtype (f16/bf16: nearest even from f32)."""
    with np.errstate(all="ignore"):
        return value.astype(like.dtype if hasattr(like, "dtype") else like)


def _float_result(x):
    return x.dtype if x.dtype in FLOAT_NP else F32


def _odd_f32(x):
    """f64 -> f32 rounded to odd, so that rounding the result to f16/bf16 is exact (ml_dtypes
    rounds f64 -> bf16 via f32 with round-to-nearest twice)."""
    x = np.asarray(x, F64)
    with np.errstate(all="ignore"):
        t = x.astype(F32)
        t = np.where(np.isfinite(x) & (np.abs(t.astype(F64)) > np.abs(x)), np.nextafter(t, F32.type(0)), t)
    inexact = np.isfinite(x) & (t.astype(F64) != x)
    return (t.view(np.uint32) | inexact.astype(np.uint32)).view(F32)


def _round(values, dtype):
    """Exact f64 values rounded once to `dtype`."""
    with np.errstate(all="ignore"):
        return _odd_f32(values).astype(dtype) if dtype in (F16, BF16) else np.asarray(values, F64).astype(dtype)


def _wrap(ints, dtype):
    """Python integers modulo 2^width in an integer dtype."""
    bits = 8 * dtype.itemsize
    unsigned = np.dtype(f"u{dtype.itemsize}")
    return np.array([v % (1 << bits) for v in ints], np.uint64).astype(unsigned).view(dtype)


def _oracle(function, *xs):
    """`function` in long double (64-bit significand), rounded to the f32/f64 compute type."""
    with np.errstate(all="ignore"):
        return function(*(x.astype(np.longdouble) for x in xs)).astype(xs[0].dtype)


def _extremum(a, b, greater):
    """torch.maximum/minimum as documented: NaN propagates, ties give the second operand."""
    with np.errstate(all="ignore"):
        pick = np.where(a > b if greater else a < b, a, b)
        if a.dtype in FLOAT_NP:
            pick = np.where(np.isnan(a) | np.isnan(b), np.nan, pick).astype(a.dtype)
    return pick


def _fma(a, b, c):
    """a * b + c with one rounding to the f32/f64 compute type (exact rational arithmetic)."""
    out = []
    for x, y, z in zip(a.tolist(), b.tolist(), c.tolist()):
        if not (math.isfinite(x) and math.isfinite(y)):
            out.append(x * y + z)
        elif not math.isfinite(z):
            out.append(z)
        else:
            exact = fractions.Fraction(x) * fractions.Fraction(y) + fractions.Fraction(z)
            if exact == 0:
                out.append(x * y + z)  # the IEEE sign of an exact zero
                continue
            try:
                r = float(exact)  # correctly rounded to f64
            except OverflowError:
                r = math.inf if exact > 0 else -math.inf
            if a.dtype == F32 and math.isfinite(r) and fractions.Fraction(r) != exact:
                if abs(fractions.Fraction(r)) > abs(exact):  # round to odd in f64
                    r = float(np.nextafter(r, 0.0))
                r = (np.array([r]).view(np.uint64) | np.uint64(1)).view(F64)[0].item()
            out.append(r)
    with np.errstate(all="ignore"):
        return np.array(out, F64).astype(a.dtype)


def _int_pow(a, e):
    """Integer power, wrapping; negative exponents as documented (1, +-1 or 0)."""
    out = []
    for x, k in zip(a.tolist(), e.tolist()):
        if k < 0:
            out.append(1 if x == 1 else (-1 if k % 2 else 1) if x == -1 else 0)
        else:
            out.append(pow(x, k, 1 << (8 * a.dtype.itemsize)))
    return _wrap(out, a.dtype)


def _int_fmod(a, b):
    zero = (b == 0) | ((b == -1) if a.dtype.kind == "i" else False)
    return np.where(zero, 0, np.fmod(a, np.where(zero, 1, b).astype(b.dtype))).astype(a.dtype)


def _shift(a, s, left):
    width = 8 * a.dtype.itemsize
    amount = s.astype(np.int64) if s.dtype != np.uint64 else s
    valid = (amount >= 0) & (amount < width)
    k = np.where(valid, amount, 0)
    if left:
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        shifted = (a.astype(np.uint64) << k.astype(np.uint64)).astype(unsigned).view(a.dtype)
        return np.where(valid, shifted, 0).astype(a.dtype)
    shifted = np.right_shift(a, k.astype(a.dtype))  # arithmetic for signed types
    return np.where(valid, shifted, np.where(a < 0, -1, 0)).astype(a.dtype)


def _lerp(s, e, w):
    s, e, w = _c(s), _c(e), _c(w)
    with np.errstate(all="ignore"):
        return np.where(np.abs(w) < 0.5, s + w * (e - s), e - (e - s) * (1 - w)).astype(s.dtype)


def _transcendental(function):
    return lambda a: _store(_oracle(function, _fc(a)), _float_result(a))


def _rounding(function):
    return lambda a: a if a.dtype not in FLOAT_NP else _store(function(_c(a)), a)


def _sigmoid(a):
    x = _fc(a)
    with np.errstate(all="ignore"):
        return _store(1 / (1 + _oracle(np.exp, -x)), _float_result(a))


def _pow(a, b):
    if a.dtype not in FLOAT_NP:
        return _int_pow(a, b)
    return _store(_oracle(np.power, _c(a), _c(b)), a)


def _fmod(a, b):
    if a.dtype not in FLOAT_NP:
        return _int_fmod(a, b)
    with np.errstate(all="ignore"):  # fmod is exact, so computing in f64 changes nothing
        return _store(np.fmod(_exact(a), _exact(b)), a)


def _fma_op(a, b, c):
    if a.dtype not in FLOAT_NP:
        return (a * b + c).astype(a.dtype)  # NumPy wraps integer arrays
    return _store(_fma(_c(a), _c(b), _c(c)), a)


def _sign(a):
    x = _c(a)
    return _store((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype), a)


# ---- the ops: key, IR op, operands, expected value, ulps ------------------------------------
# Operands: a, b, c of the dtype under test; s small integers of that dtype (shift amounts
# and exponents, some out of range); q a Bool condition.


class Spec(NamedTuple):
    key: str
    op: str
    args: str
    expect: Callable
    ulps: int = 0
    floating_only: bool = False


def _arith(function):
    def expect(*xs):
        with np.errstate(all="ignore"):
            return _store(function(*(_c(x) for x in xs)), xs[0])
    return expect


def _float_math(function):
    def expect(*xs):
        with np.errstate(all="ignore"):
            return _store(function(*(_fc(x) for x in xs)), _float_result(xs[0]))
    return expect


T = TRANSCENDENTAL_ULPS
SPECS = [
    Spec("neg", "neg", "a", _arith(np.negative)),
    Spec("abs", "abs", "a", _arith(np.abs)),
    Spec("sqrt", "sqrt", "a", _float_math(np.sqrt)),
    Spec("rsqrt", "rsqrt", "a", _float_math(lambda x: 1 / np.sqrt(x))),
    Spec("reciprocal", "reciprocal", "a", _float_math(lambda x: 1 / x)),
    *(Spec(op, op, "a", _transcendental(f), T) for op, f in [
        ("exp", np.exp), ("exp2", np.exp2), ("log", np.log), ("log2", np.log2),
        ("log1p", np.log1p), ("expm1", np.expm1), ("sin", np.sin), ("cos", np.cos),
        ("tanh", np.tanh)]),
    Spec("sigmoid", "sigmoid", "a", _sigmoid, T),
    Spec("floor", "floor", "a", _rounding(np.floor)),
    Spec("ceil", "ceil", "a", _rounding(np.ceil)),
    Spec("round", "round", "a", _rounding(np.rint)),
    Spec("trunc", "trunc", "a", _rounding(np.trunc)),
    Spec("sign", "sign", "a", _sign),
    Spec("isnan", "isnan", "a", lambda a: np.isnan(_exact(a).astype(F64))),
    Spec("isinf", "isinf", "a", lambda a: np.isinf(_exact(a).astype(F64))),
    Spec("isfinite", "isfinite", "a", lambda a: np.isfinite(_exact(a).astype(F64))),
    Spec("logical_not", "logical_not", "a", lambda a: _exact(a) == 0),
    Spec("bitwise_not", "bitwise_not", "a", np.invert),
    Spec("set", "set", "a", lambda a: a),
    Spec("add", "add", "ab", _arith(np.add)),
    Spec("sub", "sub", "ab", _arith(np.subtract)),
    Spec("mul", "mul", "ab", _arith(np.multiply)),
    Spec("div", "div", "ab", _float_math(np.divide)),
    Spec("pow", "pow", "as", _pow, T),
    Spec("pow_real", "pow", "ab", _pow, T, floating_only=True),
    Spec("fmod", "fmod", "ab", _fmod),
    Spec("maximum", "maximum", "ab", _arith(lambda x, y: _extremum(x, y, True))),
    Spec("minimum", "minimum", "ab", _arith(lambda x, y: _extremum(x, y, False))),
    Spec("atan2", "atan2", "ab", lambda a, b: _store(_oracle(np.arctan2, _fc(a), _fc(b)), _float_result(a)), T),
    *(Spec(op, op, "ab", lambda a, b, f=f: f(_exact(a), _exact(b))) for op, f in [
        ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
        ("gt", np.greater), ("ge", np.greater_equal)]),
    Spec("logical_and", "logical_and", "ab", lambda a, b: (_exact(a) != 0) & (_exact(b) != 0)),
    Spec("logical_or", "logical_or", "ab", lambda a, b: (_exact(a) != 0) | (_exact(b) != 0)),
    Spec("bitwise_and", "bitwise_and", "ab", np.bitwise_and),
    Spec("bitwise_or", "bitwise_or", "ab", np.bitwise_or),
    Spec("bitwise_xor", "bitwise_xor", "ab", np.bitwise_xor),
    Spec("shift_left", "shift_left", "as", lambda a, s: _shift(a, s, left=True)),
    Spec("shift_right", "shift_right", "as", lambda a, s: _shift(a, s, left=False)),
    Spec("where", "where", "qab", lambda q, a, b: np.where(q, a, b)),
    Spec("lerp", "lerp", "abc", lambda a, b, c: _store(_lerp(a, b, c), a)),
    Spec("fma", "fma", "abc", _fma_op),
    Spec("clamp", "clamp", "abc", _arith(lambda x, lo, hi: _extremum(_extremum(x, lo, True), hi, False))),
]


def _specs_for(dtype):
    return [s for s in SPECS if ACCEPTS[s.op](dtype) and (dtype.is_floating_point or not s.floating_only)]


def _cast_expected(x, target):
    """cast(x, target) per the conversion table of docs/ir_reference.md section 5."""
    if target == np.bool_:
        return _exact(x) != 0
    if target in FLOAT_NP:
        # integers reach f16/bf16 through f64, as documented
        with np.errstate(all="ignore"):
            return _round(_exact(x).astype(F64), target) if target in (F16, BF16) else _exact(x).astype(target)
    if x.dtype not in FLOAT_NP:
        return x.astype(target)  # integers wrap, bool gives 0/1
    info = np.iinfo(target)  # truncate toward zero and saturate; NaN -> 0
    return np.array([0 if math.isnan(v) else info.max if v >= info.max else info.min if v <= info.min
                     else int(v) for v in _exact(x).tolist()], target)


def _bitcast_targets(dtype):
    if dtype is DataType.Bool:
        return []
    return [t for t in DTYPES if t is not DataType.Bool and t.numpy.itemsize == dtype.numpy.itemsize]


# ---- inputs ----------------------------------------------------------------------------------


def _edges(dtype):
    np_type = dtype.numpy
    if dtype is DataType.Bool:
        return np.array([False, True])
    if dtype in INTEGER:
        info = np.iinfo(np_type)
        values = [0, 1, 2, 3, 7, 8, 100, info.max, info.max - 1, info.max // 2 + 1]
        if info.min < 0:
            values += [-1, -2, -7, -100, info.min, info.min + 1]
        return np.array(values, np_type)
    info = ml_dtypes.finfo(np_type)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, -3.5, 3.0, 10.0, -100.0,
              float(info.max), -float(info.max), float(info.smallest_normal),
              float(info.smallest_subnormal), -float(info.smallest_subnormal),
              math.inf, -math.inf, math.nan]
    edges = _round(np.array(values), np_type)
    bits = edges.view(f"u{np_type.itemsize}")
    nan_bits = bits[-1].item()  # a NaN with a payload and a negative NaN
    extra = np.array([nan_bits | 1, nan_bits | (1 << (8 * np_type.itemsize - 1))], bits.dtype)
    return np.concatenate([edges, extra.view(np_type)])


def _fma_rows(dtype):
    """a * b + c where one rounding and two roundings differ (f32 and f64 only)."""
    half = {DataType.Float: 12, DataType.Double: 27}.get(dtype)
    if half is None:
        return []
    x = 1 + 2.0 ** -half
    return [(x, x, -(1 + 2.0 ** (1 - half))), (-x, x, 1 + 2.0 ** (1 - half))]


@functools.lru_cache(maxsize=None)
def _inputs(dtype):
    rng = np.random.default_rng(list(DataType).index(dtype))
    np_type, n = dtype.numpy, 1024
    edges = _edges(dtype)
    k = len(edges)
    rows = [np.repeat(edges, k), np.tile(edges, k), edges[(np.arange(k * k) * 7 + 3) % k]]
    if dtype is DataType.Bool:
        random = [rng.random(n) < 0.5 for _ in range(3)]
    elif dtype in INTEGER:
        info = np.iinfo(np_type)
        random = [np.concatenate([rng.integers(info.min, info.max, n // 2, np_type, endpoint=True),
                                  rng.integers(max(info.min, -1000), 1000, n // 2).astype(np_type)])
                  for _ in range(3)]
    else:
        def floats():
            values = rng.standard_normal(n) * 10.0 ** rng.uniform(-5, 5, n)
            values[: n // 8] = np.round(values[: n // 8] / 1e3)  # small integers
            values[n // 8: n // 4] = np.floor(values[n // 8: n // 4] / 1e3) + 0.5  # ties
            return _round(values, np_type)
        random = [floats() for _ in range(3)]
        special = np.array(_fma_rows(dtype), np_type).reshape(-1, 3)
        random = [np.concatenate([special[:, i], random[i]]) for i in range(3)]
    a, b, c = (np.concatenate([row, more]).astype(np_type) for row, more in zip(rows, random))
    m = len(a)
    if dtype in INTEGER:
        width = 8 * np_type.itemsize
        s = _wrap(rng.integers(-3, width + 4, m).tolist(), np_type)
    else:
        s = rng.integers(-4, 11, m).astype(F64).astype(np_type)
    q = rng.random(m) < 0.5
    return {"a": a, "b": b, "c": c, "s": s, "q": q, "z": np.array(a[len(a) // 2]), "r": a[-3:].copy()}


# ---- one fusion per dtype --------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _definition(dtype):
    """The fusion for `dtype`, the output keys in order, and the ops widefuse refused."""
    fd = FusionDefinition(f"ops_{dtype.value}")
    keys, refused = [], {}
    with fd:
        t = {name: fd.define_tensor(shape=[-1], dtype=dtype) for name in "abcs"}
        t["q"] = fd.define_tensor(shape=[-1], dtype=DataType.Bool)
        t["z"] = fd.define_tensor(shape=[], dtype=dtype)
        t["r"] = fd.define_tensor(shape=[3], dtype=dtype)
        outputs = []
        for spec in _specs_for(dtype):
            function = getattr(fd.ops, NVFUSER_NAME.get(spec.op, spec.op))
            try:
                outputs.append((spec.key, function(*(t[name] for name in spec.args))))
            except widefuse.Error as error:
                refused[spec.key] = error
        outputs += [(f"cast_{to.value}", fd.ops.cast(t["a"], to)) for to in DTYPES]
        outputs += [(f"bitcast_{to.value}", fd.ops.bitcast(t["a"], to)) for to in _bitcast_targets(dtype)]
        outputs.append(("broadcast_1d", fd.ops.broadcast_in_dim(t["r"], [2, 3], [1])))
        outputs.append(("broadcast_0d", fd.ops.broadcast_in_dim(t["z"], [2, 3], [])))
        for key, value in outputs:
            fd.add_output(value)
            keys.append(key)
    return fd, keys, refused


@functools.lru_cache(maxsize=None)
def _run(dtype, backend):
    fd, keys, refused = _definition(dtype)
    inputs = _inputs(dtype)
    results = fd.execute([inputs[name] for name in "abcsqzr"], backend=backend)
    return dict(zip(keys, results)), refused


def _assert_matches(actual, expected, ulps=0, inputs=()):
    """Equal dtype, shape and bits (NaN: only NaN-ness); within `ulps` where the expected
    value is finite and nonzero."""
    assert actual.dtype == expected.dtype, f"result dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape
    if expected.dtype in FLOAT_NP:
        unsigned = f"u{expected.dtype.itemsize}"
        act, exp = actual.astype(F64), expected.astype(F64)
        nan = np.isnan(exp)
        bad = nan != np.isnan(act)
        same_bits = actual.view(unsigned) == expected.view(unsigned)
        if ulps:
            signed = np.dtype(f"i{expected.dtype.itemsize}")
            lowest = np.iinfo(signed).min

            def ordered(x):
                v = x.view(signed)
                return np.where(v < 0, lowest - v, v).astype(object)
            close = np.abs(ordered(actual) - ordered(expected)) <= ulps
            strict = ~np.isfinite(exp) | (exp == 0)
            bad |= ~nan & np.where(strict, ~same_bits, ~close.astype(bool))
        else:
            bad |= ~nan & ~same_bits
    else:
        bad = actual != expected
    bad = np.flatnonzero(bad)
    if bad.size:
        lines = [f"{bad.size} of {expected.size} elements differ (tolerance {ulps} ulp), e.g.:"]
        for i in bad[:6]:
            operands = ", ".join(repr(x.reshape(-1)[i].item()) for x in inputs)
            lines.append(f"  [{i}] ({operands}) -> {actual.reshape(-1)[i]!r}, "
                         f"expected {expected.reshape(-1)[i]!r}")
        pytest.fail("\n".join(lines))


# ---- tests -----------------------------------------------------------------------------------

# (dtype, key): reason, for confirmed widefuse bugs (strict xfail: fixing one fails the suite).
KNOWN_BUGS = {}


def _op_cases():
    for dtype in DTYPES:
        for spec in _specs_for(dtype):
            reason = KNOWN_BUGS.get((dtype, spec.key))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(dtype, spec, id=f"{dtype.value}-{spec.key}", marks=marks)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,spec", list(_op_cases()))
def test_op_matches_numpy(dtype, spec, backend):
    results, refused = _run(dtype, backend)
    assert spec.key not in refused, f"the documented rule accepts {dtype}: {refused.get(spec.key)}"
    inputs = _inputs(dtype)
    operands = [inputs[name] for name in spec.args]
    ulps = spec.ulps if spec.expect(*operands).dtype in FLOAT_NP else 0
    _assert_matches(results[spec.key], spec.expect(*operands), ulps, operands)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("target", DTYPES, ids=lambda d: d.value)
@pytest.mark.parametrize("source", DTYPES, ids=lambda d: d.value)
def test_cast_matches_numpy(source, target, backend):
    a = _inputs(source)["a"]
    actual = _run(source, backend)[0][f"cast_{target.value}"]
    _assert_matches(actual, _cast_expected(a, target.numpy), 0, [a])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source,target", [(s, t) for s in DTYPES for t in _bitcast_targets(s)],
                         ids=lambda d: d.value)
def test_bitcast_keeps_bits(source, target, backend):
    a = _inputs(source)["a"]
    actual = _run(source, backend)[0][f"bitcast_{target.value}"]
    assert actual.dtype == target.numpy
    np.testing.assert_array_equal(actual.view(f"u{a.itemsize}"), a.view(f"u{a.itemsize}"))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.value)
def test_broadcast_in_dim(dtype, backend):
    inputs, results = _inputs(dtype), _run(dtype, backend)[0]
    for key, expected in [("broadcast_1d", np.broadcast_to(inputs["r"], (2, 3))),
                          ("broadcast_0d", np.broadcast_to(inputs["z"], (2, 3)))]:
        assert results[key].dtype == expected.dtype and results[key].shape == (2, 3)
        np.testing.assert_array_equal(results[key].view(f"u{expected.itemsize}"),
                                      expected.view(f"u{expected.itemsize}"), err_msg=key)


def test_every_op_is_covered():
    assert set(ACCEPTS) | ATTRIBUTE_OPS == set(op_names())
    assert {spec.op for spec in SPECS} | ATTRIBUTE_OPS == set(op_names())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.value)
def test_typing_rules_match_the_documentation(dtype):
    """widefuse accepts an op on operands of `dtype` exactly when the documented rule does, so
    the ops tested above for `dtype` are all those its rules accept."""
    fd = FusionDefinition("rules")
    t = {name: fd.define_tensor(shape=[4], dtype=dtype) for name in "abcs"}
    t["q"] = fd.define_tensor(shape=[4], dtype=DataType.Bool)
    mismatches = []
    for spec in SPECS:
        try:
            getattr(fd.ops, NVFUSER_NAME.get(spec.op, spec.op))(*(t[name] for name in spec.args))
            accepted = True
        except widefuse.Error:
            accepted = False
        if accepted != ACCEPTS[spec.op](dtype):
            mismatches.append(spec.op)
    for target in DTYPES:
        fd.ops.cast(t["a"], target)  # every pair is accepted
        try:
            fd.ops.bitcast(t["a"], target)
            accepted = True
        except widefuse.Error:
            accepted = False
        if accepted != (target in _bitcast_targets(dtype)):
            mismatches.append(f"bitcast to {target}")
    assert not mismatches


@pytest.mark.parametrize("op,dtypes,message", [
    ("sqrt", "i32", None),  # accepted: float math on integers gives f32 (see above)
    ("bitwise_and", "f32 f32", "bool or integer"),
    ("bitwise_left_shift", "f32 f32", None),
    ("bitwise_right_shift", "b8 b8", None),
    ("neg", "b8", "bool"),
    ("add", "b8 b8", "bool"),
    ("lerp", "i32 i32 i32", None),
    ("where", "i32 f32 f32", None),
    ("fma", "b8 b8 b8", None),
    ("bitcast", "b8", "bool"),
    ("bitcast", "f32", "width"),
])
def test_rejected_operands_raise(op, dtypes, message):
    fd = FusionDefinition("rejected")
    operands = [fd.define_tensor(shape=[4], dtype=DataType(name)) for name in dtypes.split()]
    if op == "sqrt":
        assert fd.ops.sqrt(*operands).dtype is DataType.Float
        return
    target = {"b8": DataType.Int8, "f32": DataType.Int16}
    call = (lambda: fd.ops.bitcast(operands[0], target[dtypes])) if op == "bitcast" else (
        lambda: getattr(fd.ops, op)(*operands))
    with pytest.raises(widefuse.Error) as raised:
        call()
    if message:
        assert message in str(raised.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_numbers_promote_like_torch(backend):
    """Python numbers are weak scalars (docs section 3): they only lift the category."""
    rng = np.random.default_rng(7)
    arrays = {
        "i32": rng.integers(-2**31, 2**31, 256, np.int32, endpoint=False),
        "f16": (rng.standard_normal(256) * 100).astype(F16),
        "u8": rng.integers(0, 256, 256, np.uint8),
        "b8": rng.random(256) < 0.5,
        "i8": rng.integers(-128, 128, 256, np.int8),
        "f64": rng.standard_normal(256),
    }
    f32 = np.float32
    with np.errstate(all="ignore"):
        cases = [  # (operation, expected)
            (lambda t, ops: ops.mul(t["i32"], 2.5), arrays["i32"].astype(f32) * f32(2.5)),
            (lambda t, ops: ops.div(t["i32"], 2), arrays["i32"].astype(f32) / f32(2)),
            (lambda t, ops: ops.lt(t["i32"], 2.5), arrays["i32"].astype(f32) < f32(2.5)),
            (lambda t, ops: ops.mul(t["f16"], 0.1), (arrays["f16"].astype(f32) * f32(0.1)).astype(F16)),
            (lambda t, ops: ops.add(t["u8"], 1000), arrays["u8"] + np.uint8(1000 % 256)),
            (lambda t, ops: ops.add(t["b8"], 1), arrays["b8"].astype(np.int64) + 1),
            (lambda t, ops: ops.add(t["b8"], 1.5), arrays["b8"].astype(f32) + f32(1.5)),
            (lambda t, ops: ops.mul(t["i8"], 3), arrays["i8"] * np.int8(3)),
            (lambda t, ops: ops.sub(2, t["i8"]), np.int8(2) - arrays["i8"]),
            (lambda t, ops: ops.add(t["f64"], 0.1), arrays["f64"] + 0.1),
            (lambda t, ops: ops.mul(t["f64"], True), arrays["f64"] * 1.0),
            (lambda t, ops: ops.broadcast_in_dim(2.5, [2, 3], []), np.full((2, 3), 2.5)),
        ]
    with FusionDefinition("promotion") as fd:
        t = {name: fd.define_tensor(shape=[-1], dtype=DataType(name)) for name in arrays}
        for operation, _ in cases:
            fd.add_output(operation(t, fd.ops))
    results = fd.execute(list(arrays.values()), backend=backend)
    for (_, expected), actual in zip(cases, results):
        _assert_matches(actual, np.asarray(expected))
