"""Complex dtypes (ComplexFloat = torch.complex64, ComplexDouble = torch.complex128): every op
defined on complex values against torch on the CPU (on random values and on a grid of small
special values), on the host backend and the reference evaluator, and casts.

The formulas are textbook ones (ir/complex_math.h); torch's CPU kernels differ from them in
the last bits, so values are compared with assert_close at rtol = atol = 1e-5 (complex64) and
1e-12 (complex128). At infinite and NaN parts both follow C99's Annex G (glibc's choices where
it leaves a sign open), compared part by part on nvFuser's extremal values. pow of a zero
base, where torch's formula meets log 0, has tests of its own. The frontend side (ways in and
out, promotion, constants, errors, repr): test_complex_frontend.py."""

import functools
import math
import warnings

import pytest

from widefuse import DataType, FusionDefinition
from complex_support import (BACKENDS, BINARY, COMPLEX, EXTREMAL, SPECIAL, TORCH_DTYPE, UNARY,
                             _close, _close_parts, _complex, _grid, _run, _uniform)

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
    """For COMPLEX[index] on a backend: every unary op on the grid, on uniform values, on
    parts with infinities and NaNs (compared with the other backend only) and on the extremal
    parts."""
    data_type, torch_dtype = COMPLEX[index]
    inputs = {"grid": _grid(torch_dtype), "uniform": _uniform(torch_dtype, 1000, seed=6),
              "special": _grid(torch_dtype, SPECIAL),
              "extremal": _grid(torch_dtype, EXTREMAL[torch_dtype])}
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
    uniform pairs, on all pairs of special values (compared with the other backend only) and
    on all pairs of extremal values."""
    data_type, torch_dtype = COMPLEX[index]
    inputs = {"grid": _all_pairs(_grid(torch_dtype)),
              "uniform": (_uniform(torch_dtype, 1000, seed=7),
                          _uniform(torch_dtype, 1000, seed=8)),
              "special": _all_pairs(_grid(torch_dtype, SPECIAL)),
              "extremal": _all_pairs(_grid(torch_dtype, EXTREMAL[torch_dtype]))}
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
    _close(outputs[op], BINARY[op](a, b), f"{op} on {inputs} {a.dtype}")


# ---- infinite and NaN parts: C99 Annex G, as torch --------------------------------------------


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("index, backend", CASES)
def test_unary_op_matches_torch_at_extremal_values(index, backend, op):
    """exp(-inf + inf i) = 0, sinh(inf + 0i) = inf + 0i, acosh(-inf + 1i) = inf + pi i, ...:
    torch's values (glibc's cexp, csinh, cacosh, ...) on every pair of extremal parts."""
    x, outputs = _unary_results(index, backend)["extremal"]
    _close_parts(outputs[op], UNARY[op](x), f"{op} on extremal {x.dtype}")


def _torch_fuses_the_product(a, b):
    """Where torch's mul gives ac - bd (or ad + bc) as one fma: finite factors whose products
    both overflow to infinities of the same sign (of opposite signs for ad + bc), so the
    difference is NaN rounded and +-inf fused. torch's vectorized loop gives NaN there, its
    scalar loop (the tail of a tensor) the infinity; widefuse gives NaN everywhere (no fma,
    docs/ir_reference.md)."""
    finite = torch.isfinite(a) & torch.isfinite(b)
    ac, bd = a.real * b.real, a.imag * b.imag
    ad, bc = a.real * b.imag, a.imag * b.real
    return (finite & ac.isinf() & bd.isinf() & (ac == bd),
            finite & ad.isinf() & bc.isinf() & (ad == -bc))


def _phase_is_noise(a, b):
    """Where Im(b log a), the angle of a^b, is beyond 2^24 (complex64) or 2^53 (complex128):
    its last bit is more than pi, so the signs of a^b's parts are rounding noise (glibc's
    clogf and ours differ in that bit)."""
    angle = (b.to(torch.complex128) * torch.log(a.to(torch.complex128))).imag.abs()
    limit = 2.0**24 if a.dtype is torch.complex64 else 2.0**53
    return torch.isfinite(angle) & (angle > limit)


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("index, backend", CASES)
def test_binary_op_matches_torch_at_extremal_values(index, backend, op):
    """On every pair of extremal values: mul without C99's recovery of infinities (as torch's
    c10::complex), div by Smith's algorithm (as torch), pow as glibc's cpow, exp(b log a) with
    C99's recovering product (as torch). Where torch's own kernels disagree (mul, see
    _torch_fuses_the_product) or its signs are noise (pow, _phase_is_noise), widefuse's value
    is the one documented there."""
    a, b, outputs = _binary_results(index, backend)["extremal"]
    ours, theirs = outputs[op], BINARY[op](a, b)
    if op in ("add", "sub"):  # torch's multiply b by alpha = 1: 0 + inf i gives NaN + inf i
        theirs = torch.view_as_complex(BINARY[op](torch.view_as_real(a), torch.view_as_real(b)))
    if op == "mul":
        fused_re, fused_im = _torch_fuses_the_product(a, b)
        theirs = torch.complex(torch.where(fused_re, math.nan, theirs.real),
                               torch.where(fused_im, math.nan, theirs.imag))
    if op == "pow":
        noise = _phase_is_noise(a, b)
        _close_parts(ours[noise].abs(), theirs[noise].abs(), f"|pow| on extremal {a.dtype}")
        ours, theirs = ours[~noise], theirs[~noise]
    _close_parts(ours, theirs, f"{op} on extremal {a.dtype}")


def test_annex_g_examples():
    """A few of Annex G's values, written out (torch gives the same)."""
    inf, nan = math.inf, math.nan
    cases = {"exp": [(complex(-inf, inf), 0j), (complex(inf, 0.0), complex(inf, 0.0))],
             "sinh": [(complex(inf, 0.0), complex(inf, 0.0)),
                      (complex(0.0, inf), complex(0.0, nan))],
             "cosh": [(complex(inf, 1.0), complex(inf * math.cos(1.0), inf * math.sin(1.0)))],
             "tanh": [(complex(inf, inf), complex(1.0, 0.0)),
                      (complex(nan, 0.0), complex(nan, 0.0))],
             "acosh": [(complex(-inf, 1.0), complex(inf, math.pi)),
                       (complex(inf, inf), complex(inf, math.pi / 4))],
             "atanh": [(complex(inf, 1.0), complex(0.0, math.pi / 2)),
                       (complex(nan, inf), complex(0.0, math.pi / 2))],
             "atan": [(complex(nan, inf), complex(nan, 0.0))],
             "sigmoid": [(complex(inf, inf), complex(1.0, 0.0))]}
    for data_type, torch_dtype in COMPLEX:
        for op, pairs in cases.items():
            x = torch.tensor([z for z, _ in pairs], dtype=torch_dtype)
            expected = torch.tensor([w for _, w in pairs], dtype=torch_dtype)
            with FusionDefinition() as fd:
                fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x)))
            (ours,) = _run(fd, [x])
            _close_parts(ours, expected, f"{op} in {torch_dtype}")
            _close_parts(UNARY[op](x), expected, f"torch's {op} in {torch_dtype}")


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


