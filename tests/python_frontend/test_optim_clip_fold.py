"""widefuse.optim.clip_grad_norm_ against torch.nn.utils.clip_grad_norm_ in the same test: the
total norm (one widefuse launch), its scaling folded into the next step of the widefuse
optimizer owning the grads (that step's one launch multiplies them) or done in place (a
second launch), the _version rules of a pending fold, and torch's errors for bad input."""

from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")

import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402
from widefuse.optim import clip as clip_module  # noqa: E402

pytestmark = pytest.mark.torch

SHAPES = [(16, 8), (7,), (1,), (3, 5, 2), (33,), (4, 4)]


def _params(seed: int, dtype=torch.float32, shapes=SHAPES) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator).to(dtype) for shape in shapes]


def _pair(seed: int, dtype=torch.float32, shapes=SHAPES) -> tuple[list, list]:
    ours = _params(seed, dtype, shapes)
    return ours, [p.clone() for p in ours]


def _set_grads(step: int, *sets: list, scale: float = 1.0) -> None:
    """The same random grads for every set of parameters."""
    generator = torch.Generator().manual_seed(500 + step)
    for params in zip(*sets):
        grad = (torch.randn(params[0].shape, generator=generator) * scale).to(params[0].dtype)
        for p in params:
            p.grad = grad.clone()


@pytest.mark.parametrize("norm_type", [2.0, math.inf, 1.5])
def test_a_folded_clip_steps_as_torchs_clip_then_adamw(norm_type):
    ours, theirs = _pair(1)
    optimizer = widefuse.optim.AdamW(ours, lr=1e-2, weight_decay=0.1)
    reference = torch.optim.AdamW(theirs, lr=1e-2, weight_decay=0.1, foreach=False)
    for step in range(12):
        _set_grads(step, ours, theirs, scale=0.01 if step % 4 == 1 else 1.0)
        given = [p.grad.clone() for p in ours]
        total = widefuse.optim.clip_grad_norm_(ours, 1.0, norm_type)
        expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
        assert clip_module.last_launches == 1  # the norm; the scaling is the step's
        assert total.dtype == expected.dtype and total.device == expected.device
        assert total.shape == ()
        torch.testing.assert_close(total, expected)
        for p, g in zip(ours, given):  # folded: the grads are scaled inside the step
            assert torch.equal(p.grad, g)
        optimizer.step()
        reference.step()
        assert optimizer.launches_per_step == 1
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a, b)


def test_fold_false_scales_the_grads_in_place_in_a_second_launch():
    ours, theirs = _pair(2)
    optimizer = widefuse.optim.SGD(ours, lr=0.1, momentum=0.9)
    reference = torch.optim.SGD(theirs, lr=0.1, momentum=0.9, foreach=False)
    for step in range(3):
        _set_grads(step, ours, theirs)
        total = widefuse.optim.clip_grad_norm_(ours, 0.5, fold=False)
        assert clip_module.last_launches == 2
        torch.testing.assert_close(total, torch.nn.utils.clip_grad_norm_(theirs, 0.5))
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a.grad, b.grad)
        optimizer.step()
        reference.step()
        assert optimizer.launches_per_step == 1
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_a_torch_optimizers_parameters_and_a_subset_are_clipped_in_place():
    ours, theirs = _pair(3)
    torch_optimizer = torch.optim.SGD(ours, lr=0.1)  # noqa: F841  (owns `ours`: no fold)
    _set_grads(0, ours, theirs)
    total = widefuse.optim.clip_grad_norm_(ours, 0.5)
    torch.testing.assert_close(total, torch.nn.utils.clip_grad_norm_(theirs, 0.5))
    assert clip_module.last_launches == 2
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad)
    # Half of a widefuse optimizer's parameters: not exactly its grads, so in place too.
    ours, theirs = _pair(4)
    optimizer = widefuse.optim.Adam(ours, lr=1e-2)
    reference = torch.optim.Adam(theirs, lr=1e-2, foreach=False)
    _set_grads(1, ours, theirs)
    widefuse.optim.clip_grad_norm_(ours[:3], 0.1)
    torch.nn.utils.clip_grad_norm_(theirs[:3], 0.1)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad)
    optimizer.step()
    reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_a_fold_with_max_grad_norm_clips_twice_as_torch_would():
    ours, theirs = _pair(5)
    optimizer = widefuse.optim.Adam(ours, lr=1e-2, max_grad_norm=0.5)
    reference = torch.optim.Adam(theirs, lr=1e-2, foreach=False)
    for step in range(4):
        _set_grads(step, ours, theirs, scale=3.0)
        widefuse.optim.clip_grad_norm_(ours, 2.0)
        torch.nn.utils.clip_grad_norm_(theirs, 2.0)
        second = torch.nn.utils.clip_grad_norm_(theirs, 0.5)
        optimizer.step()
        reference.step()
        torch.testing.assert_close(optimizer.grad_norm, second)  # the norm of the folded grads
        assert optimizer.launches_per_step == 2
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_a_second_clip_applies_the_pending_one_in_place_first():
    ours, theirs = _pair(6)
    optimizer = widefuse.optim.SGD(ours, lr=0.1)
    reference = torch.optim.SGD(theirs, lr=0.1, foreach=False)
    _set_grads(0, ours, theirs, scale=2.0)
    torch.testing.assert_close(widefuse.optim.clip_grad_norm_(ours, 3.0),
                               torch.nn.utils.clip_grad_norm_(theirs, 3.0))
    torch.testing.assert_close(widefuse.optim.clip_grad_norm_(ours, 1.0),
                               torch.nn.utils.clip_grad_norm_(theirs, 1.0))
    assert clip_module.last_launches == 2  # the first clip's scaling, then the new norm
    optimizer.step()
    reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_a_fold_is_dropped_when_every_grad_is_new_and_refused_when_any_was_written():
    ours, theirs = _pair(7)
    optimizer = widefuse.optim.SGD(ours, lr=0.1, momentum=0.9)
    reference = torch.optim.SGD(theirs, lr=0.1, momentum=0.9, foreach=False)
    # A clip, then zero_grad and a new backward: the fold is stale, the step unclipped.
    _set_grads(0, ours, theirs, scale=5.0)
    widefuse.optim.clip_grad_norm_(ours, 0.1)
    optimizer.zero_grad()
    _set_grads(1, ours, theirs)
    optimizer.step()
    reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    # A clip, a step skipped (as GradScaler skips an overflow), then the optimizer's
    # zero_grad(set_to_none=False) and a backward into the same grads: the fold is dropped.
    _set_grads(2, ours, theirs, scale=5.0)
    widefuse.optim.clip_grad_norm_(ours, 0.1)
    optimizer.zero_grad(set_to_none=False)
    for a, b in zip(ours, theirs):
        a.grad.add_(b.grad)
    optimizer.step()
    reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    # Every grad written in place after the clip (clip_grad_value_, noise): torch's clip would
    # have scaled them before the write, so the step refuses rather than drop the clip.
    _set_grads(2, ours, theirs)
    widefuse.optim.clip_grad_norm_(ours, 0.1)
    for a in ours:
        a.grad.mul_(2.0)
    with pytest.raises(widefuse.Error, match=r"the grad of parameter 0 of param group 0 changed"):
        optimizer.step()
    # A storage swapped under every grad (grad.data = t): refused as well.
    _set_grads(2, ours, theirs)
    widefuse.optim.clip_grad_norm_(ours, 0.1)
    for a in ours:
        a.grad.data = a.grad.clone()
    with pytest.raises(widefuse.Error, match=r"the grad of parameter 0 of param group 0 changed"):
        optimizer.step()
    widefuse.optim.clip_grad_norm_(ours, 0.1, fold=False)  # what the message says to do
    torch.nn.utils.clip_grad_norm_(theirs, 0.1)
    optimizer.step()
    reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    # One grad written after the clip: the step refuses, and changes nothing.
    _set_grads(3, ours, theirs)
    widefuse.optim.clip_grad_norm_(ours, 0.1)
    ours[2].grad.add_(1.0)
    before = [p.clone() for p in ours]
    state = [optimizer.state[p]["momentum_buffer"].clone() for p in ours]
    with pytest.raises(widefuse.Error, match=r"the grad of parameter 2 of param group 0 changed "
                       r"after clip_grad_norm_ folded its scaling into this step; call "
                       r"clip_grad_norm_\(\.\.\., fold=False\)"):
        optimizer.step()
    for p, b, s in zip(ours, before, state):
        assert torch.equal(p, b)
        assert torch.equal(optimizer.state[p]["momentum_buffer"], s)


def test_empty_grads_and_the_inf_norm_of_an_empty_grad_as_torch():
    params = _params(8)
    total = widefuse.optim.clip_grad_norm_(params, 1.0)  # no grads
    expected = torch.nn.utils.clip_grad_norm_([p.clone() for p in params], 1.0)
    assert clip_module.last_launches == 0
    assert torch.equal(total, expected) and total.dtype == expected.dtype
    assert total.device == expected.device
    with warnings.catch_warnings(record=True) as ours_caught:
        warnings.simplefilter("always")
        widefuse.optim.clip_grad_norm_((p for p in []), 1.0)
    with warnings.catch_warnings(record=True) as theirs_caught:
        warnings.simplefilter("always")
        torch.nn.utils.clip_grad_norm_((p for p in []), 1.0)
    assert [str(w.message) for w in ours_caught] == [str(w.message) for w in theirs_caught]
    assert len(ours_caught) == 1
    # A zero-element grad: its inf norm is torch's RuntimeError, and no grad was touched.
    ours, theirs = _pair(9, shapes=[(3,), (0,), (2, 2)])
    _set_grads(0, ours, theirs, scale=10.0)
    for norm_type in (math.inf, -math.inf):
        with pytest.raises(RuntimeError) as expected:
            torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
        with pytest.raises(RuntimeError) as raised:
            widefuse.optim.clip_grad_norm_(ours, 1.0, norm_type)
        assert str(raised.value) == str(expected.value)
    for a, b in zip(ours, theirs):
        assert torch.equal(a.grad, b.grad)
    # The 2-norm takes it (an empty grad adds nothing).
    torch.testing.assert_close(widefuse.optim.clip_grad_norm_(ours, 1.0, fold=False),
                               torch.nn.utils.clip_grad_norm_(theirs, 1.0))
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad)


@pytest.mark.parametrize("arguments", [("x",), (None,), (1.0, "x"), (1.0, None), ([1.0],)])
def test_bad_arguments_raise_torchs_errors_before_anything_is_written(arguments):
    ours, theirs = _pair(10)
    _set_grads(0, ours, theirs, scale=10.0)
    with pytest.raises(Exception) as expected:
        torch.nn.utils.clip_grad_norm_(theirs, *arguments)
    with pytest.raises(type(expected.value)) as raised:
        widefuse.optim.clip_grad_norm_(ours, *arguments)
    assert str(raised.value) == str(expected.value)
    for a, b in zip(ours, theirs):
        assert torch.equal(a.grad, b.grad)


def test_error_if_nonfinite_raises_torchs_error_and_scales_nothing():
    ours, theirs = _pair(11)
    optimizer = widefuse.optim.SGD(ours, lr=0.1)
    reference = torch.optim.SGD(theirs, lr=0.1, foreach=False)
    _set_grads(0, ours, theirs)
    ours[1].grad[0] = math.nan
    theirs[1].grad[0] = math.nan
    given = [p.grad.clone() for p in ours]
    with pytest.raises(RuntimeError) as expected:
        torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as raised:
        widefuse.optim.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    assert str(raised.value) == str(expected.value)
    for p, g in zip(ours, given):
        assert torch.equal(p.grad, g, ) or torch.equal(p.grad.isnan(), g.isnan())
    # Nothing was folded: the step is torch's step of the unclipped grads.
    optimizer.step()
    reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, equal_nan=True)
    # Without error_if_nonfinite the NaN norm scales every grad by NaN, as torch's.
    _set_grads(1, ours, theirs)
    ours[0].grad[0] = math.inf
    theirs[0].grad[0] = math.inf
    total = widefuse.optim.clip_grad_norm_(ours, 1.0, fold=False)
    torch.testing.assert_close(total, torch.nn.utils.clip_grad_norm_(theirs, 1.0))
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad, equal_nan=True)


@pytest.mark.parametrize("dtypes", [(torch.bfloat16,), (torch.float64,),
                                    (torch.float32, torch.bfloat16)])
def test_the_norms_dtype_is_torchs(dtypes):
    ours = [p.to(dtypes[i % len(dtypes)]) for i, p in enumerate(_params(12))]
    theirs = [p.clone() for p in ours]
    _set_grads(0, ours, theirs, scale=2.0)
    total = widefuse.optim.clip_grad_norm_(ours, 1.0, fold=False)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert total.dtype == expected.dtype
    # torch rounds each grad's norm to its dtype before the total; one bf16 rounding apart.
    tolerance = dict(rtol=1e-2, atol=0) if torch.bfloat16 in dtypes else {}
    torch.testing.assert_close(total, expected, **tolerance)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad, **tolerance)


def test_a_loop_with_torchs_own_clip_keeps_working_in_one_launch():
    ours, theirs = _pair(13)
    optimizer = widefuse.optim.AdamW(ours, lr=1e-2)
    reference = torch.optim.AdamW(theirs, lr=1e-2, foreach=False)
    for step in range(3):
        _set_grads(step, ours, theirs)
        torch.nn.utils.clip_grad_norm_(ours, 0.5)
        torch.nn.utils.clip_grad_norm_(theirs, 0.5)
        optimizer.step()
        reference.step()
        assert optimizer.launches_per_step == 1
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_grad_scaler_unscale_then_a_folded_clip_as_torchs_recipe():
    ours, theirs = _pair(14)
    optimizer = widefuse.optim.Adam(ours, lr=1e-2)
    reference = torch.optim.Adam(theirs, lr=1e-2, foreach=False)
    scaler = torch.amp.GradScaler("cpu", init_scale=128.0, growth_interval=2)
    reference_scaler = torch.amp.GradScaler("cpu", init_scale=128.0, growth_interval=2)
    for step in range(5):
        scaler.scale(torch.ones(()))
        reference_scaler.scale(torch.ones(()))
        _set_grads(step, ours, theirs, scale=scaler.get_scale())
        if step == 2:  # an overflow: both steps are skipped and the scale backs off
            ours[0].grad[1] = math.inf
            theirs[0].grad[1] = math.inf
        scaler.unscale_(optimizer)
        reference_scaler.unscale_(reference)
        torch.testing.assert_close(widefuse.optim.clip_grad_norm_(ours, 0.5),
                                   torch.nn.utils.clip_grad_norm_(theirs, 0.5))
        scaler.step(optimizer)
        reference_scaler.step(reference)
        scaler.update()
        reference_scaler.update()
        assert scaler.get_scale() == reference_scaler.get_scale()
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a, b)
