"""Bad input of every kind raises widefuse.Error naming what is wrong, before any write."""

import numpy as np
import pytest

import widefuse
from conftest import DlpackOnly
from widefuse import DataType, FusionDefinition


def scale_in_place():
    """x <- x * s for a [-1, 3] float tensor x and a runtime double s."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 3], dtype=DataType.Float)
        s = fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.set(x * s), alias_input=x)
    return fd


def test_error_is_a_runtime_error():
    assert issubclass(widefuse.Error, RuntimeError)


@pytest.mark.parametrize("inputs, message", [
    ([np.ones((2, 3), np.float64), 1.0], r"input 'T0'.*Float.*Double"),
    ([np.ones((2, 4), np.float32), 1.0], r"T0"),
    ([np.ones((3,), np.float32), 1.0], r"T0"),
    ([np.ones((2, 3), np.float32)], r"expects 2 inputs \(T0, S1\), got 1"),
    ([np.ones((2, 3), np.float32), 1.0, 2.0], r"expects 2 inputs"),
    ([np.ones((2, 3), np.float32), "fast"], r"input 'S1'.*Python number"),
    ([[1.0, 2.0], 1.0], r"input 'T0' is a tensor.*list"),
    ([np.ones((2, 3), np.complex64), 1.0], r"input 'T0' is DataType.Float; the array is "
                                           r"DataType.ComplexFloat"),
    ([np.ones((2, 3), np.uint64), 1.0], r"NumPy dtype uint64 is not supported"),
])
def test_bad_inputs_at_execute(inputs, message):
    fd = scale_in_place()
    with pytest.raises(widefuse.Error, match=message):
        fd.execute(inputs)


# float32 arrays cross through the buffer protocol (checked in C++), bfloat16 ones through
# __array_interface__ (checked in Python): both paths must refuse the same inputs.
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16])
def test_read_only_array_for_an_aliased_input_is_refused_and_untouched(dtype):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 3], dtype=dtype)
        fd.add_output(fd.ops.set(x * 2), alias_input=x)
    x = np.ones((2, 3), dtype.numpy)
    x.flags.writeable = False
    with pytest.raises(widefuse.Error, match=r"'T0' is updated in place.*read-only"):
        fd.execute([x])
    np.testing.assert_array_equal(x.astype(np.float32), np.ones((2, 3)))
    with pytest.raises(widefuse.Error, match=r"'T0'.*strides.*stride_order"):
        fd.execute([np.ones((3, 2), dtype.numpy).T])
    with pytest.raises(widefuse.Error, match=r"negative strides"):
        fd.execute([np.ones((2, 3), dtype.numpy)[::-1]])
    with pytest.raises(widefuse.Error, match=r"'T0' is DataType\.\w+; the array is"):
        fd.execute([np.ones((2, 3), np.float16)])


def test_wrongly_strided_arrays_are_refused():
    fd = scale_in_place()
    transposed = np.ones((3, 2), np.float32).T
    with pytest.raises(widefuse.Error, match=r"'T0'.*strides.*stride_order"):
        fd.execute([transposed, 2.0])
    with pytest.raises(widefuse.Error, match=r"negative strides"):
        fd.execute([np.ones((2, 3), np.float32)[::-1], 2.0])


def test_a_bad_later_input_leaves_earlier_aliased_inputs_unwritten():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1])
        b = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.set(a + b), alias_input=a)
    a = np.zeros(8, np.float32)
    with pytest.raises(widefuse.Error, match="T1"):
        fd.execute([a, np.ones(8, np.float64)])
    with pytest.raises(widefuse.Error, match=r"8.*9|9.*8"):  # a + b needs equal extents
        fd.execute([a, np.ones(9, np.float32)])
    assert not a.any()


def test_definition_errors():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1])
        with pytest.raises(widefuse.Error, match="contiguity"):
            fd.define_tensor(shape=[2, 2], contiguity=[True])
        with pytest.raises(widefuse.Error, match="stride_order"):
            fd.define_tensor(shape=[2, 2], stride_order=[0, 0])
        with pytest.raises(widefuse.Error, match="not a data type"):
            fd.define_tensor(shape=[2], dtype="float128x")
        with pytest.raises(widefuse.Error, match="takes 2 arguments, got 1"):
            fd.ops.add(t)
        with pytest.raises(widefuse.Error, match="no op 'matmul'"):
            fd.ops.matmul(t, t)
        with pytest.raises(widefuse.Error, match="bitwise_and"):
            fd.ops.bitwise_and(t, t)  # not for floating point
        with pytest.raises(widefuse.Error, match=r"Python numbers, got list"):
            fd.ops.add(t, [1, 2])
        fd.add_output(t + 1)
    with pytest.raises(widefuse.Error, match="finished"):
        fd.ops.add(t, 1)
    other = FusionDefinition()
    with pytest.raises(widefuse.Error, match="another FusionDefinition"):
        other.ops.add(t, 1)
    with pytest.raises(NotImplementedError, match="definition\\(\\) should be implemented"):
        other.execute([])  # nothing defined: nvFuser's answer
    other.define_tensor(shape=[-1])
    with pytest.raises(widefuse.Error, match="execute\\(\\) needs a finished definition"):
        other.execute([])
    with pytest.raises(widefuse.Error, match="unknown backend 'gpu'"):
        fd.execute([np.ones(2, np.float32)], backend="gpu")
    with pytest.raises(widefuse.Error, match="mode"):
        fd.execute([np.ones(2, np.float32)], mode="fastest")


class FakeCudaArray:
    """A CUDA array interface (version 3) over no memory at all, on device `ordinal`."""

    def __init__(self, typestr="<f4", ordinal=0, strides=None):
        self.__cuda_array_interface__ = {"shape": (2, 3), "typestr": typestr,
                                         "data": (0x1000, False), "version": 3,
                                         "strides": strides, "stream": 1}
        self.device = type("Device", (), {"id": ordinal})()


def test_cuda_arrays_without_a_device_say_so():
    if widefuse._widefuse.cuda_available():
        pytest.skip("a CUDA device is present")
    fd = scale_in_place()
    with pytest.raises(widefuse.Error, match="CUDA"):
        fd.execute([FakeCudaArray(), 2.0])
    with pytest.raises(widefuse.Error, match="cannot read CUDA arrays"):
        fd.execute([FakeCudaArray(), 2.0], backend="host")


@pytest.mark.parametrize("array, message", [
    (FakeCudaArray(typestr="<x4"), r"input 'T0': array type '<x4' is not supported"),
    (FakeCudaArray(typestr="<u8"), r"input 'T0': NumPy dtype uint64 is not supported"),
    (FakeCudaArray(strides=(12, -4)), r"input 'T0': negative strides \(12, -4\) \(bytes\)"),
    (FakeCudaArray(strides=(12, 6)), r"input 'T0': strides \(12, 6\) \(bytes\) are not "
                                     r"multiples of the element size 4"),
])
def test_cuda_arrays_are_read_before_anything_runs(array, message):
    # Read from the interface alone, on any machine: the refusals come before the backend.
    with pytest.raises(widefuse.Error, match=message):
        scale_in_place().execute([array, 2.0])


def test_objects_with_an_array_interface_are_read_through_numpy():
    class Exported:
        def __init__(self, array):
            self.__array_interface__ = array.__array_interface__
            self.array = array  # the memory's owner

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    scale_in_place().execute([Exported(x), 2.0])
    np.testing.assert_array_equal(x, 2 * np.arange(6).reshape(2, 3))
    with pytest.raises(widefuse.Error, match=r"input 'T0' is DataType.Float; the array is "
                                             r"DataType.Double"):
        scale_in_place().execute([Exported(np.ones((2, 3))), 2.0])


def test_every_refusal_of_the_argument_reader_has_its_words():
    from widefuse import arguments
    assert list(arguments.REFUSALS) == widefuse._widefuse.refusal_codes()


def test_read_only_dlpack_export_for_an_aliased_input_is_refused():
    fd = scale_in_place()
    x = np.ones((2, 3), np.float32)
    x.flags.writeable = False
    with pytest.raises(widefuse.Error, match=r"'T0' is updated in place.*read-only"):
        fd.execute([DlpackOnly(x), 2.0])
    np.testing.assert_array_equal(x, np.ones((2, 3)))


def test_a_copy_destination_sharing_memory_with_another_input_is_refused():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1])
        b = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.set(a + 1), alias_input=a)
        fd.add_output(b * 2)
    x = np.arange(5, dtype=np.float32)
    for written, read in [(x, x), (x[1:], x[:-1]), (x[:-1], x[1:])]:
        with pytest.raises(widefuse.Error, match="shares memory with input 'T0'"):
            fd.execute([written, read])
    np.testing.assert_array_equal(x, np.arange(5))
    (doubled,) = fd.execute([x[:2], x[2:4]])  # disjoint views of one array are fine
    np.testing.assert_array_equal(doubled, [4, 6])


@pytest.mark.parametrize("call, message", [
    (lambda fd: fd.define_tensor(shape=[2.5]), "list of integers"),
    (lambda fd: fd.define_tensor(shape=[2**70]), "does not fit in 64 bits"),
    (lambda fd: fd.define_tensor(shape=[2], dtype=None), "not a data type"),
    (lambda fd: fd.define_scalar(1000, dtype=DataType.Int8), "does not fit in DataType.Int8"),
    (lambda fd: fd.define_scalar(1.5, dtype=DataType.Int), "not an integer"),
    (lambda fd: fd.define_scalar(2, dtype=DataType.Bool), "not a Bool"),
    (lambda fd: fd.ops.add(fd.define_tensor(shape=[2]), other=1), "positional arguments only"),
])
def test_definition_arguments_are_checked(call, message):
    with pytest.raises(widefuse.Error, match=message):
        with FusionDefinition() as fd:
            call(fd)


def test_execute_options_and_scalar_ranges_are_checked():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        n = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(t + n)
    ints = np.arange(3)
    with pytest.raises(widefuse.Error, match="does not fit in 64 bits"):
        fd.execute([ints, 2**63])
    with pytest.raises(widefuse.Error, match="threads must be an integer >= 1 or None"):
        fd.execute([ints, 1], threads=-1)
    with pytest.raises(widefuse.Error, match="host_execution='slow'.*'fast'.*'verify'"):
        fd.execute([ints, 1], host_execution="slow")
    with pytest.raises(ValueError, match=r"execute\(device='tpu'\): name a CUDA device"):
        fd.execute([ints, 1], device="tpu")
    with pytest.raises(ValueError, match="name a CUDA device"):
        fd.execute([ints, 1], device=-1)
    # A device for host arrays on the host backend: where a cuda run of them would go.
    for device in (0, 1, "cuda:1"):
        (result,) = fd.execute([ints, 1], device=device)
        np.testing.assert_array_equal(result, ints + 1)


def test_what_no_kernel_can_run_is_refused_when_the_definition_ends():
    # Outputs of two shapes from one subgraph are two kernels; but a [2, 4] update that reads
    # the [4] tensor the other kernel updates in place would read its new value.
    with pytest.raises(widefuse.Error, match=r"one subgraph writes 'T1' \(copy_ of 'T2'\) of "
                                             r"shape \[4\] and 'T4' of shape \[2, 4\], which "
                                             r"reads 'T1'; .* would not see the entry value"):
        with FusionDefinition() as fd:
            a = fd.define_tensor(shape=[2, 4])
            b = fd.define_tensor(shape=[4])
            fd.add_output(fd.ops.mul(b, 3), alias_input=b)
            fd.add_output(fd.ops.broadcast_in_dim(b, [2, 4], [1]) + a, alias_input=a)


def test_outputs_of_two_shapes_from_one_subgraph_are_two_kernels():
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    b = np.array([0.5, -1.0, 2.0, 4.0], dtype=np.float32)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 4])
        t1 = fd.define_tensor(shape=[4])
        t2 = fd.ops.mul(t1, 3)  # computed by both kernels
        fd.add_output(fd.ops.broadcast_in_dim(t2, [2, 4], [1]) + t0)
        fd.add_output(t2)
    wide, narrow = fd.execute([a, b])
    np.testing.assert_array_equal(wide, a + b * 3)
    np.testing.assert_array_equal(narrow, b * 3)
    assert len(fd.last_kernels()) == 2
    assert "2 components" in fd.segments()


def test_shapes_past_the_addressable_bytes_are_errors():
    with widefuse.FusionDefinition() as fd:
        with pytest.raises(widefuse.Error, match=r"shape \[4611686018427387904, 4\] of f32 "
                                                 r"would take more than 2\^63 bytes"):
            fd.define_tensor(shape=[2**62, 4])
        x = fd.define_tensor(shape=[-1])
        with pytest.raises(widefuse.Error, match=r"more than 2\^63 bytes"):
            fd.ops.broadcast_in_dim(x, shape=[2**32, 2**32], broadcast_dims=[1])
