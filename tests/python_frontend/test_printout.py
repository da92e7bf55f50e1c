"""Printed definitions for both nvFuser Python APIs: nvfuser_direct's (repr(fd), the default)
and the legacy nvfuser module's. Each printout runs against widefuse's FusionDefinition and
rebuilds the same fusion, with results checked against NumPy."""

import numpy as np
import pytest

import widefuse
from conftest import PRINTED_FUNCTIONS, PRINTOUT_STARTS, rebuilt_from_repr
from widefuse import DataType, FusionDefinition

APIS = ["direct", "legacy"]


def _everything(fd):
    """A definition using what a printout has to spell: a runtime and a typed constant
    scalar, a vector input, broadcast_in_dim, a cast, an inline literal, an in-place update
    and a laid-out output."""
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
    s = fd.define_scalar(None, dtype=DataType.Double)
    c = fd.define_scalar(0.75, dtype=DataType.Float)
    v = fd.define_vector(2)
    row = fd.define_tensor(shape=[-1], contiguity=[True])
    wide = fd.ops.broadcast_in_dim(row, shape=v, broadcast_dims=[1])
    y = fd.ops.mul(fd.ops.add(x, wide), s)
    z = fd.ops.cast(fd.ops.add(fd.ops.mul(y, c), 0.5), DataType.Double)
    fd.add_output(z, stride_order=[0, 1])
    fd.add_output(fd.ops.set(y), alias_input=x)
    fd.add_output(y)


def _expected(x, row, s):
    y = (x.astype(np.float64) + row) * s
    return (y * 0.75 + 0.5), y


@pytest.mark.parametrize("api", APIS)
def test_each_printout_rebuilds_the_fusion_and_its_results(api, rng):
    with FusionDefinition() as fd:
        _everything(fd)
    printed = fd.printout(api=api)
    assert printed.startswith(PRINTOUT_STARTS[api])
    rebuilt = rebuilt_from_repr(fd, api=api)
    assert rebuilt.to_text() == fd.to_text()
    assert rebuilt.printout(api=api) == printed
    for definition in (fd, rebuilt):
        x = rng.standard_normal((3, 4)).astype(np.float32)
        row = rng.standard_normal(4).astype(np.float32)
        z_expected, y_expected = _expected(x, row, 2.0)
        z, y = definition.execute([x, 2.0, [3, 4], row])
        np.testing.assert_allclose(z, z_expected, rtol=1e-6)
        np.testing.assert_allclose(y, y_expected, rtol=1e-6)
        assert z.strides == (8, 24)  # stride_order [0, 1]: column-major
        np.testing.assert_allclose(x, y_expected, rtol=1e-6)  # updated in place


def test_the_two_printouts_differ_as_the_apis_do():
    with FusionDefinition() as fd:
        _everything(fd)
    direct, legacy = repr(fd), fd.printout(api="legacy")
    assert fd.printout() == direct and fd.printout(api="direct") == direct
    # The direct printer writes the function alone; the legacy one framed it in blank lines.
    assert not direct.startswith("\n") and direct.endswith(")\n")
    assert legacy.startswith("\n") and legacy.endswith(")\n\n")
    assert "tv0 = fd.define_tensor(" in direct and "T0 = fd.define_tensor(" in legacy
    assert "c0 = fd.define_scalar(None, dtype=DataType.Double)" in direct
    assert "v0 = fd.define_vector(2)\n    c2 = v0[0]\n" in direct
    assert "fd.ops.at" not in direct and "fd.ops.at(V3, index=0)" in legacy
    assert "fd.ops.stride_order(" in direct and "stride_order=[0, 1])\n" in legacy
    assert "add_output(tv" in direct and ", stride_order=" not in direct.split("add_output")[1]
    for api in APIS:
        assert f"def {PRINTED_FUNCTIONS[api]}(fd : FusionDefinition)" in fd.printout(api=api)


def test_an_nvfuser_direct_printout_runs_unchanged():
    # As nvfuser_direct prints a definition (its repro script appends the `with` block).
    printout = (
        "def nvfuser_fusion(fd : FusionDefinition) -> None :\n"
        "    tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], "
        "dtype=DataType.Float, is_cpu=False)\n"
        "    tv1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], "
        "dtype=DataType.Float, is_cpu=False)\n"
        "    tv2 = fd.ops.add(tv0, tv1)\n"
        "    tv3 = fd.ops.mul(tv2, 3.00000)\n"
        "    tv4 = fd.ops.cast(tv3, dtype=DataType.Half)\n"
        "    fd.add_output(tv4)\n"
        "with FusionDefinition() as fd:\n"
        "    nvfuser_fusion(fd)\n")
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(printout, namespace)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = namespace["fd"].execute([a, a])
    np.testing.assert_array_equal(out, ((a + a) * 3.0).astype(np.float16))
    assert repr(namespace["fd"]).startswith(printout.split("\nwith")[0].replace("3.00000", "3.0"))


def test_stride_order_lays_out_an_output_and_keeps_values():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1])
        laid = fd.ops.stride_order(fd.ops.mul(t, 2.0), [0, 1])
        fd.add_output(laid)
        fd.add_output(fd.ops.add(laid, 1.0))  # in ops it is the value itself
    out, plus = fd.execute([a])
    np.testing.assert_array_equal(out, a * 2)
    np.testing.assert_array_equal(plus, a * 2 + 1)
    assert out.strides == (4, 8) and plus.strides == (12, 4)
    with pytest.raises(widefuse.Error):
        with FusionDefinition() as bad:
            bad.ops.stride_order(bad.define_tensor(shape=[-1]), [0, 1])


def test_an_unknown_api_is_refused():
    with FusionDefinition() as fd:
        fd.add_output(fd.define_tensor(shape=[-1]) + 1)
    with pytest.raises(widefuse.Error, match="unknown nvFuser Python API 'new'"):
        fd.printout(api="new")
