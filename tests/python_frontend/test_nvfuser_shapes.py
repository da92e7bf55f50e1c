"""Shapes as nvFuser's pointwise definitions use them, checked against torch: implicit
broadcasting of extent-1 (broadcast) dimensions and of lower ranks, extents as values
(t.size(d), t.shape(), define_vector) in broadcast_in_dim shapes and in arithmetic, and the
printed definition running again."""

import pytest
import torch

import widefuse
from widefuse import DataType, FusionDefinition
from conftest import rebuilt_from_repr


def reexecuted(fd, inputs):
    """Runs repr(fd), the printed definition, and returns the new definition's outputs."""
    return rebuilt_from_repr(fd).execute(inputs)


@pytest.mark.parametrize("backend", ["host", "reference"])
def test_an_extent_1_dimension_broadcasts_against_a_symbolic_one(backend):
    row, full = torch.randn(1, 5), torch.randn(4, 5)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        t2 = fd.ops.add(t0, t1)
        fd.add_output(t2)
    assert t2.shape == (-1, -1)
    (out,) = fd.execute([row, full], backend=backend)
    torch.testing.assert_close(out, row + full, rtol=0, atol=0)
    # The symbolic extent is the other operand's, whatever it is at run time.
    wide = torch.randn(7, 5)
    torch.testing.assert_close(fd.execute([row, wide], backend=backend)[0], row + wide,
                               rtol=0, atol=0)


def test_both_operands_broadcast_and_static_ones_stretch_to_static_extents():
    a, b = torch.randn(1, 4), torch.randn(3, 1)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(a), fd.from_pytorch(b)
        t2 = fd.ops.mul(t0, t1)
        fd.add_output(t2)
    assert t2.shape == (-1, -1)
    torch.testing.assert_close(fd.execute([a, b])[0], a * b, rtol=0, atol=0)
    ones, full = torch.randn(1, 1), torch.randn(3, 4)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 1], contiguity=[None, None])
        t1 = fd.define_tensor(shape=[3, 4])
        t2 = fd.ops.sub(t0, t1)
        fd.add_output(t2)
    assert t2.shape == (3, 4)
    torch.testing.assert_close(fd.execute([ones, full])[0], ones - full, rtol=0, atol=0)


def test_lower_ranks_gain_leading_broadcast_dimensions_and_where_broadcasts_all_three():
    cond, a, b = torch.rand(5) > 0.5, torch.randn(2, 3, 5), torch.randn(3, 1)
    with FusionDefinition() as fd:
        tc, ta, tb = fd.from_pytorch(cond), fd.from_pytorch(a), fd.from_pytorch(b)
        out = fd.ops.where(tc, ta, tb)
        fd.add_output(out)
    assert out.shape == (-1, -1, -1)
    torch.testing.assert_close(fd.execute([cond, a, b])[0], torch.where(cond, a, b),
                               rtol=0, atol=0)
    torch.testing.assert_close(reexecuted(fd, [cond, a, b])[0], torch.where(cond, a, b),
                               rtol=0, atol=0)


def test_a_symbolic_extent_that_is_1_at_run_time_does_not_broadcast():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.add(t0, t1))
    with pytest.raises(widefuse.Error, match=r"at run time 'T0' has shape \[1, 3\] but 'T1' "
                                             r"has shape \[4, 3\]"):
        fd.execute([torch.randn(1, 3), torch.randn(4, 3)])
    # Nor does a static extent other than 1: [3] and [4] cannot meet.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3])
        t1 = fd.define_tensor(shape=[2, 4])
        with pytest.raises(widefuse.Error, match=r"do not broadcast: aligned at the last "
                                                 r"dimension, extents must be equal or 1"):
            fd.ops.add(t0, t1)


def test_a_broadcast_operand_whose_other_side_disagrees_at_run_time_is_refused_before_writes():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t1 = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.add(t0, t1), alias_input=t1)
    t1 = torch.randn(4, 6)
    before = t1.clone()
    with pytest.raises(widefuse.Error, match=r"has shape \[4, 5\] but 'T1' has shape \[4, 6\]"):
        fd.execute([torch.randn(1, 5), t1])
    torch.testing.assert_close(t1, before, rtol=0, atol=0)


def test_implicit_broadcasts_print_as_nvfuser_prints_them_and_run_again():
    row, full = torch.randn(1, 5), torch.randn(4, 5)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(row)
        t1 = fd.from_pytorch(full)
        t2 = fd.ops.add(t0, t1)
        fd.add_output(t2)
    printed = fd.printout(api="legacy")
    assert "T2 = fd.ops.add(T0, T1)" in printed, printed
    assert "tv2 = fd.ops.add(tv0, tv1)" in repr(fd)
    assert "broadcast_in_dim" not in printed and t2.name == "T2"
    # The text form spells the broadcast out, the extent named by a size value.
    text = fd.to_text()
    assert "= size(T1, 0)" in text and "broadcast_in_dim(T0, [s, ?], [0, 1])" in text, text
    again = FusionDefinition.from_text(text)
    assert again.to_text() == text
    torch.testing.assert_close(again.execute([row, full])[0], row + full, rtol=0, atol=0)
    torch.testing.assert_close(reexecuted(fd, [row, full])[0], row + full, rtol=0, atol=0)


def test_copy_broadcasts_its_source_into_the_destination_but_never_stretches_it():
    row, full = torch.randn(1, 3), torch.randn(4, 3)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 3], contiguity=[None, True])
        t1 = fd.define_tensor(shape=[4, 3])
        with pytest.raises(widefuse.Error, match=r"copy_.*no broadcast into the destination"):
            fd.add_output(fd.ops.add(t0, t1), alias_input=t0)
        fd.add_output(fd.ops.mul(t0, 2.0), alias_input=t1)  # as torch's t1.copy_(t0 * 2)
    expected = (row * 2).expand(4, 3).clone()
    fd.execute([row, full])
    torch.testing.assert_close(full, expected, rtol=0, atol=0)


def test_broadcast_composes_with_implicit_broadcasting():
    x, y = torch.randn(4), torch.randn(3, 4)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(y)
        t2 = fd.ops.broadcast(t0, [True, False])  # [1, -1]: a broadcast dimension
        assert t2.shape == (1, -1)
        fd.add_output(fd.ops.add(t1, t2))
    torch.testing.assert_close(fd.execute([x, y])[0], y + x, rtol=0, atol=0)


def test_shape_and_size_name_extents_in_broadcast_in_dim():
    bias, t = torch.randn(5), torch.randn(3, 5)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.define_tensor(shape=[-1])
        t2 = fd.ops.broadcast_in_dim(t1, t0.shape(), [1])
        t3 = fd.ops.broadcast_in_dim(t1, [t0.size(0), t0.size(1)], [1])
        t4 = fd.ops.broadcast_in_dim(t1, fd.define_vector([t0.size(0), -1]), [1])
        fd.add_output(fd.ops.add(fd.ops.add(t0, t2), fd.ops.mul(t3, t4)))
    expected = t + bias + bias * bias
    torch.testing.assert_close(fd.execute([t, bias])[0], expected)
    torch.testing.assert_close(reexecuted(fd, [t, bias])[0], expected)
    assert t0.shape == (-1, -1) and t0.shape[0] == -1  # still torch's property: a tuple
    with pytest.raises(widefuse.Error, match=r"at run time operand 'T1' has extent 4 in "
                                             r"dimension 0, which cannot broadcast to 5"):
        fd.execute([t, torch.randn(4)])


def test_an_extent_is_an_int_scalar_in_arithmetic():
    x = torch.randn(3, 7)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        n = t0.size(0)
        assert n.dtype is DataType.Int
        fd.add_output(fd.ops.mul(t0, n))
        fd.add_output(fd.ops.add(t0, fd.ops.size(t0, -1)))
        fd.add_output(fd.ops.div(t0, fd.ops.mul(n, t0.size(1))))
    for inputs in ([x], [torch.randn(5, 2)]):
        a = inputs[0]
        outs = fd.execute(inputs)
        torch.testing.assert_close(outs[0], a * a.shape[0], rtol=0, atol=0)
        torch.testing.assert_close(outs[1], a + a.shape[1], rtol=0, atol=0)
        torch.testing.assert_close(outs[2], a / (a.shape[0] * a.shape[1]))
    for out, expected in zip(reexecuted(fd, [x]), [x * 3, x + 7, x / 21]):
        torch.testing.assert_close(out, expected)
    with pytest.raises(IndexError, match=r"T0.size\(2\): dim must be an int in \[-2, 2\)"):
        with FusionDefinition() as fd:
            fd.define_tensor(shape=[-1, -1]).size(2)


def test_extents_of_members_of_one_batched_kernel_are_their_own():
    # Two disconnected subgraphs with one signature: one kernel body, each member scaled by
    # its own extent.
    a, b = torch.randn(3, 2), torch.randn(6, 2)
    with FusionDefinition() as fd:
        t0, t1 = fd.define_tensor(shape=[-1, -1]), fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.mul(t0, t0.size(0)), alias_input=t0)
        fd.add_output(fd.ops.mul(t1, t1.size(0)), alias_input=t1)
    expected_a, expected_b = a * 3, b * 6
    fd.execute([a, b], mode="batched")
    assert len(fd.last_kernels()) == 1
    torch.testing.assert_close(a, expected_a, rtol=0, atol=0)
    torch.testing.assert_close(b, expected_b, rtol=0, atol=0)


def test_disconnected_updates_with_implicit_broadcasts_share_one_batched_kernel():
    # Adam-like: each parameter adds its own bias row; the two subgraphs have one signature.
    params = [torch.randn(3, 4), torch.randn(5, 2)]
    rows = [torch.randn(1, 4), torch.randn(1, 2)]
    with FusionDefinition() as fd:
        for p, r in zip(params, rows):
            tp, tr = fd.from_pytorch(p), fd.from_pytorch(r)
            fd.add_output(fd.ops.add(tp, tr), alias_input=tp)
    expected = [p + r for p, r in zip(params, rows)]
    fd.execute([params[0], rows[0], params[1], rows[1]], mode="batched")
    assert len(fd.last_kernels()) == 1
    for p, e in zip(params, expected):
        torch.testing.assert_close(p, e, rtol=0, atol=0)
    assert "2 components, 1 signature classes, 1 launches" in fd.segments("batched")


def test_a_vector_input_is_a_shape_given_at_run_time_as_a_list_or_tuple():
    # nvFuser's define_vector(n): one execute() input, a list or tuple of n ints (what Thunder
    # passes for a tuple of ints); fd.ops.at reads one entry.
    row = torch.randn(4)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        v1 = fd.define_vector(2, dtype=DataType.Int)
        rows = fd.ops.at(v1, 0)
        t1 = fd.ops.broadcast_in_dim(t0, shape=v1, broadcast_dims=[1])
        fd.add_output(fd.ops.mul(t1, rows))
    assert len(v1) == 2 and v1.name == "V1" and fd.ops.at(v1, -1) is v1[1]
    for shape in ([3, 4], (1, 4), torch.Size([5, 4]), [0, 4]):
        out = fd.execute([row, shape])[0]
        torch.testing.assert_close(out, row.expand(*shape) * shape[0], rtol=0, atol=0)
    printed = fd.printout(api="legacy")
    assert "V1 = fd.define_vector(2, dtype=DataType.Int)" in printed
    assert "S2 = fd.ops.at(V1, index=0)" in printed
    assert rebuilt_from_repr(fd, api="legacy").printout(api="legacy") == printed
    # The direct API's define_vector(n) is a list of n scalars: its entries are indexed.
    assert "v0 = fd.define_vector(2)\n    c0 = v0[0]\n    c1 = v0[1]\n" in repr(fd)
    assert repr(rebuilt_from_repr(fd)) == repr(fd)
    torch.testing.assert_close(reexecuted(fd, [row, (2, 4)])[0], row.expand(2, 4) * 2)
    with pytest.raises(TypeError, match=r"input V1 \(\[S2, S3\]\) is a vector of 2 ints"):
        fd.execute([row, [3]])
    with pytest.raises(TypeError, match=r"is a vector of 2 ints"):
        fd.execute([row, 3])
    with pytest.raises(widefuse.Error, match=r"at run time output extent 1 \('S3'\) is 5, but "
                                             r"'T0' has extent 4|cannot broadcast to 5"):
        fd.execute([row, [3, 5]])
    with pytest.raises(widefuse.Error, match=r"output extent 0 \('S2'\) is -1: an extent "
                                             r"cannot be negative"):
        fd.execute([row, [-1, 4]])
    with pytest.raises(ValueError, match=r"expects 2 inputs \(T0, V1 \(\[S2, S3\]\)\), got 3"):
        fd.execute([row, 3, 4])


def test_an_int_scalar_input_and_integer_arithmetic_are_extents():
    bias, other = torch.randn(3), torch.randn(3)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        t1 = fd.define_tensor(shape=[-1])
        s2 = fd.define_scalar(None, dtype=DataType.Int)
        t3 = fd.ops.broadcast_in_dim(t0, shape=[fd.ops.mul(s2, 2), t0.size(0)],
                                     broadcast_dims=[1])
        t4 = fd.ops.broadcast_in_dim(t1, shape=[s2 + 1, -1], broadcast_dims=[1])
        fd.add_output(t3)
        fd.add_output(t4)
    for k in (0, 1, 4):
        out3, out4 = fd.execute([bias, other, k])
        torch.testing.assert_close(out3, bias.expand(2 * k, 3), rtol=0, atol=0)
        torch.testing.assert_close(out4, other.expand(k + 1, 3), rtol=0, atol=0)
    outs = reexecuted(fd, [bias, other, 2])
    assert [tuple(out.shape) for out in outs] == [(4, 3), (3, 3)]
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        s1 = fd.define_scalar(None, dtype=DataType.Double)
        with pytest.raises(widefuse.Error, match=r"output extent 0: 'S1' \(f64\) is not an "
                                                 r"integer scalar"):
            fd.ops.broadcast_in_dim(t0, shape=[s1, -1], broadcast_dims=[1])
        with pytest.raises(widefuse.Error, match=r"must hold ints and extent Scalars"):
            fd.ops.broadcast_in_dim(t0, shape=[2.5, -1], broadcast_dims=[1])


def test_a_vector_input_needs_a_size_and_at_an_index_inside_it():
    with FusionDefinition() as fd:
        with pytest.raises(ValueError, match=r"define_vector\(0\): a vector input needs at "
                                             r"least one entry"):
            fd.define_vector(0)
        with pytest.raises(ValueError, match=r"dtype must be DataType.Int"):
            fd.define_vector(2, dtype=DataType.Float)
        v0 = fd.define_vector([3, 4])
        assert fd.ops.at(v0, 1) == 4 and v0.name is None
        with pytest.raises(IndexError, match=r"index 2 is outside the vector of 2 entries"):
            fd.ops.at(v0, 2)
        with pytest.raises(TypeError, match=r"fd.ops.at takes a Vector"):
            fd.ops.at([3, 4], 0)


@pytest.mark.parametrize("stride_order", [[0, 1], [1, 0]])
def test_add_output_with_a_stride_order_returns_that_layout(stride_order):
    a, b = torch.randn(3, 5), torch.randn(3, 5)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(a), fd.from_pytorch(b)
        t2 = fd.ops.mul(t0, t1)
        fd.add_output(t2, stride_order=stride_order)
        fd.add_output(fd.ops.add(t0, t1))
    (out, plain) = fd.execute([a, b])
    expected = torch.empty([5, 3] if stride_order == [0, 1] else [3, 5])
    expected = expected.t() if stride_order == [0, 1] else expected
    assert out.stride() == expected.stride() and plain.stride() == (5, 1)
    torch.testing.assert_close(out, a * b, rtol=0, atol=0)
    printed = fd.printout(api="legacy")
    if stride_order == [0, 1]:
        assert "fd.add_output(T2, stride_order=[0, 1])" in printed, printed
        # The direct API's add_output takes no layout: fd.ops.stride_order carries it.
        assert ("tv4 = fd.ops.stride_order(tv2, stride_order=[0, 1])\n"
                "    fd.add_output(tv4)\n") in repr(fd), repr(fd)
    again = reexecuted(fd, [a, b])
    assert again[0].stride() == expected.stride()
    torch.testing.assert_close(again[0], a * b, rtol=0, atol=0)
    # NumPy inputs get NumPy outputs laid out the same way (strides in bytes).
    (array, _) = fd.execute([a.numpy(), b.numpy()])
    assert array.strides == tuple(4 * s for s in expected.stride())
    torch.testing.assert_close(torch.from_numpy(array.copy()), a * b, rtol=0, atol=0)


def test_a_three_dimensional_stride_order_and_its_errors():
    x = torch.randn(2, 3, 4)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        t1 = fd.ops.neg(t0)
        with pytest.raises(ValueError, match=r"stride_order \[0, 0, 1\] is not a permutation"):
            fd.add_output(t1, stride_order=[0, 0, 1])
        with pytest.raises(ValueError, match="exclude each other"):
            fd.add_output(t1, alias_input=t0, stride_order=[0, 1, 2])
        fd.add_output(t1, stride_order=[1, 2, 0])  # dimension 1 outermost, then 0, then 2
    (out,) = fd.execute([x])
    assert out.stride() == torch.empty(3, 2, 4).permute(1, 0, 2).stride() == (4, 8, 1)
    torch.testing.assert_close(out, -x, rtol=0, atol=0)


def test_the_generated_kernels_compile_with_nvrtc_and_do_not_depend_on_block_order():
    row, full = torch.randn(1, 300), torch.randn(70, 300)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(row), fd.from_pytorch(full)
        t2 = fd.ops.mul(fd.ops.add(t0, t1), t1.size(0))
        fd.add_output(t2)
        fd.add_output(fd.ops.sub(t1, t0), alias_input=t1)
    expected, updated = (row + full) * 70, full - row
    fd.execute([row, full.clone()], backend="none")  # NVRTC compiles the kernel for sm_90
    assert "wf_" in fd.last_cuda_code()
    for order in ("forward", "reverse", "shuffle:7"):
        state = full.clone()
        (out,) = fd.execute([row, state], host_execution="verify", block_order=order)
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
        torch.testing.assert_close(state, updated, rtol=0, atol=0)


def test_one_subgraph_writing_a_broadcast_shape_and_the_full_one_is_two_kernels():
    # nvFuser schedules [1, -1] and [-1, -1] outputs of one subgraph; widefuse runs one kernel
    # per shape, the [1, -1] value computed by both.
    x, row = torch.randn(3, 4), torch.randn(1, 4)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        t1 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t2 = fd.ops.mul(t1, 2.0)
        fd.add_output(t2)
        fd.add_output(fd.ops.add(t0, t2))
    for inputs in ([x, row], [torch.randn(5, 2), torch.randn(1, 2)]):
        narrow, wide = fd.execute(inputs)
        torch.testing.assert_close(narrow, inputs[1] * 2, rtol=0, atol=0)
        torch.testing.assert_close(wide, inputs[0] + inputs[1] * 2, rtol=0, atol=0)
    assert len(fd.last_kernels()) == 2
    narrow, wide = reexecuted(fd, [x, row])
    torch.testing.assert_close(wide, x + row * 2, rtol=0, atol=0)
