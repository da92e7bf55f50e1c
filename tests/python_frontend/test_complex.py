"""Complex dtypes (ComplexFloat = torch.complex64, ComplexDouble = torch.complex128): every op
defined on complex values against torch on the CPU (on random values and on a grid of small
special values), on the host backend and the reference evaluator, and casts.

The formulas are textbook ones (ir/complex_math.h); torch's CPU kernels differ from them in
the last bits, so values are compared with assert_close at rtol = atol = 1e-5 (complex64) and
1e-12 (complex128). pow of a zero base, where torch's formula meets log 0, has tests of its
own. The frontend side (ways in and out, promotion, constants, errors, repr):
test_complex_frontend.py."""

import functools
import math
import warnings

import pytest

from widefuse import DataType, FusionDefinition
from complex_support import (BACKENDS, BINARY, COMPLEX, SPECIAL, TORCH_DTYPE, UNARY, _close,
                             _complex, _grid, _run, _uniform)

torch = pytest.importorskip("torch")


# ---- every op against torch --------------------------------------------------------------------


def _unary_outputs(data_type, x, backend):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=data_type)
        for op in UNARY:
            fd.add_output(getattr(fd.ops, op)(t))
    return dict(zip(UNARY, _run(fd, [x], backend=backend)))


@functools.lru_cache(maxsize=None)
def _unary_results(index, backend):
    """For COMPLEX[index] on a backend: every unary op on the grid, on uniform values and on
    parts with infinities and NaNs (compared with the other backend only)."""
    data_type, torch_dtype = COMPLEX[index]
    inputs = {"grid": _grid(torch_dtype), "uniform": _uniform(torch_dtype, 1000, seed=6),
              "special": _grid(torch_dtype, SPECIAL)}
    return {label: (x, _unary_outputs(data_type, x, backend)) for label, x in inputs.items()}


def _binary_outputs(data_type, a, b, backend):
    with FusionDefinition() as fd:
        ta = fd.define_tensor(shape=[-1], contiguity=[True], dtype=data_type)
        tb = fd.define_tensor(shape=[-1], contiguity=[True], dtype=data_type)
        for op in BINARY:
            fd.add_output(getattr(fd.ops, op)(ta, tb))
    return dict(zip(BINARY, _run(fd, [a, b], backend=backend)))


def _all_pairs(values):
    return values.repeat_interleave(len(values)), values.repeat(len(values))


@functools.lru_cache(maxsize=None)
def _binary_results(index, backend):
    """For COMPLEX[index] on a backend: every binary op on all pairs of grid values, on
    uniform pairs and on all pairs of special values (compared with the other backend only)."""
    data_type, torch_dtype = COMPLEX[index]
    inputs = {"grid": _all_pairs(_grid(torch_dtype)),
              "uniform": (_uniform(torch_dtype, 1000, seed=7),
                          _uniform(torch_dtype, 1000, seed=8)),
              "special": _all_pairs(_grid(torch_dtype, SPECIAL))}
    return {label: (a, b, _binary_outputs(data_type, a, b, backend))
            for label, (a, b) in inputs.items()}


CASES = [pytest.param(index, backend, id=f"{COMPLEX[index][1]}-{backend}")
         for index in range(len(COMPLEX)) for backend in BACKENDS]


@pytest.mark.parametrize("inputs", ["grid", "uniform"])
@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("index, backend", CASES)
def test_unary_op_matches_torch(index, backend, op, inputs):
    x, outputs = _unary_results(index, backend)[inputs]
    _close(outputs[op], UNARY[op](x), f"{op} on {inputs} {x.dtype}")


@pytest.mark.parametrize("inputs", ["grid", "uniform"])
@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("index, backend", CASES)
def test_binary_op_matches_torch(index, backend, op, inputs):
    a, b, outputs = _binary_results(index, backend)[inputs]
    ours, theirs = outputs[op], BINARY[op](a, b)
    if op == "pow":  # a zero base: see test_pow_of_zero_* below
        keep = (a != 0) | (b.real > 0)
        ours, theirs = ours[keep], theirs[keep]
    _close(ours, theirs, f"{op} on {inputs} {a.dtype}")


def _same_bits(host, reference, what):
    """Equal bit for bit, signed zeros included; a NaN need only be a NaN (the sign of a
    computed NaN is unspecified, docs/ir_reference.md)."""
    assert host.dtype == reference.dtype, what
    if host.dtype is torch.bool:
        assert torch.equal(host, reference), what
        return
    host, reference = (torch.view_as_real(t) if t.is_complex() else t
                       for t in (host, reference))
    nan = torch.isnan(reference)
    assert torch.equal(torch.isnan(host), nan), what
    integer = torch.int32 if host.dtype is torch.float32 else torch.int64
    differ = (host.view(integer) != reference.view(integer)) & ~nan
    assert not differ.any(), (what, host[differ][:4], reference[differ][:4])


def _host_and_reference(index):
    """(op, input label, host output, reference output) for every op and input set."""
    for results in (_unary_results, _binary_results):
        host, reference = results(index, "host"), results(index, "reference")
        for label in host:
            for op, output in host[label][-1].items():
                yield op, label, output, reference[label][-1][op]


@pytest.mark.parametrize("index", range(len(COMPLEX)), ids=[str(c[1]) for c in COMPLEX])
def test_host_backend_equals_the_reference_bit_for_bit(index):
    """ir/complex_math.h is one text for the host backend's kernels and the evaluator.
    (GCC 12 once fused the complex128 products of mul and div into vfmaddsub in spite of
    -ffp-contract=off; the prelude now holds each product in a register.)"""
    for op, label, host, reference in _host_and_reference(index):
        _same_bits(host, reference, f"{op} on {label}")


def _pow_of_zero(exponents, torch_dtype):
    base = torch.zeros(len(exponents), dtype=torch_dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.pow(fd.from_pytorch(base), fd.from_pytorch(exponents)))
    return fd.execute([base, exponents])[0], torch.pow(base, exponents)


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_pow_of_zero_with_a_positive_real_part_is_zero(data_type, torch_dtype):
    exponents = _complex([0.25, 1.0, 2.0, 2.718], [0.0, -1.0, 0.25, 9.0], torch_dtype)
    ours, theirs = _pow_of_zero(exponents, torch_dtype)
    _close(ours, theirs)


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_pow_of_zero_with_a_zero_real_part_is_nan(data_type, torch_dtype):
    """0^0 and 0^(iy) are NaN + NaN i, as torch's exp(w log 0) gives them."""
    ours, theirs = _pow_of_zero(_complex([0.0, 0.0], [0.0, 2.0], torch_dtype), torch_dtype)
    assert torch.isnan(ours.real).all() and torch.isnan(ours.imag).all()
    assert torch.isnan(theirs.real).all() and torch.isnan(theirs.imag).all()


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_pow_of_zero_with_a_negative_real_part_is_infinite(data_type, torch_dtype):
    ours, theirs = _pow_of_zero(_complex([-1.0, -0.25], [0.0, 2.0], torch_dtype), torch_dtype)
    assert torch.isinf(ours.real).all() and torch.isinf(theirs.real).all()


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_predicates_abs_and_equality_on_infinities_and_nans(data_type, torch_dtype):
    grid = _grid(torch_dtype, SPECIAL)
    a, b = grid.repeat_interleave(len(grid)), grid.repeat(len(grid))
    with FusionDefinition() as fd:
        x = fd.from_pytorch(grid)
        for op in ("isnan", "isinf", "isfinite", "isreal", "logical_not", "abs", "real",
                   "imag"):
            fd.add_output(getattr(fd.ops, op)(x))
        fd.add_output(fd.ops.cast(x, DataType.Bool))
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        for op in ("eq", "ne", "logical_and", "logical_or"):
            fd.add_output(getattr(fd.ops, op)(ta, tb))
    outputs = fd.execute([grid, a, b])
    expected = [torch.isnan(grid), torch.isinf(grid), torch.isfinite(grid), torch.isreal(grid),
                torch.logical_not(grid), torch.abs(grid), grid.real, grid.imag,
                grid.to(torch.bool), torch.eq(a, b), torch.ne(a, b), torch.logical_and(a, b),
                torch.logical_or(a, b)]
    for index, (ours, theirs) in enumerate(zip(outputs, expected)):
        _close(ours, theirs.contiguous(), f"output {index}")


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_abs_real_and_imag_give_the_part_dtype(data_type, torch_dtype):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=data_type)
        for op in ("abs", "real", "imag"):
            assert getattr(fd.ops, op)(x).dtype is data_type.complex_part
        assert fd.ops.sqrt(x).dtype is data_type and fd.ops.isnan(x).dtype is DataType.Bool
        assert abs(x).dtype is data_type.complex_part
        assert x.real.dtype is data_type.complex_part and x.imag.dtype is data_type.complex_part

# ---- casts --------------------------------------------------------------------------------------



def _cast_all(x, source, targets):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=source)
        for target in targets:
            fd.add_output(fd.ops.cast(t, target))
    return _run(fd, [x])


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_casts_from_complex_take_the_real_part(data_type, torch_dtype):
    """As torch's .to(): the real part converted (truncated for integers), bool is z != 0."""
    floats = [DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16, DataType.Bool,
              DataType.ComplexFloat, DataType.ComplexDouble]
    x = torch.cat([_uniform(torch_dtype, 500, seed=9) * 100, _grid(torch_dtype, SPECIAL),
                   _grid(torch_dtype)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "Casting complex values to real discards ..."
        for target, ours in zip(floats, _cast_all(x, data_type, floats)):
            _close(ours, x.to(TORCH_DTYPE[target]), f"cast to {target}")
        integers = [DataType.Int32, DataType.Int]
        finite = _uniform(torch_dtype, 500, seed=10) * 1000
        for target, ours in zip(integers, _cast_all(finite, data_type, integers)):
            _close(ours, finite.to(TORCH_DTYPE[target]), f"cast to {target}")


@pytest.mark.parametrize("source", [DataType.Float, DataType.Double, DataType.Half,
                                    DataType.Int, DataType.Int32, DataType.Bool])
def test_casts_to_complex_have_imaginary_part_zero(source):
    values = torch.tensor([0.0, -0.0, 1.0, -2.5, 3.25e8, 1e-3, math.inf, -math.inf, math.nan],
                          dtype=torch.float64)
    if source in (DataType.Int, DataType.Int32):
        values = torch.tensor([0, 1, -7, 2**31 - 1, -2**31], dtype=torch.float64)
    x = values.to(TORCH_DTYPE[source])
    targets = [DataType.ComplexFloat, DataType.ComplexDouble]
    for target, ours in zip(targets, _cast_all(x, source, targets)):
        _close(ours, x.to(TORCH_DTYPE[target]), f"cast to {target}")
        assert torch.equal(torch.signbit(ours.imag), torch.zeros(len(x), dtype=torch.bool))


def test_complex64_and_complex128_convert_both_ways():
    wide = torch.cat([_uniform(torch.complex128, 200, seed=11) * 1e3,
                      _complex([1e300, -1e-300, math.nan], [0.1, math.inf, -0.0],
                               torch.complex128)])
    (narrow,) = _cast_all(wide, DataType.ComplexDouble, [DataType.ComplexFloat])
    torch.testing.assert_close(narrow, wide.to(torch.complex64), rtol=0, atol=0,
                               equal_nan=True)
    (back,) = _cast_all(narrow, DataType.ComplexFloat, [DataType.ComplexDouble])
    torch.testing.assert_close(back, narrow.to(torch.complex128), rtol=0, atol=0,
                               equal_nan=True)


