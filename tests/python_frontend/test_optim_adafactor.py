"""widefuse.optim.Adafactor against torch.optim.Adafactor(foreach=False), in the same test:
parameters and state after 100 steps (1-D, 2-D and convolution-shaped parameters, weight
decay, maximize, a given lr and the relative step), state_dicts loaded both ways, torch's
ValueErrors, the launches a step takes, and grad.mT (the column mean squares' input)."""

import copy

import pytest

torch = pytest.importorskip("torch")

import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402

# A 1-D bias, a 2-D weight, a convolution's weight (out, in, kh, kw): factored over kh, kw.
SHAPES = [(5,), (4, 3), (2, 3, 3, 3)]


def make_params(shapes, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(shape, generator=generator)) for shape in shapes]


def set_grads(params, seed, column_major=False):
    """Fresh grad tensors (the prepared step rebinds them, and their mT, by address)."""
    generator = torch.Generator().manual_seed(seed)
    for p in params:
        grad = torch.randn(p.shape, generator=generator)
        if column_major and grad.dim() == 2:
            grad = grad.t().contiguous().t()  # the same values, strides swapped
        p.grad = grad


def step_both(ours_params, ours, theirs_params, theirs, steps, seed=0, column_major=False):
    for s in range(steps):
        set_grads(ours_params, seed + s, column_major)
        set_grads(theirs_params, seed + s)
        ours.step()
        theirs.step()


def assert_same(ours_params, ours, theirs_params, theirs):
    for p, q in zip(ours_params, theirs_params):
        torch.testing.assert_close(p.detach(), q.detach())
    ours_state, theirs_state = ours.state_dict()["state"], theirs.state_dict()["state"]
    assert sorted(ours_state) == sorted(theirs_state)
    for index, state in theirs_state.items():
        assert sorted(ours_state[index]) == sorted(state)
        for key, value in state.items():
            assert ours_state[index][key].shape == value.shape, (index, key)
            assert ours_state[index][key].dtype == value.dtype, (index, key)
            torch.testing.assert_close(ours_state[index][key], value,
                                       msg=lambda m: f"state {index} {key}: {m}")


@pytest.mark.parametrize("options", [
    {},                                                   # rho = lr = 1e-2
    {"lr": torch.tensor(0.5), "beta2_decay": -0.5},       # rho = 1 / sqrt(t) from t = 5 on
], ids=["defaults", "relative-step"])
def test_100_steps_equal_torch(options):
    ours_params, theirs_params = make_params(SHAPES), make_params(SHAPES)
    ours = widefuse.optim.Adafactor(ours_params, **options)
    theirs = torch.optim.Adafactor(theirs_params, foreach=False, **options)
    step_both(ours_params, ours, theirs_params, theirs, 100)
    assert_same(ours_params, ours, theirs_params, theirs)
    # Phase 1: row and column sums, ||p||; 2: the new factors, row_var's mean; 3: ||update||;
    # 4: the update and every write.
    assert ours.launches_per_step == 4


@pytest.mark.parametrize("column_major", [False, True], ids=["row-major", "column-major"])
def test_factors_of_rows_longer_than_a_segment_equal_torch(column_major):
    # Rows past 512 columns are reduced in segments over several blocks (docs/reductions.md
    # §9): a wide weight's row factor (3 rows of 1,300), a tall one's column factor (the
    # transposed grad's 2 rows of 1,300, in tiles), a short last segment, and exactly 1,024.
    shapes = [(3, 1300), (1300, 2), (5, 1024), (2, 3, 1, 700)]
    ours_params, theirs_params = make_params(shapes), make_params(shapes)
    ours = widefuse.optim.Adafactor(ours_params)
    theirs = torch.optim.Adafactor(theirs_params, foreach=False)
    step_both(ours_params, ours, theirs_params, theirs, 20, column_major=column_major)
    assert_same(ours_params, ours, theirs_params, theirs)
    assert ours.launches_per_step == 4


def test_weight_decay_maximize_strided_grads_and_extent_one_factors():
    """Weight decay, maximize, d and eps1 given; column-major grads (their mT is the
    contiguous view), [1, C] and [R, 1] weights."""
    shapes = [(4, 3), (1, 4), (4, 1)]
    options = dict(lr=0.1, weight_decay=0.1, maximize=True, d=1.5, eps=(1e-20, 1e-3))
    ours_params, theirs_params = make_params(shapes), make_params(shapes)
    ours = widefuse.optim.Adafactor(ours_params, **options)
    theirs = torch.optim.Adafactor(theirs_params, foreach=False, **options)
    step_both(ours_params, ours, theirs_params, theirs, 100, column_major=True)
    assert_same(ours_params, ours, theirs_params, theirs)


def test_a_non_finite_grad_leaves_the_other_elements_stepping_as_torchs():
    # torch's max(1.0, ||update|| / ...) and max(eps2, rms(param)) are Python's: a NaN norm
    # gives the floor, so only the non-finite element becomes NaN.
    made = [torch.nn.Parameter(torch.ones(4)) for _ in range(2)]
    ours = widefuse.optim.Adafactor([made[0]], lr=0.01)
    theirs = torch.optim.Adafactor([made[1]], lr=0.01)
    for p, optimizer in zip(made, (ours, theirs)):
        p.grad = torch.tensor([float("inf"), 0.1, 0.2, 0.3])
        optimizer.step()
    assert made[0][0].isnan() and made[1][0].isnan()
    torch.testing.assert_close(made[0][1:], made[1][1:])


def test_only_one_dimensional_parameters_take_two_launches():
    shapes = [(5,), (3,), ()]
    ours_params, theirs_params = make_params(shapes), make_params(shapes)
    ours = widefuse.optim.Adafactor(ours_params, lr=0.3)
    theirs = torch.optim.Adafactor(theirs_params, lr=0.3, foreach=False)
    step_both(ours_params, ours, theirs_params, theirs, 100)
    assert_same(ours_params, ours, theirs_params, theirs)
    assert ours.launches_per_step == 2  # ||p|| and ||update||, then the update


def test_unscaled_clipped_step_equals_torch_clip_then_step():
    """GradScaler's grad_scale (as its READY stage hands it over), max_grad_norm and
    error_if_nonfinite: the update, and its grad.mT, read the unscaled clipped grads, and a
    NaN grad raises torch's error with nothing changed (at the first step and later). torch's
    Adafactor refuses in-step scaling: its side gets the unscaled grads (exactly: a power of
    2)."""
    ours_params, theirs_params = make_params([(4, 3)]), make_params([(4, 3)])
    ours = widefuse.optim.Adafactor(ours_params, lr=0.1, max_grad_norm=1.0,
                                    error_if_nonfinite=True)
    theirs = torch.optim.Adafactor(theirs_params, lr=0.1, foreach=False)
    ours.grad_scale = torch.tensor(1024.0)
    for s in range(20):
        set_grads(ours_params, s)
        set_grads(theirs_params, s)
        ours_params[0].grad.mul_(1024.0)
        if s in (0, 2):  # before the state exists, and with it
            ours_params[0].grad[1, 2] = float("nan")
            theirs_params[0].grad[1, 2] = float("nan")
            with pytest.raises(RuntimeError) as expected:
                torch.nn.utils.clip_grad_norm_(theirs_params, 1.0, error_if_nonfinite=True)
            before = ours_params[0].detach().clone()
            state = {k: v.clone() for k, v in ours.state.get(ours_params[0], {}).items()}
            with pytest.raises(RuntimeError) as raised:
                ours.step()
            assert str(raised.value) == str(expected.value)
            assert torch.equal(ours_params[0].detach(), before)
            after = ours.state.get(ours_params[0], {})
            assert after.keys() == state.keys()
            assert all(torch.equal(after[k], v) for k, v in state.items())
            continue
        ours.step()
        norm = torch.nn.utils.clip_grad_norm_(theirs_params, 1.0)
        theirs.step()
        torch.testing.assert_close(ours.grad_norm, norm)
    assert_same(ours_params, ours, theirs_params, theirs)


def test_state_dicts_load_both_ways():
    ours_params, theirs_params = make_params(SHAPES), make_params(SHAPES)
    ours = widefuse.optim.Adafactor(ours_params, lr=0.2, foreach=False)
    theirs = torch.optim.Adafactor(theirs_params, lr=0.2, foreach=False)
    step_both(ours_params, ours, theirs_params, theirs, 3)
    assert ours.state_dict()["param_groups"] == theirs.state_dict()["param_groups"]

    # torch's state into a fresh widefuse Adafactor over copies of torch's parameters.
    loaded_params = [torch.nn.Parameter(q.detach().clone()) for q in theirs_params]
    loaded = widefuse.optim.Adafactor(loaded_params, lr=0.2)
    # Deep copies, as a checkpoint is: a state_dict holds the optimizer's own state tensors.
    loaded.load_state_dict(copy.deepcopy(theirs.state_dict()))
    # ours' state into a fresh torch Adafactor over copies of our parameters.
    torch_loaded_params = [torch.nn.Parameter(p.detach().clone()) for p in ours_params]
    torch_loaded = torch.optim.Adafactor(torch_loaded_params, lr=0.2, foreach=False)
    torch_loaded.load_state_dict(copy.deepcopy(ours.state_dict()))

    step_both(loaded_params, loaded, theirs_params, theirs, 5, seed=10)
    assert_same(loaded_params, loaded, theirs_params, theirs)
    step_both(ours_params, ours, torch_loaded_params, torch_loaded, 5, seed=10)
    assert_same(ours_params, ours, torch_loaded_params, torch_loaded)


@pytest.mark.parametrize("arguments", [
    dict(lr=-1.0), dict(lr=torch.tensor([0.1, 0.2])), dict(beta2_decay=0.5),
    dict(eps=(-1.0, 1e-3)), dict(eps=(None, -1e-3)), dict(d=0.5), dict(weight_decay=-0.1),
])
def test_bad_arguments_raise_torchs_value_errors(arguments):
    with pytest.raises(ValueError) as theirs:
        torch.optim.Adafactor(make_params([(3,)]), **arguments)
    params = make_params([(3,)])
    with pytest.raises(ValueError) as ours:
        widefuse.optim.Adafactor(params, **arguments)
    assert str(ours.value) == str(theirs.value)


def test_mT_of_anything_but_a_grad_is_refused():
    class ParamTranspose(widefuse.optim.PointwiseOptimizer):
        def __init__(self, params):
            super().__init__(params, {})

        def update(self, param, grad, state):
            param.sub_(param.mT.sum(dim=-1))

    class ComputedTranspose(ParamTranspose):
        def update(self, param, grad, state):
            param.sub_((grad * 2).mT.sum(dim=-1))

    for optimizer in (ParamTranspose, ComputedTranspose):
        params = make_params([(3, 3)])
        set_grads(params, 0)
        before = params[0].detach().clone()
        with pytest.raises(widefuse.UnsupportedOperationError, match="Tensor.mT of"):
            optimizer(params).step()
        assert torch.equal(params[0].detach(), before)

    traced = widefuse.trace(lambda x: x.mT.sum(dim=-1))
    with pytest.raises(widefuse.UnsupportedOperationError, match="Tensor.mT of"):
        traced(torch.ones(2, 3))


def test_grad_mT_reads_the_transposed_grad():
    """A PointwiseOptimizer's own update reading grad.mT: the column sums of every grad, new
    grad tensors each step (rebound with their mT), against torch's sum(dim=-2)."""
    class ColumnSums(widefuse.optim.PointwiseOptimizer):
        def __init__(self, params):
            super().__init__(params, {})

        def update(self, param, grad, state):
            param.sub_(grad.mT.sum(dim=-1).unsqueeze(-2))

    params = make_params([(4, 3), (2, 5, 2)])
    expected = [p.detach().clone() for p in params]
    optimizer = ColumnSums(params)
    for s in range(3):
        set_grads(params, s)
        for e, p in zip(expected, params):
            e.sub_(p.grad.sum(dim=-2, keepdim=True))
        optimizer.step()
    for e, p in zip(expected, params):
        torch.testing.assert_close(p.detach(), e)
    assert optimizer.launches_per_step == 2
