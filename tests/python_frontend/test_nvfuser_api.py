"""nvFuser's FusionDefinition API on widefuse: layouts declared as nvFuser declares them
(contiguity in allocation order, broadcast dimensions), from_pytorch, define_tensor(sizes=,
strides=), the composite ops, and nvFuser's printer format — checked against torch."""

import numpy as np
import pytest
import torch

import widefuse
from widefuse import DataType, FusionDefinition
from conftest import rebuilt_from_repr


def run_scaled(define, tensor):
    """Runs T1 = T0 * 2 with T0 declared by `define(fd)` and returns the output."""
    with FusionDefinition() as fd:
        t0 = define(fd)
        fd.add_output(fd.ops.mul(t0, 2.0))
    return fd.execute([tensor])[0]


def strided_column_major():
    """Shape (5, 3), strides (1, 7): dimension 0 dense, dimension 1 strided."""
    return torch.randn(3, 7)[:, :5].t()


def test_contiguity_is_listed_in_allocation_order():
    # stride_order=[0, 1]: dimension 1 is outermost, so contiguity[0] describes dimension 1.
    x = strided_column_major()
    out = run_scaled(lambda fd: fd.define_tensor(shape=[-1, -1], contiguity=[False, True],
                                                  stride_order=[0, 1]), x)
    torch.testing.assert_close(out, x * 2)
    dense = torch.randn(3, 5).t()
    out = run_scaled(lambda fd: fd.define_tensor(shape=[-1, -1], contiguity=[True, True],
                                                  stride_order=[0, 1]), dense)
    torch.testing.assert_close(out, dense * 2)


def test_a_layout_the_declaration_does_not_describe_is_refused():
    with pytest.raises(widefuse.Error, match="do not match the definition's stride_order"):
        run_scaled(lambda fd: fd.define_tensor(shape=[-1, -1], contiguity=[True, True],
                                               stride_order=[0, 1]), strided_column_major())


def test_broadcast_dimensions_are_skipped_by_the_next_outer_one():
    # (2, 3, 4) expanded in dimension 1: strides (4, 0, 1). Dimension 0 is dense over
    # dimension 2, the next inner dimension that is not a broadcast.
    x = torch.randn(2, 1, 4).expand(2, 3, 4)
    out = run_scaled(lambda fd: fd.define_tensor(shape=[-1, -1, -1],
                                                 contiguity=[True, None, True]), x)
    torch.testing.assert_close(out, x * 2)
    # An extent-1 dimension (stride 6 here) marked None; dimension 0 (stride 6) is then the
    # innermost one that counts: strided.
    y = torch.randn(4, 6)[:, :1]
    out = run_scaled(lambda fd: fd.define_tensor(shape=[-1, 1], contiguity=[False, None]), y)
    torch.testing.assert_close(out, y * 2)


@pytest.mark.parametrize("make", [
    lambda: torch.randn(4, 5),
    lambda: torch.randn(4, 5).t(),
    lambda: torch.randn(4, 1, 6).transpose(0, 2),
    lambda: torch.randn(3, 1).expand(3, 4),
    lambda: torch.randn(6, 8)[::2, 1:7:3],
    lambda: torch.randn(2, 3, 4).permute(2, 0, 1),
    lambda: torch.randn(()),
    lambda: torch.randn(0, 3),
    lambda: torch.arange(12, dtype=torch.int32).reshape(3, 4),
], ids=["dense", "transposed", "size1", "expanded", "sliced", "permuted", "0d", "empty",
        "int32"])
def test_from_pytorch_accepts_the_tensor_it_describes(make):
    x = make()
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.add(t0, t0))
    torch.testing.assert_close(fd.execute([x])[0], x + x)
    # The same declaration from sizes and strides, and with static sizes.
    for static in (False, True):
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(sizes=x.shape, strides=x.stride(), dtype=DataType.Float
                                  if x.is_floating_point() else DataType.Int32,
                                  static_sizes=static)
            fd.add_output(fd.ops.add(t0, t0))
        torch.testing.assert_close(fd.execute([x])[0], x + x)
        shapes = [line for line in repr(fd).splitlines() if "define_tensor" in line]
        expected = list(x.shape) if static else [1 if e == 1 else -1 for e in x.shape]
        assert f"shape={expected}" in shapes[0]


def test_from_pytorch_prints_what_nvfusers_descriptor_gives():
    # nvFuser's computeTensorDescriptor for sizes (6, 1, 4), strides (1, 6, 6): sorted by
    # stride (stable), dimension 1 (extent 1) is None, the others dense.
    x = torch.randn(4, 1, 6).transpose(0, 2)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.sin(t0))
    assert ("tv0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[None, True, True], "
            "dtype=DataType.Float, is_cpu=False, stride_order=[0, 2, 1])") in repr(fd)
    torch.testing.assert_close(fd.execute([x])[0], torch.sin(x))


def test_from_pytorch_refuses_what_it_cannot_describe():
    with FusionDefinition() as fd:
        with pytest.raises(widefuse.Error, match="takes a torch.Tensor"):
            fd.from_pytorch([1.0, 2.0])
        with pytest.raises(widefuse.Error, match="no data type"):
            fd.from_pytorch(torch.zeros(2, dtype=torch.uint64))
        with pytest.raises(widefuse.Error, match="either sizes= and strides="):
            fd.define_tensor(shape=[-1], sizes=[3], strides=[1])
        with pytest.raises(widefuse.Error, match="True, False or None"):
            fd.define_tensor(shape=[-1], contiguity=["yes"])


def test_a_scalar_in_a_broadcast_shape_is_a_clear_error():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True])
        s1 = fd.define_scalar(None, dtype=DataType.Double)  # an Int one is an extent
        with pytest.raises(widefuse.Error, match=r"'S1' \(f64\) is not an integer scalar"):
            fd.ops.broadcast_in_dim(t0, shape=[s1, 4], broadcast_dims=[1])
        with pytest.raises(widefuse.Error, match="must hold ints and extent Scalars"):
            fd.ops.broadcast_in_dim(t0, shape=[2.5, 4], broadcast_dims=[1])


def test_broadcast_segment_set_and_addcmul_equal_torch():
    a, b, c = torch.randn(3, 4), torch.randn(3, 4), torch.randn(4)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(a), fd.from_pytorch(b)
        t2 = fd.define_tensor(shape=[-1], contiguity=[True])
        t3 = fd.ops.broadcast(t2, [True, False])
        t4 = fd.ops.broadcast_in_dim(t3, shape=[3, 4], broadcast_dims=[0, 1])
        value = fd.define_scalar(0.25, dtype=DataType.Double)
        fd.add_output(fd.ops.segment_set(fd.ops.addcmul(t0, t1, t4, value)))
    torch.testing.assert_close(fd.execute([a, b, c])[0], torch.addcmul(a, b, c, value=0.25))
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True])
        with pytest.raises(widefuse.Error, match="keeps 2 dimensions; the operand has 1"):
            fd.ops.broadcast(t0, [False, False])


# A definition as nvFuser's printer writes it (header, positional alias output), pasted as is.
NVFUSER_PRINTOUT = '''
def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, True], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    T1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(None, dtype=DataType.Double)
    T5 = fd.ops.broadcast_in_dim(T1, shape=[5, 3], broadcast_dims=[0, 1])
    T6 = fd.ops.mul(T5, S2)
    T7 = fd.ops.add(T0, T6)
    T8 = fd.ops.set(T7)
    fd.add_output(T8, T0)
    fd.add_output(T6)

'''


def test_an_nvfuser_printout_runs_unchanged_and_reprints_as_nvfuser_does():
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(NVFUSER_PRINTOUT, namespace)
    with FusionDefinition() as fd:
        namespace["nvfuser_fusion_id0"](fd)
    x, y = strided_column_major(), torch.randn(5, 1)
    expected_x, expected_out = x + y * 0.5, (y * 0.5).expand(5, 3)
    (out,) = fd.execute([x, y, 0.5])
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(x, expected_x)
    printed = fd.printout(api="legacy")
    # nvFuser's layout: a blank line, the function (tools read its name from line 1), a blank
    # line; nothing else.
    assert printed.startswith("\ndef nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n")
    assert printed.endswith(")\n\n") and "with FusionDefinition" not in printed
    for line in NVFUSER_PRINTOUT.splitlines()[2:4]:  # the two define_tensor lines
        assert line in printed
    assert "    fd.add_output(T6, T0)\n" in printed
    # The reprint rebuilds the same fusion.
    rebuilt = rebuilt_from_repr(fd, api="legacy")
    assert rebuilt.to_text() == fd.to_text()
    assert rebuilt.printout(api="legacy") == printed


class ScaledAdd(FusionDefinition):
    """nvFuser's legacy style: the fusion is defined by a subclass's definition()."""

    def definition(self):
        self.t0 = self.define_tensor(shape=[-1], contiguity=[True])
        self.t1 = self.define_tensor(shape=[-1], contiguity=[True])
        self.add_output(self.ops.add(self.t0, self.ops.mul(self.t1, 3.0)))


def test_a_subclass_with_definition_runs_on_first_execute():
    a, b = torch.randn(7), torch.randn(7)
    fd = ScaledAdd()
    torch.testing.assert_close(fd.execute([a, b])[0], a + b * 3.0)
    torch.testing.assert_close(fd.execute([b, a])[0], b + a * 3.0)
    assert repr(fd).count("define_tensor") == 2


class Scheduled(ScaledAdd):
    """A subclass with nvFuser's user-schedule hook."""
    calls = 0

    def schedule(self):
        Scheduled.calls += 1


class DefinesInSchedule(ScaledAdd):
    def schedule(self):
        self.ops.abs(self.t0)


def test_schedule_runs_once_on_the_completed_definition():
    a, b = torch.randn(5), torch.randn(5)
    fd = Scheduled()
    torch.testing.assert_close(fd.execute([a, b])[0], a + b * 3.0)
    fd.execute([a, b])
    assert Scheduled.calls == 1
    with pytest.raises(widefuse.Error, match="Attempting to add to a completed definition!"):
        DefinesInSchedule().execute([a, b])


def test_definition_is_for_subclasses():
    with pytest.raises(NotImplementedError, match="subclass"):
        FusionDefinition().definition()
    # Running a definition that defines nothing asks for definition() too, as nvFuser does.
    with pytest.raises(NotImplementedError, match="subclass"):
        FusionDefinition().execute([torch.ones(2)])


def test_one_value_as_several_outputs_and_an_input_as_output():
    x = torch.randn(6)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        t1 = fd.ops.mul(t0, 2.0)
        fd.add_output(t1)
        fd.add_output(t0)
        fd.add_output(t1)
    first, passed, again = fd.execute([x])
    torch.testing.assert_close(first, x * 2)
    torch.testing.assert_close(passed, x)
    assert again is first
    # The printout names each add_output call, so the rebuilt definition has three outputs.
    assert repr(fd).count("fd.add_output(tv1)") == 2
    assert len(rebuilt_from_repr(fd).execute([x])) == 3


def test_outputs_of_an_aliased_value_or_the_written_input_return_the_input_itself():
    # nvFuser: add_output(T2, T0) hides that output; a plain add_output of T2, before or
    # after it, and one of T0 return T0's own tensor, holding T2 after execute().
    x = torch.tensor([[-1.5, 2.0, 0.25], [3.0, -4.0, 0.0]])
    expected = torch.clamp(x, min=0.0) * 3.0
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        t1 = fd.ops.mul(fd.ops.where(fd.ops.gt(t0, 0.0), t0, 0.0), 3.0)
        fd.add_output(t1)
        fd.add_output(t0)
        fd.add_output(t1, t0)
        fd.add_output(t1)
    outputs = fd.execute([x])
    assert len(outputs) == 3 and all(output is x for output in outputs)
    assert torch.equal(x, expected)
    # The kernel writes no buffer of its own for them: the fusion has no plain output.
    text = fd.to_text()
    assert "return" not in text and "copy_(T3, T0)" in text, text
    # repr(fd) prints the calls in the order they were made, and reprints so.
    printed = repr(fd)
    assert printed.endswith("    fd.add_output(tv3)\n    fd.add_output(tv0)\n"
                            "    fd.add_output(tv3, tv0)\n    fd.add_output(tv3)\n"), printed
    rebuilt = rebuilt_from_repr(fd)
    assert repr(rebuilt) == printed
    y = np.array([1.0, -2.0, 3.0, -4.0, 5.0, -6.0], np.float32).reshape(2, 3)
    outputs = rebuilt.execute([y])
    assert all(output is y for output in outputs)
    np.testing.assert_array_equal(y, [[3.0, 0.0, 9.0], [0.0, 15.0, 0.0]])
    # prepare() returns them too.
    step = fd.prepare([y])
    assert all(output is y for output in step())
    np.testing.assert_array_equal(y, [[9.0, 0.0, 27.0], [0.0, 45.0, 0.0]])
    assert fd.execute([y], backend="none") == []


def test_outputs_an_in_place_update_converts_stay_their_own_arrays():
    # Only a value the input then holds exactly (its dtype and shape, and no stride_order of
    # its own) comes back as the input; an input nothing writes comes back as a copy.
    a, b, c = torch.ones(2, 2), torch.tensor([[0.5, 0.25]]), torch.ones(2, 2)
    with FusionDefinition() as fd:
        t0, t1, t2 = (fd.from_pytorch(x) for x in (a, b, c))
        t3 = fd.ops.cast(fd.ops.add(t0, 1.5), DataType.Double)  # written as Float
        t4 = fd.ops.mul(t2, 3.0)
        fd.add_output(t3, t0)
        fd.add_output(t4, t2)
        fd.add_output(t3)
        fd.add_output(t4, stride_order=[0, 1])
        fd.add_output(t1)
    outputs = fd.execute([a, b, c])
    assert not any(output is x for output in outputs for x in (a, b, c))
    wide, tripled, passed = outputs
    assert wide.dtype == torch.float64 and torch.equal(wide, torch.full((2, 2), 2.5).double())
    assert torch.equal(a, torch.full((2, 2), 2.5))
    assert tripled.stride() == (1, 2) and torch.equal(tripled, c)
    assert torch.equal(c, torch.full((2, 2), 3.0))
    assert torch.equal(passed, b)
    assert fd.to_text().count("copy_") == 2 and "return T4, T5, T1" in fd.to_text()


def test_validate_define_constant_and_fusion_ir():
    x = torch.randn(5, dtype=torch.float64)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.exp(fd.ops.mul(t0, fd.define_constant(0.5))))
    fd.validate([x], [torch.exp(x * 0.5)])
    with pytest.raises(AssertionError, match="output 0"):
        fd.validate([x], [torch.exp(x * 0.5) + 1e-3])
    with pytest.raises(AssertionError, match="1 outputs, 2 references"):
        fd.validate([x], [x, x])
    assert "exp(" in fd.fusion_ir() and fd.fusion_ir() == fd.to_text()
    # NumPy arrays validate the same way.
    fd.validate([x.numpy()], [np.exp(x.numpy() * 0.5)])
