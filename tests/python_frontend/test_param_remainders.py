"""TransformerEngine's / Apex's `store_param_remainders` (shared/seeds: TE PR #1408), traced:
the FP32 master weight is kept as the BF16 model parameter plus the low 16 bits of the FP32
value (an int16 "remainder"), reconstructed and split again inside the fused step with
bitcasts (`view`), shifts and masks."""

import ml_dtypes
import numpy as np

import widefuse


def sgd_with_param_remainders(params, remainders, grads, lr):
    """One SGD step per parameter; master = bits(param) << 16 | remainder, as Apex does it
    (the BF16 parameter is the master rounded half up, so a negative remainder means the high
    half was incremented)."""
    for param, remainder, grad in zip(params, remainders, grads):
        high = param.view(widefuse.int16).to(widefuse.int32)
        low = remainder.to(widefuse.int32)
        high = widefuse.where(low < 0, high - 1, high)
        master = ((high << 16) | (low & 0xFFFF)).view(widefuse.float32)
        master = master - lr * grad
        bits = master.view(widefuse.int32)
        new_low = (bits & 0xFFFF).to(widefuse.int16)
        new_high = widefuse.where(new_low < 0, (bits >> 16) + 1, bits >> 16)
        widefuse.copy_(new_high.to(widefuse.int16).view(widefuse.bfloat16), param)
        widefuse.copy_(new_low, remainder)


def split(master):
    """NumPy: the BF16 parameter (master rounded half up) and the int16 remainder."""
    bits = master.view(np.int32)
    low = (bits & 0xFFFF).astype(np.int16)
    high = np.where(low < 0, (bits >> 16) + 1, bits >> 16).astype(np.int16)
    return high.view(ml_dtypes.bfloat16), low


def test_the_master_weight_survives_the_split_exactly(rng):
    shapes = [(1000,), (33, 7), (1,)]
    masters = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    params, remainders = map(list, zip(*(split(m) for m in masters)))
    step = widefuse.trace(sgd_with_param_remainders)
    lr = 0.01
    for _ in range(3):
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        step(params, remainders, grads, lr)
        # An independent FP32 master, updated directly: the encoding must be lossless.
        masters = [m - np.float32(lr) * g for m, g in zip(masters, grads)]
    for param, remainder, master in zip(params, remainders, masters):
        expected_param, expected_remainder = split(master)
        np.testing.assert_array_equal(remainder, expected_remainder)
        np.testing.assert_array_equal(param.view(np.int16), expected_param.view(np.int16))
        # The BF16 parameter is the master rounded to BF16 (ties aside, half up = RNE).
        close = np.abs(param.astype(np.float32) - master) <= np.abs(master) * 2.0**-8
        assert close.all()
    assert sum(k["launches"] for k in step.last_definition.last_kernels()) == 1


def test_view_needs_the_same_width():
    def widen(x):
        return x.view(widefuse.float32)

    import pytest

    with pytest.raises(widefuse.Error, match="only same-width views"):
        widefuse.trace(widen)(np.zeros(4, ml_dtypes.bfloat16))
