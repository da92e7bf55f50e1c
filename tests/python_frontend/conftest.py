"""Shared fixtures of the Python frontend's tests."""

import os

import numpy as np
import pytest

# The torch-facing tests (torch tensors, widefuse.optim, nvFuser parity) are marked `torch`
# and the Thunder tests `thunder`, so that ctest runs each set as a test of its own, side by
# side; they skip without torch (Thunder) unless WIDEFUSE_REQUIRE_TORCH is set (as ctest sets
# it), where a missing torch is a failure.
_TORCH_TEST_PREFIXES = ("test_optim_", "test_torch_", "test_nvfuser_", "test_complex")
_THUNDER_TEST_PREFIXES = ("test_thunder_",)


def pytest_configure(config):
    config.addinivalue_line("markers", "torch: needs torch (and runs in its own ctest test)")
    config.addinivalue_line("markers", "thunder: needs Lightning Thunder (its own ctest test)")
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skips without one)")
    if os.environ.get("WIDEFUSE_REQUIRE_TORCH"):
        import thunder  # noqa: F401  (fails loudly where the test requirements are missing)
        import torch  # noqa: F401


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name.startswith(_TORCH_TEST_PREFIXES):
            item.add_marker(pytest.mark.torch)
        if item.path.name.startswith(_THUNDER_TEST_PREFIXES):
            item.add_marker(pytest.mark.thunder)


@pytest.fixture
def rng():
    """A fixed-seed generator: failures reproduce."""
    return np.random.default_rng(20261129)


class DlpackOnly:
    """An array offering nothing but DLPack, as a CPU torch tensor does (NumPy exports a
    read-only array with DLPack 1.x's read-only flag)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def assert_close(actual, expected, what=""):
    """|a - b| <= 1e-6 + 1e-5 |b| elementwise (the project's tolerance against float64)."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, what
    with np.errstate(invalid="ignore"):
        close = (np.abs(actual - expected) <= 1e-6 + 1e-5 * np.abs(expected)) | (
            actual == expected) | (np.isnan(actual) & np.isnan(expected))
    bad = ~close  # written so that a NaN on one side only is a difference
    assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} elements differ; first at "
                           f"{np.argwhere(bad)[0]}: {actual[bad][0]} vs {expected[bad][0]}")


# The function each nvFuser API's printout defines, and how the printout begins.
PRINTED_FUNCTIONS = {"direct": "nvfuser_fusion", "legacy": "nvfuser_fusion_id0"}
PRINTOUT_STARTS = {"direct": "def nvfuser_fusion(fd : FusionDefinition) -> None :\n",
                   "legacy": "\ndef nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n"}


def rebuilt_from_repr(fd, name="fusion", api="direct"):
    """Runs fd's printout for `api` (repr(fd) for the direct API) as nvFuser's tests run a
    printed definition: the printout defines a function, which is then called on a new
    FusionDefinition (named `name`: the printout, like nvFuser's, carries no fusion name)."""
    from widefuse import DataType, FusionDefinition

    printed = fd.printout(api=api)
    if api == "direct":
        assert printed == repr(fd)
    assert printed.startswith(PRINTOUT_STARTS[api])
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(printed, namespace)
    with FusionDefinition(name) as rebuilt:
        namespace[PRINTED_FUNCTIONS[api]](rebuilt)
    return rebuilt


def fma32(a, b, c):
    """a * b + c rounded once to float32 (float32 operands): the product is exact in float64,
    the sum rounded to odd in float64 (its error by TwoSum), which rounds to float32 as the
    exact value would."""
    a, b, c = (np.asarray(x, np.float32).astype(np.float64) for x in (a, b, c))
    product = a * b
    total = product + c
    virtual = total - product
    error = (product - (total - virtual)) + (c - virtual)
    even = (total.view(np.int64) & 1) == 0
    toward = np.where(error > 0, np.inf, -np.inf)
    total = np.where((error != 0) & even & np.isfinite(total), np.nextafter(total, toward),
                     total)
    return total.astype(np.float32)


@pytest.fixture
def pinned_maps(monkeypatch):
    """torchao's 8-bit maps are ours (they differ by an ulp or two on CPUs whose vectorised
    linspace fuses its multiply-add; which code a value gets then differs at the edges)."""
    import torchao.optim
    import widefuse

    module = torchao.optim.subclass_8bit
    for name, codebook in (("get_qmap_signed", "dynamic8_signed"),
                           ("get_qmap_unsigned", "dynamic8_unsigned")):
        values = widefuse._widefuse.codebook_values(codebook)
        monkeypatch.setattr(module, name, lambda values=values: list(values))
