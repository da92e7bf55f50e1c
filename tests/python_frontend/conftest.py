"""Shared fixtures of the Python frontend's tests."""

import numpy as np
import pytest


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
