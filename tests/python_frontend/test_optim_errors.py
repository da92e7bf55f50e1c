"""Bad input to widefuse.optim is a clear widefuse.Error that leaves parameters and state as
they were: grads that do not fit their parameter, parameters on two devices, a checkpoint whose
state does not fit, refused constructor arguments, and a grad aliasing a parameter."""

import copy

import pytest

torch = pytest.importorskip("torch")

import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402


def stepped_optimizer(steps=2):
    """Two parameters trained a little, so that there is state to keep intact."""
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    optimizer = widefuse.optim.AdamW(params, lr=0.1)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn_like(p)
        optimizer.step()
    return params, optimizer


def snapshot(params, optimizer):
    return ([p.detach().clone() for p in params],
            {i: {k: v.clone() for k, v in optimizer.state[p].items()}
             for i, p in enumerate(params)})


def assert_unchanged(params, optimizer, before):
    values, state = before
    for p, value in zip(params, values):
        torch.testing.assert_close(p.detach(), value, rtol=0, atol=0)
    for i, p in enumerate(params):
        assert sorted(optimizer.state[p]) == sorted(state[i])
        for key, value in state[i].items():
            torch.testing.assert_close(optimizer.state[p][key], value, rtol=0, atol=0)


def test_a_grad_of_another_shape():
    params, optimizer = stepped_optimizer()
    before = snapshot(params, optimizer)
    for p in params:
        p.grad = torch.ones_like(p)
    params[1].grad.data = torch.ones(6)  # torch's grad setter refuses this; .data does not
    with pytest.raises(widefuse.Error, match=r"parameter 1 of param group 0 .*grad has shape \[6\]"):
        optimizer.step()
    assert_unchanged(params, optimizer, before)


def test_a_parameter_on_another_device():
    params, optimizer = stepped_optimizer()
    stranger = torch.nn.Parameter(torch.ones(3, device="meta"))
    stranger.grad = torch.ones(3, device="meta")
    optimizer.add_param_group({"params": [stranger]})
    for p in params:
        p.grad = torch.ones_like(p)
    before = snapshot(params, optimizer)
    with pytest.raises(widefuse.Error, match=r"parameter 0 of param group 1 .* is on meta"):
        optimizer.step()
    assert_unchanged(params, optimizer, before)
    assert stranger not in optimizer.state  # no state made for it either


def test_load_state_dict_with_a_mismatched_shape():
    params, optimizer = stepped_optimizer()
    saved = copy.deepcopy(optimizer.state_dict())
    saved["state"][0]["exp_avg"] = torch.zeros(3, 4)
    before = snapshot(params, optimizer)
    with pytest.raises(widefuse.Error, match=r"state 'exp_avg' of parameter 0 .*\[3, 4\]"):
        optimizer.load_state_dict(saved)
    assert_unchanged(params, optimizer, before)
    saved["state"][0]["exp_avg"] = torch.zeros(4, 3)
    optimizer.load_state_dict(saved)  # the fitting one loads


def test_a_grad_sharing_memory_with_a_parameter():
    params, optimizer = stepped_optimizer()
    before = snapshot(params, optimizer)
    params[0].grad = torch.ones_like(params[0])
    params[1].grad = params[0].detach().view(-1)[:5]  # reads memory the step writes
    with pytest.raises(widefuse.Error, match="shares memory"):
        optimizer.step()
    assert_unchanged(params, optimizer, before)
    params[1].grad = torch.ones(5)
    optimizer.step()  # recovers


@pytest.mark.parametrize("arguments, message", [
    (dict(differentiable=True), "differentiable=True is not supported"),
    (dict(lr=-1.0), "Invalid learning rate"),
    (dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1"),
    (dict(eps=-1e-8), "Invalid epsilon"),
    (dict(lr=torch.tensor([1e-3, 1e-3])), "Tensor lr must be 1-element"),
])
def test_refused_constructor_arguments(arguments, message):
    with pytest.raises(widefuse.Error, match=message):
        widefuse.optim.Adam([torch.nn.Parameter(torch.ones(2))], **arguments)


@pytest.mark.parametrize("flags", [dict(foreach=True), dict(fused=True),
                                   dict(foreach=False, fused=True)])
def test_foreach_and_fused_are_accepted_and_ignored(flags):
    p = torch.nn.Parameter(torch.ones(3))
    optimizer = widefuse.optim.AdamW([p], **flags)
    p.grad = torch.ones(3)
    optimizer.step()
    assert optimizer.launches_per_step == 1


def test_state_that_is_not_a_tensor():
    class Broken(widefuse.optim.PointwiseOptimizer):
        def __init__(self, params):
            super().__init__(params, dict(lr=0.1))

        def init_state(self, param):
            return {"count": "zero"}

        def update(self, param, grad, state, *, lr):
            param.sub_(grad, alpha=lr)

    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.ones(3)
    with pytest.raises(widefuse.Error, match="state 'count' .* is a str"):
        Broken([p]).step()
    torch.testing.assert_close(p.detach(), torch.ones(3))


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_torchs_own_error_inputs_raise_torchs_errors(name):
    # torch's test_optim test_errors inputs (common_optimizers): the construction errors and
    # warnings, each raised by torch's class and by widefuse's, in the same test.
    pytest.importorskip("expecttest")  # torch.testing._internal imports it
    from torch.testing._internal import common_optimizers

    inputs = getattr(common_optimizers, f"optim_error_inputs_func_{name.lower()}")(
        "cpu", torch.float32)
    checked = 0
    for error in inputs:
        if error.error_on.name != "CONSTRUCTION_ERROR":
            continue
        given = error.optimizer_error_input
        for cls in (getattr(torch.optim, name), getattr(widefuse.optim, name)):
            params = given.params
            if issubclass(error.error_type, Warning):
                with pytest.warns(error.error_type, match=error.error_regex):
                    cls(params, **given.kwargs)
            else:
                with pytest.raises(error.error_type, match=error.error_regex):
                    cls(params, **given.kwargs)
        checked += 1
    assert checked >= 8


def test_a_meta_parameter_is_named():
    param = torch.nn.Parameter(torch.empty(3, device="meta"))
    optimizer = widefuse.optim.Adam([torch.nn.Parameter(torch.zeros(2)), param])
    param.grad = torch.empty(3, device="meta")
    with pytest.raises(widefuse.Error, match=r"parameter 1 of param group 0 \(shape \[3\]\) is "
                                            "a meta tensor"):
        optimizer.step()
