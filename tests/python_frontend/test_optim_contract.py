"""The rest of torch.optim's contract, widefuse's class next to torch's own in each test:
hooks, zero_grad(set_to_none=False), parameters without grads, add_param_group after steps,
named parameters, torch.save / torch.load(weights_only=True), repr, defaults, float64."""

import io

import pytest

torch = pytest.importorskip("torch")

import widefuse.optim  # noqa: E402
from test_optim_fidelity import (OPTIMIZERS, assert_same, make_pair, make_params,  # noqa: E402
                                 set_grads, step_both)

NAMES = sorted(OPTIMIZERS)


@pytest.mark.parametrize("name", NAMES)
def test_step_hooks(name):
    ours_params, ours, theirs_params, theirs = make_pair(name)
    calls = {"ours": [], "theirs": []}
    for key, optimizer in (("ours", ours), ("theirs", theirs)):
        log = calls[key]
        optimizer.register_step_pre_hook(lambda o, a, k, log=log: log.append("pre"))
        handle = optimizer.register_step_post_hook(lambda o, a, k, log=log: log.append("post"))
    step_both(ours_params, ours, theirs_params, theirs, 2)
    handle.remove()
    assert calls["ours"] == calls["theirs"] == ["pre", "post"] * 2


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_and_load_hooks(name):
    ours_params, ours, theirs_params, theirs = make_pair(name)
    step_both(ours_params, ours, theirs_params, theirs, 2)
    logs = {}
    for key, optimizer in (("ours", ours), ("theirs", theirs)):
        log = logs[key] = []
        optimizer.register_state_dict_pre_hook(lambda o, log=log: log.append("sd pre"))

        def post(o, state_dict, log=log):
            log.append("sd post")
            state_dict["extra"] = 1
            return state_dict
        optimizer.register_state_dict_post_hook(post)

        def load_pre(o, state_dict, log=log):
            log.append("load pre")
            state_dict = dict(state_dict)
            state_dict.pop("extra")
            return state_dict
        optimizer.register_load_state_dict_pre_hook(load_pre)
        optimizer.register_load_state_dict_pre_hook(
            lambda o, sd, log=log: log.append("load pre first"), prepend=True)
        optimizer.register_load_state_dict_post_hook(
            lambda o, log=log: log.append(("load post", len(o.state))))
        optimizer.register_load_state_dict_post_hook(
            lambda o, log=log: log.append("load post first"), prepend=True)
        saved = optimizer.state_dict()
        assert saved["extra"] == 1
        optimizer.load_state_dict(saved)
    assert logs["ours"] == logs["theirs"]
    step_both(ours_params, ours, theirs_params, theirs, 2, seed=7)
    assert_same(ours_params, ours, theirs_params, theirs, name)


@pytest.mark.parametrize("name", NAMES)
def test_zero_grad_without_none_and_params_without_grads(name):
    ours_params, ours, theirs_params, theirs = make_pair(name)
    step_both(ours_params, ours, theirs_params, theirs, 2)
    for optimizer, params in ((ours, ours_params), (theirs, theirs_params)):
        optimizer.zero_grad(set_to_none=False)
        assert all(p.grad is not None and not p.grad.any() for p in params)
    for optimizer, params in ((ours, ours_params), (theirs, theirs_params)):
        params[0].grad.add_(0.5)  # the same grad tensors, changed in place
        params[1].grad = None
        optimizer.step()
    assert_same(ours_params, ours, theirs_params, theirs, name)


# torch's Adagrad makes state in its constructor only: a group added later fails its first
# step with KeyError 'sum' (widefuse's makes the state at that step); not compared.
@pytest.mark.parametrize("name", [n for n in NAMES if n != "adagrad"])
def test_add_param_group_after_steps(name):
    ours_params, ours, theirs_params, theirs = make_pair(name)
    step_both(ours_params, ours, theirs_params, theirs, 2)
    extra = [torch.nn.Parameter(torch.linspace(-1, 1, 6)) for _ in range(2)]
    ours.add_param_group({"params": [extra[0]], "lr": 3e-2})
    theirs.add_param_group({"params": [extra[1]], "lr": 3e-2})
    step_both(ours_params + extra[:1], ours, theirs_params + extra[1:], theirs, 3, seed=9)
    assert_same(ours_params + extra[:1], ours, theirs_params + extra[1:], theirs, name)


@pytest.mark.parametrize("name", NAMES)
def test_named_parameters_give_named_state_dicts(name):
    ours_class, theirs_class, options = OPTIMIZERS[name]
    ours_params, theirs_params = make_params(), make_params()
    ours = ours_class([("a", ours_params[0]), ("b", ours_params[1])], **options)
    theirs = theirs_class([("a", theirs_params[0]), ("b", theirs_params[1])], foreach=False,
                          **options)
    step_both(ours_params, ours, theirs_params, theirs, 2)
    assert ours.state_dict()["param_groups"][0]["param_names"] == \
        theirs.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]
    assert_same(ours_params, ours, theirs_params, theirs, name)


@pytest.mark.parametrize("name", NAMES)
def test_torch_save_and_weights_only_load(name):
    ours_params, ours, theirs_params, theirs = make_pair(name)
    step_both(ours_params, ours, theirs_params, theirs, 2)
    for optimizer in (ours, theirs):
        buffer = io.BytesIO()
        torch.save(optimizer.state_dict(), buffer)
        buffer.seek(0)
        optimizer.load_state_dict(torch.load(buffer, weights_only=True))
    step_both(ours_params, ours, theirs_params, theirs, 2, seed=3)
    assert_same(ours_params, ours, theirs_params, theirs, name)


@pytest.mark.parametrize("name", NAMES)
def test_repr_and_defaults(name):
    _, ours, _, theirs = make_pair(name)
    # widefuse's own options (master weights, state dtype) are extra lines and keys.
    ours_lines = repr(ours).splitlines()
    for line in repr(theirs).splitlines():
        assert line in ours_lines or line.strip().startswith("foreach"), (line, ours_lines)
    assert ours_lines[0] == repr(theirs).splitlines()[0]
    theirs_defaults = dict(theirs.defaults, foreach=None)
    for key, value in theirs_defaults.items():
        assert key in ours.defaults, key
        if key != "foreach":
            assert ours.defaults[key] == value, key


@pytest.mark.parametrize("name", NAMES)
def test_float64_parameters_and_default_dtype(name):
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        ours_class, theirs_class, options = OPTIMIZERS[name]
        ours_params, theirs_params = make_params(), make_params()
        assert ours_params[0].dtype == torch.float64
        ours = ours_class(ours_params, **options)
        theirs = theirs_class(theirs_params, foreach=False, **options)
        step_both(ours_params, ours, theirs_params, theirs, 4)
        assert_same(ours_params, ours, theirs_params, theirs, name)
    finally:
        torch.set_default_dtype(previous)


@pytest.mark.parametrize("name", NAMES)
def test_zero_element_parameters_step_as_torch(name):
    """A layer of width 0 (nn.Linear(4, 0) then nn.Linear(0, 2)): its empty parameters and
    their state (an empty clone may have zero strides) step as torch's, with the rest."""
    ours_class, theirs_class, options = OPTIMIZERS[name]
    made = []
    for _ in range(2):
        torch.manual_seed(4)
        made.append([torch.nn.Parameter(torch.randn(shape)) for shape in
                     [(0, 4), (0,), (2, 0), (2,)]])
    ours_params, theirs_params = made
    ours = ours_class(ours_params, **options)
    theirs = theirs_class(theirs_params, foreach=False, **options)
    for step in range(3):
        for params in made:
            for p in params:
                p.grad = torch.ones_like(p) * (step + 1)
            params[2].grad = torch.empty(2, 0).expand(2, 0)  # as autograd gives it: strides 0
        ours.step()
        theirs.step()
    assert_same(ours_params, ours, theirs_params, theirs, name)


@pytest.mark.parametrize("name", NAMES)
def test_a_parameter_listed_twice_warns_as_torch_and_is_refused_at_the_step(name):
    ours_class, theirs_class, options = OPTIMIZERS[name]
    p = torch.nn.Parameter(torch.randn(3))
    q = torch.nn.Parameter(torch.randn(2))
    for cls in (theirs_class, ours_class):  # torch's construction contract: a warning
        with pytest.warns(UserWarning, match="duplicate parameters"):
            optimizer = cls([q, p, p], **options)
    # torch then steps p twice; one launch writes each parameter once, so widefuse refuses,
    # before anything is written.
    p.grad, q.grad = torch.ones(3), torch.ones(2)
    before = (p.detach().clone(), q.detach().clone())
    state_before = {k: dict(v) for k, v in optimizer.state.items()}  # Adagrad's, from __init__
    with pytest.raises(widefuse.Error, match=r"parameter 2 of param group 0 \(shape \[3\]\) "
                       r"is also parameter 1 of param group 0"):
        optimizer.step()
    assert torch.equal(p, before[0]) and torch.equal(q, before[1])
    assert {k: dict(v) for k, v in optimizer.state.items()} == state_before


@pytest.mark.parametrize("name", ["adamw", "sgd"])
def test_a_step_inside_torch_compile_runs_as_itself(name):
    """PyTorch's "compiling the optimizer" recipe wraps step() in torch.compile: the fused
    step is not traced by Dynamo (a graph break) and steps as torch's does."""
    ours_params, ours, theirs_params, theirs = make_pair(name)

    @torch.compile(backend="eager")
    def compiled_step():
        ours.step()

    for s in range(3):
        set_grads(ours_params, s)
        set_grads(theirs_params, s)
        compiled_step()
        theirs.step()
    assert_same(ours_params, ours, theirs_params, theirs, name)


def test_a_group_naming_its_own_state_format_gets_that_formats_block_size():
    big, small = torch.nn.Parameter(torch.randn(4096)), torch.nn.Parameter(torch.randn(4096))
    optimizer = widefuse.optim.AdamW8bit([{"params": [big]},
                                          {"params": [small], "state_format": None}])
    assert [(g["state_format"], g["block_size"]) for g in optimizer.param_groups] == \
        [("int8", 256), (None, None)]
    optimizer.add_param_group({"params": [torch.nn.Parameter(torch.randn(4096))],
                               "state_format": "int4"})
    assert optimizer.param_groups[2]["block_size"] == 128  # torchao's AdamW4bit's
    for p in (big, small):
        p.grad = torch.randn(4096)
    optimizer.step()
    assert optimizer.state[small]["exp_avg"].dtype == torch.float32  # full precision
    assert optimizer.state[big]["exp_avg_codes"].dtype == torch.uint8


@pytest.mark.parametrize("name", NAMES)
def test_numpy_hyperparameters_in_a_group_step_as_torchs(name):
    """A scheduler or user code may leave NumPy numbers in a group (a 0-d array, np.float32):
    torch's optimizers take them where they take a number."""
    import numpy as np

    ours_params, ours, theirs_params, theirs = make_pair(name)
    for s in range(3):
        for optimizer in (ours, theirs):
            group = optimizer.param_groups[0]
            group["lr"] = np.array(group["lr"] * 0.5) if s % 2 else np.float32(group["lr"])
        step_both(ours_params, ours, theirs_params, theirs, 1, seed=s)
    assert_same(ours_params, ours, theirs_params, theirs, name)


@pytest.mark.parametrize("name", NAMES)
def test_a_step_bumps_the_version_counters_autograd_checks(name):
    """A step between a forward and a second backward through it: torch's in-place update
    makes autograd refuse the backward (the saved parameter changed); so does widefuse's
    kernel, on the first step (which makes the state) and on the prepared steps after it."""
    ours_class, theirs_class, options = OPTIMIZERS[name]
    for cls in (theirs_class, ours_class):
        w = torch.nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))
        optimizer = cls([w], **options)
        for _ in range(3):
            loss = (w * w).sum()
            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            version = w._version
            optimizer.step()
            assert w._version > version, cls
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                loss.backward()
