"""``widefuse.thunder.jit``: the seed's Adam step under thunder.jit with Thunder's per-call
input checks done by widefuse's steady state. Its values equal torch.optim.Adam's, later steps
are compared once (in the prologue) and launched without a second comparison, and what
Thunder's checks guarded is still caught: another shape traces again, grad mode takes Thunder's
own checks, and a function that is not one widefuse region is refused."""

import pytest

torch = pytest.importorskip("torch")
thunder = pytest.importorskip("thunder")

import widefuse  # noqa: E402
import widefuse.thunder  # noqa: E402
from test_thunder_executor import clones, make_params  # noqa: E402
from thunder_seed_adam import _single_tensor_adam, jit_state, jit_step  # noqa: E402


def _region(jitted):
    trace = thunder.last_traces(jitted)[-1]
    names = [b.sym.name for b in trace.bound_symbols if b.sym.name.startswith("widefuse")]
    assert len(names) == 1, str(trace)
    return trace.python_ctx()[names[0]]


def _executor_of(region):
    return region.last_used._running("execute()").last_executor


def test_the_seed_equals_torch_adam_and_later_steps_are_compared_once():
    params = make_params(5)
    theirs = clones(params)
    adam = torch.optim.Adam(theirs, foreach=False)
    jitted = widefuse.thunder.jit(_single_tensor_adam)
    state = jit_state(params)
    for step in range(6):
        for p, q in zip(params, theirs):  # new grads each step, as backward makes them
            p.grad = torch.randn(p.shape, generator=torch.Generator().manual_seed(step))
            q.grad = p.grad.clone()
        jit_step(jitted, params, state)
        adam.step()
        torch.testing.assert_close(params, theirs)
    region = _region(jitted)
    executor = _executor_of(region)
    assert executor.matched_launches == 5  # every step after the first
    assert executor.steady_runs == 0  # no second comparison in the region


def test_another_shape_is_a_cache_miss_and_traces_again():
    jitted = widefuse.thunder.jit(_single_tensor_adam)
    for shape in ((4, 4), (5,), (4, 4)):
        params = [torch.randn(shape, generator=torch.Generator().manual_seed(i)) for i in
                  range(3)]
        for p in params:
            p.grad = torch.ones(shape)
        theirs = clones(params)
        adam = torch.optim.Adam(theirs, foreach=False)
        state = jit_state(params)
        for _ in range(2):
            jit_step(jitted, params, state)
            adam.step()
        torch.testing.assert_close(params, theirs)
    assert thunder.cache_misses(jitted) == 2  # (4, 4), then (5,); (4, 4) again is a hit


def test_under_grad_mode_thunders_own_checks_run():
    params = make_params(2)
    theirs = clones(params)
    adam = torch.optim.Adam(theirs, foreach=False)
    jitted = widefuse.thunder.jit(_single_tensor_adam)
    state = jit_state([p.detach() for p in params])
    plain = [p.detach() for p in params]  # leaves that do not require grad, under grad mode
    for _ in range(3):
        _single_tensor_step(jitted, plain, [p.grad for p in params], state)
        adam.step()
    torch.testing.assert_close(plain, [q.detach() for q in theirs])
    assert _executor_of(_region(jitted)).matched_launches == 0


def _single_tensor_step(jitted, params, grads, state):
    steps, exp_avgs, exp_avg_sqs, max_exp_avg_sqs = state
    jitted(params, grads, exp_avgs=exp_avgs, exp_avg_sqs=exp_avg_sqs,
           max_exp_avg_sqs=max_exp_avg_sqs, state_steps=steps, grad_scale=None, found_inf=None,
           amsgrad=False, has_complex=False, beta1=0.9, beta2=0.999, lr=0.001, weight_decay=0,
           eps=1e-8, maximize=False, capturable=False, differentiable=False)


def test_a_function_that_is_not_one_region_is_refused():
    def mixed(x, y):
        x.copy_(x * 2)
        return (x @ y).sum()

    jitted = widefuse.thunder.jit(mixed)
    with pytest.raises(widefuse.Error, match="widefuse.thunder.jit runs functions that are one "
                                             "widefuse region"):
        with torch.no_grad():
            jitted(torch.ones(2, 2), torch.ones(2, 2))


def test_the_options_it_sets_are_refused():
    with pytest.raises(TypeError, match="sets executors= itself"):
        widefuse.thunder.jit(_single_tensor_adam, executors=[])
