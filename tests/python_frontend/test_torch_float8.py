"""The fp8 storage types against torch: every bit pattern to float, float to fp8 on a dense
sweep and at the edges (ties, the largest finite value and half an ulp past it, subnormal
boundaries, +-inf, NaN, -0.0), casts from double, integers, half and the other fp8 types, and
bitcasts, through widefuse fusions on the host backend and the reference evaluator, on CPU torch tensors and ml_dtypes NumPy arrays. fp8 results are compared bit for
bit; a float NaN only by being a NaN of the same sign (torch keeps fp8 NaN payloads, widefuse
decodes every NaN to the quiet NaN of its sign, as it does for f16)."""

import math

import ml_dtypes
import numpy as np
import pytest
import torch

from widefuse import DataType, Error, FusionDefinition

FLOAT8 = [(DataType.Float8_e4m3fn, torch.float8_e4m3fn),
          (DataType.Float8_e5m2, torch.float8_e5m2),
          (DataType.Float8_e8m0fnu, torch.float8_e8m0fnu)]
_OTHER = {torch.float32: DataType.Float, torch.float64: DataType.Double,
          torch.float16: DataType.Half, torch.bfloat16: DataType.BFloat16,
          torch.int64: DataType.Int, torch.int32: DataType.Int32, torch.uint8: DataType.UInt8,
          torch.int8: DataType.Int8, torch.bool: DataType.Bool}
_DTYPES = {**_OTHER, **{torch_dtype: dtype for dtype, torch_dtype in FLOAT8}}
# The verify path equals the fast path bit for bit on every conversion
# (tests/runtime/host_backend_test.cpp); here the fast path and the reference meet torch.
WAYS = [{"backend": "host", "host_execution": "fast"}, {"backend": "reference"}]


def _cast(x, target, **how):
    """cast(x, target) as a widefuse fusion on the tensor x."""
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=_DTYPES[x.dtype])
        fd.add_output(fd.ops.cast(t, target))
    (result,) = fd.execute([x], **how)
    return result


def _same_floats(actual, expected):
    """Equal bit for bit, except that NaNs need only agree in being NaN and in their sign
    (not for bfloat16, whose NaN torch always makes positive and widefuse keeps the sign of)."""
    assert actual.dtype == expected.dtype
    a, e = actual.double(), expected.double()
    nan = torch.isnan(e)
    assert torch.equal(torch.isnan(a), nan)
    if actual.dtype is not torch.bfloat16:
        assert torch.equal(torch.signbit(a[nan]), torch.signbit(e[nan]))
    width = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
             torch.bfloat16: torch.int16}[actual.dtype]
    mismatched = (actual.view(width) != expected.view(width)) & ~nan
    assert not mismatched.any(), (actual[mismatched][:8], expected[mismatched][:8])


def _same_bits(actual, expected):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    a, e = actual.view(torch.uint8), expected.view(torch.uint8)
    wrong = a != e
    assert not wrong.any(), (torch.nonzero(wrong)[:8].flatten(), a[wrong][:8], e[wrong][:8])


def _sweep():
    """Floats in steps of 4093 bit patterns over all 2^32, the 256 values of every fp8 type,
    their midpoints and the floats next to both, and the edges written out."""
    patterns = torch.arange(0, 2**32, 4093, dtype=torch.int64)
    swept = (patterns - (patterns >= 2**31).long() * 2**32).int().view(torch.float32)
    every = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    points = [swept]
    for _, torch_dtype in FLOAT8:
        values = every.view(torch_dtype).float()
        values = values[torch.isfinite(values)].sort().values
        middles = (values[1:].double() + values[:-1].double()) / 2
        for v in (values, middles.float()):
            points += [v, torch.nextafter(v, torch.tensor(math.inf)),
                       torch.nextafter(v, torch.tensor(-math.inf))]
    edges = [0.0, -0.0, 448.0, 464.0, 465.0, 479.9, 480.0, 57344.0, 61439.0, 61440.0, 65536.0,
             2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-16, 2.0**-17, 2.0**-127, 2.0**-126,
             1.5 * 2.0**127, 3.4028234e38, 1e-45, math.inf, -math.inf, math.nan, -math.nan]
    points.append(torch.tensor(edges, dtype=torch.float32))
    result = torch.cat(points)
    return torch.cat([result, -result])


@pytest.mark.parametrize("dtype, torch_dtype", FLOAT8)
@pytest.mark.parametrize("how", WAYS)
def test_every_pattern_decodes_to_torchs_float(dtype, torch_dtype, how):
    every = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch_dtype)
    for target in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        _same_floats(_cast(every, _OTHER[target], **how), every.to(target))


@pytest.mark.parametrize("dtype, torch_dtype", FLOAT8)
@pytest.mark.parametrize("how", WAYS)
def test_floats_round_to_fp8_as_torch_rounds(dtype, torch_dtype, how):
    floats = _sweep()
    _same_bits(_cast(floats, dtype, **how), floats.to(torch_dtype))
    # From double: c10 rounds to float first (double rounding), and so does widefuse.
    doubles = torch.cat([floats.double(), floats.double() * (1 + 2.0**-30),
                         floats.double() * (1 - 2.0**-40)])
    _same_bits(_cast(doubles, dtype, **how), doubles.to(torch_dtype))
    halves = torch.arange(65536, dtype=torch.int32).short().view(torch.float16)
    _same_bits(_cast(halves, dtype, **how), halves.to(torch_dtype))
    bfloats = torch.arange(65536, dtype=torch.int32).short().view(torch.bfloat16)
    _same_bits(_cast(bfloats, dtype, **how), bfloats.to(torch_dtype))


@pytest.mark.parametrize("dtype, torch_dtype", FLOAT8)
def test_integers_and_bools_convert_as_torch_converts(dtype, torch_dtype):
    big = [0, 1, -1, 7, 100, 447, 448, 464, 465, 57344, 61440, 2**31 - 1, -2**31,
           3 * 2**60 + 1, 2**63 - 1, -2**63]
    integers = torch.cat([torch.tensor(big), torch.arange(-70000, 70000, 37)])
    _same_bits(_cast(integers, dtype), integers.to(torch_dtype))
    small = torch.arange(-128, 128, dtype=torch.int32).to(torch.int8)
    _same_bits(_cast(small, dtype), small.to(torch_dtype))
    bools = torch.tensor([True, False])
    _same_bits(_cast(bools, dtype), bools.to(torch_dtype))


@pytest.mark.parametrize("source, source_torch", FLOAT8)
def test_fp8_to_fp8_integers_and_bool_as_torch(source, source_torch):
    bits = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    every = bits.view(source_torch)
    for target, target_torch in FLOAT8:
        _same_bits(_cast(every, target), every.to(target_torch))
    decoded = every.float()
    # torch cannot index fp8 tensors: select on the bits. Integers from finite values that
    # fit (out-of-range float -> integer conversions are undefined in torch).
    finite = bits[torch.isfinite(decoded) & (decoded.abs() < 100)].view(source_torch)
    for integer in (torch.int32, torch.int64, torch.int8):
        assert torch.equal(_cast(finite, _OTHER[integer]), finite.to(integer))
    assert torch.equal(_cast(every, DataType.Bool), every.to(torch.bool))


@pytest.mark.parametrize("dtype, torch_dtype", FLOAT8)
def test_bitcast_to_and_from_bytes(dtype, torch_dtype):
    every = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    with FusionDefinition() as fd:
        b = fd.define_tensor(shape=[256], dtype=DataType.UInt8)
        f8 = fd.ops.bitcast(b, dtype)
        fd.add_output(f8)
        fd.add_output(fd.ops.bitcast(f8, DataType.Int8))
        fd.add_output(fd.ops.cast(f8, DataType.Float))
    f8, signed, floats = fd.execute([every])
    _same_bits(f8, every.view(torch_dtype))
    assert torch.equal(signed, every.view(torch.int8))
    _same_floats(floats, every.view(torch_dtype).float())


def test_arithmetic_is_computed_in_float_and_rounded_to_fp8():
    # torch has no fp8 arithmetic on the CPU ("add_stub" not implemented): the reference is
    # torch's float arithmetic on the decoded values, rounded by torch's fp8 conversion.
    e4m3 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn)
    e5m2 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e5m2)
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[256], dtype=DataType.Float8_e4m3fn)
        b = fd.define_tensor(shape=[256], dtype=DataType.Float8_e5m2)
        fd.add_output(fd.ops.mul(a, 3.0))        # stays e4m3fn (a Python number)
        fd.add_output(fd.ops.add(a, b))          # e4m3fn + e5m2 -> Float (nvFuser's rule)
        fd.add_output(fd.ops.sqrt(fd.ops.abs(b)))  # e5m2, rounded after every op
    tripled, total, roots = fd.execute([e4m3, e5m2])
    _same_bits(tripled, (e4m3.float() * 3.0).to(torch.float8_e4m3fn))
    _same_floats(total, e4m3.float() + e5m2.float())
    _same_bits(roots, e5m2.float().abs().to(torch.float8_e5m2).float().sqrt()
               .to(torch.float8_e5m2))


def test_fp8_tensors_and_arrays_are_read_and_returned_in_their_dtypes():
    values = torch.tensor([0.5, -2.0, 448.0, 0.0])
    for dtype, torch_dtype in FLOAT8[:2]:
        x = values.to(torch_dtype)
        (out,) = _run_set(x, dtype)
        assert out.dtype is torch_dtype
        _same_bits(out, x)
        array = np.array([0.5, -2.0, 448.0, 0.0]).astype(dtype.numpy)
        assert dtype.numpy == np.dtype(getattr(ml_dtypes, str(torch_dtype).split(".")[1]))
        (out,) = _run_set(array, dtype)
        assert out.dtype == dtype.numpy
        assert np.array_equal(out.view(np.uint8), array.view(np.uint8))


def _run_set(x, dtype):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
        fd.add_output(fd.ops.set(t))
    return fd.execute([x])


def test_a_wrong_fp8_dtype_is_refused_with_its_name():
    x = torch.zeros(4, dtype=torch.float8_e5m2)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[4], dtype=DataType.Float8_e4m3fn)
        fd.add_output(fd.ops.set(t))
    with pytest.raises(Error, match="e4m3fn"):
        fd.execute([x])
    with pytest.raises(Error, match="fnuz"):
        fd.execute([torch.zeros(4, dtype=torch.float8_e4m3fnuz)])
