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
    assert jitted.steady_calls == 5, jitted.not_steady_because  # leaves that require grad


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


# The steady call (widefuse/thunder/steady_call.py): later calls skip Thunder's dispatch, and every
# change Thunder's prologue or cache info would notice sends the call back through Thunder.

def _mutations():
    """(name, change(params, state) -> options for the call, steady): each is applied before
    one step; `steady` says whether the step may still take the steady call."""
    def lr(params, state):
        return dict(lr=0.01)

    def maximize(params, state):
        return dict(maximize=True)

    def new_grads(params, state):
        for p in params:
            p.grad = p.grad * 0.5 + 1
        return {}

    def transposed_grad(params, state):
        params[0].grad = params[0].grad.t().contiguous().t()  # other strides
        return {}

    def storage_replaced(params, state):
        params[1].data = params[1].detach().clone()  # the same object, other memory
        return {}

    def state_replaced(params, state):
        state[1][0] = state[1][0].clone()  # a new exp_avg in the same list
        return {}

    def grad_shares_a_grad(params, state):
        params[1].grad = params[0].grad.view(4, 4)  # memory two reads share: still steady
        return {}

    def grad_shares_a_param(params, state):
        params[2].grad = params[1].view(4, 4)  # reads what the step writes: not steady
        return {}

    return [("lr", lr, False), ("maximize", maximize, False), ("new_grads", new_grads, True),
            ("transposed_grad", transposed_grad, False),
            ("storage_replaced", storage_replaced, True),
            ("state_replaced", state_replaced, True),
            ("grad_shares_a_grad", grad_shares_a_grad, True),
            ("grad_shares_a_param", grad_shares_a_param, False)]


def _square_params():
    generator = torch.Generator().manual_seed(0)
    params = [torch.randn(4, 4, generator=generator) for _ in range(3)]
    for p in params:
        p.grad = torch.randn(4, 4, generator=generator)
    return params


@pytest.mark.parametrize("name, change, steady", _mutations(), ids=[m[0] for m in _mutations()])
def test_a_change_between_calls_is_noticed_never_run_stale(name, change, steady):
    ours, theirs = _square_params(), _square_params()
    jitted = widefuse.thunder.jit(_single_tensor_adam)
    reference = thunder.jit(_single_tensor_adam)  # Thunder's own executors, the same calls
    state, their_state = jit_state(ours), jit_state(theirs)
    for _ in range(2):
        jit_step(jitted, ours, state)
        jit_step(reference, theirs, their_state)
    assert jitted.steady_calls == 1, jitted.not_steady_because
    options = change(ours, state)
    change(theirs, their_state)
    jit_step(jitted, ours, state, **options)
    jit_step(reference, theirs, their_state, **options)
    assert jitted.steady_calls == (2 if steady else 1)
    jit_step(jitted, ours, state, **options)  # and steady again after it
    jit_step(reference, theirs, their_state, **options)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(state[:3], their_state[:3], rtol=1e-6, atol=1e-7)
    assert thunder.cache_hits(jitted) + thunder.cache_misses(jitted) == 4


def test_the_environment_thunder_caches_on_sends_the_call_through_thunder():
    plain = _square_params()
    jitted = widefuse.thunder.jit(_single_tensor_adam)
    state = jit_state(plain)
    for _ in range(2):
        jit_step(jitted, plain, state)
    assert jitted.steady_calls == 1
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        jit_step(jitted, plain, state)
    finally:
        torch.set_default_dtype(previous)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        jit_step(jitted, plain, state)
    assert jitted.steady_calls == 1
    assert thunder.cache_misses(jitted) == 3  # the first call, float64 default, autocast


def test_a_function_whose_prologue_reads_a_global_is_never_steady():
    def scaled(x, y):
        x.copy_(x * SCALE + y)

    global SCALE
    jitted = widefuse.thunder.jit(scaled)
    x, y = torch.ones(4), torch.ones(4)
    with torch.no_grad():
        SCALE = 2.0
        jitted(x, y)
        SCALE = 3.0
        jitted(x, y)
    assert jitted.steady_calls == 0
    assert "unpack_function_obj" in jitted.not_steady_because
    torch.testing.assert_close(x, torch.full((4,), 10.0))  # (1 * 2 + 1) * 3 + 1


SCALE = 1.0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_captured_steady_call_replays_equal_torch_capturable_adam():
    # The steady call is host work and the region's launch on torch's current stream, so
    # torch.cuda.graph can capture a step after its warm-up and replay it on new grads.
    generator = torch.Generator(device="cuda").manual_seed(29)
    shapes = [(64, 32), (7,), (4097,), (3, 5, 2)]
    ours = [torch.randn(s, device="cuda", generator=generator) for s in shapes]
    theirs = [p.clone().requires_grad_() for p in ours]
    for p in ours:
        p.grad = torch.zeros_like(p)  # static grads, loaded before each replay
    grads = [[torch.randn(s, device="cuda", generator=generator) for s in shapes]
             for _ in range(8)]
    jitted = widefuse.thunder.jit(_single_tensor_adam)
    state = jit_state(ours)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for step in range(3):
            for p, g in zip(ours, grads[step]):
                p.grad.copy_(g)
            jit_step(jitted, ours, state)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        jit_step(jitted, ours, state)
    assert jitted.steady_calls >= 1
    for step in range(3, 8):
        for p, g in zip(ours, grads[step]):
            p.grad.copy_(g)
        graph.replay()
    torch.cuda.synchronize()
    reference = torch.optim.Adam(theirs, capturable=True, foreach=False)
    for step_grads in grads:
        for q, g in zip(theirs, step_grads):
            q.grad = g.clone()
        reference.step()
    torch.testing.assert_close(ours, [q.detach() for q in theirs])
