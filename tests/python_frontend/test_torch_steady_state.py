"""execute()'s steady state: a call with the objects of the last accepted one, or with new
tensors laid out as before, is compared and rebound in C++ without the Python-side checks.
Each test mutates what the steady state compares (a pointer, strides, sizes, dtype, device,
grad mode, a number, writability, overlap) between two calls and checks that the change is
either rebound (the values are those torch computes on the new memory) or refused with the
checked path's message, and never run on stale bindings."""

import gc
import weakref

import numpy as np
import pytest
import torch

import widefuse
from widefuse import DataType, Error, FusionDefinition


def _sgd(shape=(-1,), plain_output=False):
    """p <- p - lr * g in place (p, g f32 of `shape`'s rank, lr a runtime double); with
    `plain_output`, also returns g * 2."""
    contiguity = [True] * len(shape)
    with FusionDefinition() as fd:
        p = fd.define_tensor(shape=list(shape), contiguity=contiguity, dtype=DataType.Float)
        g = fd.define_tensor(shape=list(shape), contiguity=contiguity, dtype=DataType.Float)
        lr = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.sub(p, fd.ops.mul(g, lr)), alias_input=p)
        if plain_output:
            fd.add_output(fd.ops.mul(g, 2.0))
    return fd


def _steady_runs(fd):
    return fd._running("execute()").last_executor.steady_runs


def _expected(p, g, lr):
    """torch's own p - lr * g, in float32 as the fusion computes it (lr rounded to float32
    where widefuse's mul rounds it: the double scalar times a float tensor is a float)."""
    return p - torch.tensor(lr, dtype=torch.float64).to(torch.float32) * g


@pytest.fixture
def tensors():
    generator = torch.Generator().manual_seed(7)
    return (torch.randn(33, generator=generator), torch.randn(33, generator=generator))


def test_the_same_tensors_run_in_the_steady_state(tensors):
    fd = _sgd()
    p, g = tensors
    expected = p.clone()
    for step in range(4):
        fd.execute([p, g, 0.1])
        expected = _expected(expected, g, 0.1)
        torch.testing.assert_close(p, expected, rtol=0, atol=0)
    assert _steady_runs(fd) == 3  # every call after the first


def test_a_new_grad_tensor_is_rebound(tensors):
    fd = _sgd()
    p, g = tensors
    fd.execute([p, g, 0.1])
    before = _steady_runs(fd)
    old_g = g.clone()
    new_g = torch.full((33,), 3.0)
    expected = _expected(p.clone(), new_g, 0.1)
    fd.execute([p, new_g, 0.1])
    assert _steady_runs(fd) == before + 1
    torch.testing.assert_close(p, expected, rtol=0, atol=0)
    torch.testing.assert_close(g, old_g)  # the old grad is neither read nor written


def test_new_memory_under_the_same_parameter_object_is_rebound(tensors):
    fd = _sgd()
    p, g = tensors
    fd.execute([p, g, 0.1])
    old_memory = p.data
    old_values = old_memory.clone()
    p.data = torch.linspace(-1, 1, 33)  # the same object, another pointer
    expected = _expected(p.clone(), g, 0.1)
    fd.execute([p, g, 0.1])
    torch.testing.assert_close(p, expected, rtol=0, atol=0)
    torch.testing.assert_close(old_memory, old_values, rtol=0, atol=0)  # not written


def test_a_changed_number_is_set_and_another_kind_of_number_is_converted(tensors):
    fd = _sgd()
    p, g = tensors
    fd.execute([p, g, 0.1])
    expected = p.clone()
    for lr in (0.25, -0.0, 2):  # a new float, the float -0.0, an int for the double scalar
        fd.execute([p, g, lr])
        expected = _expected(expected, g, float(lr))
        torch.testing.assert_close(p, expected, rtol=0, atol=0)


def test_strides_changed_in_place_are_noticed():
    fd = _sgd(shape=(-1, -1))
    p, g = torch.randn(4, 4), torch.randn(4, 4)
    fd.execute([p, g, 0.1])
    g.t_()  # the same object and pointer, strides (1, 4): no longer the declared row-major
    p_before = p.clone()
    with pytest.raises(Error, match=r"input 'T1': the array's strides \(1, 4\)"):
        fd.execute([p, g, 0.1])
    torch.testing.assert_close(p, p_before, rtol=0, atol=0)  # nothing was written


def test_sizes_changed_in_place_are_noticed(tensors):
    fd = _sgd()
    p, g = tensors
    fd.execute([p, g, 0.1])
    g.resize_(17)  # the same pointer and strides, fewer elements
    p_before = p.clone()
    with pytest.raises(Error, match=r"'T0' has shape \[33\] but 'T3' has shape \[17\]"):
        fd.execute([p, g, 0.1])
    torch.testing.assert_close(p, p_before, rtol=0, atol=0)
    p.resize_(17)  # both at the new extent: a run of 17 elements, not of the 33 bound before
    expected = _expected(p.clone(), g, 0.1)
    fd.execute([p, g, 0.1])
    torch.testing.assert_close(p, expected, rtol=0, atol=0)


def test_requires_grad_set_between_calls_is_refused_under_grad_mode(tensors):
    fd = _sgd()
    p, g = tensors
    fd.execute([p, g, 0.1])
    g.requires_grad_()
    with pytest.raises(Error, match="input 'T1' requires grad"):
        fd.execute([p, g, 0.1])
    with torch.no_grad():  # as in an optimizer step: read in place
        expected = _expected(p.clone(), g, 0.1)
        fd.execute([p, g, 0.1])
        torch.testing.assert_close(p, expected, rtol=0, atol=0)


def _retyped(p, g):
    g.data = g.data.view(torch.int32)  # the same object, pointer, sizes and strides
    return g


def _negated(p, g):
    negated = torch.complex(torch.randn(33), torch.randn(33)).conj().imag
    assert negated.is_neg()  # the neg bit set
    return negated.as_strided((33,), (1,))


# What the second call's grad is, made from the first call's p and g, and the Error it gets.
REFUSALS = {
    "another dtype": (_retyped, "input 'T1' is DataType.Float; the array is DataType.Int"),
    "a new tensor on another device": (lambda p, g: torch.empty(33, device="meta"),
                                       "input 'T1' is a meta tensor"),
    "a lazily negated view": (_negated, "lazily negated"),
    "memory of the parameter": (lambda p, g: p[:].view(33), "shares memory with input 'T0'"),
}


@pytest.mark.parametrize("mutation", REFUSALS)
def test_a_grad_the_steady_state_cannot_rebind_is_refused_before_any_write(tensors, mutation):
    make, message = REFUSALS[mutation]
    fd = _sgd()
    p, g = tensors
    fd.execute([p, g, 0.1])
    p_before = p.clone()
    new_g = make(p, g)
    with pytest.raises(Error, match=message):
        fd.execute([p, new_g, 0.1])
    torch.testing.assert_close(p, p_before, rtol=0, atol=0)


def test_plain_outputs_come_back_fresh_from_the_steady_state(tensors):
    fd = _sgd(plain_output=True)
    p, g = tensors
    first = fd.execute([p, g, 0.1])[0]
    second = fd.execute([p, g, 0.1])[0]
    assert _steady_runs(fd) == 1
    assert second.data_ptr() != first.data_ptr()
    torch.testing.assert_close(second, g * 2, rtol=0, atol=0)


def test_the_steady_state_keeps_no_input_alive(tensors):
    fd = _sgd()
    p, _ = tensors
    g = torch.randn(33)
    fd.execute([p, g, 0.1])
    fd.execute([p, g, 0.1])
    gone = weakref.ref(g)
    del g
    gc.collect()
    assert gone() is None  # a grad dropped by zero_grad(set_to_none=True) is freed


def test_numpy_arrays_rebind_and_notice_reshapes_and_read_only_flags():
    fd = _sgd(shape=(-1, -1))
    p = np.arange(12, dtype=np.float32).reshape(3, 4)
    g = np.ones((3, 4), dtype=np.float32)
    fd.execute([p, g, 0.5])
    new_g = np.full((3, 4), 2.0, dtype=np.float32)
    expected = p - np.float32(0.5) * new_g
    fd.execute([p, new_g, 0.5])
    np.testing.assert_array_equal(p, expected)
    assert _steady_runs(fd) == 1
    g.shape = (4, 3)  # reshaped in place: the same object and memory, other sizes
    with pytest.raises(Error, match=r"'T0' has shape \[3, 4\] but 'T3' has shape \[4, 3\]"):
        fd.execute([p, g, 0.5])
    p.flags.writeable = False
    with pytest.raises(Error, match="input 'T0' is updated in place .* read-only"):
        fd.execute([p, new_g, 0.5])


def _sgd_step(params, grads, lr):
    for p, g in zip(params, grads):
        widefuse.copy_(p - lr * g, p)


def test_a_traced_call_runs_in_the_steady_state_and_rekeys_on_another_layout():
    traced = widefuse.trace(_sgd_step)
    params = [torch.randn(5), torch.randn(2, 3)]
    grads = [torch.randn(5), torch.randn(2, 3)]
    expected = [p - 0.5 * g for p, g in zip(params, grads)]
    traced(params, grads, 0.5)
    new_grads = [torch.ones(5), torch.ones(2, 3)]  # new tensors, laid out as before
    expected = [p - 0.5 * g for p, g in zip(expected, new_grads)]
    traced(params, new_grads, 0.5)
    for p, e in zip(params, expected):
        torch.testing.assert_close(p, e)
    assert traced.last_definition._running("execute()").last_executor.steady_runs == 1
    # Another layout (a transposed grad) and another dtype: recorded anew, right values.
    wide = [torch.randn(5, dtype=torch.float64), torch.randn(3, 2).t()]
    params64 = [torch.randn(5, dtype=torch.float64), torch.randn(2, 3)]
    expected = [p - 0.5 * g for p, g in zip(params64, wide)]
    traced(params64, wide, 0.5)
    for p, e in zip(params64, expected):
        torch.testing.assert_close(p, e)
    assert traced.cache_size == 2


def test_a_traced_call_notices_the_same_tensor_passed_twice():
    traced = widefuse.trace(lambda a, b: a + b)
    x, y = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(traced(x, y), x + y)
    torch.testing.assert_close(traced(x, x), x + x)  # one input now: another structure
    torch.testing.assert_close(traced(y, x), y + x)


def test_a_traced_call_keys_constants_by_bits_and_dicts_by_their_keys():
    traced = widefuse.trace(lambda xs, scale: {name: x * scale for name, x in xs.items()})
    x = torch.tensor([1.0, -2.0])
    positive = traced({"a": x}, 0.0)["a"]
    negative = traced({"a": x}, -0.0)["a"]  # the same structure but for the constant's bits
    assert torch.signbit(positive).tolist() == [False, True]
    assert torch.signbit(negative).tolist() == [True, False]
    renamed = traced({"b": x}, 2.0)  # another key: another structure
    assert list(renamed) == ["b"]
    torch.testing.assert_close(renamed["b"], x * 2)
    with pytest.raises(Error, match="traced functions take arrays, numbers"):
        traced({"a": x}, {1.0})  # an unhashable constant (a set): refused by the leaf key


def test_a_conjugate_bit_set_on_the_same_complex_memory_is_refused():
    with FusionDefinition() as fd:
        p = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.ComplexFloat)
        q = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.ComplexFloat)
        fd.add_output(fd.ops.add(p, q), alias_input=p)
    p = torch.complex(torch.randn(8), torch.randn(8))
    q = torch.complex(torch.randn(8), torch.randn(8))
    expected = p + q
    fd.execute([p, q])
    torch.testing.assert_close(p, expected)
    p.data = p.data.conj()  # the same object, address, sizes, strides and dtype; the bit set
    assert p.is_conj()
    with pytest.raises(Error, match="lazily conjugated"):
        fd.execute([p, q])


def test_a_written_torch_tensor_is_marked_written_for_autograd():
    """A copy_ destination's version counter is bumped, as torch's in-place ops bump it, on
    the checked path, in the steady state and through prepare(): a backward that saved the
    tensor before the write is refused instead of computing with the new values."""
    fd = _sgd()
    p = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    g = torch.ones(3)
    for run in range(3):  # the checked path, then the steady state
        loss = (p * p).sum()
        before = p._version
        with torch.no_grad():
            fd.execute([p, g, 0.1])
        assert p._version > before, run
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
    with torch.no_grad():
        prepared = fd.prepare([p, g, 0.1])
    before = p._version
    prepared()
    assert p._version > before
    x = torch.ones(3)  # a tensor that is only read keeps its version
    before = x._version
    fd.execute([p.detach(), x, 0.1])
    assert x._version == before
