"""nvFuser's module-level helpers that tracers import: compute_contiguity,
compute_tensor_descriptor and version(), checked on layouts worked out by hand and on torch
tensors that a definition built from the helpers' answer then accepts."""

import itertools

import pytest
import torch

import widefuse
from widefuse import FusionDefinition


@pytest.mark.parametrize("sizes, strides, expected", [
    ([4, 5], [5, 1], [True, True]),                # row-major
    ([4, 5], [10, 1], [False, True]),              # padded rows
    ([4, 5], [1, 4], [False, False]),              # column-major, read per logical dimension
    ([2, 1, 3], [3, 3, 1], [True, None, True]),    # an extent-1 dimension is skipped
    ([3, 4], [0, 1], [None, True]),                # expanded (stride 0)
    ([2, 1, 3, 1, 4], [50, 7, 4, 9, 1], [False, None, True, None, True]),
    ([], [], []),
])
def test_compute_contiguity_per_logical_dimension(sizes, strides, expected):
    assert widefuse.compute_contiguity(sizes, strides) == expected


@pytest.mark.parametrize("sizes, strides, contiguity, stride_order", [
    ([4, 5], [5, 1], [True, True], [1, 0]),
    ([4, 5], [1, 4], [True, True], [0, 1]),        # column-major, listed outermost first
    ([4, 5], [1, 8], [False, True], [0, 1]),
    ([3, 4], [0, 1], [None, True], [1, 0]),        # the stride-0 dimension keeps its place
    ([2, 3, 4], [1, 8, 2], [True, True, True], [0, 2, 1]),
])
def test_compute_tensor_descriptor_in_allocation_order(sizes, strides, contiguity, stride_order):
    assert widefuse.compute_tensor_descriptor(sizes, strides) == (contiguity, stride_order)


def layouts():
    """Torch tensors of every permutation of a 2x3x4 tensor, some with a padded or expanded
    dimension."""
    base = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    for perm in itertools.permutations(range(3)):
        yield base.permute(*perm).contiguous().permute(*[perm.index(d) for d in range(3)])
    yield torch.arange(40, dtype=torch.float32).reshape(2, 20)[:, :12].reshape(2, 3, 4)[:, :, :3]
    yield torch.arange(4, dtype=torch.float32).reshape(1, 1, 4).expand(2, 3, 4)


@pytest.mark.parametrize("tensor", list(layouts()))
def test_a_definition_built_from_the_descriptor_accepts_the_tensor(tensor):
    contiguity, stride_order = widefuse.compute_tensor_descriptor(tensor.shape, tensor.stride())
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1] * tensor.dim(), contiguity=contiguity,
                              dtype=widefuse.DataType.Float, stride_order=stride_order)
        fd.add_output(fd.ops.mul(t0, 3.0))
    (out,) = fd.execute([tensor])
    torch.testing.assert_close(out, tensor * 3.0, rtol=0, atol=0)


def test_helpers_refuse_mismatched_lengths():
    with pytest.raises(widefuse.Error, match="2 sizes but 1 strides"):
        widefuse.compute_contiguity([2, 3], [1])
    with pytest.raises(widefuse.Error, match="2 sizes but 3 strides"):
        widefuse.compute_tensor_descriptor([2, 3], [3, 1, 1])


def test_version_compares_numerically():
    v = widefuse.version()
    assert v == widefuse.__version__ and isinstance(v, str)
    assert v > "0.0.9" and v >= "0.1" and v < "0.10.0" and v != "0.2.0"
    assert widefuse.Version("0.10.0") > widefuse.Version("0.9.1")
    assert widefuse.Version("1.0") == "1.0.0" and hash(widefuse.Version("1.0")) == hash(
        widefuse.Version("1.0.0"))
    with pytest.raises(ValueError, match="not a version number"):
        v < "latest"
    with pytest.raises(TypeError):
        v < 1
