"""widefuse.optim.Adam / AdamW against torch.optim.Adam / AdamW (foreach=False) on a small real
model: 100 training steps with backward, zero_grad and a StepLR schedule, one launch per step,
and state_dict moving both ways mid-training."""

import copy
import weakref

import pytest

torch = pytest.importorskip("torch")

import widefuse.optim  # noqa: E402
from torch_models import (assert_same_parameters, batches, small_model,  # noqa: E402
                          train_step)

CASES = {
    "adamw": (widefuse.optim.AdamW, torch.optim.AdamW, dict(lr=1e-2)),
    "adam amsgrad": (widefuse.optim.Adam, torch.optim.Adam, dict(lr=1e-2, amsgrad=True)),
    "adam maximize": (widefuse.optim.Adam, torch.optim.Adam, dict(lr=1e-2, maximize=True)),
    "adam weight decay": (widefuse.optim.Adam, torch.optim.Adam,
                          dict(lr=1e-2, weight_decay=0.1, betas=(0.8, 0.99), eps=1e-6)),
    "adamw amsgrad weight decay": (widefuse.optim.AdamW, torch.optim.AdamW,
                                   dict(lr=3e-3, weight_decay=0.3, amsgrad=True)),
    # torch refuses capturable=True on the CPU; its step is the same computation there.
    "adam capturable tensor lr": (widefuse.optim.Adam, torch.optim.Adam,
                                  dict(lr=torch.tensor(1e-2), capturable=True),
                                  dict(lr=torch.tensor(1e-2))),
}


def two_groups(model):
    """Weights and the rest, with different hyperparameters."""
    weights = [p for name, p in model.named_parameters() if name.endswith("weight")]
    others = [p for name, p in model.named_parameters() if not name.endswith("weight")]
    return [{"params": weights}, {"params": others, "lr": 5e-3, "weight_decay": 0.0}]


def train_both(ours_class, theirs_class, options, their_options=None, steps=100,
               grouped=False, mode="packed"):
    ours_model, theirs_model = small_model(), small_model()
    params = (two_groups if grouped else lambda m: m.parameters())
    copy = lambda o: {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in o.items()}
    ours = ours_class(params(ours_model), **copy(options), mode=mode)
    theirs = theirs_class(params(theirs_model), foreach=False,
                          **copy(options if their_options is None else their_options))
    schedules = [torch.optim.lr_scheduler.StepLR(o, step_size=30, gamma=0.5)
                 for o in (ours, theirs)]
    for step, batch in enumerate(batches(steps)):
        train_step(ours_model, ours, batch, schedules[0])
        train_step(theirs_model, theirs, batch, schedules[1])
        assert ours.launches_per_step == 1
        if step % 25 == 24:
            assert_same_parameters(ours_model, theirs_model, f"step {step}")
    return ours_model, theirs_model, ours, theirs


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_equals_torch(case):
    ours_model, theirs_model, ours, theirs = train_both(*CASES[case])
    assert_same_parameters(ours_model, theirs_model, case)
    for p_ours, p_theirs in zip(ours_model.parameters(), theirs_model.parameters()):
        for key, value in theirs.state[p_theirs].items():
            torch.testing.assert_close(ours.state[p_ours][key].cpu(), value.cpu(),
                                       msg=lambda m: f"{case} state {key}: {m}")


@pytest.mark.parametrize("mode", ["packed", "batched"])
def test_two_param_groups_in_one_launch(mode):
    # The groups differ in lr and weight decay (0 in one): runtime scalars of one kernel body.
    ours_model, theirs_model, ours, _ = train_both(
        widefuse.optim.AdamW, torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.05),
        steps=60, grouped=True, mode=mode)
    assert_same_parameters(ours_model, theirs_model)
    assert ours.param_groups[1]["lr"] == pytest.approx(5e-3 * 0.25)  # two StepLR decays


def test_state_dict_moves_both_ways_mid_training():
    data = batches(40)
    ours_model, theirs_model = small_model(), small_model()
    ours = widefuse.optim.AdamW(ours_model.parameters(), lr=1e-2, amsgrad=True)
    theirs = torch.optim.AdamW(theirs_model.parameters(), lr=1e-2, amsgrad=True, foreach=False)
    for batch in data[:15]:
        train_step(ours_model, ours, batch)
        train_step(theirs_model, theirs, batch)
    # Deep copies, as torch.save would write: a state_dict shares the optimizer's tensors.
    saved_ours, saved_theirs = copy.deepcopy(ours.state_dict()), copy.deepcopy(theirs.state_dict())
    # torch's entries, besides widefuse's own options (master weights, state dtype).
    widefuse_only = {"foreach", "master_weights", "store_param_remainders", "master_weight_bits",
                     "state_dtype", "bf16_stochastic_round"}
    without_foreach = lambda groups: [{k: v for k, v in g.items() if k not in widefuse_only}
                                      for g in groups]
    assert without_foreach(saved_ours["param_groups"]) == \
        without_foreach(saved_theirs["param_groups"])
    assert {k: sorted(v) for k, v in saved_ours["state"].items()} == \
        {k: sorted(v) for k, v in saved_theirs["state"].items()}
    for index, state in saved_theirs["state"].items():
        for key, value in state.items():
            assert saved_ours["state"][index][key].dtype == value.dtype, key

    # Swap: torch continues from widefuse's checkpoint and widefuse from torch's, each on a
    # copy of the other's model.
    torch_continues = small_model()
    torch_continues.load_state_dict(ours_model.state_dict())
    continued_theirs = torch.optim.AdamW(torch_continues.parameters(), lr=1e-2, amsgrad=True,
                                         foreach=False)
    continued_theirs.load_state_dict(saved_ours)
    ours_continues = small_model()
    ours_continues.load_state_dict(theirs_model.state_dict())
    continued_ours = widefuse.optim.AdamW(ours_continues.parameters(), lr=1e-2, amsgrad=True)
    continued_ours.load_state_dict(saved_theirs)
    for batch in data[15:]:
        for model, optimizer in ((ours_model, ours), (theirs_model, theirs),
                                 (torch_continues, continued_theirs),
                                 (ours_continues, continued_ours)):
            train_step(model, optimizer, batch)
    assert_same_parameters(ours_continues, theirs_model, "widefuse from torch's checkpoint")
    assert_same_parameters(torch_continues, ours_model, "torch from widefuse's checkpoint")
    assert_same_parameters(ours_model, theirs_model, "uninterrupted")


def test_changed_lr_and_new_grads_do_not_retrace():
    model = small_model()
    optimizer = widefuse.optim.Adam(model.parameters(), lr=1e-2)
    schedule = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    for batch in batches(5):
        train_step(model, optimizer, batch, schedule)
    assert len(optimizer._traced) == 1
    prepared = optimizer._prepared
    for batch in batches(5, seed=2):
        train_step(model, optimizer, batch, schedule, set_to_none=False)
    assert optimizer._prepared is prepared  # no new binding either
    # A hyperparameter that Python control flow reads (weight_decay != 0) is a constant:
    # changing it traces again, once.
    optimizer.param_groups[0]["weight_decay"] = 0.1
    for batch in batches(3, seed=3):
        train_step(model, optimizer, batch)
    assert len(optimizer._traced) == 2


def test_a_parameter_without_grad_is_skipped_without_retracing_later():
    ours_model, theirs_model = small_model(), small_model()
    ours = widefuse.optim.Adam(ours_model.parameters(), lr=1e-2)
    theirs = torch.optim.Adam(theirs_model.parameters(), lr=1e-2, foreach=False)
    for step, batch in enumerate(batches(12)):
        frozen = step % 3 == 1  # the head gets no grad every third step
        for model, optimizer in ((ours_model, ours), (theirs_model, theirs)):
            model.head.weight.requires_grad_(not frozen)
            train_step(model, optimizer, batch)
    assert_same_parameters(ours_model, theirs_model)
    assert len(ours._traced) == 2
    for p_ours, p_theirs in zip(ours_model.parameters(), theirs_model.parameters()):
        assert float(ours.state[p_ours]["step"]) == float(theirs.state[p_theirs]["step"])


def test_closure_returns_the_loss():
    model = small_model()
    optimizer = widefuse.optim.AdamW(model.parameters())
    tokens, targets = batches(1)[0]

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(tokens).reshape(-1, 4),
                                                 targets.reshape(-1))
        loss.backward()
        return loss

    before = closure().item()
    assert optimizer.step(closure).item() == pytest.approx(before)
    assert optimizer.launches_per_step == 1


def test_grad_scaler_unscales_in_the_kernel_and_skips_steps_with_inf():
    # widefuse's optimizers take GradScaler's scale and inf flag into the step's launch (as
    # torch's fused Adam does); torch's AdamW(foreach=False) gets unscaled grads and skipped
    # steps from the scaler. Step 7's grads hold an inf: both skip it and halve the scale.
    ours_model, theirs_model = small_model(), small_model()
    ours = widefuse.optim.AdamW(ours_model.parameters(), lr=1e-2)
    theirs = torch.optim.AdamW(theirs_model.parameters(), lr=1e-2, foreach=False)
    scalers = [torch.amp.GradScaler("cpu", init_scale=2.0**10) for _ in range(2)]
    for step, (tokens, targets) in enumerate(batches(20)):
        for model, optimizer, scaler in ((ours_model, ours, scalers[0]),
                                         (theirs_model, theirs, scalers[1])):
            optimizer.zero_grad()
            logits = model(tokens)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 4), targets.reshape(-1))
            scaler.scale(loss).backward()
            if step == 7:
                model.head.weight.grad[1, 2] = float("inf")
            scaler.step(optimizer)
            scaler.update()
        assert ours.launches_per_step == 1
        assert scalers[0].get_scale() == scalers[1].get_scale()
        if step == 7:
            assert scalers[0].get_scale() == 2.0**9
    assert_same_parameters(ours_model, theirs_model)
    for p_ours, p_theirs in zip(ours_model.parameters(), theirs_model.parameters()):
        assert float(ours.state[p_ours]["step"]) == float(theirs.state[p_theirs]["step"]) == 19
        torch.testing.assert_close(ours.state[p_ours]["exp_avg_sq"],
                                   theirs.state[p_theirs]["exp_avg_sq"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("case", ["adamw", "adam amsgrad"])
def test_training_on_cuda_tensors_equals_torch(case):
    ours_class, theirs_class, options = CASES[case]
    ours_model, theirs_model = small_model().cuda(), small_model().cuda()
    ours = ours_class(ours_model.parameters(), **options)
    theirs = theirs_class(theirs_model.parameters(), foreach=False, **options)
    for batch in batches(100):
        batch = tuple(t.cuda() for t in batch)
        train_step(ours_model, ours, batch)
        train_step(theirs_model, theirs, batch)
        assert ours.launches_per_step == 1
    torch.cuda.synchronize()
    assert_same_parameters(ours_model, theirs_model, case)


def test_last_steps_grads_are_not_kept_alive():
    model = small_model()
    optimizer = widefuse.optim.AdamW(model.parameters())
    grads = []
    for batch in batches(3):
        train_step(model, optimizer, batch)  # the first step prepares, the others rebind
        grads += [weakref.ref(p.grad) for p in model.parameters()]
    optimizer.zero_grad(set_to_none=True)
    assert all(grad() is None for grad in grads)  # freed: the optimizer held no reference
    train_step(model, optimizer, batches(1, seed=9)[0])
    assert optimizer.launches_per_step == 1


def _swap_grads(params, values, how):
    for p, value in zip(params, values):
        if how == "grad data":
            p.grad.data = value.clone()
        else:
            p.grad.set_(value.clone())


def _change_state(optimizer, params, how):
    if how == "state data":
        for p in params:
            optimizer.state[p]["exp_avg"].data = torch.full_like(p, 0.25)
    elif how == "state entry":
        optimizer.state[params[0]]["exp_avg_sq"] = torch.full_like(params[0], 0.5)
    elif how == "state cleared":
        optimizer.state.clear()
    else:
        del optimizer.state[params[1]]


@pytest.mark.parametrize("how", ["grad data", "grad set_", "state data", "state entry",
                                 "state cleared", "state deleted"])
def test_memory_or_state_changed_behind_the_prepared_step_is_noticed(how):
    """A grad or a state tensor whose storage is swapped (`.data = t`, `set_`), a replaced
    state entry and a reset state are what the next step reads, as in torch: the prepared
    step binds again instead of reading or writing memory that was freed or is no longer
    the optimizer's."""
    generator = torch.Generator().manual_seed(11)
    shapes = [(5, 3), (7,)]
    ours = [torch.nn.Parameter(torch.randn(s, generator=generator)) for s in shapes]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    mine = widefuse.optim.AdamW(ours, lr=0.1)
    reference = torch.optim.AdamW(theirs, lr=0.1, foreach=False)
    for step in range(5):
        grads = [torch.randn(s, generator=generator) for s in shapes]
        for params in (ours, theirs):
            if step == 0:
                for p, g in zip(params, grads):
                    p.grad = g.clone()
            elif step == 3 and how.startswith("grad"):
                _swap_grads(params, [-3 * g for g in grads], how)
            else:  # the same grad objects, written in place: the prepared step's fast path
                for p, g in zip(params, grads):
                    p.grad.copy_(g)
        if step == 3 and how.startswith("state"):
            _change_state(mine, ours, how)
            _change_state(reference, theirs, how)
        mine.step()
        reference.step()
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a, b)
            torch.testing.assert_close(mine.state[a]["exp_avg"], reference.state[b]["exp_avg"])
