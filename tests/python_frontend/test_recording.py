"""The recording hot path (_widefuse.record, value_methods.py): an op on traced values built in
one C++ call gives the fusion, handles and errors the Python path gives, and declines to it
whatever it does not take itself."""

import numpy as np
import pytest

import widefuse
from widefuse import DataType, FusionDefinition, value_methods
from widefuse import fusion_definition as fusion_definition_module
from widefuse.values import Scalar, Tensor


@pytest.fixture
def python_path(monkeypatch):
    """Every op through FusionDefinition.pointwise's Python loop: record always declines."""
    declined = lambda kind, operands: None  # noqa: E731
    monkeypatch.setattr(value_methods, "_record", declined)
    monkeypatch.setattr(fusion_definition_module._widefuse, "record", declined)


def every_operand_kind():
    """A definition mixing tensors, scalars and Python numbers of each kind in operators,
    methods and fd.ops; returns it and its values in order."""
    results = []
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 3], dtype=DataType.Float)
        h = fd.define_tensor(shape=[3], dtype=DataType.Half)
        i = fd.define_tensor(shape=[-1, 3], dtype=DataType.Int32)
        s = fd.define_scalar(None, dtype=DataType.Double)
        n = fd.define_scalar(None, dtype=DataType.Int)
        results += [x * 0.9, 0.9 * x, x + h, h - 1, i * 2, i / 2, i + True, 2 ** x]
        results += [s * 2, n + 1, -s, abs(n), s < 1.5, x >= s, ~(i > n), i & 6, i << 1]
        results += [x.sqrt(), h.maximum(x), x.exp(), fd.ops.where(i > 0, x, 0.5)]
        results += [fd.ops.lerp(x, h, 0.25), fd.ops.add(s, n), fd.ops.fma(x, 2.0, h)]
        results += [x * np.float32(0.5), x + np.int64(3), x * -0.0, x * (1 << 62)]
        for value in results:
            if isinstance(value, Tensor):
                fd.add_output(value)
    return fd, results


def facts(fd, results):
    return fd.to_text(), [(type(v), v.dtype, v.name, v.depends) for v in results]


def test_the_hot_path_records_what_the_python_path_records(monkeypatch):
    hot = facts(*every_operand_kind())
    declined = lambda kind, operands: None  # noqa: E731
    monkeypatch.setattr(value_methods, "_record", declined)
    monkeypatch.setattr(fusion_definition_module._widefuse, "record", declined)
    assert facts(*every_operand_kind()) == hot


def test_results_are_values_as_the_builder_makes_them():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4], dtype=DataType.Float)
        s = fd.define_scalar(None, dtype=DataType.Double)
        y, t = x * 2.0, s + 1
        fd.add_output(y)
    assert type(y) is Tensor and type(t) is Scalar
    assert y.definition is fd and y.input_handle is y.handle and y.depends == frozenset()
    assert isinstance(y, widefuse._widefuse.TracedValue)
    assert y.name == "T2" and y.dtype is DataType.Float and t.dtype is DataType.Double
    out = fd.execute([np.arange(4, dtype=np.float32), 0.5])[0]
    np.testing.assert_array_equal(out, np.arange(4, dtype=np.float32) * 2)


@pytest.mark.parametrize("path", ["hot", "python"])
def test_declined_operands_keep_their_errors(path, request):
    if path == "python":
        request.getfixturevalue("python_path")
    other = FusionDefinition()
    with other:
        foreign = other.define_tensor(shape=[4])
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4], dtype=DataType.Float)
        with pytest.raises(widefuse.Error, match="another FusionDefinition"):
            x + foreign
        with pytest.raises(widefuse.Error, match="does not fit in 64 bits"):
            x * 2 ** 70
        with pytest.raises(widefuse.Error, match="Python numbers, got str"):
            fd.ops.add(x, "1")
        with pytest.raises(TypeError):
            x * "1"
        fd.add_output(x + 1)
    with pytest.raises(widefuse.Error, match="completed definition"):
        x + 1
    assert fd.to_text() == FusionDefinition.from_text(fd.to_text()).to_text()


def test_a_traced_scalar_with_dependencies_takes_the_python_path():
    # A value computed from a scalar a tracer may specialize carries that dependency on.
    def step(x, lr):
        return x * (lr * 2)

    traced = widefuse.trace(step, backend="reference")
    out = traced(np.ones(3, np.float32), 0.25)
    np.testing.assert_array_equal(out, np.full(3, 0.5, np.float32))
    assert traced(np.ones(3, np.float32), 0.5)[0] == 1.0
