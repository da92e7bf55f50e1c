"""widefuse.optim equals torch.optim bit for bit where torch's kernels round as IEEE arithmetic
does: torch's lerp, addcmul and add with alpha fuse their last multiply and add (one
rounding), and so do widefuse's traced methods of those names (torch_arithmetic.py). Each
test runs torch's class beside widefuse's, from the same parameters and grads.

Not compared bit for bit: the single-tensor and foreach paths' Adam parameter update, which
reads torch's CPU sqrt (not correctly rounded on every CPU; torch's fused Adam takes a
correctly rounded one), and the elements torch's vectorized CPU kernels leave to their scalar
tail loops, which the compiler contracts differently: the shapes here are multiples of 64
elements."""

import pytest

torch = pytest.importorskip("torch")

import widefuse.optim  # noqa: E402

SGD_CASES = {
    "momentum nesterov weight decay": dict(lr=1e-2, momentum=0.9, nesterov=True,
                                           weight_decay=1e-2),
    "momentum dampening": dict(lr=1e-2, momentum=0.9, dampening=0.1),
    "plain maximize": dict(lr=1e-2, maximize=True),
}
ADAM_CASES = {
    "adam weight decay": (widefuse.optim.Adam, torch.optim.Adam, dict(lr=1e-3, weight_decay=0.1)),
    "adamw amsgrad": (widefuse.optim.AdamW, torch.optim.AdamW, dict(lr=1e-3, amsgrad=True)),
    "adamw betas": (widefuse.optim.AdamW, torch.optim.AdamW,
                    dict(lr=3e-3, betas=(0.8, 0.95), weight_decay=0.3)),
}


def run_both(ours_class, theirs_class, options, their_options, dtype, steps=6):
    generator = torch.Generator().manual_seed(3)
    start = [(torch.randn(shape, generator=generator) * 0.1).to(dtype)
             for shape in [(256, 64), (4096,), (64,)]]
    ours = [torch.nn.Parameter(p.clone()) for p in start]
    theirs = [torch.nn.Parameter(p.clone()) for p in start]
    mine = ours_class(ours, **options)
    reference = theirs_class(theirs, **options, **their_options)
    for _ in range(steps):
        for a, b in zip(ours, theirs):
            grad = (torch.randn(a.shape, generator=generator) * 0.01).to(dtype)
            a.grad, b.grad = grad.clone(), grad.clone()
        mine.step()
        reference.step()
    return ours, mine, theirs, reference


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("way", ["foreach=False", "foreach=True", "fused=True"])
@pytest.mark.parametrize("case", sorted(SGD_CASES))
def test_sgd_equals_torchs_bit_for_bit(case, way, dtype):
    if dtype is torch.bfloat16 and way != "foreach=False":
        pytest.skip("torch's foreach and fused SGD round bf16 in between differently")
    name, value = way.split("=")
    ours, mine, theirs, reference = run_both(widefuse.optim.SGD, torch.optim.SGD,
                                             SGD_CASES[case], {name: value == "True"}, dtype)
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)
        if "momentum" in case:
            assert torch.equal(mine.state[a]["momentum_buffer"],
                               reference.state[b]["momentum_buffer"])


@pytest.mark.parametrize("case", sorted(ADAM_CASES))
def test_adam_equals_torchs_fused_adam_bit_for_bit(case):
    ours_class, theirs_class, options = ADAM_CASES[case]
    ours, mine, theirs, reference = run_both(ours_class, theirs_class, options,
                                             dict(fused=True), torch.float32)
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)
        for key in reference.state[b]:
            assert torch.equal(mine.state[a][key], reference.state[b][key]), key


@pytest.mark.parametrize("case", sorted(ADAM_CASES))
def test_adams_moments_equal_torchs_single_tensor_adam_bit_for_bit(case):
    ours_class, theirs_class, options = ADAM_CASES[case]
    # One step from the same parameters: the moments read no sqrt.
    ours, mine, theirs, reference = run_both(ours_class, theirs_class, options,
                                             dict(foreach=False), torch.float32, steps=1)
    for a, b in zip(ours, theirs):
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(mine.state[a][key], reference.state[b][key]), key
