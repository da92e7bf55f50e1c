"""The seed's `_single_tensor_adam`, traced by widefuse.trace over NumPy parameters of mixed
shapes, against an independent float64 NumPy implementation of the same formula."""

import numpy as np
import pytest

import widefuse
from conftest import assert_close
from seed_adam import _single_tensor_adam

HYPER = dict(beta1=0.9, beta2=0.999, lr=0.001, weight_decay=0.0, eps=1e-8)


def reference_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, amsgrad,
                   beta1, beta2, lr, weight_decay, eps, maximize):
    """One Adam step in float64, written from torch's documented algorithm."""
    for i in range(len(params)):
        grad = -grads[i] if maximize else grads[i]
        steps[i] += 1.0
        if weight_decay != 0:
            grad = grad + weight_decay * params[i]
        exp_avgs[i] = exp_avgs[i] * beta1 + grad * (1 - beta1)
        exp_avg_sqs[i] = exp_avg_sqs[i] * beta2 + (1 - beta2) * grad * grad
        bias_correction1 = 1 - beta1 ** steps[i]
        bias_correction2 = 1 - beta2 ** steps[i]
        second = exp_avg_sqs[i]
        if amsgrad:
            max_exp_avg_sqs[i] = np.maximum(max_exp_avg_sqs[i], exp_avg_sqs[i])
            second = max_exp_avg_sqs[i]
        denom = np.sqrt(second) / np.sqrt(bias_correction2) + eps
        params[i] = params[i] - (lr / bias_correction1) * exp_avgs[i] / denom


def shapes_for(count, rng):
    """`count` different shapes: 1-d to 3-d, including one and zero elements."""
    fixed = [(1024,), (33, 65), (1,), (0,), (7, 3, 5), (4097,), (2, 1, 9)]
    shapes = fixed[:count]
    while len(shapes) < count:
        rank = int(rng.integers(1, 4))
        shapes.append(tuple(int(e) for e in rng.integers(1, 40, size=rank)))
    return shapes


def make_state(shapes, rng, fortran_first=False):
    def array(shape, scale):
        values = (rng.standard_normal(shape) * scale).astype(np.float32)
        return values
    params = [array(s, 1.0) for s in shapes]
    if fortran_first:  # one parameter (and its state) in column-major order: strided kernel
        params[1] = np.asfortranarray(params[1])
    exp_avgs = [np.zeros_like(p) for p in params]
    exp_avg_sqs = [np.zeros_like(p) for p in params]
    max_exp_avg_sqs = [np.zeros_like(p) for p in params]
    steps = [np.array(0.0, dtype=np.float32) for _ in params]
    return params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps


def run_adam(count, mode, rng, *, amsgrad=False, maximize=False, weight_decay=0.0,
             fortran_first=False, steps_to_run=3, prepared=False):
    shapes = shapes_for(count, rng)
    params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = make_state(shapes, rng,
                                                                        fortran_first)
    hyper = dict(HYPER, weight_decay=weight_decay)
    expected = [[a.astype(np.float64) for a in group]
                for group in (params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)]
    expected_steps = [0.0] * count
    adam = widefuse.trace(_single_tensor_adam, mode=mode)
    step_objects = [id(s) for s in steps]
    grads = [np.zeros(s, np.float32) for s in shapes]  # refilled in place every step
    arguments = (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, None, None)
    options = dict(amsgrad=amsgrad, has_complex=False, maximize=maximize, capturable=False,
                   differentiable=False, **hyper)
    step = adam.prepare(*arguments, **options) if prepared else None
    for _ in range(steps_to_run):
        for grad, shape in zip(grads, shapes):
            grad[...] = rng.standard_normal(shape).astype(np.float32)
        if prepared:
            step()
        else:
            adam(*arguments, **options)
        p, m, v, vmax = expected
        reference_step(p, [g.astype(np.float64) for g in grads], m, v, vmax, expected_steps,
                       amsgrad=amsgrad, maximize=maximize, **hyper)
    for i in range(count):
        assert_close(params[i], expected[0][i], f"param {i} {shapes[i]}")
        assert_close(exp_avgs[i], expected[1][i], f"exp_avg {i}")
        assert_close(exp_avg_sqs[i], expected[2][i], f"exp_avg_sq {i}")
        if amsgrad:
            assert_close(max_exp_avg_sqs[i], expected[3][i], f"max_exp_avg_sq {i}")
        # The step arrays are the caller's objects, advanced in place.
        assert id(steps[i]) == step_objects[i] and steps[i].dtype == np.float32
        assert float(steps[i]) == steps_to_run
    return adam


@pytest.mark.parametrize("count", [2, 5, 50])
def test_batched_runs_one_kernel(count, rng):
    adam = run_adam(count, "batched", rng)
    kernels = adam.last_definition.last_kernels()
    assert sum(kernel["launches"] for kernel in kernels) == 1
    assert adam.cache_size == 1  # three calls, one signature


@pytest.mark.parametrize("count", [2, 5, 50])
def test_per_component_runs_one_kernel_per_parameter(count, rng):
    adam = run_adam(count, "per-component", rng)
    kernels = adam.last_definition.last_kernels()
    assert sum(kernel["launches"] for kernel in kernels) == count
    assert len(kernels) == 1  # every parameter runs the same compiled kernel


def test_column_major_parameter_gets_its_own_strided_kernel(rng):
    """A parameter whose arrays are column-major is traced with that layout; its component
    is indexed by coordinates, so batched mode runs two kernels instead of one."""
    adam = run_adam(5, "batched", rng, fortran_first=True)
    kernels = adam.last_definition.last_kernels()
    assert sum(kernel["launches"] for kernel in kernels) == 2


@pytest.mark.parametrize("mode", ["batched", "per-component"])
def test_prepared_steps_match_float64(mode, rng):
    """TracedFunction.prepare: the same arrays stepped with no per-call checks."""
    adam = run_adam(5, mode, rng, prepared=True)
    assert adam.cache_size == 1


def test_amsgrad_maximize_and_weight_decay(rng):
    """torch.maximum(..., out=) updates max_exp_avg_sqs in place and later reads see it."""
    run_adam(5, "batched", rng, amsgrad=True, maximize=True, weight_decay=0.01)


def test_segmenter_sees_one_component_per_parameter(rng):
    adam = run_adam(5, "auto", rng, steps_to_run=1)
    report = adam.last_definition.segments("per-component")
    assert "5 components" in report
