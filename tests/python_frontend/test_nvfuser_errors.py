"""The exception classes nvFuser's tests expect, where they are part of the contract: each
widefuse error is a widefuse.Error (a RuntimeError) with widefuse's message, and also a
TypeError, ValueError or IndexError where Python's conventions say so."""

import numpy as np
import pytest
import torch

import widefuse
from widefuse import DataType, FusionDefinition


def check(error_class, match, action):
    """`action` raises `error_class`, which is also a widefuse.Error, with `match`."""
    with pytest.raises(error_class, match=match) as raised:
        action()
    assert isinstance(raised.value, widefuse.Error)
    assert isinstance(raised.value, RuntimeError)


def test_wrong_argument_types_are_type_errors():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        check(TypeError, r"add: arguments must be values of this definition or Python "
                         r"numbers, got str", lambda: fd.ops.add(t0, "one"))
        check(TypeError, r"fd.ops.add takes 2 arguments, got 1", lambda: fd.ops.add(t0))
        check(TypeError, r"'quux' is not a data type", lambda: fd.ops.cast(t0, "quux"))
        check(TypeError, r"shape \['a'\] must be a list of integers",
              lambda: fd.define_tensor(shape=["a"]))
        check(TypeError, r"contiguity \['yes'\] must hold True, False or None",
              lambda: fd.define_tensor(shape=[-1], contiguity=["yes"]))
        check(TypeError, r"from_pytorch takes a torch.Tensor, got ndarray",
              lambda: fd.from_pytorch(np.zeros(2)))
        check(TypeError, r"must hold ints and extent Scalars, got 2.5",
              lambda: fd.ops.broadcast_in_dim(t0, [2.5, -1], [1]))
        check(TypeError, r"an output must be a value of this definition",
              lambda: fd.add_output(3))
        fd.add_output(fd.ops.neg(t0))
    check(TypeError, r"input 'T0' is a tensor: expected", lambda: fd.execute([1.0]))
    check(TypeError, r"execute\(\) takes a list of inputs", lambda: fd.execute(torch.ones(2)))


def test_values_a_call_cannot_take_are_value_errors():
    with FusionDefinition() as fd:
        check(ValueError, r"stride_order \[0, 0\] is not a permutation",
              lambda: fd.define_tensor(shape=[-1, -1], stride_order=[0, 0]))
        check(ValueError, r"contiguity \[True\] has 1 entries for the rank-2 shape",
              lambda: fd.define_tensor(shape=[-1, -1], contiguity=[True]))
        check(ValueError, r"1000 does not fit in DataType.Int8",
              lambda: fd.define_scalar(1000, dtype=DataType.Int8))
        check(ValueError, r"extent -2 in shape \[-2\] is out of range",
              lambda: fd.define_tensor(shape=[-2]))
        t0 = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.neg(t0))
    check(ValueError, r"expects 1 inputs \(T0\), got 2",
          lambda: fd.execute([torch.ones(2), torch.ones(2)]))
    check(ValueError, r"unknown backend 'tpu'", lambda: fd.execute([torch.ones(2)], backend="tpu"))


def test_a_dimension_outside_the_rank_is_an_index_error():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        check(IndexError, r"T0.size\(-3\): dim must be an int in \[-2, 2\)", lambda: t0.size(-3))
        check(IndexError, r"T0.size\(2\)", lambda: fd.ops.size(t0, 2))
        fd.add_output(fd.ops.mul(t0, t0.size(-1)))


def test_fusion_errors_stay_runtime_errors_and_definition_is_not_implemented():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3])
        t1 = fd.define_tensor(shape=[2, 4])
        with pytest.raises(RuntimeError, match="do not broadcast") as raised:
            fd.ops.add(t0, t1)
        assert not isinstance(raised.value, (TypeError, ValueError, IndexError))
        fd.add_output(t0 + 1.0)
    with pytest.raises(NotImplementedError, match="definition"):
        FusionDefinition().definition()
    # widefuse.Error still catches each kind.
    for action in (lambda: FusionDefinition().define_tensor(shape=["x"]),
                   lambda: FusionDefinition().define_tensor(shape=[-2])):
        with pytest.raises(widefuse.Error):
            action()
    assert issubclass(widefuse.ArgumentTypeError, TypeError)
    assert issubclass(widefuse.ArgumentValueError, ValueError)
    assert issubclass(widefuse.DimensionIndexError, IndexError)


def test_messages_begin_with_the_phrases_nvfusers_tests_match():
    # Tools written for nvFuser match these phrases (pytest.raises(match=...)); widefuse's own
    # explanation follows them.
    def where_on_a_float_condition():
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1])
            fd.ops.where(t0, t0, t0)

    check(RuntimeError, r"Condition should be of DataType Bool", where_on_a_float_condition)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        check(RuntimeError, r"Length of contiguity argument \(3\) must match that of shape "
                            r"argument \(2\)",
              lambda: fd.define_tensor(shape=[-1, -1], contiguity=[True, True, True]))
        check(RuntimeError, r"Invalid broadcast, number of false entries in is_broadcast_dim "
                            r"expected to be 2",
              lambda: fd.ops.broadcast(t0, [True, False]))
        check(RuntimeError, r"The broadcast dimensions should match the input dimensions\.",
              lambda: fd.ops.broadcast_in_dim(t0, [2, 2, 3], [0]))
        fd.add_output(fd.ops.neg(t0))


def test_broadcast_in_dim_checks_the_output_rank_first_then_each_dim():
    # nvFuser's order: a shape shorter than the operand's rank is reported before a
    # broadcast_dims of the wrong length; then each broadcast dim is checked against the rank.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        check(RuntimeError, r"broadcast_in_dim\(T0: f32\[\?, \?\]\) to \[2\] with dims \[0\]: "
                            r"The new shape is expected to be greater-then-or-equal to the "
                            r"input\. The output rank 1 is smaller than the operand's rank 2$",
              lambda: fd.ops.broadcast_in_dim(t0, [2], [0]))
        check(RuntimeError, r"to \[\?\] with dims \[0\]: The new shape is expected to be "
                            r"greater-then-or-equal to the input\.",
              lambda: fd.ops.broadcast_in_dim(t0, t0.shape()[:1], [0]))
        check(RuntimeError, r"to \[2, 2\] with dims \[0, 2\]: Invalid broadcast_dims value\. "
                            r"Broadcast dim 2 is outside the output rank 2$",
              lambda: fd.ops.broadcast_in_dim(t0, [2, 2], [0, 2]))
        fd.add_output(fd.ops.broadcast_in_dim(t0, [2, -1, -1], [1, 2]))


def test_extents_nvfusers_binding_cannot_convert_are_type_errors_in_its_words():
    # nvFuser's binding refuses an extent past 64 bits or a float as pybind does, a TypeError
    # starting "define_tensor(): incompatible function arguments"; widefuse says which entry.
    with FusionDefinition() as fd:
        check(widefuse.ArgumentTypeError,
              r"^define_tensor\(\): incompatible function arguments\. define_tensor: "
              r"9223372036854775808 in shape \[9223372036854775808\] does not fit in 64 bits$",
              lambda: fd.define_tensor(shape=[2**63], contiguity=[True]))
        check(TypeError, r"^define_tensor\(\): incompatible function arguments\. define_tensor: "
                         r"shape \[10\.0\] must be a list of integers",
              lambda: fd.define_tensor(shape=[10.0], contiguity=[True]))
        check(TypeError, r"^define_tensor\(\): incompatible function arguments\. define_tensor: "
                         r"shape 5 must be a list of integers",
              lambda: fd.define_tensor(shape=5))
        check(TypeError, r"^define_vector\(\): incompatible function arguments\. define_vector: "
                         r"9223372036854775808 in \[2, 9223372036854775808\] does not fit",
              lambda: fd.define_vector(values=[2, 2**63]))
        fd.add_output(fd.define_tensor(shape=[2**63 - 1, 0]))


def test_an_extent_below_minus_one_is_neither_symbolic_nor_static():
    # nvFuser: "The value -2 at index 0 was neither symbolic(-1), zero_element(0),
    # broadcast(1), or static(>1)", a RuntimeError (widefuse's is also a ValueError).
    with FusionDefinition() as fd:
        check(widefuse.ArgumentValueError,
              r"^The value -2 at index 0 was neither symbolic\(-1\), zero_element\(0\), "
              r"broadcast\(1\), or static\(>1\)\. define_tensor: extent -2 in shape \[-2\] is "
              r"out of range \(-1 for an extent known at run time, else at least 0\)$",
              lambda: fd.define_tensor(shape=[-2], contiguity=[True]))
        check(ValueError, r"^The value -5 at index 1 was neither symbolic\(-1\)",
              lambda: fd.define_tensor(shape=[3, -5]))
        # define_vector refuses it as it is defined, with the keyword nvFuser's tests use.
        check(ValueError, r"^The value -2 at index 0 was neither symbolic\(-1\), "
                          r"zero_element\(0\), broadcast\(1\), or static\(>1\)\. define_vector: "
                          r"-2 in \[-2\] is no extent",
              lambda: fd.define_vector(values=[-2]))
        check(ValueError, r"^The value -3 at index 2 was neither",
              lambda: fd.define_vector([4, -1, -3], dtype=DataType.Int))
        # -1 stays: in a broadcast_in_dim shape it takes the operand's extent.
        t0 = fd.define_tensor(shape=[-1])
        v = fd.define_vector(values=[3, -1])
        assert list(v) == [3, -1]
        fd.add_output(fd.ops.broadcast_in_dim(t0, v, [1]))
    (out,) = fd.execute([torch.arange(4.0)])
    assert torch.equal(out, torch.arange(4.0).expand(3, 4))


def test_indexes_past_a_rank_or_vector_are_out_of_boundary():
    # nvFuser: "Tried to access out of boundary index 8. total index: 8", a negative index
    # shown wrapped once (-9 of 8 is -1); widefuse's are also IndexErrors.
    x = torch.ones([2] * 8)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        check(IndexError, r"^Tried to access out of boundary index 8\. total index: 8\. "
                          r"T0\.size\(8\): dim must be an int in \[-8, 8\) for this rank-8 "
                          r"tensor$", lambda: fd.ops.size(t0, dim=8))
        check(IndexError, r"^Tried to access out of boundary index -1\. total index: 8\. "
                          r"T0\.size\(-9\)", lambda: fd.ops.size(t0, dim=-9))
        check(widefuse.DimensionIndexError, r"^Tried to access out of boundary index 8\.",
              lambda: t0.size(8))
        shape = t0.shape()
        assert isinstance(shape, widefuse.Vector) and len(shape) == 8 and shape.name is None
        check(IndexError, r"^Tried to access out of boundary index 8\. total index: 8\. "
                          r"fd\.ops\.at: index 8 is outside the vector of 8 entries$",
              lambda: fd.ops.at(shape, index=8))
        check(IndexError, r"^Tried to access out of boundary index -1\. total index: 8\. "
                          r"fd\.ops\.at: index -9 is outside",
              lambda: fd.ops.at(shape, index=-9))
        check(TypeError, r"fd\.ops\.at: index must be an int, got 1\.5",
              lambda: fd.ops.at(shape, index=1.5))
        # In range, t.shape() entries are the extents read at run time.
        fd.add_output(fd.ops.mul(t0, fd.ops.at(shape, index=-1)))
    (out,) = fd.execute([x])
    assert torch.equal(out, x * 2)
