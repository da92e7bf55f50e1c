"""What is missing from the environment gives a widefuse.Error naming it and the fix: no NVRTC
(the CUDA Toolkit absent; the host backend needs none), no host C++ compiler, and a host
compiler that fails on the generated code. Nothing is written to the caller's arrays."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import widefuse
from widefuse import DataType, FusionDefinition


def _scale_in_place(factor):
    """x <- x * factor (a fresh definition: its kernel is compiled on first execute)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(x, factor), alias_input=x)
    return fd


# Run in a child: NVRTC is loaded once per process, and this one may have loaded it already.
_NO_NVRTC_CHILD = textwrap.dedent("""
    import numpy as np
    import widefuse
    from widefuse import DataType, FusionDefinition

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(x, 2.0), alias_input=x)
    a = np.arange(4, dtype=np.float32)
    fd.execute([a], backend="host")
    print("host:", a.tolist())
    try:
        fd.execute([a], backend="none")
        print("none: ran")
    except widefuse.Error as error:
        print("none: widefuse.Error:", error)
    print("after:", a.tolist())
""")


def test_without_nvrtc_the_host_backend_runs_and_compiling_for_cuda_names_what_is_missing(
        tmp_path):
    env = dict(os.environ, WIDEFUSE_NVRTC_LIBRARY="/nonexistent/libnvrtc.so.13",
               WIDEFUSE_CACHE_DIR=str(tmp_path))
    child = subprocess.run([sys.executable, "-c", _NO_NVRTC_CHILD], env=env,
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    lines = child.stdout.splitlines()
    assert lines[0] == "host: [0.0, 2.0, 4.0, 6.0]", child.stdout
    assert lines[1].startswith("none: widefuse.Error: NVRTC not found (tried "
                               "/nonexistent/libnvrtc.so.13: "), child.stdout
    assert "WIDEFUSE_NVRTC_LIBRARY" in lines[1], child.stdout
    assert "the host backend (backend=host, --backend host) needs no NVRTC" in lines[1]
    assert lines[2] == "after: [0.0, 2.0, 4.0, 6.0]", child.stdout


def test_without_a_host_compiler_execute_names_the_variable_and_writes_nothing(monkeypatch):
    monkeypatch.setenv("WIDEFUSE_HOST_CXX", "/nonexistent/bin/c++")
    fd = _scale_in_place(3.0)
    a = np.arange(4, dtype=np.float32)
    with pytest.raises(widefuse.Error) as raised:
        fd.execute([a])
    message = str(raised.value)
    assert ("no host C++ compiler: '/nonexistent/bin/c++' (from WIDEFUSE_HOST_CXX) cannot be "
            "run") in message
    assert "install g++ or clang++" in message
    np.testing.assert_array_equal(a, np.arange(4, dtype=np.float32))


def test_a_host_compiler_failing_on_the_kernel_gives_its_output_and_the_source(
        monkeypatch, tmp_path):
    compiler = tmp_path / "cxx"
    compiler.write_text("#!/bin/sh\n"
                        "if [ \"$1\" = --version ]; then echo 'failing 1.0'; exit 0; fi\n"
                        "echo 'kernel.cpp:7:3: error: simulated failure' >&2; exit 1\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("WIDEFUSE_HOST_CXX", str(compiler))
    fd = _scale_in_place(5.0)
    a = np.arange(4, dtype=np.float32)
    with pytest.raises(widefuse.Error) as raised:
        fd.execute([a])
    message = str(raised.value)
    assert f"host backend: '{compiler}' failed to compile kernel '" in message
    assert "kernel.cpp:7:3: error: simulated failure" in message
    assert "WIDEFUSE_HOST_CXX" in message
    source = message.split("source: ", 1)[1].split("\n", 1)[0]
    assert "_host_fast_block" in open(source).read()
    os.remove(source)
    np.testing.assert_array_equal(a, np.arange(4, dtype=np.float32))
