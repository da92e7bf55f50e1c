"""execute(phase_boundary=) and prepare(phase_boundary=): a Python function runs between the
phases of a fusion whose later phase reads a reduction, sees each kept result (name,
reduction, dtype, memory) and may rewrite it in place, as an all-reduce across processes
does; the later phase reads what it wrote."""

import gc

import numpy as np
import pytest

import widefuse
from widefuse import DataType, FusionDefinition


def scaled_by_sum_and_flag() -> FusionDefinition:
    """x * sum(x) + any(x > 2): two kept results of phase 0, read by phase 1."""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([-1], dtype=DataType.Float)
        total = fd.ops.sum(x)
        flag = fd.ops.any(fd.ops.gt(x, 2.0))
        fd.add_output(x * total + fd.ops.cast(flag, DataType.Float))
    return fd


def test_a_boundary_rewrites_the_kept_results_the_next_phase_reads():
    fd = scaled_by_sum_and_flag()
    assert fd.phases == 2
    seen = []

    def boundary(phase, kept, stream):
        seen.append((phase, [(k.reduction, k.dtype, k.array.shape, k.array.item())
                             for k in kept], stream))
        for k in kept:  # as an all-reduce over 3 ranks with equal shards and no flag would
            k.array[...] = k.array * 3 if k.reduction == "sum" else False

    x = np.arange(4, dtype=np.float32)
    (out,) = fd.execute([x], phase_boundary=boundary)
    np.testing.assert_array_equal(out, x * (3 * x.sum()))
    assert seen == [(0, [("sum", DataType.Float, (), 6.0), ("any", DataType.Bool, (), True)], 0)]
    # Without the boundary the same fusion reads what phase 0 computed.
    (plain,) = fd.execute([x])
    np.testing.assert_array_equal(plain, x * x.sum() + 1)
    # A prepared run crosses it on every launch.
    prepared = fd.prepare([x], phase_boundary=boundary)
    for launch in range(2):
        (out,) = prepared()
        np.testing.assert_array_equal(out, x * (3 * x.sum()))
    assert [phase for phase, _, _ in seen] == [0, 0, 0]


def test_a_fusion_without_later_reads_has_one_phase_and_never_calls_it():
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x))
        fd.add_output(x * 2.0)
    assert fd.phases == 1
    called = []
    fd.execute([np.ones(3, np.float32)], phase_boundary=lambda *args: called.append(args))
    assert called == []


def test_an_error_in_the_boundary_reaches_the_caller():
    fd = scaled_by_sum_and_flag()

    def boundary(phase, kept, stream):
        raise KeyError("the collective failed")

    with pytest.raises(KeyError, match="the collective failed"):
        fd.execute([np.ones(3, np.float32)], phase_boundary=boundary)


def test_bad_boundaries_are_refused():
    fd = scaled_by_sum_and_flag()
    with pytest.raises(TypeError, match="phase_boundary"):
        fd.execute([np.ones(3, np.float32)], phase_boundary=3)
    with pytest.raises(widefuse.Error, match="cannot run an operation between its phases"):
        fd.execute([np.ones(3, np.float32)], backend="reference",
                   phase_boundary=lambda *args: None)


def test_a_boundary_that_refers_to_its_fusion_is_collected():
    # The executor holds the boundary and the boundary the fusion: a cycle through C++ that
    # the garbage collector must see.
    fd = scaled_by_sum_and_flag()
    fd.boundary = lambda phase, kept, stream: fd.phases
    fd.execute([np.ones(3, np.float32)], phase_boundary=fd.boundary)
    import weakref
    alive = weakref.ref(fd)
    del fd
    gc.collect()
    assert alive() is None
