"""fd.ops.code_value and fd.ops.nearest_code (docs/ir_reference.md, "Codebooks"): against the
NumPy search of lowbit_reference.py on the reference evaluator, the host backend and the
emulated device code, in a quantize-by-blocks fusion as widefuse.optim writes it."""

import numpy as np
import pytest
from conftest import rebuilt_from_repr

import lowbit_reference as reference
import widefuse
from widefuse import DataType, FusionDefinition

BACKENDS = [dict(backend="reference"), dict(backend="host", block_order="reverse"),
            dict(backend="host", host_execution="verify")]


@pytest.mark.parametrize("options", BACKENDS, ids=["reference", "host", "emulated-device"])
@pytest.mark.parametrize("signed", [True, False])
def test_requantizing_by_blocks_gives_the_searched_codes(options, signed):
    codebook = "dynamic8_signed" if signed else "dynamic8_unsigned"
    table = reference.dynamic_map(signed)
    with FusionDefinition() as fd:
        codes = fd.define_tensor(shape=[-1, 256], dtype=DataType.UInt8)
        scale = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        grad = fd.define_tensor(shape=[-1, 256])
        shape = [grad.size(0), 256]
        value = fd.ops.mul(fd.ops.code_value(codes, codebook=codebook),
                           fd.ops.expand_blocks(scale, shape, block=128))
        value = fd.ops.lerp(value, grad, 0.25)
        absmax = fd.ops.max(fd.ops.maximum(fd.ops.abs(value), 1e-12), block=128)
        normalised = fd.ops.div(value, fd.ops.expand_blocks(absmax, shape, block=128))
        fd.add_output(fd.ops.nearest_code(normalised, codebook=codebook), codes)
        fd.add_output(absmax, scale)
    rng = np.random.default_rng(9)
    code_array = rng.integers(0, 256, (9, 256)).astype(np.uint8)
    scale_array = rng.random(18).astype(np.float32) + 0.1
    grad_array = rng.standard_normal((9, 256)).astype(np.float32)
    if not signed:
        grad_array = np.abs(grad_array)
    grad_array[0, :5] = [0.0, np.nan, np.inf, -1e-30, 1e-30]
    values = (table[code_array].reshape(-1, 128) * scale_array[:, None]).reshape(9, 256)
    values = reference.lerp(values, grad_array, 0.25)
    blocks = values.reshape(-1, 128)
    with np.errstate(invalid="ignore"):
        expected_scale = np.maximum(np.abs(blocks), np.float32(1e-12)).max(axis=1)
        expected_codes = reference.nearest_codes(blocks / expected_scale[:, None], table)
    fd.execute([code_array, scale_array, grad_array], **options)
    assert np.array_equal(code_array.reshape(-1, 128), expected_codes)
    assert np.array_equal(scale_array, expected_scale, equal_nan=True)


def test_codebook_ops_print_and_refuse_by_name():
    with FusionDefinition() as fd:
        codes = fd.define_tensor(shape=[4], dtype=DataType.UInt8)
        fd.add_output(fd.ops.nearest_code(fd.ops.code_value(codes, codebook="linear4_unsigned"),
                                          codebook="dynamic4_signed"))
    assert 'codebook="linear4_unsigned"' in repr(fd)
    for api in ("direct", "legacy"):
        assert rebuilt_from_repr(fd, fd.name, api).to_text() == fd.to_text()
    (result,) = fd.execute([np.arange(4, dtype=np.uint8)], backend="host")
    table4 = np.array(widefuse._widefuse.codebook_values("dynamic4_signed"), dtype=np.float32)
    linear = np.arange(1, 5, dtype=np.float32) / 16
    assert np.array_equal(result, reference.nearest_codes(linear, table4))
    with pytest.raises(widefuse.Error, match="unknown codebook 'dynamic7'"):
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[4])
            fd.ops.nearest_code(x, codebook="dynamic7")
    with pytest.raises(widefuse.Error, match="code_value takes an integer code, not f32"):
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[4])
            fd.ops.code_value(x, codebook="dynamic8_signed")
