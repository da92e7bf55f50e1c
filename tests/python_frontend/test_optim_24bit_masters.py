"""24-bit master weights (``master_weights=True, master_weight_bits=24``): a bf16/f16 parameter
and an int8 ``param_correction`` in 127ths of half its ulp, flashoptim's rule:

- against a NumPy implementation of flashoptim's split and rebuild (written here): every bf16
  and f16 bit pattern under every kind of correction passes through a step bit for bit as
  the reference rebuilds and splits it; ten real steps of AdamW and AdamW8bit split the
  updated master as the reference does, on the host, in reversed blocks and emulated;
- against torch: the rebuilt master follows torch.optim.AdamW on float32 parameters far more
  closely than bf16 parameters alone do;
- checkpoints keep the int8 correction; bad options and state are refused by name."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402

# (mantissa bits, exponent bias) of each narrow dtype; the correction's full scale.
FIELDS = {torch.bfloat16: (7, 127), torch.float16: (10, 15)}
STEPS = 127


# ---- flashoptim's rule in NumPy ------------------------------------------------------------

def narrow_bits(tensor):
    return tensor.detach().contiguous().view(torch.int16).numpy().view(np.uint16)


def as_float32(bits, dtype):
    """The float32 values of bf16/f16 bit patterns (exact)."""
    return torch.from_numpy(bits.view(np.int16).copy()).view(dtype).float().numpy()


def half_ulp(bits, dtype):
    """2^(exponent - mantissa - 1) of each pattern, subnormals at the smallest normal exponent."""
    mantissa, bias = FIELDS[dtype]
    field = (bits.astype(np.int32) & 0x7FFF) >> mantissa
    exponent = np.maximum(field, 1) - bias
    return np.ldexp(np.float32(1), exponent - mantissa - 1).astype(np.float32)


def rebuild(bits, correction, dtype):
    """flashoptim's _apply_error_correction: parameter + correction / 127 * half ulp (float32)."""
    factor = correction.astype(np.float32) / np.float32(STEPS)
    return as_float32(bits, dtype) + factor * half_ulp(bits, dtype)


def split(master, dtype):
    """flashoptim's _compute_ecc_bits on the master rounded to nearest even: (bits, int8)."""
    narrow = torch.from_numpy(master.copy()).to(dtype)
    bits = narrow_bits(narrow)
    with np.errstate(invalid="ignore"):
        scaled = np.clip((master - narrow.float().numpy()) / half_ulp(bits, dtype), -1, 1)
        scaled = scaled * np.float32(STEPS)
        rounded = np.copysign(np.floor(np.abs(scaled) + np.float32(0.5)), scaled)
    return bits, np.where(np.isnan(rounded), 0, rounded).astype(np.int8)


def same_bits(ours, theirs, dtype):
    """Equal patterns, any NaN equal to any NaN (payloads are not the rule's business)."""
    nan = np.isnan(as_float32(theirs, dtype))
    return np.array_equal(np.isnan(as_float32(ours, dtype)), nan) and \
        np.array_equal(ours[~nan], theirs[~nan])


# ---- the kernels against the rule ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_every_pattern_and_correction_pass_a_step_as_the_rule_says(dtype):
    """lr = 0: the step rebuilds each master and splits it again, unchanged in between."""
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    corrections = np.array([-128, -127, -100, -64, -1, 0, 1, 63, 99, 127], dtype=np.int8)
    bits = np.repeat(patterns, len(corrections))
    correction = np.tile(corrections, len(patterns))
    param = torch.nn.Parameter(torch.from_numpy(bits.view(np.int16).copy()).view(dtype))
    optimizer = widefuse.optim.AdamW([param], lr=0.0, weight_decay=0.0, master_weights=True,
                                     master_weight_bits=24)
    param.grad = torch.zeros_like(param)
    optimizer.step()  # makes the state: zero corrections
    zero_bits, zero = split(rebuild(bits, np.zeros_like(correction), dtype), dtype)
    assert same_bits(narrow_bits(param), zero_bits, dtype) and not zero.any()
    # Every pattern passes through but -0, which rebuilds as -0 + 0 = +0, and NaNs' payloads.
    nan = np.isnan(as_float32(bits, dtype))
    assert np.count_nonzero((zero_bits != bits) & ~nan) == len(corrections)
    bits = zero_bits
    optimizer.state[param]["param_correction"].copy_(torch.from_numpy(correction))
    optimizer.step()
    expected_bits, expected_correction = split(rebuild(bits, correction, dtype), dtype)
    assert same_bits(narrow_bits(param), expected_bits, dtype)
    assert np.array_equal(optimizer.state[param]["param_correction"].numpy(),
                          expected_correction)


@pytest.mark.parametrize("options", [dict(), dict(block_order="reverse"),
                                     dict(host_execution="verify")],
                         ids=["host", "reversed-blocks", "emulated-device"])
@pytest.mark.parametrize("name", ["AdamW", "AdamW8bit"])
def test_each_step_splits_the_updated_master_as_the_rule_says(name, options):
    """A twin with a float32 master starts each step from the master the reference rebuilds
    and the same moments; the 24-bit run's parameter and correction are the reference's split
    of the twin's updated master."""
    cls = getattr(widefuse.optim, name)
    torch.manual_seed(0)
    start = (torch.randn(64, 256) * 0.1).bfloat16()
    param = torch.nn.Parameter(start.clone())
    twin = torch.nn.Parameter(start.clone())
    ours = cls([param], lr=1e-2, master_weights=True, master_weight_bits=24)
    ours.set_fusion_options(**options)
    theirs = cls([twin], lr=1e-2, master_weights=True)
    for step in range(10):
        grad = (torch.randn(64, 256) * 0.01).bfloat16()
        param.grad, twin.grad = grad, grad.clone()
        if step:
            state = ours.state[param]
            master = rebuild(narrow_bits(param), state["param_correction"].numpy(),
                             torch.bfloat16)
            for key, value in state.items():  # in place: the prepared step holds the tensors
                if key != "param_correction":
                    theirs.state[twin][key].copy_(value)
            theirs.state[twin]["master_param"].copy_(torch.from_numpy(master).reshape(64, 256))
        ours.step()
        theirs.step()
        expected_bits, expected = split(theirs.state[twin]["master_param"].numpy().ravel(),
                                        torch.bfloat16)
        assert np.array_equal(narrow_bits(param).ravel(), expected_bits), step
        assert np.array_equal(ours.state[param]["param_correction"].numpy().ravel(),
                              expected), step
    assert ours.launches_per_step == 1


def test_the_rebuilt_master_follows_float32_adamw():
    """100 steps beside torch.optim.AdamW on float32 parameters from the same (bf16) start:
    the 24-bit master stays far closer to torch's than bf16 parameters updated alone."""
    torch.manual_seed(1)
    start = (torch.randn(4096) * 0.1).bfloat16()
    grads = [torch.randn(4096) * 0.01 for _ in range(100)]
    exact = torch.nn.Parameter(start.float())
    alone = torch.nn.Parameter(start.clone())
    ours = torch.nn.Parameter(start.clone())
    optimizers = [torch.optim.AdamW([exact], lr=1e-4), widefuse.optim.AdamW([alone], lr=1e-4),
                  widefuse.optim.AdamW([ours], lr=1e-4, master_weights=True,
                                       master_weight_bits=24)]
    for grad in grads:
        for param, optimizer in zip((exact, alone, ours), optimizers):
            param.grad = grad.to(param.dtype)
            optimizer.step()
    master = rebuild(narrow_bits(ours), optimizers[2].state[ours]["param_correction"].numpy(),
                     torch.bfloat16)
    error = np.abs(master - exact.detach().numpy())
    error_alone = (alone.detach().float() - exact.detach()).abs().mean().item()
    assert error.mean() < error_alone / 50, (error.mean(), error_alone)
    worst_alone = (alone.detach().float() - exact.detach()).abs().max().item()
    assert error.max() < worst_alone / 20, (error.max(), worst_alone)


# ---- checkpoints and refusals ------------------------------------------------------------

def test_a_checkpoint_keeps_the_int8_correction():
    torch.manual_seed(2)
    param = torch.nn.Parameter(torch.randn(300).bfloat16())
    optimizer = widefuse.optim.AdamW([param], lr=1e-2, master_weights=True,
                                     master_weight_bits=24)
    param.grad = torch.randn(300).bfloat16()
    optimizer.step()
    saved = optimizer.state_dict()
    assert saved["state"][0]["param_correction"].dtype == torch.int8
    restored = widefuse.optim.AdamW([torch.nn.Parameter(param.detach().clone())], lr=1e-2,
                                    master_weights=True, master_weight_bits=24)
    restored.load_state_dict(saved)
    loaded = restored.state_dict()["state"][0]["param_correction"]
    assert loaded.dtype == torch.int8
    assert torch.equal(loaded, saved["state"][0]["param_correction"])
    # The checkpoint's group options come with it (as torch's do); a group changed to a
    # float32 master meets a correction it cannot use: refused, not converted silently.
    other = torch.nn.Parameter(param.detach().clone())
    fp32 = widefuse.optim.AdamW([other], lr=1e-2, master_weights=True)
    fp32.load_state_dict(saved)
    assert fp32.param_groups[0]["master_weight_bits"] == 24
    fp32.param_groups[0]["master_weight_bits"] = None
    other.grad = torch.ones_like(other)
    with pytest.raises(widefuse.Error, match="'param_correction' but the group has float32"):
        fp32.step()


@pytest.mark.parametrize("arguments, message", [
    (dict(master_weights=True, master_weight_bits=16), "master_weight_bits=16"),
    (dict(master_weight_bits=24), "it needs master_weights=True"),
    (dict(master_weights=True, master_weight_bits=24, store_param_remainders=True),
     "choose one"),
])
def test_bad_options_are_refused_by_name(arguments, message):
    with pytest.raises(ValueError, match=message):
        widefuse.optim.AdamW([torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))],
                             **arguments)


def test_float32_parameters_and_stochastic_rounding_are_refused_by_name():
    param = torch.nn.Parameter(torch.zeros(4))
    optimizer = widefuse.optim.AdamW([param], master_weights=True, master_weight_bits=24)
    param.grad = torch.ones(4)
    with pytest.raises(widefuse.Error, match=r"parameter 0 of param group 0 .* "
                                             "master_weight_bits=24 is for bfloat16"):
        optimizer.step()
    assert torch.equal(param, torch.zeros(4)) and not optimizer.state[param]
    with pytest.raises(ValueError, match="master_weight_bits=24 keeps that value"):
        widefuse.optim.AdamW8bit([torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))],
                                 bf16_stochastic_round=True, master_weights=True,
                                 master_weight_bits=24)


def test_bytes_per_parameter():
    """2 (bf16) + 1 (correction) beside 4 for the float32 master: what the option is for."""
    param = torch.nn.Parameter(torch.zeros(1024, dtype=torch.bfloat16))
    optimizer = widefuse.optim.AdamW8bit([param], master_weights=True, master_weight_bits=24)
    param.grad = torch.zeros_like(param)
    optimizer.step()
    state = optimizer.state[param]
    assert set(state) >= {"param_correction"} and "master_param" not in state
    assert state["param_correction"].dtype == torch.int8
    assert state["param_correction"].shape == param.shape
