"""FusionDefinition: nvFuser-style definitions, execute on NumPy, the Python and text forms."""

import subprocess
import sys
import textwrap

import numpy as np
import ml_dtypes
import pytest

import widefuse
from conftest import DlpackOnly, assert_close, rebuilt_from_repr
from test_seed_adam import reference_step
from widefuse import DataType, FusionDefinition
from widefuse.execution import options_key


def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    """Adam for one parameter, written as nvFuser's Python printer writes a Thunder trace:
    every constant a define_scalar, the 0-d step broadcast explicitly, copy_ as set +
    add_output(alias)."""
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    S5 = fd.define_scalar(None, dtype=DataType.Double)
    S6 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T7 = fd.ops.add(T4, S6)
    S8 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T9 = fd.ops.mul(T2, S8)
    S10 = fd.define_scalar(0.100000, dtype=DataType.Double)
    T11 = fd.ops.mul(T1, S10)
    T12 = fd.ops.add(T9, T11)
    S13 = fd.define_scalar(0.999000, dtype=DataType.Double)
    T14 = fd.ops.mul(T3, S13)
    S15 = fd.define_scalar(0.00100000, dtype=DataType.Double)
    T16 = fd.ops.mul(S15, T1)
    T17 = fd.ops.mul(T16, T1)
    T18 = fd.ops.add(T14, T17)
    T19 = fd.ops.pow(S8, T7)
    S20 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T21 = fd.ops.sub(S20, T19)
    T22 = fd.ops.pow(S13, T7)
    T23 = fd.ops.sub(S20, T22)
    T24 = fd.ops.div(S5, T21)
    T25 = fd.ops.sqrt(T23)
    T26 = fd.ops.sqrt(T18)
    T27 = fd.ops.broadcast_in_dim(T25, shape=[4, 8], broadcast_dims=[])
    T28 = fd.ops.div(T26, T27)
    S29 = fd.define_scalar(1.00000e-08, dtype=DataType.Double)
    T30 = fd.ops.add(T28, S29)
    T31 = fd.ops.neg(T24)
    T32 = fd.ops.broadcast_in_dim(T31, shape=[4, 8], broadcast_dims=[])
    T33 = fd.ops.mul(T32, T12)
    T34 = fd.ops.div(T33, T30)
    T35 = fd.ops.add(T0, T34)
    T36 = fd.ops.set(T7)
    fd.add_output(T36, T4)
    T37 = fd.ops.set(T12)
    fd.add_output(T37, T2)
    T38 = fd.ops.set(T18)
    fd.add_output(T38, T3)
    T39 = fd.ops.set(T35)
    fd.add_output(T39, T0)


def test_nvfuser_printer_style_adam_matches_float64(rng):
    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    param = rng.standard_normal((4, 8)).astype(np.float32)
    exp_avg, exp_avg_sq = np.zeros_like(param), np.zeros_like(param)
    step = np.array(0.0, dtype=np.float32)
    expected = [[param.astype(np.float64)], [np.zeros((4, 8))], [np.zeros((4, 8))]]
    expected_step = [0.0]
    for _ in range(3):
        grad = rng.standard_normal((4, 8)).astype(np.float32)
        outputs = fd.execute([param, grad, exp_avg, exp_avg_sq, step, 0.001])
        assert outputs == []  # aliased outputs are not returned
        reference_step(expected[0], [grad.astype(np.float64)], expected[1], expected[2], [None],
                       expected_step, amsgrad=False, beta1=0.9, beta2=0.999, lr=0.001,
                       weight_decay=0.0, eps=1e-8, maximize=False)
    assert float(step) == 3.0
    assert_close(param, expected[0][0], "param")
    assert_close(exp_avg, expected[1][0], "exp_avg")
    assert_close(exp_avg_sq, expected[2][0], "exp_avg_sq")


def test_repr_is_runnable_python_that_rebuilds_the_same_fusion():
    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    rebuilt = rebuilt_from_repr(fd)
    assert rebuilt.to_text() == fd.to_text()
    assert repr(rebuilt) == repr(fd)
    legacy = fd.printout(api="legacy")
    assert "fd.add_output(T" in legacy and "fd.add_output(T39, T0)" in legacy
    assert rebuilt_from_repr(fd, api="legacy").to_text() == fd.to_text()


def test_error_messages_use_the_names_repr_prints():
    with FusionDefinition() as fd:
        fd.define_scalar(2.0, dtype=DataType.Float)  # a constant takes a number too
        t = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.set(t * 2), alias_input=t)
    # The legacy printout's names are the IR's (the direct one numbers tv<n> and c<n> apart).
    assert "T1 = fd.define_tensor" in fd.printout(api="legacy")
    with pytest.raises(widefuse.Error, match="input 'T1'"):
        fd.execute([np.ones(3, np.float64)])


def test_text_form_round_trip_executes_like_the_original(rng):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        s = fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.exp(x) * s + 1.5)
    parsed = FusionDefinition.from_text(fd.to_text())
    assert parsed.to_text() == fd.to_text()
    data = rng.standard_normal(100).astype(np.float32)
    (a,) = fd.execute([data, 0.25])
    (b,) = parsed.execute([data, 0.25])
    np.testing.assert_array_equal(a, b)


def test_from_text_errors_name_line_and_column():
    with pytest.raises(widefuse.Error, match=r"<text>:2:"):
        FusionDefinition.from_text("fusion f(x: f32[4]) {\n  y = frobnicate(x)\n  return y\n}\n")


def test_python_operators_and_numbers_follow_torch_promotion(rng):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Half)
        fd.add_output(a * 2.5)          # int32 tensor * Python float -> float32
        fd.add_output(b + a)            # half + int32 -> half
        fd.add_output(-a < 3)
        fd.add_output(2 ** b)
    ints = rng.integers(-50, 50, size=64).astype(np.int32)
    halves = rng.standard_normal(64).astype(np.float16)
    scaled, mixed, compared, powered = fd.execute([ints, halves])
    assert scaled.dtype == np.float32 and mixed.dtype == np.float16
    np.testing.assert_array_equal(scaled, ints.astype(np.float32) * np.float32(2.5))
    np.testing.assert_array_equal(mixed, (halves.astype(np.float32) + ints).astype(np.float16))
    np.testing.assert_array_equal(compared, -ints < 3)
    np.testing.assert_allclose(powered.astype(np.float32),
                               np.exp2(halves.astype(np.float32)).astype(np.float16), rtol=2e-3)


def test_bfloat16_arrays_use_ml_dtypes(rng):
    with FusionDefinition() as fd:
        p = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        g = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.set(fd.ops.cast(fd.ops.cast(p, DataType.Float) - 0.5 * g,
                                             DataType.BFloat16)), alias_input=p)
    param = rng.standard_normal(300).astype(ml_dtypes.bfloat16)
    grad = rng.standard_normal(300).astype(np.float32)
    expected = (param.astype(np.float32) - np.float32(0.5) * grad).astype(ml_dtypes.bfloat16)
    fd.execute([param, grad])
    assert param.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(param.view(np.uint16), expected.view(np.uint16))


def test_declared_layouts_accept_matching_strided_arrays(rng):
    base = rng.standard_normal((6, 5)).astype(np.float32)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], stride_order=[0, 1])
        s = fd.define_tensor(shape=[-1, -1], contiguity=[False, True])
        fd.add_output(t * 2)
        fd.add_output(s + 1)
    column_major = np.asfortranarray(base)
    every_other_row = base[::2]
    doubled, shifted = fd.execute([column_major, every_other_row])
    np.testing.assert_array_equal(doubled, base * 2)
    np.testing.assert_array_equal(shifted, every_other_row + 1)


def test_cpu_dlpack_exporters_are_read_in_place(rng):
    data = rng.standard_normal(50).astype(np.float32)
    expected = data * np.float32(3)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.set(t * 3), alias_input=t)
    fd.execute([DlpackOnly(data)])
    np.testing.assert_array_equal(data, expected)


def test_segments_kernels_and_cuda_code(rng):
    with FusionDefinition("two_params") as fd:
        for _ in range(2):
            p = fd.define_tensor(shape=[-1])
            fd.add_output(fd.ops.set(p * 0.5), alias_input=p)
    assert "2 components" in fd.segments("per-component")
    params = [rng.standard_normal(10).astype(np.float32) for _ in range(2)]
    fd.execute(params, mode="per-component")
    assert sum(k["launches"] for k in fd.last_kernels()) == 2
    fd.execute(params, mode="batched")
    assert sum(k["launches"] for k in fd.last_kernels()) == 1
    code = fd.last_cuda_code()
    assert "__global__" in code and "two_params" in code


@pytest.mark.parametrize("backend", ["reference", "host"])
@pytest.mark.parametrize("block_order", ["forward", "reverse", "shuffle:3"])
def test_backends_and_block_orders_agree_bit_for_bit(backend, block_order, rng):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1])
        step = fd.define_tensor(shape=[])
        fd.add_output(fd.ops.set(step + 1), alias_input=step)
        fd.add_output(fd.ops.set(x * fd.ops.sqrt(step + 1)), alias_input=x)
    initial = rng.standard_normal(20000).astype(np.float32)
    x, step = initial.copy(), np.array(3.0, dtype=np.float32)
    fd.execute([x, step], backend=backend, block_order=block_order)
    expected = initial * np.sqrt(np.float32(4.0))  # every block reads the entry step (3)
    np.testing.assert_array_equal(x, expected)
    assert float(step) == 4.0


def test_nvfuser_conventions_runtime_scalar_by_dtype_negative_stride_order_expanded_dims():
    row = np.arange(3, dtype=np.float32)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[4, 3], contiguity=[None, True], stride_order=[-1, -2])
        s = fd.define_scalar(DataType.Float)  # nvFuser's define_scalar(dtype): a runtime input
        fd.add_output(t * s)
    assert "c0 = fd.define_scalar(None, dtype=DataType.Float)" in repr(fd)
    (scaled,) = fd.execute([np.broadcast_to(row, (4, 3)), 2.0])  # stride 0 in dimension 0
    np.testing.assert_array_equal(scaled, np.tile(row * 2, (4, 1)))


@pytest.mark.parametrize("name", ["class", "DataType", "FusionDefinition", "fd"])
def test_repr_runs_whatever_the_fusion_is_called(name):
    with FusionDefinition(name) as fd:
        t = fd.define_tensor(shape=[-1])
        fd.add_output(t + 1)
    assert rebuilt_from_repr(fd, name).to_text() == fd.to_text()


def test_star_import_does_not_shadow_builtins():
    namespace = {}
    exec("from widefuse import *\nresult = (abs(-1), float('1.5'), isinstance(True, bool))",
         namespace)
    assert namespace["result"] == (1, 1.5, True)


def test_prepared_execution_writes_the_outputs_it_was_given(rng):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.set(x * 0.5), alias_input=x)
        fd.add_output(fd.ops.sum(x))
        fd.add_output(x + 1)
    x = rng.standard_normal(300).astype(np.float32)
    initial = x.copy()
    total, plus = np.zeros((), np.float32), np.zeros(300, np.float32)
    run = fd.prepare([x], outputs=[total, plus], backend="host")
    for k in range(3):
        before = x.copy()
        returned = run()
        assert returned[0] is total and returned[1] is plus
        expected = fd.execute([before.copy()], backend="reference")  # writes its copy of x
        np.testing.assert_array_equal(total, expected[0])
        np.testing.assert_array_equal(plus, before + np.float32(1))
    np.testing.assert_array_equal(x, initial * np.float32(0.125))
    with pytest.raises(widefuse.Error, match="2 plain outputs"):
        fd.prepare([x], outputs=[total])
    with pytest.raises(widefuse.Error, match="output 1 is"):
        fd.prepare([x], outputs=[total, plus.astype(np.float64)])
    plus.flags.writeable = False
    with pytest.raises(widefuse.Error, match="output 1: the array given for it is read-only"):
        fd.prepare([x], outputs=[total, plus])
    with pytest.raises(widefuse.Error, match="shape"):  # the C++ side's check
        fd.prepare([x], outputs=[total, np.zeros(299, np.float32)])


def test_prepared_execution_repeats_steps_in_place(rng):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1])
        step = fd.define_tensor(shape=[])
        fd.add_output(fd.ops.set(step + 1), alias_input=step)
        fd.add_output(fd.ops.set(x * 0.5), alias_input=x)
        fd.add_output(x + step)
    x = rng.standard_normal(100).astype(np.float32)
    step = np.array(0.0, np.float32)
    initial = x.copy()
    with pytest.raises(widefuse.Error, match="input 'T0'"):
        fd.prepare([x.astype(np.float64), step])  # prepare checks like execute
    run = fd.prepare([x, step])
    for k in range(3):
        (sum_,) = run()
        np.testing.assert_array_equal(sum_, initial * np.float32(0.5) ** k + np.float32(k))
    np.testing.assert_array_equal(x, initial * np.float32(0.125))
    assert float(step) == 3.0


def test_a_prepared_step_rebinds_sets_and_launches_for_its_caller(rng):
    # What widefuse.optim's PreparedStep drives: a grad rebound to new memory, a number set,
    # the step launched alone, the inputs no longer held.
    with FusionDefinition() as fd:
        param = fd.define_tensor(shape=[-1])
        grad = fd.define_tensor(shape=[-1])
        lr = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.set(param - lr * grad), alias_input=param)
    param = np.ones(64, np.float32)
    grads = [rng.standard_normal(64).astype(np.float32) for _ in range(2)]
    run = fd.prepare([param, grads[0], 0.5], backend="host")
    assert run.launch_raw() == []
    np.testing.assert_array_equal(param, np.float32(1) - np.float32(0.5) * grads[0])
    run.rebind([1], [grads[1].ctypes.data])
    with pytest.raises(TypeError, match="input 'S2' is a DataType.Double scalar: expected a "
                                        "Python number, got str"):
        run.set_scalars([2], ["0.25"])  # read as execute() reads a number
    run.set_scalars([2], [np.float32(0.25)])
    before = param.copy()
    run.launch_raw()
    np.testing.assert_array_equal(param, before - np.float32(0.25) * grads[1])
    with pytest.raises(widefuse.Error):  # checked when set: the parameter's own memory
        run.rebind([1], [param.ctypes.data])
    run.release_inputs()
    with pytest.raises(widefuse.Error, match="released its inputs"):
        run()
    # The runner: the definition's steady state alone, after the `with` block only.
    assert fd.runner.defined.input_names() == ["T0", "T1", "S2"]
    inputs = [param, grads[0], 0.5]
    assert fd.runner.run_steady(inputs, options_key(backend="host")) is None  # nothing ran yet
    fd.execute(inputs, backend="host")
    before = param.copy()
    assert fd.runner.run_steady(inputs, options_key(backend="host")) == []
    np.testing.assert_array_equal(param, before - np.float32(0.5) * grads[0])
    unfinished = FusionDefinition()
    with pytest.raises(widefuse.Error, match="fd.runner needs a finished definition"):
        with unfinished:
            unfinished.define_tensor(shape=[-1])
            unfinished.runner


def test_importing_widefuse_leaves_ml_dtypes_until_a_type_needs_it():
    # ml_dtypes takes half a second to import; NumPy arrays of its types exist only once the
    # program has imported it, and widefuse imports it for its own bf16 and fp8 arrays.
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import widefuse
        assert "ml_dtypes" not in sys.modules
        from widefuse import DataType, FusionDefinition
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1], dtype=DataType.Float)
            fd.add_output(t * 2.0)
        assert (fd.execute([np.ones(3, np.float32)])[0] == 2).all()
        assert "ml_dtypes" not in sys.modules
        assert str(DataType.BFloat16.numpy) == "bfloat16"
        assert widefuse.data_type.data_type_of("float8_e5m2", "test") is DataType.Float8_e5m2
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
