"""Complex dtypes through the Python frontend, against torch on the CPU: every way an array
gets in and out, type promotion, complex constants and Python complex numbers, nvFuser's
definitions, errors, repr(fd) and the tracer. Values of the ops: test_complex.py."""

import math

import numpy as np
import pytest

import widefuse
from widefuse import DataType, FusionDefinition
from conftest import DlpackOnly, rebuilt_from_repr
from complex_support import COMPLEX, TOLERANCE, TORCH_DTYPE, TORCH_PART, _close, _uniform

torch = pytest.importorskip("torch")


# ---- the dtypes and every way in and out -----------------------------------------------------


def test_complex_data_types():
    assert DataType.ComplexFloat.value == "c64" and DataType.ComplexDouble.value == "c128"
    assert DataType.ComplexFloat.numpy == np.complex64
    assert DataType.ComplexDouble.numpy == np.complex128
    for data_type, _ in COMPLEX:
        assert data_type.is_complex and not data_type.is_floating_point
    assert not DataType.Float.is_complex and DataType.Float.is_floating_point
    assert DataType.ComplexFloat.complex_part is DataType.Float
    assert DataType.ComplexDouble.complex_part is DataType.Double
    assert DataType.Double.complex_part is DataType.Double
    assert widefuse.complex64 is widefuse.cfloat is DataType.ComplexFloat
    assert widefuse.complex128 is widefuse.cdouble is DataType.ComplexDouble


@pytest.mark.parametrize("spelling", ["c64", np.complex64, np.dtype("complex64"),
                                      DataType.ComplexFloat])
def test_define_tensor_takes_every_spelling_of_complex64(spelling):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], dtype=spelling)
    assert t.dtype is DataType.ComplexFloat
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], dtype=complex)  # a Python complex: two doubles
    assert t.dtype is DataType.ComplexDouble


def _scale_by_i(data_type):
    """y = x * 1j, and x updated in place to conj(x) = complex(real(x), -imag(x))."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=data_type)
        fd.add_output(fd.ops.mul(x, 1j))
        conj = fd.ops.complex(fd.ops.real(x), fd.ops.neg(fd.ops.imag(x)))
        fd.add_output(conj, alias_input=x)
    return fd


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_numpy_arrays_in_out_and_in_place(data_type, torch_dtype):
    x = (np.arange(6).reshape(2, 3) + 1j * np.arange(6).reshape(2, 3)[::-1]).astype(
        data_type.numpy)
    x_in = x.copy()  # a contiguous array: read through the buffer protocol, in C++
    (y,) = _scale_by_i(data_type).execute([x_in])
    assert isinstance(y, np.ndarray) and y.dtype == data_type.numpy
    np.testing.assert_array_equal(y, x * 1j)
    np.testing.assert_array_equal(x_in, np.conj(x))  # written in place


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_strided_numpy_views_and_dlpack_exporters(data_type, torch_dtype):
    fd = _scale_by_i(data_type)
    base = (np.arange(12).reshape(3, 4) * (1 - 0.5j)).astype(data_type.numpy)
    with pytest.raises(widefuse.Error, match="strides"):  # declared dense: a view is refused
        fd.execute([base[:, ::2]])
    with FusionDefinition() as strided:
        x = strided.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=data_type)
        strided.add_output(strided.ops.sqrt(x))
    (y,) = strided.execute([base[:, ::2]])
    np.testing.assert_allclose(y, np.sqrt(base[:, ::2]), rtol=TOLERANCE[torch_dtype])
    (y,) = strided.execute([DlpackOnly(base)])  # DLPack's Complex code, read-only export
    np.testing.assert_allclose(y, np.sqrt(base), rtol=TOLERANCE[torch_dtype])


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_torch_tensors_in_out_and_in_place(data_type, torch_dtype):
    x = _uniform(torch_dtype, 6, seed=1).reshape(2, 3)
    x_in = x.clone()
    (y,) = _scale_by_i(data_type).execute([x_in])
    assert isinstance(y, torch.Tensor) and y.dtype is torch_dtype
    _close(y, x * 1j)
    _close(x_in, x.conj().resolve_conj())


@pytest.mark.parametrize("data_type, torch_dtype", COMPLEX)
def test_from_pytorch_and_zero_dim_complex_tensors(data_type, torch_dtype):
    x = _uniform(torch_dtype, 8, seed=2).reshape(2, 4)[:, 1:]  # a view: strides (4, 1)
    s = torch.tensor(0.5 - 2j, dtype=torch_dtype)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        z = fd.from_pytorch(s)
        assert t.dtype is data_type and z.dtype is data_type and z.ndim == 0
        fd.add_output(fd.ops.add(t, z))
        fd.add_output(fd.ops.real(t))
    total, real = fd.execute([x, s])
    _close(total, x + s)
    _close(real, x.real.contiguous())
    assert real.dtype is TORCH_PART[torch_dtype]


def test_the_parts_of_a_complex_tensor_are_strided_real_inputs():
    x = _uniform(torch.complex64, 6, seed=3)
    with FusionDefinition() as fd:
        re = fd.from_pytorch(x.real)  # strides (2,): a view into the pairs
        im = fd.from_pytorch(x.imag)
        fd.add_output(fd.ops.complex(im, re))
    (swapped,) = fd.execute([x.real, x.imag])
    _close(swapped, torch.complex(x.imag, x.real))


def test_lazily_conjugated_tensors_are_refused():
    x = _uniform(torch.complex64, 4, seed=4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.neg(t))
    with pytest.raises(widefuse.Error, match=r"input 'T0'.*conjugate bit.*resolve_conj"):
        fd.execute([x.conj()])
    (y,) = fd.execute([x.conj().resolve_conj()])
    _close(y, -x.conj())
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x.real)
        fd.add_output(fd.ops.neg(t))
    with pytest.raises(widefuse.Error, match=r"input 'T0'.*negative bit.*resolve_neg"):
        fd.execute([x.conj().imag])


def test_prepare_and_validate():
    x = _uniform(torch.complex128, 5, seed=5)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.exp(t))
    fd.validate([x], [torch.exp(x)])
    with pytest.raises(AssertionError):
        fd.validate([x], [torch.exp(x) + 1e-3j])
    step = fd.prepare([x])
    (y,) = step()
    _close(y, torch.exp(x))
    z = x.numpy()  # NumPy arrays: validate's own comparison (torch's tolerances)
    fd.validate([z], [np.exp(z)])
    with pytest.raises(AssertionError):
        fd.validate([z], [np.exp(z) * (1 + 1e-6j)])



# ---- type promotion ------------------------------------------------------------------------------


def _operand(fd, kind, data_type):
    """A widefuse operand and the torch operand it stands for."""
    if kind == "tensor":
        return (fd.define_tensor(shape=[-1], dtype=data_type),
                torch.ones(2, dtype=TORCH_DTYPE[data_type]))
    if kind == "0-d":
        return fd.define_tensor(shape=[], dtype=data_type), torch.tensor(1, dtype=TORCH_DTYPE[data_type])
    return data_type, data_type  # a Python number, given as itself


PROMOTIONS = [
    # (left kind, left, right kind, right): both sides are torch's.
    ("tensor", DataType.ComplexFloat, "tensor", DataType.ComplexDouble),
    ("tensor", DataType.ComplexFloat, "tensor", DataType.Double),
    ("tensor", DataType.ComplexFloat, "tensor", DataType.Float),
    ("tensor", DataType.ComplexFloat, "tensor", DataType.Half),
    ("tensor", DataType.ComplexFloat, "tensor", DataType.BFloat16),
    ("tensor", DataType.ComplexFloat, "tensor", DataType.Int32),
    ("tensor", DataType.ComplexFloat, "tensor", DataType.Bool),
    ("tensor", DataType.ComplexDouble, "tensor", DataType.Float),
    ("tensor", DataType.ComplexFloat, "0-d", DataType.Double),
    ("tensor", DataType.ComplexFloat, "0-d", DataType.ComplexDouble),
    ("tensor", DataType.Float, "0-d", DataType.ComplexDouble),
    ("tensor", DataType.Double, "0-d", DataType.ComplexFloat),
    ("tensor", DataType.Int32, "0-d", DataType.ComplexDouble),
    ("tensor", DataType.ComplexFloat, "number", 2 + 1j),
    ("tensor", DataType.ComplexDouble, "number", 2 + 1j),
    ("tensor", DataType.Float, "number", 2 + 1j),
    ("tensor", DataType.Double, "number", 2 + 1j),
    ("tensor", DataType.BFloat16, "number", 2 + 1j),
    ("tensor", DataType.Int32, "number", 2 + 1j),
    ("tensor", DataType.Bool, "number", 2 + 1j),
    ("tensor", DataType.ComplexFloat, "number", 2.5),
    ("0-d", DataType.Float, "number", 1j),
    ("0-d", DataType.ComplexFloat, "number", 2.5),
]


@pytest.mark.parametrize("left_kind, left, right_kind, right", PROMOTIONS)
def test_promotion_matches_torch(left_kind, left, right_kind, right):
    with FusionDefinition() as fd:
        ours_left, torch_left = _operand(fd, left_kind, left)
        ours_right, torch_right = _operand(fd, right_kind, right)
        for ours_a, ours_b, a, b in ((ours_left, ours_right, torch_left, torch_right),
                                     (ours_right, ours_left, torch_right, torch_left)):
            result = fd.ops.mul(ours_a, ours_b)
            assert TORCH_DTYPE[result.dtype] is torch.result_type(a, b), (a, b)
            assert TORCH_DTYPE[result.dtype] is (a * b).dtype


def test_a_half_tensor_with_a_python_complex_is_complex_float():
    """torch makes it complex32 (ComplexHalf), which widefuse lacks; ComplexFloat holds it."""
    with FusionDefinition() as fd:
        h = fd.define_tensor(shape=[-1], dtype=DataType.Half)
        assert fd.ops.mul(h, 1j).dtype is DataType.ComplexFloat
    assert torch.result_type(torch.ones(2, dtype=torch.half), 1j) is torch.complex32


def test_scalar_constants_promote_like_python_complex_numbers():
    """A define_scalar constant, of either complex type, promotes beside tensors as a Python
    complex does in torch: it never widens a complex tensor, and gives a float tensor the
    complex type of its precision."""
    with FusionDefinition() as fd:
        c64 = fd.define_tensor(shape=[-1], dtype=DataType.ComplexFloat)
        f64 = fd.define_tensor(shape=[-1], dtype=DataType.Double)
        f32 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        wide = fd.define_scalar(3 + 0.5j)
        narrow = fd.define_scalar(2 + 0j, dtype=DataType.ComplexFloat)
        lr = fd.define_scalar(None, dtype=DataType.Double)
        assert wide.dtype is DataType.ComplexDouble and narrow.dtype is DataType.ComplexFloat
        assert fd.ops.mul(c64, wide).dtype is DataType.ComplexFloat
        assert fd.ops.mul(f64, narrow).dtype is DataType.ComplexDouble
        assert fd.ops.mul(f32, wide).dtype is DataType.ComplexFloat
        assert fd.ops.mul(c64, lr).dtype is DataType.ComplexFloat
        assert fd.ops.mul(lr, 1j).dtype is DataType.ComplexDouble  # Python numbers both
        assert fd.ops.mul(wide, 1j).dtype is DataType.ComplexDouble


def test_promoted_values_match_torch():
    x32 = torch.rand(16, generator=torch.Generator().manual_seed(12)) * 10 - 5
    x64 = x32.double() / 3
    z = _uniform(torch.complex64, 16, seed=13)
    with FusionDefinition() as fd:
        t32, t64, tz = fd.from_pytorch(x32), fd.from_pytorch(x64), fd.from_pytorch(z)
        fd.add_output(t32 * (1 + 2j))
        fd.add_output(fd.ops.add(t64, 0.1j))
        fd.add_output(tz / 3)
        fd.add_output(fd.ops.sub(tz, t64))
        fd.add_output(2j ** tz)
    expected = [x32 * (1 + 2j), x64 + 0.1j, z / 3, z - x64, 2j ** z]
    for index, (ours, theirs) in enumerate(zip(fd.execute([x32, x64, z]), expected)):
        _close(ours, theirs, f"output {index}")


# ---- complex constants, where, nvFuser's definitions ---------------------------------------------


def test_where_dtypes_with_complex_scalars():
    """nvFuser's test_where_dtypes, complex part: define_scalar(complex(3.0)) is ComplexDouble,
    define_scalar(3+0j, DataType.ComplexFloat) ComplexFloat. Beside the tensor condition they
    promote as Python numbers (widefuse's rule for every scalar, as torch.where(c, 3j, 5j)):
    the result is complex64 where nvFuser's is complex128 for the ComplexDouble pair."""
    cond = torch.arange(4) % 2 == 0
    z = _uniform(torch.complex128, 4, seed=14)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(cond)
        tz = fd.from_pytorch(z)
        c0c, c1c = fd.define_scalar(complex(3.0)), fd.define_scalar(complex(5.0))
        c0cf = fd.define_scalar(3.0 + 0j, DataType.ComplexFloat)
        c1cf = fd.define_scalar(5.0 + 0j, DataType.ComplexFloat)
        assert c0c.dtype is DataType.ComplexDouble and c0cf.dtype is DataType.ComplexFloat
        fd.add_output(fd.ops.where(t0, c0c, c1c))
        fd.add_output(fd.ops.where(t0, c0cf, c1cf))
        fd.add_output(fd.ops.where(t0, tz, c0cf))
        fd.add_output(fd.ops.where(t0, 2.5, 1j))
    expected = [torch.where(cond, 3 + 0j, 5 + 0j), torch.where(cond, 3 + 0j, 5 + 0j),
                torch.where(cond, z, 3 + 0j), torch.where(cond, 2.5, 1j)]
    for index, (ours, theirs) in enumerate(zip(fd.execute([cond, z]), expected)):
        _close(ours, theirs, f"output {index}")


def test_define_scalar_complex_constants():
    with FusionDefinition() as fd:
        assert fd.define_scalar(2.5, dtype=DataType.ComplexFloat).dtype is DataType.ComplexFloat
        assert fd.define_scalar(np.complex64(1j)).dtype is DataType.ComplexDouble
        assert fd.define_scalar(1 + 1j, dtype="c64").dtype is DataType.ComplexFloat
        assert fd.define_constant(1j, DataType.ComplexDouble).dtype is DataType.ComplexDouble
        with pytest.raises(widefuse.ArgumentValueError, match=r"\(1\+2j\) is complex"):
            fd.define_scalar(1 + 2j, dtype=DataType.Double)


def test_nvfuser_mul_by_a_complex_constant_stays_complex64():
    x = _uniform(torch.complex64, 32, seed=15)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        c = fd.define_scalar(complex(3.0, 0.5))
        t1 = fd.ops.mul(t0, c)
        fd.add_output(t1)
    (y,) = fd.execute([x])
    assert y.dtype is torch.complex64
    _close(y, x * (3 + 0.5j))


@pytest.mark.parametrize("torch_dtype", [torch.complex64, torch.complex128])
def test_nvfuser_real_imag_and_rsqrt_of_randn(torch_dtype):
    x = torch.randn(5, 7, dtype=torch_dtype, generator=torch.Generator().manual_seed(16))
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.real(t0))
        fd.add_output(fd.ops.imag(t0))
        fd.add_output(fd.ops.rsqrt(t0))
    real, imag, rsqrt = fd.execute([x])
    _close(real, x.real.contiguous())
    _close(imag, x.imag.contiguous())
    _close(rsqrt, torch.rsqrt(x))


def test_complex_op_builds_from_parts():
    re = torch.randn(6, generator=torch.Generator().manual_seed(17))
    im = torch.randn(6, generator=torch.Generator().manual_seed(18)).double()
    with FusionDefinition() as fd:
        tr, ti = fd.from_pytorch(re), fd.from_pytorch(im)
        fd.add_output(fd.ops.complex(tr, fd.ops.cast(ti, DataType.Float)))
        fd.add_output(fd.ops.complex(fd.ops.cast(tr, DataType.Double), ti))
    narrow, wide = fd.execute([re, im])
    _close(narrow, torch.complex(re, im.float()))
    _close(wide, torch.complex(re.double(), im))


# ---- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("op, arity", [("floor", 1), ("sign", 1), ("lt", 2), ("atan2", 2),
                                       ("maximum", 2), ("erf", 1), ("expm1", 1),
                                       ("bitwise_and", 2)])
def test_an_op_not_defined_on_complex_names_itself(op, arity):
    with FusionDefinition() as fd:
        z = fd.define_tensor(shape=[-1], dtype=DataType.ComplexFloat)
        with pytest.raises(widefuse.Error, match=f"{op} is not defined for complex operands"):
            getattr(fd.ops, op)(*[z] * arity)


def test_part_errors():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        assert fd.ops.real(x).dtype is DataType.Float  # real of a real is the value
        with pytest.raises(widefuse.Error, match="imag takes a complex operand"):
            fd.ops.imag(x)
        with pytest.raises(widefuse.Error, match="imag takes a complex operand"):
            x.imag
        with pytest.raises(widefuse.Error, match="complex takes f32 or f64 parts"):
            fd.ops.complex(i, i)


def test_runtime_complex_scalars_are_refused():
    with FusionDefinition() as fd:
        for dtype in (DataType.ComplexFloat, DataType.ComplexDouble):
            with pytest.raises(widefuse.Error, match="runtime complex scalar inputs are not "
                               r"supported.*0-d tensor"):
                fd.define_scalar(dtype=dtype)
            with pytest.raises(widefuse.Error, match="runtime complex scalar"):
                fd.define_scalar(dtype)  # nvFuser's overload
        x = fd.define_tensor(shape=[-1], dtype=DataType.Double)
        s = fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.mul(x, s))
    for value in (2 + 1j, np.complex64(2 + 1j), torch.tensor(2 + 1j)):
        with pytest.raises(widefuse.Error, match=r"input 'S1' is a DataType.Double scalar; got "
                           r"the complex number \(2\+1j\)"):
            fd.execute([np.ones(2), value])


def test_complex_dtypes_are_refused_where_values_are_not_complex():
    with FusionDefinition() as fd:
        z = fd.define_tensor(shape=[-1], dtype=DataType.ComplexFloat)
        fd.add_output(fd.ops.neg(z))
    with pytest.raises(widefuse.Error, match="input 'T0' is DataType.ComplexFloat; the array "
                       "is DataType.ComplexDouble"):
        fd.execute([np.ones(2, np.complex128)])
    with pytest.raises(widefuse.Error, match="input 'T0' is DataType.ComplexFloat; the array "
                       "is DataType.Float"):
        fd.execute([torch.ones(2)])


# ---- repr(fd), the tracer ---------------------------------------------------------------------


def test_repr_prints_complex_constants_as_nvfuser_and_round_trips():
    x = _uniform(torch.complex64, 6, seed=19)
    y = _uniform(torch.complex128, 6, seed=20)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(y)
        c = fd.define_scalar(complex(3.0, 0.5))
        cf = fd.define_scalar(complex(-0.0, 1e-3), dtype=DataType.ComplexFloat)
        t2 = fd.ops.mul(t0, c)
        t3 = fd.ops.add(fd.ops.sub(t1, cf), complex(math.inf, -2.0))
        fd.add_output(t2)
        fd.add_output(fd.ops.abs(t3))
        fd.add_output(fd.ops.mul(t2, 1j), alias_input=t0)
    printed = fd.printout(api="legacy")
    assert "S2 = fd.define_scalar(complex(3.0, 0.5), dtype=DataType.ComplexDouble)" in printed
    assert "S3 = fd.define_scalar(complex(-0.0, 0.001), dtype=DataType.ComplexFloat)" in printed
    assert "fd.ops.add(T5, complex(float(\"inf\"), -2.0))" in printed
    assert "T8 = fd.ops.mul(T4, complex(0.0, 1.0))" in printed
    rebuilt = rebuilt_from_repr(fd, api="legacy")
    assert rebuilt.printout(api="legacy") == printed and rebuilt.to_text() == fd.to_text()
    rebuilt = rebuilt_from_repr(fd)
    assert repr(rebuilt) == repr(fd) and rebuilt.to_text() == fd.to_text()
    x_ours, x_rebuilt = x.clone(), x.clone()
    for definition, x_in in ((fd, x_ours), (rebuilt, x_rebuilt)):
        product, magnitude = definition.execute([x_in, y])
        _close(product, x * (3 + 0.5j))
        _close(magnitude, torch.abs(y - (1e-3j) + complex(math.inf, -2.0)))
    _close(x_ours, x * (3 + 0.5j) * 1j)
    assert torch.equal(x_ours, x_rebuilt)


def test_text_form_round_trips_complex_literals_and_constants():
    with FusionDefinition() as fd:
        z = fd.define_tensor(shape=[-1], dtype=DataType.ComplexDouble)
        fd.add_output(fd.ops.mul(z, fd.define_scalar(1 - 2j)) + 0.5j)
    parsed = FusionDefinition.from_text(fd.to_text())
    assert parsed.to_text() == fd.to_text()
    assert "define_scalar(complex(1.0, -2.0), dtype=DataType.ComplexDouble)" in repr(parsed)
    z = np.array([1 + 1j, -2.5j], np.complex128)
    np.testing.assert_allclose(parsed.execute([z])[0], z * (1 - 2j) + 0.5j, rtol=1e-15)


def test_traced_functions_take_complex_tensors_and_numbers():
    @widefuse.trace
    def rotate(z, w, angle):
        return (z * angle).real + w.imag, z.to(torch.complex128) * 1j

    z = _uniform(torch.complex64, 8, seed=21)
    w = _uniform(torch.complex128, 8, seed=22)
    for angle in (1j, -1j, 1j):
        parts, wide = rotate(z, w, angle)
        _close(parts, (z * angle).real.double() + w.imag)
        _close(wide, z.to(torch.complex128) * 1j)
    assert rotate.cache_size == 2  # one recording per distinct complex constant
    assert isinstance(z.real, torch.Tensor)  # torch's own tensors are left alone


def test_bitcast_broadcast_and_size_of_complex_tensors():
    x = _uniform(torch.complex64, 3, seed=23)
    row = _uniform(torch.complex128, 4, seed=24)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.bitcast(t, DataType.Int))  # a pair of f32 is 8 bytes
        fd.add_output(fd.ops.bitcast(fd.ops.bitcast(t, DataType.Double), DataType.ComplexFloat))
    bits, same = fd.execute([x])
    assert torch.equal(bits, x.view(torch.int64)) and torch.equal(same, x)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        r = fd.from_pytorch(row)
        grid = fd.ops.broadcast_in_dim(r, shape=[t.size(0), r.size(0)], broadcast_dims=[1])
        fd.add_output(fd.ops.add(grid, fd.ops.broadcast(t, [False, True])))
        with pytest.raises(widefuse.Error, match="changes the width from 16 to 8 bytes"):
            fd.ops.bitcast(r, DataType.Double)
    (table,) = fd.execute([x, row])
    _close(table, row[None, :] + x[:, None])
