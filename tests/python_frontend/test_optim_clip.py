"""widefuse.optim's max_grad_norm: the grads clipped by their total norm inside the step, in two
launches (the norm, then the update), against torch.nn.utils.clip_grad_norm_ followed by
torch's own optimizer in the same test, step after step; with torch.amp.GradScaler too; and
error_if_nonfinite, which raises torch's error and changes nothing, on every shipped optimizer."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import widefuse.optim  # noqa: E402

pytestmark = pytest.mark.torch

SHAPES = [(64, 32), (7,), (1,), (3, 5, 2), (257,), (16, 16), (0,), (33, 9)]


def _params(count: int, seed: int, dtype=torch.float32) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(SHAPES[i % len(SHAPES)], generator=generator, dtype=dtype)
            for i in range(count)]


def _set_grads(ours: list, theirs: list, step: int, scale: float) -> None:
    """The same random grads for both: norms above the clip most steps, below it some."""
    generator = torch.Generator().manual_seed(1000 + step)
    for a, b in zip(ours, theirs):
        grad = torch.randn(a.shape, generator=generator, dtype=a.dtype) * scale
        a.grad = grad.clone()
        b.grad = grad.clone()


@pytest.mark.parametrize("norm_type", [2.0, math.inf])
def test_adamw_with_max_grad_norm_equals_clip_grad_norm_then_adamw(norm_type):
    # torch's inf norm refuses an empty grad ("does not have an identity"); widefuse's global
    # max leaves an empty operand out, so the comparison keeps to what torch takes.
    ours = [p.clone() for p in _params(50, 1) if norm_type == 2.0 or p.numel()]
    theirs = [p.clone() for p in ours]
    optimizer = widefuse.optim.AdamW(ours, lr=1e-2, weight_decay=0.1, max_grad_norm=1.0,
                                     norm_type=norm_type)
    reference = torch.optim.AdamW(theirs, lr=1e-2, weight_decay=0.1, foreach=False)
    norms, totals = [], []
    for step in range(100):
        _set_grads(ours, theirs, step, scale=0.002 if step % 10 == 3 else 1.0)
        total = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type=norm_type)
        reference.step()
        optimizer.step()
        torch.testing.assert_close(optimizer.grad_norm, total)
        norms.append(optimizer.grad_norm)
        totals.append(total)
        if step % 10 == 0 or step == 99:
            for a, b in zip(ours, theirs):
                torch.testing.assert_close(a, b)
        assert optimizer.launches_per_step <= 2
    # Each step's norm is its own tensor, as torch's return value: later steps change none.
    torch.testing.assert_close(torch.stack(norms), torch.stack(totals))
    # The grads themselves are left as they were given (the clip is inside the step).
    generator = torch.Generator().manual_seed(1000 + 99)
    torch.testing.assert_close(ours[0].grad, torch.randn(ours[0].shape, generator=generator))


def test_a_norm_below_the_limit_leaves_the_step_unclipped():
    ours = [p.clone() for p in _params(6, 2)]
    theirs = [p.clone() for p in ours]
    optimizer = widefuse.optim.SGD(ours, lr=0.1, momentum=0.9, max_grad_norm=1e6)
    reference = torch.optim.SGD(theirs, lr=0.1, momentum=0.9, foreach=False)
    for step in range(3):
        _set_grads(ours, theirs, step, scale=1.0)
        total = torch.nn.utils.clip_grad_norm_(theirs, 1e6)
        reference.step()
        optimizer.step()
        torch.testing.assert_close(optimizer.grad_norm, total)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_grad_scaler_unscales_clips_and_skips_a_step_with_an_inf_grad():
    ours = [p.clone() for p in _params(10, 3)]
    theirs = [p.clone() for p in ours]
    optimizer = widefuse.optim.Adam(ours, lr=1e-2, max_grad_norm=0.5)
    reference = torch.optim.Adam(theirs, lr=1e-2, foreach=False)
    scaler = torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=2)
    reference_scaler = torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=2)
    for step in range(6):
        # What scaling the loss does before backward: the scalers start tracking their scale.
        scaler.scale(torch.ones(()))
        reference_scaler.scale(torch.ones(()))
        scale = scaler.get_scale()
        _set_grads(ours, theirs, step, scale=scale)
        if step == 3:  # an overflow: both steps are skipped and the scale backs off
            ours[1].grad[0] = math.inf
            theirs[1].grad[0] = math.inf
        reference_scaler.unscale_(reference)
        torch.nn.utils.clip_grad_norm_(theirs, 0.5)
        reference_scaler.step(reference)
        reference_scaler.update()
        scaler.step(optimizer)
        scaler.update()
        assert scaler.get_scale() == reference_scaler.get_scale()
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a, b)


def test_bad_clip_options_raise_torch_style_errors():
    params = _params(2, 4)
    with pytest.raises(ValueError, match="Invalid max_grad_norm"):
        widefuse.optim.Adam(params, max_grad_norm=-1.0)
    with pytest.raises(ValueError, match="Invalid norm_type"):
        widefuse.optim.Adam(params, max_grad_norm=1.0, norm_type=0.0)
    with pytest.raises(TypeError, match="max_grad_norm must be a number"):
        widefuse.optim.Adam(params, max_grad_norm="1")


def test_a_pickled_clipping_optimizer_keeps_clipping():
    import pickle

    ours = [p.clone() for p in _params(3, 5)]
    optimizer = widefuse.optim.Adam(ours, lr=1e-2, max_grad_norm=0.25)
    for p in ours:
        p.grad = torch.ones_like(p)
    optimizer.step()
    copy = pickle.loads(pickle.dumps(optimizer))
    copied = copy.param_groups[0]["params"]
    for p, q in zip(ours, copied):
        p.grad = torch.full_like(p, 3.0)
        q.grad = torch.full_like(q, 3.0)
    optimizer.step()
    copy.step()
    torch.testing.assert_close(copy.grad_norm, optimizer.grad_norm)
    for p, q in zip(ours, copied):
        torch.testing.assert_close(q, p)


def _lamb_reference(params, grads_per_step, lr, betas, eps, weight_decay, max_norm=None):
    """LAMB in float64 NumPy, written from the paper's update (and clip_grad_norm_'s clip)."""
    import numpy as np

    p = [x.double().numpy().copy() for x in params]
    m = [np.zeros_like(x) for x in p]
    v = [np.zeros_like(x) for x in p]
    for t, grads in enumerate(grads_per_step, start=1):
        g = [x.double().numpy() for x in grads]
        if max_norm is not None:
            total = math.sqrt(sum(float((x * x).sum()) for x in g))
            g = [x * min(max_norm / (total + 1e-6), 1.0) for x in g]
        for i in range(len(p)):
            m[i] = betas[0] * m[i] + (1 - betas[0]) * g[i]
            v[i] = betas[1] * v[i] + (1 - betas[1]) * g[i] * g[i]
            m_hat = m[i] / (1 - betas[0]**t)
            v_hat = v[i] / (1 - betas[1]**t)
            u = m_hat / (np.sqrt(v_hat) + eps) + weight_decay * p[i]
            w_norm, u_norm = np.linalg.norm(p[i].ravel()), np.linalg.norm(u.ravel())
            trust = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            p[i] = p[i] - lr * trust * u
    return p


@pytest.mark.parametrize("max_grad_norm", [None, 1.0])
def test_lamb_equals_a_float64_reference_in_two_or_three_passes(max_grad_norm):
    params = [p.clone() for p in _params(12, 6) if p.numel()]
    start = [p.clone() for p in params]
    optimizer = widefuse.optim.LAMB(params, lr=1e-2, weight_decay=0.01,
                                    max_grad_norm=max_grad_norm)
    history = []
    for step in range(20):
        generator = torch.Generator().manual_seed(2000 + step)
        grads = [torch.randn(p.shape, generator=generator) for p in params]
        history.append(grads)
        for p, g in zip(params, grads):
            p.grad = g.clone()
        optimizer.step()
        # per-tensor norms, then the update (and the global norm before them when clipping)
        assert optimizer.launches_per_step == (2 if max_grad_norm is None else 3)
    expected = _lamb_reference(start, history, 1e-2, (0.9, 0.999), 1e-6, 0.01, max_grad_norm)
    for p, e in zip(params, expected):
        torch.testing.assert_close(p.double(), torch.from_numpy(e), rtol=1e-4, atol=1e-5)


# Every shipped optimizer, with its torch twin where torch has one (LAMB has none).
OPTIMIZERS = [
    ("Adam", dict(lr=1e-2)), ("AdamW", dict(lr=1e-2, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)), ("RMSprop", dict(lr=1e-2, momentum=0.5)),
    ("Adagrad", dict(lr=0.1)), ("Lion", dict(lr=1e-3)), ("LAMB", dict(lr=1e-2)),
]


def _state_copy(optimizer) -> dict:
    return {id(p): {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in s.items()}
            for p, s in optimizer.state.items()}


def _assert_same_state(optimizer, saved: dict) -> None:
    assert {id(p) for p in optimizer.state} == set(saved)
    for p, state in optimizer.state.items():
        assert state.keys() == saved[id(p)].keys()
        for key, value in state.items():
            assert torch.equal(value, saved[id(p)][key]), key


@pytest.mark.parametrize("name, options", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
def test_error_if_nonfinite_raises_torchs_error_and_changes_nothing(name, options):
    ours = [p.clone() for p in _params(6, 7) if p.numel()]
    theirs = [p.clone() for p in ours]
    optimizer = getattr(widefuse.optim, name)(ours, max_grad_norm=1.0,
                                              error_if_nonfinite=True, **options)
    reference = getattr(torch.optim, name, None)
    reference = reference and reference(theirs, foreach=False, **options)
    for step in range(4):
        _set_grads(ours, theirs, step, scale=1.0)
        if step in (0, 2):  # before any state exists, and with state: nothing changes
            for grads in (ours, theirs):
                grads[step].grad[0] = math.inf if step else math.nan
            with pytest.raises(RuntimeError) as expected:
                torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)
            before, state = [p.clone() for p in ours], _state_copy(optimizer)
            norm = optimizer.grad_norm
            with pytest.raises(RuntimeError) as raised:
                optimizer.step()
            assert str(raised.value) == str(expected.value)
            for p, b in zip(ours, before):
                assert torch.equal(p, b)
            _assert_same_state(optimizer, state)
            assert optimizer.grad_norm is norm
            continue
        total = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
        optimizer.step()
        torch.testing.assert_close(optimizer.grad_norm, total)
        assert optimizer.launches_per_step == (3 if name == "LAMB" else 2)
        if reference is not None:
            reference.step()
            for a, b in zip(ours, theirs):
                torch.testing.assert_close(a, b)
    if "step" in optimizer.state[ours[0]]:  # the two refused steps counted nothing
        assert float(optimizer.state[ours[0]]["step"]) == 2


def test_error_if_nonfinite_is_a_traced_choice_kept_by_pickle_and_checked():
    import pickle

    params = [p.clone() for p in _params(3, 8)]
    optimizer = widefuse.optim.Adam(params, lr=1e-2, max_grad_norm=1.0,
                                    error_if_nonfinite=True)
    copy = pickle.loads(pickle.dumps(optimizer))
    for p in copy.param_groups[0]["params"]:
        p.grad = torch.full_like(p, math.nan)
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        copy.step()
    # Without it, a NaN norm scales the grads by NaN, as torch's clip would.
    lenient = widefuse.optim.SGD([p.clone() for p in params], lr=0.1, max_grad_norm=1.0)
    for p in lenient.param_groups[0]["params"]:
        p.grad = torch.full_like(p, math.nan)
    lenient.step()
    assert torch.isnan(lenient.grad_norm)
    assert all(torch.isnan(p).all() for p in lenient.param_groups[0]["params"] if p.numel())
    # An optimizer pickled before error_if_nonfinite existed: (max_norm, norm_type).
    state = optimizer.__getstate__()
    state["_clip"] = (1.0, 2.0)
    old = widefuse.optim.Adam.__new__(widefuse.optim.Adam)
    old.__setstate__(state)
    assert old._clip == (1.0, 2.0, False)
    with pytest.raises(TypeError, match="error_if_nonfinite must be a bool"):
        widefuse.optim.Adam(params, max_grad_norm=1.0, error_if_nonfinite="yes")
    with pytest.raises(ValueError, match="error_if_nonfinite=True needs max_grad_norm"):
        widefuse.optim.Adam(params, error_if_nonfinite=True)


def test_a_p_norm_clip_with_sgd_equals_clip_grad_norm_then_sgd():
    # norm_type 1.5: neither 2 nor inf (AdamW's above); the test of error_if_nonfinite above
    # compares every optimizer that torch has with torch's under the 2-norm.
    ours = [p.clone() for p in _params(8, 9) if p.numel()]
    theirs = [p.clone() for p in ours]
    optimizer = widefuse.optim.SGD(ours, lr=0.1, momentum=0.9, max_grad_norm=0.5,
                                   norm_type=1.5)
    reference = torch.optim.SGD(theirs, lr=0.1, momentum=0.9, foreach=False)
    for step in range(25):
        _set_grads(ours, theirs, step, scale=0.01 if step % 5 == 2 else 1.0)
        total = torch.nn.utils.clip_grad_norm_(theirs, 0.5, norm_type=1.5)
        reference.step()
        optimizer.step()
        torch.testing.assert_close(optimizer.grad_norm, total)
        assert optimizer.launches_per_step == 2
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("max_grad_norm", [None, 1.0])
def test_widefuse_grad_scaler_checks_inside_the_step_as_torchs_recipe(max_grad_norm, monkeypatch):
    # widefuse.optim.GradScaler: the inf check is the step's first phase (no torch launch, no
    # host read); over 100 steps of AdamW on 50 parameters, the same scale, skips and
    # parameters as torch's scaler with torch's unscale_, clip_grad_norm_ and AdamW.
    ours = [p.clone() for p in _params(50, 7)]
    theirs = [p.clone() for p in ours]
    optimizer = widefuse.optim.AdamW(ours, lr=1e-2, weight_decay=0.1,
                                     max_grad_norm=max_grad_norm)
    reference = torch.optim.AdamW(theirs, lr=1e-2, weight_decay=0.1, foreach=False)
    scaler = widefuse.optim.GradScaler("cpu", init_scale=256.0, growth_interval=10)
    reference_scaler = torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=10)
    torch_checks = []
    check = torch._amp_foreach_non_finite_check_and_unscale_
    monkeypatch.setattr(torch, "_amp_foreach_non_finite_check_and_unscale_",
                        lambda *args: (torch_checks.append(1), check(*args))[1])
    for step in range(100):
        scaler.scale(torch.ones(()))
        reference_scaler.scale(torch.ones(()))
        _set_grads(ours, theirs, step, scale=scaler.get_scale())
        if step in (3, 6, 57):  # overflows and a NaN: the steps skipped, the scale backs off
            ours[1 + step % 5].grad.view(-1)[0] = theirs[1 + step % 5].grad.view(-1)[0] = \
                math.nan if step == 6 else math.inf
        reference_scaler.unscale_(reference)
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(theirs, max_grad_norm)
        reference_scaler.step(reference)
        reference_scaler.update()
        checks_before = len(torch_checks)
        scaler.step(optimizer)
        assert len(torch_checks) == checks_before, "torch's inf check ran for widefuse's step"
        scaler.update()
        assert optimizer.launches_per_step <= 2
        assert scaler.get_scale() == reference_scaler.get_scale(), step
        if step % 10 == 0 or step in (3, 6, 57, 99):
            for a, b in zip(ours, theirs):
                torch.testing.assert_close(a, b)
    assert len(torch_checks) == 100  # torch's scaler checked every step; ours never
    # torch's recipe with unscale_ first: the scaler then reads torch's flag, as torch's does.
    scaler.scale(torch.ones(()))
    reference_scaler.scale(torch.ones(()))
    _set_grads(ours, theirs, 100, scale=scaler.get_scale())
    for s, o in ((scaler, optimizer), (reference_scaler, reference)):
        s.unscale_(o)
        if o is reference and max_grad_norm is not None:  # ours clips inside its step
            torch.nn.utils.clip_grad_norm_(theirs, max_grad_norm)
        s.step(o)
        s.update()
    assert scaler.get_scale() == reference_scaler.get_scale()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_widefuse_grad_scaler_hands_the_step_a_step_scaling():
    # No attribute is left on the optimizer; a grad_scale the caller set multiplies the
    # scaler's scale and is consumed, as torch's scaler does it.
    ours = [p.clone() for p in _params(3, 11)]
    theirs = [p.clone() for p in ours]
    optimizer = widefuse.optim.SGD(ours, lr=0.5)
    reference = torch.optim.SGD(theirs, lr=0.5, foreach=False)
    scaler = widefuse.optim.GradScaler("cpu", init_scale=8.0)
    scaler.scale(torch.ones(()))
    _set_grads(ours, theirs, 0, scale=1.0)
    for p in ours:
        p.grad *= 16.0  # the scaler's 8 times the caller's 2
    optimizer.grad_scale = torch.tensor(2.0)
    scaler.step(optimizer)
    assert not hasattr(optimizer, "grad_scale") and not hasattr(optimizer, "found_inf")
    reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    # The handshake itself: the step computes the flag it was handed zeroed, and skips.
    before = [p.clone() for p in ours]
    ours[1].grad.view(-1)[0] = math.inf
    found_inf = torch.zeros((1,))
    with optimizer.scaled(widefuse.optim.StepScaling(torch.ones(()), found_inf,
                                                     computes_found_inf=True)):
        optimizer.step()
    assert found_inf.item() == 1.0
    for a, b in zip(ours, before):
        assert torch.equal(a, b)
    with optimizer.scaled(widefuse.optim.StepScaling(torch.ones(()), torch.ones(()))):
        optimizer.step()  # a flag handed set: read, and the step skipped
    for a, b in zip(ours, before):
        assert torch.equal(a, b)
