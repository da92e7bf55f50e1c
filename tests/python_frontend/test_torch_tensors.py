"""torch tensors in FusionDefinition.execute(), prepare() and traced functions: read and written
in place (no copies), plain outputs back as torch tensors of the right dtype, clear errors for
tensors widefuse cannot run on, and widefuse importing and running without torch."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import widefuse  # noqa: E402
from widefuse import DataType, FusionDefinition  # noqa: E402


def axpy_definition(dtype=DataType.Float):
    """y <- y + a * x in place, and a plain output x * a in `dtype`."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=dtype)
        y = fd.define_tensor(shape=[-1, -1], dtype=dtype)
        a = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(y + a * x, alias_input=y)
        fd.add_output(fd.ops.cast(x * a, dtype))
    return fd


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_in_place_update_and_outputs_match_torch(dtype):
    data_type = {torch.float32: DataType.Float, torch.float64: DataType.Double,
                 torch.bfloat16: DataType.BFloat16, torch.float16: DataType.Half}[dtype]
    torch.manual_seed(0)
    x = torch.randn(37, 19, dtype=dtype)
    y = torch.randn(37, 19, dtype=dtype)
    expected_y = (y.double() + 0.5 * x.double()).to(dtype)
    expected_out = (x.double() * 0.5).to(dtype)
    address = y.data_ptr()
    (out,) = axpy_definition(data_type).execute([x, y, 0.5])
    assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.device == x.device
    assert y.data_ptr() == address  # updated where it is
    torch.testing.assert_close(y, expected_y)
    torch.testing.assert_close(out, expected_out)


def test_strided_views_and_bool_outputs():
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    view = base[:, 2:7]  # not contiguous
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[False, True], dtype=DataType.Float)
        fd.add_output(t > 20.0)
        fd.add_output(t * 2.0, alias_input=t)
    (mask,) = fd.execute([view])
    assert mask.dtype == torch.bool
    expected = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    torch.testing.assert_close(mask, expected[:, 2:7] > 20)
    expected[:, 2:7] *= 2
    torch.testing.assert_close(base, expected)  # the columns outside the view untouched


def test_traced_functions_and_prepare_take_torch_tensors():
    @widefuse.trace
    def step(p, g, lr):
        p.sub_(g, alpha=lr)
        return p * 2

    p, g = torch.ones(1000), torch.full((1000,), 0.25)
    doubled = step(p, g, 0.5)
    assert isinstance(doubled, torch.Tensor)
    torch.testing.assert_close(p, torch.full((1000,), 0.875))
    torch.testing.assert_close(doubled, torch.full((1000,), 1.75))
    again = step.prepare(p, g, 0.5)
    again()
    torch.testing.assert_close(p, torch.full((1000,), 0.75))


def test_numpy_stays_numpy():
    x, y = np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)
    (out,) = axpy_definition().execute([x, y, 2.0])
    assert isinstance(out, np.ndarray)


def bad_tensors():
    grad_needed = torch.ones(2, 3, requires_grad=True)
    return {
        "requires grad": (grad_needed, "requires grad"),
        "sparse": (torch.ones(2, 3).to_sparse(), "sparse_coo"),
        "conjugate view": (torch.ones(2, 3, dtype=torch.complex64).conj(), "conjugate bit"),
        "quantized": (torch.quantize_per_tensor(torch.ones(2, 3), 0.1, 0, torch.quint8),
                      "quantized"),
        "meta": (torch.ones(2, 3, device="meta"), "meta tensor"),
        "unsupported dtype": (torch.ones(2, 3, dtype=torch.uint64), "torch.uint64"),
    }


@pytest.mark.parametrize("case", sorted(bad_tensors()))
def test_bad_tensors_are_clear_errors_and_nothing_is_written(case):
    bad, message = bad_tensors()[case]
    x, y = torch.ones(2, 3), torch.ones(2, 3)
    for arguments, name in (([bad, y, 1.0], "T0"), ([x, bad, 1.0], "T1")):
        with pytest.raises(widefuse.Error, match=f"input '{name}'.*{message}"):
            axpy_definition().execute(arguments)
        torch.testing.assert_close(y, torch.ones(2, 3))  # y is written only after all checks


def test_a_tensor_that_requires_grad_runs_under_no_grad():
    x, y = torch.ones(3, 2), torch.ones(3, 2, requires_grad=True)
    with torch.no_grad():
        axpy_definition().execute([x, y, 1.0])
    torch.testing.assert_close(y.detach(), torch.full((3, 2), 2.0))


def test_widefuse_imports_and_runs_without_torch():
    script = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # `import torch` now raises ImportError
        import numpy as np
        import widefuse
        from widefuse import FusionDefinition, DataType
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1], dtype=DataType.Float)
            fd.add_output(t * 2.0, alias_input=t)
        x = np.ones(5, np.float32)
        fd.execute([x])
        assert (x == 2).all()
        try:
            import widefuse.optim
        except ImportError as error:
            assert "widefuse.optim needs torch" in str(error), error
        else:
            raise AssertionError("widefuse.optim imported without torch")
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_tensors_on_two_devices_are_refused():
    # No second device here: a subclass (read through its attributes, as Python code reads
    # it) reports CUDA device 0 for memory on the CPU; the check is the same.
    class Elsewhere(torch.Tensor):
        @property
        def device(self):
            return torch.device("cuda", 0)

    class OnTheSecondGpu(torch.Tensor):
        @property
        def device(self):
            return torch.device("cuda", 1)

    x, y = torch.ones(2, 3), torch.ones(2, 3)
    with pytest.raises(widefuse.Error, match="input 'T1' is on cuda:0 but input 'T0' is on cpu"):
        axpy_definition().execute([x, y.as_subclass(Elsewhere), 1.0])
    # Two GPUs: each device is run on, but not two in one call.
    with pytest.raises(widefuse.Error, match="input 'T1' is on cuda:1 but input 'T0' is on "
                                             "cuda:0"):
        axpy_definition().execute([x.as_subclass(Elsewhere), y.as_subclass(OnTheSecondGpu), 1.0])
    torch.testing.assert_close(y, torch.ones(2, 3))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_run_on_the_gpu_and_a_cpu_tensor_among_them_is_refused():
    x, y = torch.ones(4, 5, device="cuda"), torch.ones(4, 5, device="cuda")
    (out,) = axpy_definition().execute([x, y, 0.5])
    assert out.device.type == "cuda" and out.dtype == torch.float32
    torch.testing.assert_close(y, torch.full((4, 5), 1.5, device="cuda"))
    torch.testing.assert_close(out, torch.full((4, 5), 0.5, device="cuda"))
    with pytest.raises(widefuse.Error, match="input 'T1' is on cpu but input 'T0' is on cuda:0"):
        axpy_definition().execute([x, torch.ones(4, 5), 0.5])


def test_the_argument_reader_reads_each_kind_of_argument_once():
    # execute() hands its inputs to one C++ reader: what it accepts runs as it was read (and
    # is what the steady state reads back); what it refuses it names with a code.
    from widefuse._widefuse import _Arguments, _Refusal, read_arguments
    from widefuse.data_type import numpy_short_names, torch_short_names
    fusion = axpy_definition()._finished("execute()").fusion
    x, y = torch.ones(2, 3), torch.ones(2, 3)

    def read(*values):
        return read_arguments(fusion, list(values), torch_short_names(), numpy_short_names())

    accepted = {
        "torch CPU tensors": (x, y, 1.0),
        "NumPy arrays and an int": (np.ones((2, 3), np.float32), y, 1),
        "a subclass": (x.as_subclass(type("Sub", (torch.Tensor,), {})), y, 1.0),
        "a NumPy scalar": (x, y, np.float64(1.0)),
        "a 0-d tensor for a scalar": (x, y, torch.tensor(1.0)),
    }
    for why, values in accepted.items():
        assert type(read(*values)) is _Arguments, why
    assert read(x, y, 1.0).torch_device == "cpu" and not read(x, y, 1.0).on_device
    assert read(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), 1).torch_device is None
    refused = {
        "another dtype": ((x.double(), y, 1.0), "dtype_mismatch", 0),
        "transposed": ((torch.ones(3, 2).t(), y, 1.0), "layout", 0),
        "a lazy conjugate": ((torch.ones(2, 3, dtype=torch.complex64).conj(), y, 1.0),
                             "torch_conjugated", 0),
        "grad required under grad mode": ((x, torch.ones(2, 3, requires_grad=True), 1.0),
                                          "requires_grad", 1),
        "a string": ((x, y, "1"), "not_a_number", 2),
        "a list": (([[1.0] * 3] * 2, y, 1.0), "not_an_array", 0),
        "an integer past 64 bits": ((x, y, 2**70), "integer_overflow", 2),
    }
    for why, (values, code, index) in refused.items():
        refusal = read(*values)
        assert type(refusal) is _Refusal, why
        assert (refusal.code, refusal.index, refusal.name) == (
            code, index, ["T0", "T1", "S2"][index]), why
    with torch.no_grad():
        assert type(read(x, torch.ones(2, 3, requires_grad=True), 1.0)) is _Arguments
    # The Python table says it in words.
    with pytest.raises(widefuse.Error, match="input 'T0' is DataType.Float; the array is "
                                             "DataType.Double"):
        axpy_definition().execute([x.double(), y, 1.0])
