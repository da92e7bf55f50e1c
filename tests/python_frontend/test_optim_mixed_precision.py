"""widefuse.optim.Adam / AdamW with bf16/f16 parameters: master weights (a float32
``master_param``), TransformerEngine's ``store_param_remainders`` (an int16
``param_remainder``), bf16 state, and what they give against torch:

- master_weights=True: after 100 steps the master equals torch.optim.AdamW on float32
  parameters (assert_close defaults), and the parameter is the master rounded to nearest even.
- store_param_remainders=True: lossless; after 10 steps the master rebuilt from (parameter,
  remainder) equals the master_weights run's bit for bit, starting from zero remainders and
  from nonzero ones; the rule agrees with a NumPy implementation of TE's reconstruct/split
  (written here) for every 16-bit remainder under edge-value parameters.
- neither: bf16/f16 parameters match torch.optim.AdamW on bf16/f16 parameters (CPU,
  foreach=False) after 100 steps under assert_close's defaults for that dtype.
- state_dtype=torch.bfloat16: one step stays within the bound of docs/torch.md.
- bad dtypes, shapes and options: widefuse.Error naming the parameter, nothing written."""

import copy
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402

SHAPES = [(64, 3), (17,), (1,), (0,), (5, 5, 2), (257,)]


# ---- TE's rule in NumPy -----------------------------------------------------------------------

def te_split(master):
    """(bf16 bits, int16 remainder) of float32 masters: the low half is the remainder; the high
    half goes up by one (wrapping) when the low half's top bit is set."""
    bits = np.ascontiguousarray(master, dtype=np.float32).view(np.uint32)
    low = (bits & 0xFFFF).astype(np.uint16)
    high = ((bits >> 16) + (low >> 15)).astype(np.uint32) & 0xFFFF
    return high.astype(np.uint16), low.view(np.int16)


def te_reconstruct(param_bits, remainder):
    """The float32 masters of bf16 bits and int16 remainders: undo the round-up of the high
    half where the remainder is negative, then join the halves."""
    high = param_bits.astype(np.uint32)
    high = np.where(remainder < 0, (high + 0xFFFF) & 0xFFFF, high)
    return ((high << 16) | remainder.view(np.uint16).astype(np.uint32)).view(np.float32)


def bits(tensor):
    """The raw bits of a torch tensor as NumPy (bf16 as uint16)."""
    views = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32,
             torch.int16: torch.int16}
    array = tensor.detach().view(views[tensor.dtype]).numpy()
    return array.view(np.uint16 if array.dtype == np.int16 else np.uint32)


# ---- training on synthetic gradients ----------------------------------------------------------

def make_params(dtype, seed=0, shapes=SHAPES):
    generator = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(s, generator=generator).to(dtype)) for s in shapes]


def two_groups(params, **second):
    return [{"params": params[:3]}, {"params": params[3:], "lr": 5e-3, **second}]


def gradients(steps, shapes=SHAPES, seed=1, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    return [[torch.randn(s, generator=generator) * scale for s in shapes] for _ in range(steps)]


def run(optimizer, params, grads, dtype):
    """Steps with the given float32 grads, rounded to the parameters' dtype."""
    for step in grads:
        for param, grad in zip(params, step):
            param.grad = grad.to(dtype)
        optimizer.step()


CASES = {
    "adamw amsgrad": (widefuse.optim.AdamW, torch.optim.AdamW,
                      dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
    "adam weight decay": (widefuse.optim.Adam, torch.optim.Adam,
                          dict(lr=1e-2, weight_decay=0.05, betas=(0.8, 0.99), eps=1e-6)),
    "adam maximize": (widefuse.optim.Adam, torch.optim.Adam, dict(lr=3e-3, maximize=True)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fp32_master_weights_equal_torch_on_fp32_parameters(case):
    ours_class, theirs_class, options = CASES[case]
    ours_params = make_params(torch.bfloat16)
    theirs_params = [torch.nn.Parameter(p.detach().float()) for p in ours_params]
    ours = ours_class(two_groups(ours_params), master_weights=True, **options)
    theirs = theirs_class(two_groups(theirs_params), foreach=False, **options)
    grads = gradients(100)
    for step in grads:
        for param, grad in zip(ours_params, step):
            param.grad = grad.bfloat16()
        for param, grad in zip(theirs_params, step):
            param.grad = grad.bfloat16().float()  # the same grads, exactly
        ours.step()
        theirs.step()
        assert ours.launches_per_step == 1
    for mine, theirs_param in zip(ours_params, theirs_params):
        state = ours.state[mine]
        assert state["master_param"].dtype == torch.float32
        torch.testing.assert_close(state["master_param"], theirs_param.detach())
        torch.testing.assert_close(state["exp_avg_sq"], theirs.state[theirs_param]["exp_avg_sq"])
        # The parameter is its master rounded to nearest even, bit for bit.
        assert np.array_equal(bits(mine), bits(state["master_param"].bfloat16()))


def remainder_and_master_runs(steps, masters=None):
    """AdamW with remainders and with f32 masters from the same masters (the bf16 parameters
    themselves when `masters` is None: remainders start at zero)."""
    runs = []
    for options in (dict(store_param_remainders=True), dict()):
        params = make_params(torch.bfloat16)
        optimizer = widefuse.optim.AdamW(two_groups(params, weight_decay=0.0), lr=1e-2,
                                         amsgrad=True, master_weights=True, **options)
        if masters is not None:
            for param, master in zip(params, masters):
                high, low = te_split(master)
                with torch.no_grad():
                    param.copy_(torch.from_numpy(high.view(np.int16)).view(torch.bfloat16))
                state = optimizer.init_state(param, amsgrad=True, master_weights=True,
                                             store_param_remainders=bool(options),
                                             state_dtype=None)
                if options:
                    state["param_remainder"] = torch.from_numpy(low.copy())
                else:
                    state["master_param"] = torch.from_numpy(master.copy())
                optimizer.state[param] = state
        run(optimizer, params, gradients(steps), torch.bfloat16)
        runs.append((params, optimizer))
    return runs


@pytest.mark.parametrize("start", ["zero remainders", "random masters"])
def test_remainders_keep_the_fp32_masters_bit_for_bit(start):
    masters = None
    if start == "random masters":
        rng = np.random.default_rng(3)
        masters = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    (ours, remainders), (theirs, fp32) = remainder_and_master_runs(10, masters)
    for mine, their in zip(ours, theirs):
        state, their_state = remainders.state[mine], fp32.state[their]
        assert state["param_remainder"].dtype == torch.int16
        assert "master_param" not in state
        master = their_state["master_param"].numpy()
        rebuilt = te_reconstruct(bits(mine), state["param_remainder"].numpy())
        assert np.array_equal(rebuilt.view(np.uint32), master.view(np.uint32))
        high, low = te_split(master)
        assert np.array_equal(bits(mine), high)
        assert np.array_equal(state["param_remainder"].numpy(), low)
        # Nearest in magnitude, ties away from zero: within half a bf16 step of the master.
        value = mine.detach().float().numpy()
        ulp = np.abs(np.spacing(value.astype(np.float32))) * 2.0**16
        assert (np.abs(value - master) <= ulp / 2).all()
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            assert torch.equal(state[key], their_state[key]), key
    assert remainders.launches_per_step == 1


EDGES = np.array([0x0000, 0x8000, 0x0001, 0x007F, 0x8001, 0x0080, 0x3F80, 0xBF80, 0x7F7F,
                  0xFF7F, 0x7F80, 0xFF80, 0x7F81, 0x7FC0, 0xFFC0, 0x7FFF, 0xFFFF], np.uint16)


@pytest.mark.parametrize("lr", [0.0, 1e-2])
def test_every_remainder_pattern_and_edge_value_follow_te_rule(lr):
    # Each edge-value parameter (±0, subnormals, the smallest normal, ±1, the largest finite,
    # ±inf, NaNs of both signs) with all 2^16 remainders: masters of every kind.
    param_bits = np.repeat(EDGES, 1 << 16)
    remainder = np.tile(np.arange(1 << 16, dtype=np.uint16), len(EDGES)).view(np.int16)
    masters = te_reconstruct(param_bits, remainder)
    grad = torch.from_numpy((0.5 - (np.arange(masters.size) % 7) / 6).astype(np.float32))
    grad = grad * (lr != 0)
    results = []
    for store in (True, False):
        param = torch.nn.Parameter(
            torch.from_numpy(param_bits.view(np.int16).copy()).view(torch.bfloat16))
        optimizer = widefuse.optim.Adam([param], lr=lr, master_weights=True,
                                        store_param_remainders=store)
        state = optimizer.init_state(param, amsgrad=False, master_weights=True,
                                     store_param_remainders=store, state_dtype=None)
        if store:
            state["param_remainder"] = torch.from_numpy(remainder.copy())
        else:
            state["master_param"] = torch.from_numpy(masters.copy())
        optimizer.state[param] = state
        param.grad = grad.bfloat16()
        optimizer.step()
        results.append((param, state))
    (param, state), (_, fp32_state) = results
    # The master run did the arithmetic on the masters TE's rule rebuilds; the remainder run
    # must hold exactly their split, and rebuild to them.
    master = fp32_state["master_param"].numpy()
    high, low = te_split(master)
    assert np.array_equal(bits(param), high)
    assert np.array_equal(state["param_remainder"].numpy(), low)
    assert np.array_equal(te_reconstruct(bits(param), state["param_remainder"].numpy())
                          .view(np.uint32), master.view(np.uint32))
    if lr == 0:  # a zero step keeps every number (not NaN): split(rebuild(p, r)) is (p, r)
        numbers = ~np.isnan(masters)
        assert np.array_equal(bits(param)[numbers], param_bits[numbers])
        assert np.array_equal(state["param_remainder"].numpy()[numbers], remainder[numbers])
    # What the bf16 parameter shows at the edges (documented in docs/torch.md): the largest
    # finite high half rounded up overflows to inf; NaNs with a payload only in the low half
    # show as inf, and those whose high half is 0x7FFF/0xFFFF with a round-up wrap to -0/+0.
    split_high, _ = te_split(te_reconstruct(np.array([0x7F80, 0x8000, 0x0000], np.uint16),
                                            np.array([-1, -32768, -1], np.int16)))
    assert list(split_high) == [0x7F80, 0x8000, 0x0000]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", sorted(CASES))
def test_plain_low_precision_parameters_match_torch(case, dtype):
    ours_class, theirs_class, options = CASES[case]
    options = dict(options)
    if dtype == torch.float16:
        # torch's default eps (1e-8) is below f16's smallest subnormal: a grad below ~8e-3
        # gives a zero denominator and an infinite step, in torch as here.
        options["eps"] = 1e-4
    shapes = SHAPES
    if ours_class is widefuse.optim.Adam and options.get("weight_decay"):
        # torch's CPU add(alpha=) rounds alpha to bf16/f16 in its vector loop but not in its
        # scalar loop over a tensor's last elements; widefuse follows the vector loop, so the
        # L2 term is compared on tensors without such a tail (docs/torch.md).
        shapes = [(64, 4), (128,), (64,), (2, 32), (0,), (1024,)]
    ours_params = make_params(dtype, shapes=shapes)
    theirs_params = [torch.nn.Parameter(p.detach().clone()) for p in ours_params]
    ours = ours_class(two_groups(ours_params), **options)
    theirs = theirs_class(two_groups(theirs_params), foreach=False, **options)
    grads = gradients(100, shapes=shapes)
    run(ours, ours_params, grads, dtype)
    run(theirs, theirs_params, grads, dtype)
    assert ours.launches_per_step == 1
    for mine, their in zip(ours_params, theirs_params):
        assert ours.state[mine]["exp_avg"].dtype == dtype
        torch.testing.assert_close(mine, their)
        for key, value in theirs.state[their].items():
            if key != "step":
                torch.testing.assert_close(ours.state[mine][key], value, msg=key)


def test_bf16_state_stays_within_one_steps_bound():
    # From the same state, one step with bf16 exp_avg/exp_avg_sq rounds m' once (2^-8), v'
    # twice, the denominator four times more (eps included): the step differs from float32
    # state's by less than 2.5% (docs/torch.md).
    u = 2.0**-8
    bound = (1 + u) / (1 - ((1 + u)**5 - 1)) - 1
    assert bound < 0.025
    ours_params, theirs_params = make_params(torch.bfloat16), make_params(torch.bfloat16)
    ours = widefuse.optim.AdamW(ours_params, lr=1e-2, weight_decay=0.0, amsgrad=True,
                                master_weights=True, state_dtype=torch.bfloat16)
    theirs = widefuse.optim.AdamW(theirs_params, lr=1e-2, weight_decay=0.0, amsgrad=True,
                                  master_weights=True)
    worst = 0.0
    for step in gradients(6):
        for mine, their in zip(ours_params, theirs_params):  # the f32 run enters with ours
            for key, value in ours.state[mine].items():  # in place: the step is prepared
                theirs.state[their][key].copy_(value)
        before = [ours.state[p]["master_param"].clone() if ours.state[p] else p.detach().float()
                  for p in ours_params]
        run(ours, ours_params, [step], torch.bfloat16)
        run(theirs, theirs_params, [step], torch.bfloat16)
        for mine, their, start in zip(ours_params, theirs_params, before):
            a, b = ours.state[mine], theirs.state[their]
            assert a["exp_avg"].dtype == torch.bfloat16
            m, m32 = a["exp_avg"].double(), b["exp_avg"].double()
            assert ((m - m32).abs() <= u * m32.abs() + 1e-30).all()
            v, v32 = a["exp_avg_sq"].double(), b["exp_avg_sq"].double()
            assert ((v - v32).abs() <= ((1 + u)**2 - 1) * v32.abs() * (1 + 1e-6)).all()
            w, w32 = a["master_param"].double(), b["master_param"].double()
            f32_step = (w32 - start.double()).abs()
            ulp = torch.from_numpy(np.spacing(b["master_param"].numpy())).double().abs()
            assert ((w - w32).abs() <= (bound + 1e-6) * f32_step + 2 * ulp).all()
            if f32_step.numel():
                worst = max(worst, float(((w - w32).abs() / f32_step.clamp_min(1e-30)).max()))
    assert 0 < worst < bound


def test_state_dict_keeps_masters_and_remainders_and_training_continues_exactly():
    grads = gradients(12)
    for options in (dict(master_weights=True), dict(master_weights=True,
                                                    store_param_remainders=True)):
        params = make_params(torch.bfloat16)
        optimizer = widefuse.optim.AdamW(params, lr=1e-2, **options)
        run(optimizer, params, grads[:6], torch.bfloat16)
        saved = copy.deepcopy(optimizer.state_dict())
        key = "param_remainder" if options.get("store_param_remainders") else "master_param"
        dtype = torch.int16 if key == "param_remainder" else torch.float32
        assert all(state[key].dtype == dtype for state in saved["state"].values())
        assert saved["param_groups"][0]["master_weights"] is True
        copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
        restored = widefuse.optim.AdamW(copies, lr=1e-2, **options)
        restored.load_state_dict(saved)
        for p in copies:
            assert restored.state[p][key].dtype == dtype  # not cast to the parameter's bf16
            assert restored.state[p]["exp_avg"].dtype == torch.float32
        run(optimizer, params, grads[6:], torch.bfloat16)
        run(restored, copies, grads[6:], torch.bfloat16)
        for p, q in zip(params, copies):
            assert torch.equal(p, q)
            assert torch.equal(optimizer.state[p][key], restored.state[q][key])


def test_a_plain_checkpoint_starts_master_weights_from_the_parameters():
    params = make_params(torch.bfloat16)
    plain = torch.optim.AdamW(params, lr=1e-2, foreach=False)
    run(plain, params, gradients(3), torch.bfloat16)
    ours = widefuse.optim.AdamW(params, lr=1e-2, master_weights=True)
    ours.load_state_dict(plain.state_dict())  # torch's groups lack widefuse's options
    assert ours.param_groups[0]["master_weights"] is True  # the constructor's
    assert "master_param" not in ours.state[params[0]]
    run(ours, params, gradients(1, seed=4), torch.bfloat16)
    for p in params:
        assert ours.state[p]["master_param"].dtype == torch.float32
        assert np.array_equal(bits(p), bits(ours.state[p]["master_param"].bfloat16()))


def test_one_launch_for_bf16_params_with_masters_and_f32_params_without():
    weights = make_params(torch.bfloat16)
    norms = make_params(torch.float32, seed=2, shapes=[(16,), (16,)])
    optimizer = widefuse.optim.AdamW(
        [{"params": weights, "master_weights": True, "store_param_remainders": True},
         {"params": norms, "weight_decay": 0.0}], lr=1e-2)
    for _ in range(2):
        for p in weights + norms:
            p.grad = torch.randn_like(p)
        optimizer.step()
    assert optimizer.launches_per_step == 1  # packed: two signature classes, one kernel
    assert "param_remainder" in optimizer.state[weights[0]]
    assert set(optimizer.state[norms[0]]) == {"step", "exp_avg", "exp_avg_sq"}


def test_found_inf_leaves_masters_and_remainders_unchanged():
    for options in (dict(master_weights=True), dict(master_weights=True,
                                                    store_param_remainders=True)):
        params = make_params(torch.bfloat16)
        optimizer = widefuse.optim.AdamW(params, lr=1e-2, **options)
        run(optimizer, params, gradients(2), torch.bfloat16)
        before = ([p.detach().clone() for p in params],
                  [{k: v.clone() for k, v in optimizer.state[p].items()} for p in params])
        optimizer.grad_scale = torch.tensor(4.0)
        optimizer.found_inf = torch.tensor(1.0)
        run(optimizer, params, gradients(1, seed=9), torch.bfloat16)
        for p, value, state in zip(params, *before):
            assert torch.equal(p, value)
            for key, tensor in state.items():
                assert torch.equal(optimizer.state[p][key], tensor), key


# ---- bad input --------------------------------------------------------------------------------

def snapshot(params, optimizer):
    return ([p.detach().clone() for p in params],
            [{k: v.clone() for k, v in optimizer.state[p].items()} for p in params])


def assert_unchanged(params, optimizer, before):
    for p, value, state in zip(params, *before):
        assert torch.equal(p, value)
        assert sorted(optimizer.state[p]) == sorted(state)
        for key, tensor in state.items():
            assert torch.equal(optimizer.state[p][key], tensor), key


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_remainders_need_bf16_parameters(dtype):
    params = make_params(torch.bfloat16)[:2] + make_params(dtype, shapes=[(3,)])
    optimizer = widefuse.optim.AdamW(params, master_weights=True, store_param_remainders=True)
    for p in params:
        p.grad = torch.ones_like(p)
    before = snapshot(params, optimizer)
    with pytest.raises(widefuse.Error, match=rf"parameter 2 of param group 0 \(shape \[3\]\): it "
                                             rf"is {dtype}, but store_param_remainders=True needs "
                                             "bfloat16 parameters"):
        optimizer.step()
    assert_unchanged(params, optimizer, before)
    assert not optimizer.state[params[0]]  # no state made for the others either


def test_master_weights_of_float32_parameters_are_refused():
    params = make_params(torch.float32, shapes=[(4,)])
    optimizer = widefuse.optim.Adam(params, master_weights=True)
    params[0].grad = torch.ones(4)
    with pytest.raises(widefuse.Error, match=r"parameter 0 of param group 0 .*float32 parameter "
                                             "is its own master"):
        optimizer.step()
    assert not optimizer.state[params[0]]


BAD_STATE = {
    "remainder of int32": ("param_remainder", lambda p: torch.zeros(p.shape, dtype=torch.int32),
                           r"parameter 1 of param group 0 \(shape \[17\]\): its "
                           r"param_remainder is torch.int32; .* is torch.int16"),
    "remainder of bf16": ("param_remainder", lambda p: torch.zeros_like(p),
                          r"param_remainder is torch.bfloat16"),
    "remainder of another shape": ("param_remainder",
                                   lambda p: torch.zeros(p.numel() + 1, dtype=torch.int16),
                                   r"state 'param_remainder' of parameter 1 of param group 0 "
                                   r"\(shape \[17\]\) has shape \[18\]"),
    "f16 master": ("master_param", lambda p: p.detach().half(),
                   r"parameter 1 of param group 0 \(shape \[17\]\): its master_param is "
                   r"torch.float16; a master weight must be torch.float32"),
    "int state": ("exp_avg", lambda p: torch.zeros(p.shape, dtype=torch.int32),
                  r"state 'exp_avg' is torch.int32; the optimizer state must have a "
                  "floating-point dtype"),
}


@pytest.mark.parametrize("case", sorted(BAD_STATE))
def test_bad_master_or_remainder_state_is_refused(case):
    key, make, message = BAD_STATE[case]
    remainders = key == "param_remainder"
    params = make_params(torch.bfloat16)
    optimizer = widefuse.optim.AdamW(params, lr=1e-2, master_weights=True,
                                     store_param_remainders=remainders)
    # State set before the first step (a step prepared afterwards checks it).
    for p in params:
        optimizer.state[p] = optimizer.init_state(p, amsgrad=False, master_weights=True,
                                                  store_param_remainders=remainders,
                                                  state_dtype=None)
    optimizer.state[params[1]][key] = make(params[1])
    for p in params:
        p.grad = torch.ones_like(p)
    before = snapshot(params, optimizer)
    with pytest.raises(widefuse.Error, match=message):
        optimizer.step()
    assert_unchanged(params, optimizer, before)


def test_load_state_dict_refuses_an_f16_master():
    params = make_params(torch.bfloat16)
    optimizer = widefuse.optim.AdamW(params, lr=1e-2, master_weights=True)
    run(optimizer, params, gradients(2), torch.bfloat16)
    saved = copy.deepcopy(optimizer.state_dict())
    saved["state"][2]["master_param"] = saved["state"][2]["master_param"].half()
    before = snapshot(params, optimizer)
    with pytest.raises(widefuse.Error, match=r"load_state_dict: parameter 2 of param group 0 "
                                             r".*master_param is torch.float16.*nothing was "
                                             "loaded"):
        optimizer.load_state_dict(saved)
    assert_unchanged(params, optimizer, before)


@pytest.mark.parametrize("arguments, message", [
    (dict(state_dtype=torch.int32), r"state_dtype=torch.int32: the optimizer state must have "
                                    "a floating-point dtype"),
    (dict(state_dtype=torch.float16), r"state_dtype=torch.float16"),
    (dict(store_param_remainders=True), r"store_param_remainders=True .* needs "
                                        "master_weights=True"),
])
def test_refused_options(arguments, message):
    with pytest.raises(widefuse.Error, match=message):
        widefuse.optim.AdamW(make_params(torch.bfloat16), **arguments)
    optimizer = widefuse.optim.AdamW(make_params(torch.bfloat16))
    with pytest.raises(widefuse.Error, match=message):
        optimizer.add_param_group({"params": make_params(torch.bfloat16, seed=3), **arguments})


# ---- the C++ library (widefuse adam) against torch ------------------------------------------

def cli():
    """build/bin/widefuse next to the package under test, or None (an installed package)."""
    from pathlib import Path
    path = Path(widefuse.__file__).resolve().parents[2] / "bin" / "widefuse"
    return path if path.exists() else None


def exported(directory, name, dtype):
    array = np.load(directory / name)
    if dtype == torch.bfloat16:  # bf16 is stored as its uint16 bits
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


@pytest.mark.parametrize("masters", ["none", "fp32"])
def test_the_adam_command_equals_torch(tmp_path, masters):
    # `widefuse adam` (optim::buildAdam on the host backend) keeps the same grads every step:
    # bf16 parameters with master weights none equal torch.optim.AdamW on bf16 parameters,
    # and with fp32 masters torch.optim.AdamW on float32 parameters (assert_close defaults).
    import subprocess
    if cli() is None:
        pytest.skip("no build/bin/widefuse next to the package")
    steps = 30
    result = subprocess.run(
        [str(cli()), "adam", "--model", "tiny", "--optimizer", "adamw", "--weight-decay", "0.01",
         "--param-dtype", "bf16", "--master-weights", masters, "--steps", str(steps),
         "--backend", "host", "--no-verify", "--json", "--export", str(tmp_path)],
        capture_output=True, text=True, env={**os.environ, "WIDEFUSE_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    shapes = [tuple(shape) for shape in widefuse.model_shapes("tiny")]
    dtype = torch.bfloat16 if masters == "none" else torch.float32
    weight = "p" if masters == "none" else "master"
    params = [torch.nn.Parameter(exported(tmp_path, f"initial_{weight}{i}.npy", dtype))
              for i in range(len(shapes))]
    grads = [exported(tmp_path, f"initial_g{i}.npy", torch.bfloat16).to(dtype)
             for i in range(len(shapes))]
    optimizer = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=False)
    for _ in range(steps):
        for param, grad in zip(params, grads):
            param.grad = grad
        optimizer.step()
    for i, param in enumerate(params):
        torch.testing.assert_close(exported(tmp_path, f"final_{weight}{i}.npy", dtype),
                                   param.detach())
        for key, name in (("exp_avg", "m"), ("exp_avg_sq", "v")):
            ours = exported(tmp_path, f"final_{name}{i}.npy", dtype)
            torch.testing.assert_close(ours, optimizer.state[param][key], msg=key)
