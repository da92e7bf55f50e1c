"""The reduction tree of docs/reductions.md §3 in NumPy, written from its recursive
definition, for test_reductions.py: leaves in the accumulator type (float32 for f32, bf16,
f16 and fp8 sums, float64 for f64, int64 wrapping for integer and bool sums, the promoted
type itself for max and min, bool for any and all), `T(i, 2m) = T(i, m) ⊕ T(i + m, m)`, a
missing leaf past the end and for an empty operand of a global reduction, and the finish of
10.1 (a sum is added to +0.0; the value is converted to the result dtype once).
"""

import numpy as np

from widefuse import DataType

F32, F64, I64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)


def promoted(dtypes):
    """promote_types over `dtypes` for the mixes the tests use (ir_reference.md section 3):
    one dtype; real floating types (f64 if among them, else f32); integers (NumPy's rule
    agrees with torch's there)."""
    dtypes = list(dict.fromkeys(dtypes))
    if len(dtypes) == 1:
        return dtypes[0]
    if all(d.is_floating_point for d in dtypes):
        return DataType.Double if DataType.Double in dtypes else DataType.Float
    numpy = np.result_type(*[d.numpy for d in dtypes])
    return next(d for d in DataType if d.numpy == numpy)


def result_type(op, dtypes):
    """The result DataType of `op` over operands of `dtypes` (10.1)."""
    p = promoted(dtypes)
    if op in ("any", "all"):
        return DataType.Bool
    if op == "sum" and not p.is_floating_point:
        return DataType.Int
    return p


def accumulator(op, dtypes):
    """The NumPy dtype a reduction combines in (10.1)."""
    result = result_type(op, dtypes)
    if op == "sum":
        if not result.is_floating_point:
            return I64
        return F64 if result is DataType.Double else F32
    return result.numpy


def _key(value):
    """A leaf as a Python number to compare: exact for every dtype used here."""
    return int(value) if isinstance(value, (np.integer, np.bool_, bool)) else float(value)


def _larger(a, b):  # max: NaN wins, -0 < +0
    x, y = _key(a), _key(b)
    if x != x:
        return a
    if y != y or y > x:
        return b
    if x > y:
        return a
    return b if np.signbit(x) else a


def _smaller(a, b):  # min: NaN wins, -0 < +0
    x, y = _key(a), _key(b)
    if x != x:
        return a
    if y != y or y < x:
        return b
    if x < y:
        return a
    return a if np.signbit(x) else b


COMBINE = {"sum": lambda a, b: a + b, "max": _larger, "min": _smaller,
           "any": lambda a, b: a or b, "all": lambda a, b: a and b}


def tree(leaves, combine):
    """T(0, N) over `leaves` (None is a missing leaf), N the smallest power of two >= n;
    None when every leaf is missing."""
    count = len(leaves)
    size = 1
    while size < count:
        size *= 2

    def t(i, m):
        if i >= count:
            return None
        if m == 1:
            return leaves[i]
        a, b = t(i, m // 2), t(i + m // 2, m // 2)
        if a is None:
            return b
        return a if b is None else combine(a, b)

    with np.errstate(over="ignore"):  # integer sums wrap in int64
        return t(0, size)


def _leaves(op, array, acc):
    flat = np.asarray(array).reshape(-1)
    if op in ("any", "all"):
        return [bool(v) for v in flat != 0]
    return list(flat.astype(acc))


def _finish(op, value, acc, result):
    """10.3 step 6: the empty value, a sum's +0.0, the conversion to the result dtype."""
    if value is None:
        if op in ("max", "min"):
            raise ValueError(f"{op} over zero elements has no value")
        value = {"sum": acc.type(0), "any": False, "all": True}[op]
    if op == "sum" and acc.kind == "f":
        value = value + acc.type(0.0)
    return np.asarray(value, dtype=acc).astype(result.numpy)


def reduce_tensor(op, array):
    """`op(x)`: the tensor scope."""
    dtype = _data_type(array)
    acc = accumulator(op, [dtype])
    return _finish(op, tree(_leaves(op, array, acc), COMBINE[op]), acc, result_type(op, [dtype]))


def reduce_global(op, arrays):
    """`op(x0, x1, ...)`: one tree per operand in the global accumulator, then the tree over
    their results in operand order (an empty operand's is missing)."""
    dtypes = [_data_type(a) for a in arrays]
    acc = accumulator(op, dtypes)
    parts = [tree(_leaves(op, a, acc), COMBINE[op]) for a in arrays]
    return _finish(op, tree(parts, COMBINE[op]), acc, result_type(op, dtypes))


def reduce_rows(op, array, dim):
    """`op(x, [dim])`: one tree per row of dimension `dim` (every later extent is 1)."""
    shape = array.shape
    rows = np.moveaxis(array, dim, -1).reshape(-1, shape[dim])
    values = [reduce_tensor(op, row) for row in rows]
    result = result_type(op, [_data_type(array)]).numpy
    return np.array(values, dtype=result).reshape(shape[:dim] + shape[dim + 1:])


def _data_type(array):
    return next(d for d in DataType if d.numpy == array.dtype)


def sequential_sum(array):
    """The left-to-right f32 sum: the order the tree is not (to show a test can tell them
    apart)."""
    total = np.float32(0)
    for value in np.asarray(array, dtype=np.float32).reshape(-1):
        total = total + value
    return total


def assert_same_bits(actual, expected, what=""):
    """Equal dtype, shape and bits; NaNs compare by position only (their sign and payload are
    unspecified: ir_reference.md section 5)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    nan_a = np.isnan(actual.astype(F64))
    nan_e = np.isnan(expected.astype(F64))
    np.testing.assert_array_equal(nan_a, nan_e, err_msg=f"{what}: NaN positions")
    bits = np.dtype(f"u{actual.dtype.itemsize}")
    np.testing.assert_array_equal(actual.view(bits)[~nan_a], expected.view(bits)[~nan_e],
                                  err_msg=f"{what}: bits")
