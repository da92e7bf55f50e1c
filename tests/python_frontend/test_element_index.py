"""fd.ops.element_index (docs/ir_reference.md): each element's row-major index in its tensor,
against NumPy's arange on the reference evaluator, the host backend and the emulated device
code, in elementwise, reducing and by-blocks fusions and over a transposed layout."""

import numpy as np
import pytest
from conftest import rebuilt_from_repr

from widefuse import DataType, Error, FusionDefinition

BACKENDS = [dict(backend="reference"), dict(backend="host", block_order="reverse"),
            dict(backend="host", host_execution="verify")]
IDS = ["reference", "host", "emulated-device"]


@pytest.mark.parametrize("options", BACKENDS, ids=IDS)
def test_each_element_reads_its_row_major_index(options):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float, stride_order=[0, 1])
        index = fd.ops.element_index(x)
        fd.add_output(index)
        fd.add_output(fd.ops.add(x, fd.ops.cast(index, DataType.Float)))
        fd.add_output(fd.ops.sum(fd.ops.cast(index, DataType.Double)))
    x = np.asfortranarray(np.random.default_rng(1).standard_normal((37, 129), dtype=np.float32))
    index, shifted, total = fd.execute([x], **options)
    expected = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    assert index.dtype == np.int64
    assert np.array_equal(index, expected)
    assert np.array_equal(shifted, x + expected.astype(np.float32))
    assert total == expected.sum()
    assert repr(rebuilt_from_repr(fd)) == repr(fd)


@pytest.mark.parametrize("options", BACKENDS, ids=IDS)
def test_blocks_see_the_indices_of_their_elements(options):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        position = fd.ops.cast(fd.ops.element_index(x), DataType.Float)
        peak = fd.ops.max(fd.ops.add(fd.ops.abs(x), position), block=64)
        fd.add_output(peak)
        fd.add_output(fd.ops.div(x, fd.ops.expand_blocks(peak, [x.size(0)], block=64)))
    x = np.random.default_rng(2).standard_normal(5000).astype(np.float32)
    peak, divided = fd.execute([x], **options)
    padded = np.concatenate([np.abs(x) + np.arange(x.size, dtype=np.float32),
                             np.full(64 - x.size % 64, -np.inf, np.float32)])
    assert np.array_equal(peak, padded.reshape(-1, 64).max(axis=1))
    assert np.array_equal(divided, x / np.repeat(peak, 64)[:x.size])


def test_an_index_broadcast_into_a_larger_domain_is_refused_by_kernels():
    with FusionDefinition() as fd:
        row = fd.define_tensor(shape=[16], dtype=DataType.Float)
        grid = fd.define_tensor(shape=[8, 16], dtype=DataType.Float)
        index = fd.ops.cast(fd.ops.element_index(row), DataType.Float)
        fd.add_output(fd.ops.add(grid, fd.ops.broadcast_in_dim(index, [8, 16], [1])))
    row = np.zeros(16, np.float32)
    grid = np.zeros((8, 16), np.float32)
    (reference,) = fd.execute([row, grid], backend="reference")
    assert np.array_equal(reference, np.broadcast_to(np.arange(16, dtype=np.float32), (8, 16)))
    with pytest.raises(Error, match="element_index of a value broadcast into a larger domain"):
        fd.execute([row, grid], backend="host")
