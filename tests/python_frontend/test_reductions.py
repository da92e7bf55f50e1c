"""Reductions from Python (docs/reductions.md): fd.ops.sum, max, min, any and
all in every scope and every dtype each allows, bit for bit against the NumPy reduction tree
(reduction_oracle.py) and against torch under assert_close; keepdim and dtype; the helpers
sum_of_squares, vector_norm and mean; the tracer's torch spellings; repr(fd); the errors.

Most fusions here run on the reference evaluator (backend="reference"); the host backend runs
every scope bit for bit equal to it (test_kernel_backends_run_every_scope_bit_for_bit).
"""

import math
import re

import numpy as np
import pytest
from conftest import rebuilt_from_repr
from reduction_oracle import (assert_same_bits, reduce_global, reduce_rows, reduce_tensor,
                              result_type, sequential_sum)

import widefuse
from widefuse import DataType, FusionDefinition

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch  # compares with torch: runs with the torch-facing tests

REFERENCE = "reference"
OPS = ("sum", "max", "min", "any", "all")
REAL = [d for d in DataType if not d.is_complex]
# any and all take every dtype; sum, max and min the real ones (10.1).
OP_DTYPES = [(op, d) for op in OPS for d in (list(DataType) if op in ("any", "all") else REAL)]
TORCH_OP = {"sum": torch.sum, "max": torch.amax, "min": torch.amin, "any": torch.any,
            "all": torch.all}
FP8 = (DataType.Float8_e4m3fn, DataType.Float8_e5m2, DataType.Float8_e8m0fnu)


def values(dtype, shape, rng):
    """Random values of `dtype`: integers over their whole range (sums wrap in int64), floats
    of mixed magnitudes (the order of a sum changes its bits), small integers for fp8 (exact
    in f32, so torch's sum of the same values rounds the same once), some zeros."""
    numpy = dtype.numpy
    if dtype is DataType.Bool:
        return np.array(rng.random(shape) < 0.5)
    if numpy.kind in "iu":
        info = np.iinfo(numpy)
        array = np.array(rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=numpy))
    elif dtype is DataType.Float8_e8m0fnu:  # powers of two only, no zero
        return np.array(2.0 ** rng.integers(-2, 3, shape), numpy)
    elif dtype in FP8:
        array = np.array(rng.integers(-2, 3, shape), np.float32).astype(numpy)
    elif dtype.is_complex:
        array = np.array(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), numpy)
    else:
        magnitudes = 2.0 ** rng.integers(-3, 4, shape)
        array = np.array(rng.standard_normal(shape) * magnitudes).astype(numpy)
    array[rng.random(shape) < 0.03] = 0
    return array


def to_torch(array):
    """A NumPy array as a CPU torch tensor of the same dtype and values."""
    dtype = next(d for d in DataType if d.numpy == array.dtype)
    if dtype is DataType.BFloat16 or dtype in FP8:
        return torch.from_numpy(np.asarray(array, np.float32).copy()).to(dtype.torch)
    return torch.from_numpy(np.array(array))


def torch_reduce(op, tensor, **dim):
    """torch's reduction; where torch has no CPU kernel for the dtype (fp8 sums and extrema,
    amax of uint16 and uint32) the same values widened exactly, the result rounded back once."""
    try:
        return TORCH_OP[op](tensor, **dim)
    except (RuntimeError, NotImplementedError):
        wide = tensor.to(torch.float32 if tensor.is_floating_point() else torch.int64)
        return TORCH_OP[op](wide, **dim).to(tensor.dtype)


def assert_close_to_torch(actual, expected, what, **tolerances):
    """assert_close (torch's defaults unless given), fp8 compared as the f32 values they are."""
    actual = to_torch(np.asarray(actual))
    if actual.dtype in [d.torch for d in FP8]:
        actual, expected = actual.float(), expected.float()
    torch.testing.assert_close(actual, expected, msg=lambda m: f"{what}: {m}", **tolerances)


def every_scope(op, dtype, rng):
    """op of x: f[5, 37] (tensor scope), its rows, x with y: f[3] and an empty e: f[0]
    (global), rows of w: f[4, 6, 1] over dim 1 and a 0-d z, on the reference evaluator."""
    arrays = [values(dtype, shape, rng) for shape in ((5, 37), (3,), (0,), (4, 6, 1), ())]
    if dtype is not DataType.Float8_e8m0fnu:  # a row of zeros and one without: any, all
        arrays[0][2] = 0
        arrays[0][3] = 1
    with FusionDefinition() as fd:
        x, y, e, w, z = (fd.define_tensor(shape=list(a.shape), dtype=dtype) for a in arrays)
        reduce = getattr(fd.ops, op)
        for result in (reduce(x), reduce(x, dims=[1]), reduce([x, y, e]), reduce(w, dims=[1]),
                       reduce(z)):
            fd.add_output(result)
    return arrays, fd.execute(arrays, backend=REFERENCE)


@pytest.mark.parametrize("op,dtype", OP_DTYPES, ids=[f"{o}-{d.value}" for o, d in OP_DTYPES])
def test_every_scope_is_the_tree_and_matches_torch(op, dtype, rng):
    (x, y, e, w, z), results = every_scope(op, dtype, rng)
    expected = [reduce_tensor(op, x), reduce_rows(op, x, 1), reduce_global(op, [x, y, e]),
                reduce_rows(op, w, 1), reduce_tensor(op, z)]
    names = ["tensor", "rows", "global", "rows of [4, 6, 1]", "0-d"]
    for actual, wanted, name in zip(results, expected, names):
        assert_same_bits(actual, wanted, f"{op} {dtype.value} {name}")
    tx, tw = to_torch(x), to_torch(w)
    flat = torch.cat([to_torch(a).reshape(-1) for a in (x, y, e)])
    by_torch = [torch_reduce(op, tx), torch_reduce(op, tx, dim=-1), torch_reduce(op, flat),
                torch_reduce(op, tw, dim=1), torch_reduce(op, to_torch(z))]
    for actual, wanted, name in zip(results, by_torch, names):
        if op in ("any", "all"):  # torch's any of uint8 is uint8 (the tracer casts: below)
            wanted = wanted.to(torch.bool)
        assert_close_to_torch(actual, wanted, f"{op} {dtype.value} {name}")


def test_global_scope_promotes_and_keeps_operand_order(rng):
    # Five operands of mixed dtypes, an empty one in the middle: its part is missing from the
    # tree over the parts, which changes the pairing of the others.
    shapes = [(7,), (2, 3), (0,), (5,), (1, 4)]
    cases = [("sum", [DataType.Float, DataType.BFloat16, DataType.Float, DataType.Half,
                      DataType.Float]),
             ("max", [DataType.Half, DataType.BFloat16, DataType.Half, DataType.Half,
                      DataType.Half]),
             ("sum", [DataType.Int8, DataType.Int32, DataType.Int8, DataType.UInt8,
                      DataType.Int8]),
             ("min", [DataType.UInt8, DataType.Int8, DataType.UInt8, DataType.UInt8,
                      DataType.UInt8]),
             ("sum", [DataType.Double, DataType.Float, DataType.Double, DataType.Double,
                      DataType.Double])]
    for op, dtypes in cases:
        arrays = [values(d, s, rng) for d, s in zip(dtypes, shapes)]
        with FusionDefinition() as fd:
            operands = [fd.define_tensor(shape=list(s), dtype=d) for d, s in zip(dtypes, shapes)]
            fd.add_output(getattr(fd.ops, op)(operands))
        (result,) = fd.execute(arrays, backend=REFERENCE)
        assert_same_bits(result, reduce_global(op, arrays), f"{op} {dtypes}")
        # torch over the operands converted (exactly) to the result dtype, joined.
        wide = result_type(op, dtypes).torch
        flat = torch.cat([to_torch(a).reshape(-1).to(wide) for a in arrays])
        torch.testing.assert_close(torch.from_numpy(np.array(result)), TORCH_OP[op](flat))


def test_an_empty_operand_keeps_its_place_in_the_global_tree():
    # Parts 1, 1, missing, 2^25, -2^25: ((1 + 1) + 2^25) + -2^25 is 0 in f32 (2^25 + 2 is a
    # tie that rounds to 2^25); dropping the missing part would pair (1 + 1) + (2^25 - 2^25).
    big = np.float32(2.0**25)
    arrays = [np.array([1, 0, 0, 0, 0, 0, 0], np.float32), np.array([[0, 0, 1], [0, 0, 0]],
              np.float32), np.zeros(0, np.float32), np.array([big, 0, 0, 0, 0], np.float32),
              np.array([[-big, 0, 0, 0]], np.float32)]
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum([fd.define_tensor(shape=list(a.shape)) for a in arrays]))
    (result,) = fd.execute(arrays, backend=REFERENCE)
    assert_same_bits(result, reduce_global("sum", arrays))
    parts = [reduce_tensor("sum", a) for a in arrays]
    assert result != (parts[0] + parts[1]) + (parts[3] + parts[4])


def test_documented_examples_follow_the_tree_not_left_to_right():
    cancelling = np.array([1e8, 1, -1e8, 1], np.float32)
    ramp = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    narrow = np.array([1, 2.0**-8, 2.0**-8], np.float32).astype(DataType.BFloat16.numpy)
    with FusionDefinition() as fd:
        c = fd.define_tensor(shape=[4])
        r = fd.define_tensor(shape=[2, 3])
        b = fd.define_tensor(shape=[3], dtype=DataType.BFloat16)
        p = fd.define_tensor(shape=[2], dtype=DataType.Int8)
        m = fd.define_tensor(shape=[3])
        for result in (fd.ops.sum(c), fd.ops.sum(r, dims=[1]), fd.ops.sum(b), fd.ops.sum(p),
                       fd.ops.max(m), fd.ops.any(fd.ops.mul(m, 0))):
            fd.add_output(result)
    small = np.array([127, 1], np.int8)
    nan_in = np.array([1, np.nan, 2], np.float32)
    total, rows, rounded, wide, biggest, anything = fd.execute(
        [cancelling, ramp, narrow, small, nan_in], backend=REFERENCE)
    assert_same_bits(total, reduce_tensor("sum", cancelling))
    assert total != sequential_sum(cancelling)  # the order is visible in the result
    assert_same_bits(rows, reduce_rows("sum", ramp, 1))
    assert_same_bits(rounded, reduce_tensor("sum", narrow))
    torch.testing.assert_close(to_torch(rounded), torch.sum(to_torch(narrow)))
    assert wide.dtype == np.int64 and wide == int(small.astype(np.int64).sum())
    assert np.isnan(biggest) and np.isnan(torch.amax(to_torch(nan_in)).item())
    assert_same_bits(anything, reduce_tensor("any", nan_in * 0))  # NaN * 0 is NaN: true


def test_nan_wins_and_signed_zeros_do_not_depend_on_the_order():
    x = np.array([[1, np.nan, 2, 3], [-0.0, 0.0, -0.0, -0.0], [0.0, -0.0, -1, 1],
                  [-0.0, -0.0, -0.0, -0.0]], np.float32)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[4, 4])
        for op in ("max", "min"):
            fd.add_output(getattr(fd.ops, op)(t, dims=[1]))
        fd.add_output(fd.ops.sum(t, dims=[1]))
    largest, smallest, total = fd.execute([x], backend=REFERENCE)
    assert_same_bits(largest, reduce_rows("max", x, 1))
    assert_same_bits(smallest, reduce_rows("min", x, 1))
    assert_same_bits(total, reduce_rows("sum", x, 1))  # a sum is never -0.0
    assert not np.signbit(total[3]) and not np.signbit(largest[1]) and np.signbit(smallest[1])
    for mine, op in ((largest, torch.amax), (smallest, torch.amin)):
        torch.testing.assert_close(torch.from_numpy(mine), op(torch.from_numpy(x), dim=1),
                                   equal_nan=True)


def test_keepdim_and_dtype_keywords(rng):
    x = values(DataType.BFloat16, (6, 9), rng)
    n = values(DataType.Int8, (6, 9), rng)
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)  # symbolic extents
        tn = fd.define_tensor(shape=[6, 9], dtype=DataType.Int8)
        outputs = [fd.ops.sum(tx, dims=[1], keepdim=True), fd.ops.max(tx, keepdim=True),
                   fd.ops.sum(tx, dtype=DataType.Float), fd.ops.sum(tn, dims=[0, 1]),
                   fd.ops.sum(tn, dims=[1], dtype=torch.float32), fd.ops.all(tn, [1], True)]
        for result in outputs:
            fd.add_output(result)
    row_sums, top, widened, total, float_rows, every = fd.execute([x, n], backend=REFERENCE)
    assert row_sums.shape == (6, 1) and top.shape == (1, 1) and every.shape == (6, 1)
    assert_same_bits(row_sums[:, 0], reduce_rows("sum", x, 1))
    assert_same_bits(top.reshape(()), reduce_tensor("max", x))
    assert_same_bits(widened, reduce_tensor("sum", x.astype(np.float32)))  # cast first
    assert_same_bits(total, reduce_tensor("sum", n))
    assert_same_bits(float_rows, reduce_rows("sum", n.astype(np.float32), 1))
    tx_, tn_ = to_torch(x), to_torch(n)
    for actual, wanted in [(row_sums, tx_.sum(dim=1, keepdim=True)), (top, tx_.amax((0, 1), True)),
                           (widened, tx_.sum(dtype=torch.float32)), (total, tn_.sum()),
                           (float_rows, tn_.sum(dim=1, dtype=torch.float32)),
                           (every, tn_.all(dim=1, keepdim=True))]:
        assert_close_to_torch(actual, wanted, "keepdim / dtype")


def test_helpers_are_compositions_in_float(rng):
    x = values(DataType.BFloat16, (5, 12), rng)
    g = [values(DataType.Float, (17,), rng), values(DataType.BFloat16, (2, 3), rng)]
    orders = (2, math.inf, -math.inf, 1, 0, 3, 0.5)
    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        tg = [fd.define_tensor(shape=list(a.shape), dtype=d)
              for a, d in zip(g, (DataType.Float, DataType.BFloat16))]
        outputs = [fd.ops.sum_of_squares(tg), fd.ops.mean(tx), fd.ops.mean(tx, dims=[1]),
                   fd.ops.mean(tx, dims=[1], keepdim=True)]
        outputs += [fd.ops.vector_norm(tx, ord) for ord in orders]
        outputs += [fd.ops.vector_norm(tg), fd.ops.vector_norm(tx, 2, dims=[1])]
        for result in outputs:
            fd.add_output(result)
    results = fd.execute([x, *g], backend=REFERENCE)
    squares, mean, row_means, kept_means = results[:4]
    norms, global_norm, row_norms = results[4:-2], results[-2], results[-1]
    f = [a.astype(np.float32) for a in g]
    xf = x.astype(np.float32)
    # Bit for bit where the composition's other steps are correctly rounded (*, /, sqrt).
    assert_same_bits(squares, reduce_global("sum", [a * a for a in f]))
    bf16 = DataType.BFloat16.numpy
    assert_same_bits(mean, (reduce_tensor("sum", xf) / np.float32(x.size)).astype(bf16))
    assert_same_bits(row_means, (reduce_rows("sum", xf, 1) / np.float32(12)).astype(bf16))
    assert_same_bits(kept_means[:, 0], row_means)
    assert_same_bits(norms[0], np.sqrt(reduce_tensor("sum", xf * xf)).astype(bf16))
    assert_same_bits(global_norm, np.sqrt(reduce_global("sum", [a * a for a in f])))
    tx_ = to_torch(x)
    flat = torch.cat([to_torch(a).reshape(-1).float() for a in g])
    torch.testing.assert_close(to_torch(squares), flat.square().sum())
    torch.testing.assert_close(to_torch(mean), tx_.mean())
    torch.testing.assert_close(to_torch(row_means), tx_.mean(dim=1))
    for ord, norm in zip(orders, norms):
        torch.testing.assert_close(to_torch(norm), torch.linalg.vector_norm(tx_, ord))
    torch.testing.assert_close(to_torch(global_norm), torch.linalg.vector_norm(flat))
    torch.testing.assert_close(to_torch(row_norms), torch.linalg.vector_norm(tx_, dim=1))


# ---- the tracer ------------------------------------------------------------------------------


def _traced_matches_torch(function, *tensors, **tolerances):
    """`function` traced (on the reference evaluator) against torch running it itself."""
    traced = widefuse.trace(function, backend=REFERENCE)
    actual, expected = traced(*tensors), function(*tensors)
    assert len(actual) == len(expected)
    for index, (mine, theirs) in enumerate(zip(actual, expected)):
        torch.testing.assert_close(mine, theirs, msg=lambda m: f"output {index}: {m}",
                                   **tolerances)
    return traced, actual


def test_traced_torch_reductions_match_torch():
    def reductions(x, b, u, c):
        return (x.sum(), torch.sum(x), x.sum(dim=-1), x.sum(-1, keepdim=True),
                x.sum(dim=(0, 1)), x.sum(dtype=torch.float64), torch.sum(x, 1, True),
                x.amax(), x.amax(-1, keepdim=True), x.amin(dim=1), torch.amax(x, (-2, -1)),
                x.max(), x.min(), torch.max(x), torch.min(x, x * 2),
                b.any(), b.all(dim=-1), u.any(), u.all(-1, True), torch.isfinite(x).all(),
                x.mean(), x.mean(dim=-1, keepdim=True), torch.mean(x, -1),
                x.norm(), x.norm(1), x.norm(p=3, dim=-1), torch.norm(x, float("inf")),
                torch.linalg.vector_norm(x), torch.linalg.vector_norm(x, 0.5, -1, True),
                torch.linalg.vector_norm(x, ord=-math.inf, dim=1),
                torch.linalg.vector_norm(x.bfloat16(), dtype=torch.float32),
                x.square().sum(), c.sum(dim=1), c.sum(dim=(1, 2), keepdim=True), c.amax(1))

    generator = torch.Generator().manual_seed(7)
    x = torch.randn(6, 10, generator=generator)
    b = torch.rand(6, 10, generator=generator) < 0.9
    u = (torch.rand(6, 10, generator=generator) * 3).to(torch.uint8)
    c = torch.randn(4, 8, 1, generator=generator)
    traced, actual = _traced_matches_torch(reductions, x, b, u, c)
    # And bit for bit with the tree where the traced op is a reduction alone.
    assert_same_bits(actual[0].numpy(), reduce_tensor("sum", x.numpy()))
    assert_same_bits(actual[2].numpy(), reduce_rows("sum", x.numpy(), 1))
    assert_same_bits(actual[7].numpy(), reduce_tensor("max", x.numpy()))
    text = traced.last_definition.to_text()
    assert "sum(T0)" in text and "sum(T0, [1])" in text and "max(T0)" in text


def test_extent_one_dimensions_are_dropped_from_torch_dims():
    def f(row, column, trailing):
        return (row.sum(dim=1), row.sum(dim=-1, keepdim=True), column.amax(dim=0),
                column.sum(dim=(0, 1)), trailing.sum(dim=1), trailing.amin(1, keepdim=True),
                trailing.mean(dim=(0, 1, 2)))

    generator = torch.Generator().manual_seed(3)
    row, column = torch.randn(1, 9, generator=generator), torch.randn(9, 1, generator=generator)
    trailing = torch.randn(3, 5, 1, generator=generator)
    traced, actual = _traced_matches_torch(f, row, column, trailing)
    assert [tuple(a.shape) for a in actual] == [(1,), (1, 1), (1,), (), (3, 1), (3, 1, 1), ()]


def test_global_sum_and_norm_of_several_tensors():
    def grad_norm(grads):
        return (widefuse.sum(grads), widefuse.vector_norm(grads),
                widefuse.sum_of_squares(grads), widefuse.vector_norm(grads, math.inf))

    generator = torch.Generator().manual_seed(11)
    grads = [torch.randn(shape, generator=generator) for shape in ((5, 3), (7,), (2, 2, 2))]
    total, norm, squares, largest = widefuse.trace(grad_norm, backend=REFERENCE)(grads)
    flat = torch.cat([g.reshape(-1) for g in grads])
    torch.testing.assert_close(total, flat.sum())
    torch.testing.assert_close(norm, torch.linalg.vector_norm(flat))
    torch.testing.assert_close(squares, flat.square().sum())
    torch.testing.assert_close(largest, flat.abs().max())
    assert_same_bits(total.numpy(), reduce_global("sum", [g.numpy() for g in grads]))


def test_traced_reductions_feed_pointwise_work_and_steady_calls():
    def normalize(x):
        return x / x.sum(dim=-1, keepdim=True), x - x.mean(), x.sum()

    traced = widefuse.trace(normalize, backend=REFERENCE)
    generator = torch.Generator().manual_seed(5)
    for _ in range(3):  # a new call of one structure takes the steady path
        x = torch.rand(4, 6, generator=generator) + 0.5
        for mine, theirs in zip(traced(x), normalize(x)):
            torch.testing.assert_close(mine, theirs)
    assert traced.cache_size == 1


# ---- the printed definition, the host backend, errors ----------------------------------------


def test_repr_rebuilds_every_scope():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4, 8])
        y = fd.define_tensor(shape=[3], dtype=DataType.Half)
        for result in (fd.ops.sum(x), fd.ops.max([x, y]), fd.ops.min(x, dims=[1]),
                       fd.ops.any(x, keepdim=True), fd.ops.vector_norm([x, y])):
            fd.add_output(result)
    assert "fd.ops.max([tv0, tv1])" in repr(fd) and "dims=[1], keepdim=False" in repr(fd)
    for api in ("direct", "legacy"):
        assert rebuilt_from_repr(fd, fd.name, api).to_text() == fd.to_text()


def test_kernel_backends_run_every_scope_bit_for_bit():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4, 8])
        y = fd.define_tensor(shape=[3])
        fd.add_output(fd.ops.mul(x, 2))
        fd.add_output(fd.ops.sum(x))
        fd.add_output(fd.ops.max([x, y]))
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    y = np.random.default_rng(4).standard_normal(3).astype(np.float32)
    expected = fd.execute([x, y], backend=REFERENCE)
    for options in ({}, {"backend": "host"}, {"backend": "host", "mode": "batched"}):
        for got, want in zip(fd.execute([x, y], **options), expected):
            np.testing.assert_array_equal(got, want)
    # Rows, of rows longer than a block; the tracer's of a transposed view (column sums).
    with FusionDefinition() as rows:
        t = rows.define_tensor(shape=[-1, -1])
        rows.add_output(rows.ops.sum(t, dims=[1]))
        rows.add_output(rows.ops.max(t, dims=[1]))
    wide = np.random.default_rng(5).standard_normal((3, 1500)).astype(np.float32)
    for array in (x, wide):
        want = rows.execute([array], backend=REFERENCE)
        assert_same_bits(want[0], reduce_rows("sum", array, 1))
        for got, expected_rows in zip(rows.execute([array], backend="host"), want):
            assert_same_bits(got, expected_rows)
    traced = widefuse.trace(lambda t: t.sum(dim=-1), backend="host")
    columns = torch.from_numpy(wide).mT
    assert_same_bits(traced(columns).numpy(), reduce_rows("sum", columns.numpy(), 1))
    torch.testing.assert_close(widefuse.trace(lambda t: t.sum())(torch.ones(3, 2)),
                               torch.ones(3, 2).sum())


def test_a_fusion_in_phases_is_segmented_from_the_components_its_definition_found():
    # s = sum(g * g), read by p's update: two phases. The definition finds the components
    # when it ends; the executor and segments() use them instead of finding them again.
    before = widefuse._widefuse.component_searches()
    with FusionDefinition() as fd:
        p = fd.define_tensor(shape=[-1])
        g = fd.define_tensor(shape=[-1])
        s = fd.ops.sum(fd.ops.mul(g, g))
        fd.add_output(fd.ops.sub(p, fd.ops.mul(g, s)), alias_input=p)
        fd.add_output(s)
    assert widefuse._widefuse.component_searches() == before + 1
    rng = np.random.default_rng(11)
    p_host = rng.standard_normal(1500).astype(np.float32)
    g_host = rng.standard_normal(1500).astype(np.float32)
    p_reference = p_host.copy()
    (s_host,) = fd.execute([p_host, g_host], backend="host")
    (s_reference,) = fd.execute([p_reference, g_host], backend=REFERENCE)
    assert_same_bits(s_host, s_reference)
    assert_same_bits(p_host, p_reference)
    report = fd.segments()
    assert "2 phases" in report and "kept between phases" in report
    assert widefuse._widefuse.component_searches() == before + 1


def test_a_value_reduced_over_rows_and_over_all_runs_in_one_launch():
    # A clip's total norm beside Adafactor's row sums of the same squares: each way of
    # reducing is a body of its own, both in one launch, with the evaluator's bits.
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1])
        square = fd.ops.mul(t, t)
        fd.add_output(fd.ops.sum(square, dims=[1]))
        fd.add_output(fd.ops.sum(square))
    x = np.random.default_rng(7).standard_normal((37, 301)).astype(np.float32)
    rows, total = fd.execute([x], backend="host")
    rows_reference, total_reference = fd.execute([x], backend=REFERENCE)
    assert_same_bits(rows, rows_reference)
    assert_same_bits(total, total_reference)
    np.testing.assert_allclose(rows, (x.astype(np.float64) ** 2).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(total, (x.astype(np.float64) ** 2).sum(), rtol=1e-5)
    report = fd.segments()
    assert "1 launches" in report and "a subgraph reduces in 2 ways" in report


def test_blocks_are_each_blocks_tree_and_read_in_the_same_kernel():
    # Blockwise quantization's shape: each block's absmax (blocks across rows, the last one
    # short), each element divided by its block's; one kernel on the host backend, the
    # evaluator's bits, each block the NumPy tree over its elements.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 100])
        absmax = fd.ops.max(fd.ops.abs(x), block=64)
        fd.add_output(absmax)
        fd.add_output(fd.ops.sum(x, block=64))
        fd.add_output(fd.ops.div(x, fd.ops.expand_blocks(absmax, [x.size(0), 100], block=64)))
    array = np.random.default_rng(7).standard_normal((7, 100)).astype(np.float32)
    flat = array.reshape(-1)
    blocks = [flat[b:b + 64] for b in range(0, flat.size, 64)]
    expected = fd.execute([array], backend=REFERENCE)
    assert_same_bits(expected[0], np.array([reduce_tensor("max", np.abs(b)) for b in blocks]))
    assert_same_bits(expected[1], np.array([reduce_tensor("sum", b) for b in blocks]))
    scale = np.repeat(expected[0], 64)[:flat.size].reshape(7, 100)
    assert_same_bits(expected[2], array / scale)
    for options in ({"backend": "host"}, {"backend": "host", "host_execution": "verify"}):
        for got, want in zip(fd.execute([array], **options), expected):
            assert_same_bits(got, want)
    assert "fd.ops.max(tv1, block=64)" in repr(fd) and "block=64)" in repr(fd)
    for api in ("direct", "legacy"):
        assert rebuilt_from_repr(fd, fd.name, api).to_text() == fd.to_text()


def _refusal(build):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4, 8])
        y = fd.define_tensor(shape=[3])
        build(fd, x, y)


def test_negative_dims_count_from_the_end_as_nvfusers():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[-1]))
        fd.add_output(fd.ops.max(x, dims=-1, keepdim=True))
        fd.add_output(fd.ops.mean(x, dims=[-1]))
    array = np.arange(15, dtype=np.float32).reshape(3, 5)
    total, largest, mean = fd.execute([array])
    np.testing.assert_array_equal(total, array.sum(axis=1))
    np.testing.assert_array_equal(largest, array.max(axis=1, keepdims=True))
    np.testing.assert_allclose(mean, array.mean(axis=1), rtol=1e-7)
    assert "dims=[1]" in repr(fd)  # the IR's dimension, counted from the start


@pytest.mark.parametrize("build,error,message", [
    (lambda fd, x, y: fd.ops.sum(x, dims=[0]), widefuse.UnsupportedOperationError,
     "sum(T0: f32[4, 8], [0]): reducing dimension 0 is not supported: only every dimension "
     "(sum(x)) or the innermost one ([1])"),
    (lambda fd, x, y: fd.ops.max(x, dims=[]), widefuse.UnsupportedOperationError,
     "max(T0: f32[4, 8], []): name the dimensions to reduce, or write max(x)"),
    (lambda fd, x, y: fd.ops.sum([x, y], dims=[1]), widefuse.UnsupportedOperationError,
     "a reduction over rows takes one operand"),
    (lambda fd, x, y: fd.ops.sum(x, dims=[-3]), widefuse.UnsupportedOperationError,
     "dimension -3 is outside the operand's rank 2"),
    (lambda fd, x, y: fd.ops.sum(x, dims=[-2]), widefuse.UnsupportedOperationError,
     "reducing dimension 0 is not supported"),  # -2 counts from the end: dimension 0
    (lambda fd, x, y: fd.ops.all(x, dims=[1, 1]), widefuse.UnsupportedOperationError,
     "dimension 1 is named twice"),
    (lambda fd, x, y: fd.ops.sum([x, y], keepdim=True), widefuse.UnsupportedOperationError,
     "no dimensions to keep"),
    (lambda fd, x, y: fd.ops.sum(2.0), widefuse.ArgumentTypeError,
     "fd.ops.sum(2.0): reductions take tensors; '2.0' is a scalar"),
    (lambda fd, x, y: fd.ops.sum(fd.ops.complex(x, x)), widefuse.Error,
     "sum of complex operands is not supported yet"),
    (lambda fd, x, y: fd.ops.max(fd.define_tensor(shape=[4, 0]), dims=[1]), widefuse.Error,
     "max over zero elements has no value (torch raises too)"),
    (lambda fd, x, y: fd.ops.vector_norm(fd.define_tensor(shape=[0]), math.inf),
     widefuse.Error, "linalg.vector_norm cannot compute the inf norm on an empty tensor"),
    (lambda fd, x, y: fd.ops.vector_norm(fd.ops.cast(x, DataType.Int32)),
     widefuse.ArgumentTypeError, "expected floating-point tensors"),
    (lambda fd, x, y: fd.ops.mean(fd.ops.cast(x, DataType.Bool)), widefuse.ArgumentTypeError,
     "expected floating-point tensors"),
    (lambda fd, x, y: fd.ops.max(x, block=48), widefuse.UnsupportedOperationError,
     "max(T0: f32[4, 8], block=48): a block has a power of two of elements from 1 to 1024"),
    (lambda fd, x, y: fd.ops.sum([x, y], block=4), widefuse.UnsupportedOperationError,
     "fd.ops.sum(..., block=4) reduces each block of one tensor; it takes no list, dims or "
     "keepdim"),
    (lambda fd, x, y: fd.ops.expand_blocks(y, [4, 8], block=4), widefuse.Error,
     "32 elements are 8 blocks, but the operand has 3"),
])
def test_fd_ops_refusals(build, error, message):
    with pytest.raises(error, match=re.escape(message)):
        _refusal(build)


@pytest.mark.parametrize("function,error,message", [
    (lambda t: t.sum(dim=0), widefuse.UnsupportedOperationError,
     "Tensor.sum(dim=0) of a [4, 8] tensor: widefuse reduces every dimension or the innermost "
     "one only"),
    (lambda t: torch.amax(t, dim=(0,)), widefuse.UnsupportedOperationError,
     "Tensor.amax(dim=(0,)) of a [4, 8] tensor"),
    (lambda t: t.max(dim=1), widefuse.UnsupportedOperationError, "indices"),
    (lambda t: torch.min(t, 1), widefuse.UnsupportedOperationError, "indices"),
    (lambda t: t.sum().item(), widefuse.UnsupportedOperationError, "Tensor.item()"),
    (lambda t: t.sum(dim=2), widefuse.DimensionIndexError, "Dimension out of range"),
    (lambda t: t.sum(dim=(1, -1)), widefuse.ArgumentValueError, "appears multiple times"),
    (lambda t: t.to(torch.int32).mean(), widefuse.ArgumentTypeError, "Tensor.mean()"),
    (lambda t: t.norm(p="nuc"), widefuse.UnsupportedOperationError, "p='nuc'"),
])
def test_tracer_refusals(function, error, message):
    with pytest.raises(error, match=re.escape(message)):
        widefuse.trace(function, backend=REFERENCE)(torch.ones(4, 8))


def test_an_extent_one_dimension_the_result_cannot_drop_is_refused():
    def f(t):
        return t.sum(dim=(0, 2))

    with pytest.raises(widefuse.UnsupportedOperationError, match="cannot drop the extent-1"):
        widefuse.trace(f, backend=REFERENCE)(torch.ones(1, 4, 8))
    kept = widefuse.trace(lambda t: t.sum(dim=(0, 2), keepdim=True), backend=REFERENCE)
    torch.testing.assert_close(kept(torch.ones(1, 4, 8)), torch.ones(1, 4, 8).sum((0, 2), True))
