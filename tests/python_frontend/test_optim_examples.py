"""The optimizers shipped as PointwiseOptimizer examples against their references, 100 steps
each, one launch per step: SGD, RMSprop and Adagrad against torch.optim (foreach=False) on a
small real model; Lion against a float64 NumPy implementation of the paper's formula."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import widefuse.optim  # noqa: E402
from torch_models import assert_same_parameters, batches, small_model, train_step  # noqa: E402

# torch's CPU kernels contract a * b + c into one FMA (addcmul, for one); widefuse's host
# kernels never contract. Centered RMSprop divides by sqrt(E[g^2] - E[g]^2), which turns that
# last-bit difference into ~1e-5 relative in its momentum buffer after 100 steps; the
# parameters still match with assert_close's defaults.
STATE_TOLERANCE = {"rmsprop centered momentum weight decay": dict(rtol=1e-4, atol=1e-4)}

CASES = {
    "sgd": (widefuse.optim.SGD, torch.optim.SGD, dict(lr=0.1)),
    "sgd momentum dampening weight decay": (
        widefuse.optim.SGD, torch.optim.SGD,
        dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-2)),
    "sgd nesterov maximize": (widefuse.optim.SGD, torch.optim.SGD,
                              dict(lr=0.05, momentum=0.8, nesterov=True, maximize=True)),
    "rmsprop": (widefuse.optim.RMSprop, torch.optim.RMSprop, dict(lr=1e-3)),
    "rmsprop centered momentum weight decay": (
        widefuse.optim.RMSprop, torch.optim.RMSprop,
        dict(lr=1e-3, alpha=0.9, centered=True, momentum=0.5, weight_decay=1e-2)),
    "rmsprop momentum": (widefuse.optim.RMSprop, torch.optim.RMSprop,
                         dict(lr=1e-3, momentum=0.9, eps=1e-6)),
    "adagrad": (widefuse.optim.Adagrad, torch.optim.Adagrad, dict(lr=0.05)),
    "adagrad decay accumulator weight decay": (
        widefuse.optim.Adagrad, torch.optim.Adagrad,
        dict(lr=0.05, lr_decay=1e-2, weight_decay=1e-2, initial_accumulator_value=0.1)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch_over_100_steps(case):
    ours_class, theirs_class, options = CASES[case]
    ours_model, theirs_model = small_model(), small_model()
    ours = ours_class(ours_model.parameters(), **options)
    theirs = theirs_class(theirs_model.parameters(), foreach=False, **options)
    schedules = [torch.optim.lr_scheduler.StepLR(o, step_size=40, gamma=0.5)
                 for o in (ours, theirs)]
    for batch in batches(100):
        train_step(ours_model, ours, batch, schedules[0])
        train_step(theirs_model, theirs, batch, schedules[1])
        assert ours.launches_per_step == 1
    assert_same_parameters(ours_model, theirs_model, case)
    for p_ours, p_theirs in zip(ours_model.parameters(), theirs_model.parameters()):
        assert sorted(ours.state[p_ours]) == sorted(theirs.state[p_theirs])
        for key, value in theirs.state[p_theirs].items():
            torch.testing.assert_close(ours.state[p_ours][key], value,
                                       **STATE_TOLERANCE.get(case, {}),
                                       msg=lambda m: f"{case} state {key}: {m}")


def lion_reference(p, grads, lr, beta1, beta2, weight_decay):
    """Lion in float64 from the paper (Chen et al. 2023, Algorithm 2)."""
    p = p.astype(np.float64)
    m = np.zeros_like(p)
    for g in grads:
        c = beta1 * m + (1 - beta1) * g
        p = p - lr * (np.sign(c) + weight_decay * p)
        m = beta2 * m + (1 - beta2) * g
    return p, m


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_lion_matches_the_papers_formula(weight_decay):
    rng = np.random.default_rng(7)
    shapes = [(64, 33), (1000,), (1,), (0,), (5, 1, 3)]
    initial = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    grads = [[rng.standard_normal(shape).astype(np.float32) for shape in shapes]
             for _ in range(100)]
    params = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in initial]
    optimizer = widefuse.optim.Lion(params, lr=1e-3, betas=(0.9, 0.99),
                                    weight_decay=weight_decay)
    for step_grads in grads:
        for param, grad in zip(params, step_grads):
            param.grad = torch.from_numpy(grad)  # a new tensor every step
        optimizer.step()
        assert optimizer.launches_per_step == 1
    for i, param in enumerate(params):
        expected_p, expected_m = lion_reference(initial[i], [g[i] for g in grads], 1e-3, 0.9,
                                                0.99, weight_decay)
        torch.testing.assert_close(param.detach(), torch.from_numpy(expected_p).float())
        torch.testing.assert_close(optimizer.state[param]["exp_avg"],
                                   torch.from_numpy(expected_m).float())


def test_a_user_written_optimizer_gets_exactly_its_hyperparameters():
    seen = []

    class Scaled(widefuse.optim.PointwiseOptimizer):
        def __init__(self, params, lr=0.1, factor=2.0, flip=False):
            super().__init__(params, dict(lr=lr, factor=factor, flip=flip))

        def update(self, param, grad, state, **hyperparameters):
            seen.append(sorted(hyperparameters))
            direction = -grad if hyperparameters["flip"] else grad
            param.sub_(direction * hyperparameters["factor"], alpha=hyperparameters["lr"])

    w = torch.nn.Parameter(torch.ones(5))
    optimizer = Scaled([w], lr=0.5)
    optimizer.param_groups[0]["unrelated"] = "ignored"  # not a default: not passed
    w.grad = torch.full((5,), 3.0)
    optimizer.step()
    assert seen == [["factor", "flip", "lr"]]
    torch.testing.assert_close(w.detach(), torch.full((5,), 1 - 0.5 * 2.0 * 3.0))
    optimizer.param_groups[0]["factor"] = 1.0  # a runtime scalar: no new trace
    optimizer.step()
    assert len(seen) == 1
    torch.testing.assert_close(w.detach(), torch.full((5,), -2.0 - 0.5 * 3.0))
