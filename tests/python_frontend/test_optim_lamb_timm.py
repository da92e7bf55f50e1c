"""widefuse.optim.LAMB against timm's Lamb (pure Python) in the same test: a real model's
training with Hugging Face-style groups (no weight decay on biases and norms), with timm's
defaults (the trust ratio only where a group decays, the grads clipped to a global norm of
1.0) and with each option that changes the update."""

import pytest

torch = pytest.importorskip("torch")
timm_optim = pytest.importorskip("timm.optim")

import widefuse.optim  # noqa: E402
from torch_models import assert_same_parameters, batches, small_model, train_step  # noqa: E402

STEPS = 30


def hf_groups(model: torch.nn.Module) -> list[dict]:
    """Hugging Face's grouping: decay on matrices, none on biases, norms and scales."""
    decay = [p for name, p in model.named_parameters() if p.ndim >= 2]
    rest = [p for name, p in model.named_parameters() if p.ndim < 2]
    return [{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}]


OPTIONS = {
    "defaults": {},
    "always_adapt": dict(always_adapt=True),
    "trust_clip": dict(trust_clip=True, lr=3e-2),
    "no_grad_averaging": dict(grad_averaging=False),
    "no_clip": dict(max_grad_norm=None),
}


@pytest.mark.parametrize("name", list(OPTIONS))
def test_lamb_trains_as_timms_lamb(name):
    options = OPTIONS[name]
    ours, theirs = small_model(with_empty=False), small_model(with_empty=False)
    optimizer = widefuse.optim.LAMB(hf_groups(ours), **options)
    reference = timm_optim.Lamb(hf_groups(theirs), **options)
    for step, batch in enumerate(batches(STEPS)):
        train_step(ours, optimizer, batch)
        train_step(theirs, reference, batch)
        assert_same_parameters(ours, theirs, f"{name} step {step}")
    # The options acted: the trust ratio, the clip.
    assert optimizer.launches_per_step == (2 if name == "no_clip" else 3)


def test_the_default_differs_from_always_adapt_where_no_decay():
    # Without decay on biases and norms, timm's default steps them as Adam does (trust 1):
    # a different result from always_adapt (the paper's LAMB), which the test above tells
    # apart only if the two differ.
    default, adapted = small_model(with_empty=False), small_model(with_empty=False)
    first = widefuse.optim.LAMB(hf_groups(default))
    second = widefuse.optim.LAMB(hf_groups(adapted), always_adapt=True)
    for batch in batches(3):
        train_step(default, first, batch)
        train_step(adapted, second, batch)
    difference = max((a - b).abs().max().item() for a, b in
                     zip(default.parameters(), adapted.parameters()))
    assert difference > 1e-4
