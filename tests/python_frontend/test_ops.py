"""Every op via fd.ops matches NumPy on random inputs for each dtype its typing rule accepts.

One FusionDefinition per dtype holds every op its rules accept for that dtype, the casts and
bitcasts from it and two broadcasts, each as its own output, so the host compiler runs about a
dozen times. Each fusion runs on the host backend (the default for NumPy arrays) and on the
reference evaluator. Expected values come from NumPy, ml_dtypes and exact rational arithmetic,
following docs/ir_reference.md: f16/bf16 compute in f32 and round to nearest even, integers
wrap, and the documented special cases (sign(NaN) = 0, integer fmod by 0, out-of-range shifts,
saturating casts, ...) are among the inputs.
"""

import functools
import math

import ml_dtypes
import numpy as np
import pytest

import widefuse
from widefuse import DataType, FusionDefinition
from widefuse._widefuse import op_names

from op_oracles import (ACCEPTS, ATTRIBUTE_OPS, BACKENDS, BF16, DTYPES, F16, F32, F64, FLOAT_NP,
                        INTEGER, NVFUSER_NAME, SPECS, _exact, _round, _specs_for, _store, _truth,
                        _wrap)


def _cast_expected(x, target):
    """cast(x, target) by the conversion table of docs/ir_reference.md section 5."""
    if target == np.bool_:
        return _truth(x)
    if target in (F16, BF16):
        return _round(_exact(x).astype(F64), target)  # integers pass through f64, as documented
    if target in FLOAT_NP:
        return _store(_exact(x), target)
    if x.dtype not in FLOAT_NP:
        return x.astype(target)  # integers wrap, bool gives 0/1
    info = np.iinfo(target)  # truncate toward zero and saturate; NaN gives 0
    return np.array([0 if math.isnan(v) else info.max if v >= info.max else
                     info.min if v <= info.min else int(v) for v in _exact(x).tolist()], target)


def _bitcast_targets(dtype):
    size = dtype.numpy.itemsize
    return [t for t in DTYPES if DataType.Bool not in (t, dtype) and t.numpy.itemsize == size]


# ---- inputs ----------------------------------------------------------------------------------

# Values next to rounding and saturation boundaries: f16/bf16 ties and near-ties (from f32, and
# from f64 where rounding through f32 would differ), overflow, subnormals, integer ranges.
_FLOAT_BOUNDARIES = [
    1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-23, 1 + 2**-11 + 2**-40, 65519.996, 65520.0,
    2**-25, 3 * 2**-25, 2**-25 + 2**-60, 1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8 + 2**-23),
    1 + 2**-8 + 2**-40, 2**-134, 3 * 2**-134, 2**-134 + 2**-170, -(1 + 2**-24 + 2**-50),
    3.4e38, 1e-40, -0.9, 127.9, -128.9, 255.9, 256.0, 32767.9, 65535.9, 2**31, -2**31,
    2**31 - 128, 2**32, 2**32 - 256, 2**63, -2**63, 2**63 - 1024, 2**64]
_INT_BOUNDARIES = [2049, 65519, 65520, 2**24 + 1, 2**24 + 2**16 + 1, -(2**24 + 2**16 + 1)]


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
    tiny, high = float(info.smallest_subnormal), float(info.max)
    edges = _round([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, -3.5, 3.0, 10.0, -100.0,
                    high, -high, float(info.smallest_normal), tiny, -tiny, math.inf, -math.inf,
                    math.nan], np_type)
    bits = edges.view(f"u{np_type.itemsize}")
    nans = [bits[-1] | 1, bits[-1] | (1 << (8 * np_type.itemsize - 1))]  # payload, negative
    return np.concatenate([edges, np.array(nans, bits.dtype).view(np_type)])


def _special_rows(dtype):
    """(a, b, c) rows of the boundary values, and for f32/f64 an a * b + c where one rounding
    and two roundings differ."""
    if dtype is DataType.Bool:
        return np.zeros((0, 3), bool)
    if dtype in INTEGER:
        info = np.iinfo(dtype.numpy)
        values = np.array([v for v in _INT_BOUNDARIES if info.min <= v <= info.max], dtype.numpy)
    else:
        values = _round(_FLOAT_BOUNDARIES, dtype.numpy)
    rows = np.repeat(values[:, None], 3, axis=1)
    half = {DataType.Float: 12, DataType.Double: 27}.get(dtype)
    if half is not None:
        x, y = 1 + 2.0**-half, 1 + 2.0 ** (1 - half)
        rows = np.concatenate([rows, np.array([(x, x, -y), (-x, x, y)], dtype.numpy)])
    return rows


@functools.lru_cache(maxsize=None)
def _inputs(dtype):
    """a, b, c: every pair of edge values, the special rows, then 1024 random values."""
    rng = np.random.default_rng(DTYPES.index(dtype))
    np_type, n = dtype.numpy, 1024
    edges = _edges(dtype)
    k = len(edges)
    rows = [np.repeat(edges, k), np.tile(edges, k), edges[(np.arange(k * k) * 7 + 3) % k]]
    if dtype is DataType.Bool:
        random = [rng.random(n) < 0.5 for _ in range(3)]
    elif dtype in INTEGER:
        info = np.iinfo(np_type)
        random = [np.concatenate([rng.integers(info.min, info.max, n // 2, np_type, endpoint=True),
                                  rng.integers(max(info.min, -1000), 1000, n // 2)])
                  for _ in range(3)]
    else:
        random = []
        for _ in range(3):
            values = rng.standard_normal(n) * 10.0 ** rng.uniform(-5, 5, n)
            values[: n // 8] = np.round(values[: n // 8] / 1e3)  # small integers
            values[n // 8: n // 4] = np.floor(values[n // 8: n // 4] / 1e3) + 0.5  # ties
            random.append(_round(values, np_type))
    special = _special_rows(dtype)
    a, b, c = (np.concatenate([rows[i], special[:, i], random[i]]).astype(np_type)
               for i in range(3))
    # s: shift amounts and exponents; every edge value of a meets every value of s_edges
    width = 8 * np_type.itemsize
    if dtype in INTEGER:
        s_edges, s = [0, 1, 2, 3, -1, -2, width - 1, width, width + 1, 7], rng.integers(
            -3, width + 4, len(a))
    else:
        s_edges = [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 10.0, 0.5]
        s = rng.integers(-4, 11, len(a)).astype(F64)
    s = s.tolist()
    s[: k * k] = [s_edges[i % k % len(s_edges)] for i in range(k * k)]
    s = _wrap(s, np_type) if dtype in INTEGER else np.array(s, F64).astype(np_type)
    return {"a": a, "b": b, "c": c, "s": s, "q": rng.random(len(a)) < 0.5,
            "z": np.array(a[len(a) // 2]), "r": a[-3:].copy()}


# ---- one fusion per dtype --------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _definition(dtype):
    """The fusion for `dtype`, its output keys in order, and the ops widefuse refused."""
    refused = {}
    with FusionDefinition(f"ops_{dtype.value}") as fd:
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
        outputs += [(f"bitcast_{to.value}", fd.ops.bitcast(t["a"], to))
                    for to in _bitcast_targets(dtype)]
        outputs.append(("broadcast_1d", fd.ops.broadcast_in_dim(t["r"], [2, 3], [1])))
        outputs.append(("broadcast_0d", fd.ops.broadcast_in_dim(t["z"], [2, 3], [])))
        for _, value in outputs:
            fd.add_output(value)
    return fd, [key for key, _ in outputs], refused


@functools.lru_cache(maxsize=None)
def _run(dtype, backend):
    fd, keys, refused = _definition(dtype)
    inputs = _inputs(dtype)
    results = fd.execute([inputs[name] for name in "abcsqzr"], backend=backend)
    return dict(zip(keys, results)), refused


def _assert_matches(actual, expected, ulps=0, inputs=(), what=""):
    """Same dtype, shape and bits (NaN: only NaN-ness); within `ulps` where the expected value
    is finite and nonzero."""
    assert actual.dtype == expected.dtype, f"{what} has dtype {actual.dtype}, not {expected.dtype}"
    assert actual.shape == expected.shape, what
    if expected.dtype.kind == "c":  # a complex result: part by part
        _assert_matches(actual.real.copy(), expected.real.copy(), ulps, inputs, f"real({what})")
        _assert_matches(actual.imag.copy(), expected.imag.copy(), ulps, inputs, f"imag({what})")
        return
    bad = actual != expected
    if expected.dtype in FLOAT_NP:
        size = expected.dtype.itemsize
        nan, finite = np.isnan(expected.astype(F64)), np.isfinite(expected.astype(F64))
        bad = nan != np.isnan(actual.astype(F64))
        differ = actual.view(f"u{size}") != expected.view(f"u{size}")
        if ulps:
            signed = np.dtype(f"i{size}")

            def ordered(x):  # consecutive floats as consecutive integers (Python ints)
                v = x.view(signed)
                return np.where(v < 0, np.iinfo(signed).min - v, v).astype(object)
            far = (np.abs(ordered(actual) - ordered(expected)) > ulps).astype(bool)
            differ = np.where(finite & (expected.astype(F64) != 0), far, differ)
        bad |= ~nan & differ
    bad = np.flatnonzero(bad)
    if bad.size:
        lines = [f"{what}: {bad.size} of {expected.size} elements differ ({ulps} ulp), e.g.:"]
        for i in bad[:6]:
            operands = ", ".join(repr(x.reshape(-1)[i].item()) for x in inputs)
            lines.append(f"  [{i}] ({operands}) -> {actual.reshape(-1)[i]!r}, "
                         f"expected {expected.reshape(-1)[i]!r}")
        raise AssertionError("\n".join(lines))


# ---- tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,spec", [
    pytest.param(d, s, id=f"{d.value}-{s.key}") for d in DTYPES for s in _specs_for(d)])
def test_op_matches_numpy(dtype, spec, backend):
    results, refused = _run(dtype, backend)
    assert spec.key not in refused, f"the documented rule accepts {dtype}: {refused[spec.key]}"
    operands = [_inputs(dtype)[name] for name in spec.args]
    expected = spec.expect(*operands)
    ulps = spec.ulps if expected.dtype in FLOAT_NP else 0
    _assert_matches(results[spec.key], expected, ulps, operands, spec.key)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("target", DTYPES, ids=lambda d: d.value)
@pytest.mark.parametrize("source", DTYPES, ids=lambda d: d.value)
def test_cast_matches_numpy(source, target, backend):
    a = _inputs(source)["a"]
    actual = _run(source, backend)[0][f"cast_{target.value}"]
    _assert_matches(actual, _cast_expected(a, target.numpy), 0, [a], f"cast to {target}")


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
        unsigned = f"u{expected.itemsize}"
        np.testing.assert_array_equal(results[key].view(unsigned), expected.view(unsigned), key)


def test_every_op_is_covered():
    assert set(ACCEPTS) | ATTRIBUTE_OPS == set(op_names())
    assert {spec.op for spec in SPECS} | ATTRIBUTE_OPS == set(op_names())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.value)
def test_typing_rules_match_the_documentation(dtype):
    """widefuse accepts an op on operands of `dtype` exactly when the documented rule does, so
    the ops tested above for `dtype` are all those it accepts."""
    fd = FusionDefinition("rules")
    t = {name: fd.define_tensor(shape=[4], dtype=dtype) for name in "abcs"}
    t["q"] = fd.define_tensor(shape=[4], dtype=DataType.Bool)

    def accepted(build):
        try:
            build()
            return True
        except widefuse.Error:
            return False
    mismatches = [spec.op for spec in SPECS if ACCEPTS[spec.op](dtype) != accepted(
        lambda: getattr(fd.ops, NVFUSER_NAME.get(spec.op, spec.op))(*(t[n] for n in spec.args)))]
    mismatches += [f"cast to {to}" for to in DTYPES
                   if not accepted(lambda: fd.ops.cast(t["a"], to))]
    mismatches += [f"bitcast to {to}" for to in DTYPES if (to in _bitcast_targets(dtype))
                   != accepted(lambda: fd.ops.bitcast(t["a"], to))]
    assert not mismatches


# sqrt on i32 is accepted (FloatMath gives f32): test_op_matches_numpy[i32-sqrt-*] checks it.
@pytest.mark.parametrize("op,dtypes,message", [
    ("bitwise_and", "f32 f32", "bool or integer"),
    ("bitwise_left_shift", "f32 f32", "integer"),
    ("bitwise_right_shift", "b8 b8", "integer"),
    ("neg", "b8", "bool"),
    ("add", "b8 b8", "bool"),
    ("lerp", "i32 i32 i32", "floating"),
    ("where", "i32 f32 f32", "condition"),
    ("fma", "b8 b8 b8", "bool"),
    ("bitcast", "b8", "bool"),
    ("bitcast", "f32", "width"),
])
def test_rejected_operands_raise(op, dtypes, message):
    fd = FusionDefinition("rejected")
    operands = [fd.define_tensor(shape=[4], dtype=DataType(name)) for name in dtypes.split()]
    with pytest.raises(widefuse.Error, match=message):
        if op == "bitcast":
            fd.ops.bitcast(operands[0], {"b8": DataType.Int8, "f32": DataType.Int16}[dtypes])
        else:
            getattr(fd.ops, op)(*operands)


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_numbers_promote_like_torch(backend):
    """Python numbers (weak), runtime scalars, typed constants and 0-d tensors promote as in
    docs section 3 (they only lift the category) and are converted to the compute type."""
    rng = np.random.default_rng(7)
    x = {"i32": rng.integers(-2**31, 2**31, 256, np.int32),
         "f16": (rng.standard_normal(256) * 100).astype(F16),
         "u8": rng.integers(0, 256, 256, np.uint8),
         "b8": rng.random(256) < 0.5,
         "i8": rng.integers(-128, 128, 256, np.int8),
         "f32": rng.standard_normal(256).astype(F32),
         "f64": rng.standard_normal(256)}
    f32, u8_1000 = np.float32, np.uint8(1000 % 256)
    third, n, lr = np.array(1 / 3), np.array(1000), 0.1  # x0: f64[], n0: i64[], lr: f64 scalar
    cases = [  # (op, operands: names of inputs or Python numbers, expected)
        ("mul", ("i32", 2.5), x["i32"].astype(f32) * f32(2.5)),
        ("truediv", ("i32", 2), x["i32"].astype(f32) / f32(2)),
        ("div", ("i32", 2), (np.abs(x["i32"].astype(np.int64)) // 2 * np.sign(x["i32"])
                             ).astype(np.int32)),
        ("lt", ("i32", 2.5), x["i32"].astype(f32) < f32(2.5)),
        ("mul", ("f16", 0.1), (x["f16"].astype(f32) * f32(0.1)).astype(F16)),
        ("add", ("u8", 1000), x["u8"] + u8_1000),
        ("add", ("b8", 1), x["b8"].astype(np.int64) + 1),
        ("add", ("b8", 1.5), x["b8"].astype(f32) + f32(1.5)),
        ("mul", ("i8", 3), x["i8"] * np.int8(3)),
        ("sub", (2, "i8"), np.int8(2) - x["i8"]),
        ("where", ("b8", "i8", 2.5), np.where(x["b8"], x["i8"].astype(f32), f32(2.5))),
        ("add", ("f64", 0.1), x["f64"] + 0.1),
        ("mul", ("f64", True), x["f64"] * 1.0),
        ("add", ("f64", "c0"), x["f64"] + float(f32(0.1))),  # c0 = 0.1:f32, a typed constant
        ("mul", ("f32", "lr"), x["f32"] * f32(lr)),
        ("mul", ("i32", "lr"), x["i32"].astype(f32) * f32(lr)),
        ("mul", ("i32", "x0"), x["i32"] * third),
        ("mul", ("f16", "x0"), (x["f16"].astype(f32) * f32(third)).astype(F16)),
        ("add", ("u8", "n0"), x["u8"] + u8_1000),
    ]
    with FusionDefinition("promotion") as fd:
        t = {name: fd.define_tensor(shape=[-1], dtype=DataType(name)) for name in x}
        t["x0"] = fd.define_tensor(shape=[], dtype=DataType.Double)
        t["n0"] = fd.define_tensor(shape=[], dtype=DataType.Int)
        t["lr"] = fd.define_scalar(dtype=DataType.Double)
        t["c0"] = fd.define_scalar(0.1, dtype=DataType.Float)
        for op, operands, _ in cases:
            fd.add_output(getattr(fd.ops, op)(*(t.get(v, v) if isinstance(v, str) else v
                                                for v in operands)))
        fd.add_output(fd.ops.broadcast_in_dim(2.5, [2, 3], []))  # a weak float: f64
    results = fd.execute([*x.values(), third, n, lr], backend=backend)
    for (op, operands, expected), actual in zip(cases, results):
        _assert_matches(actual, np.asarray(expected), what=f"{op}{operands}")
    _assert_matches(results[-1], np.full((2, 3), 2.5), what="broadcast_in_dim(2.5)")
