"""Block-quantized optimizer state (widefuse.optim.AdamW8bit, AdamWFp8, state_format=): the
kernels against an independent NumPy implementation of each format (lowbit_reference.py),
on the host backend in several block orders and in the device-code emulator; against
torchao's and bitsandbytes' own optimizers in the same test; checkpoints both ways."""

import io
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if os.environ.get("WIDEFUSE_REQUIRE_TORCH"):  # CI: the test requirements must be there
    import bitsandbytes
    import torchao.optim
else:
    torchao = pytest.importorskip("torchao")
    import torchao.optim
    bitsandbytes = pytest.importorskip("bitsandbytes")

import lowbit_reference as reference  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402

# Block-aligned, several blocks; one not a multiple of the block; one below the threshold.
MIXED_SHAPES = [(64, 256), (4096,), (33, 129), (40, 50)]
CLASSES = {"int8": widefuse.optim.AdamW8bit, "int4": widefuse.optim.AdamW4bit,
           "fp8": widefuse.optim.AdamWFp8}
TORCHAO = {"int8": torchao.optim.AdamW8bit, "int4": torchao.optim.AdamW4bit,
           "fp8": torchao.optim.AdamWFp8}


def as_numpy(tensor):
    if tensor.dtype == torch.float8_e4m3fn:
        return tensor.view(torch.uint8).numpy()
    return tensor.detach().numpy()


def reference_codes(codes):
    return codes.view(np.uint8) if codes.dtype != np.uint8 else codes


def test_codebooks_are_torchaos_maps_built_by_the_scalar_linspace():
    for name, signed in (("dynamic8_signed", True), ("dynamic8_unsigned", False)):
        table = np.array(widefuse._widefuse.codebook_values(name), dtype=np.float32)
        assert np.array_equal(table, reference.dynamic_map(signed))
    table = np.array(widefuse._widefuse.codebook_values("dynamic4_signed"), dtype=np.float32)
    assert np.array_equal(table, reference.dynamic_map(True, 3, 4))
    # torchao builds the same maps with torch.linspace; a CPU whose vectorised linspace
    # fuses its multiply-add gives some entries an ulp or two away.
    theirs = np.array(torchao.optim.quant_utils.create_dynamic_map(True), dtype=np.float32)
    ours = np.array(widefuse._widefuse.codebook_values("dynamic8_signed"), dtype=np.float32)
    ulps = np.abs(theirs.view(np.int32).astype(np.int64) - ours.view(np.int32))
    assert ulps.max() <= 2


@pytest.mark.parametrize("name", ["int8", "int4", "fp8"])
@pytest.mark.parametrize("options", [dict(block_order="reverse"), dict(block_order="shuffle:5"),
                                     dict(host_execution="verify")],
                         ids=["reverse", "shuffle", "emulated-device"])
def test_twenty_steps_give_the_references_codes_and_scales(name, options):
    rng = np.random.default_rng(3)
    fmt = reference.Format(name)
    params = [rng.standard_normal(shape).astype(np.float32) * 0.1 for shape in MIXED_SHAPES]
    expected = [reference.AdamW(p, fmt) for p in params]
    tensors = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in params]
    optimizer = CLASSES[name](tensors, lr=1e-3)
    optimizer.set_fusion_options(**options)
    for _ in range(20 if "block_order" in options else 4):
        for tensor, model in zip(tensors, expected):
            grad = rng.standard_normal(tensor.shape).astype(np.float32) * 0.01
            tensor.grad = torch.from_numpy(grad)
            model.step(grad)
        optimizer.step()
        assert optimizer.launches_per_step == 1
    for tensor, model in zip(tensors, expected):
        state = optimizer.state[tensor]
        # within a few float32 ulps of the parameters (about 0.1): the update order may differ
        np.testing.assert_allclose(tensor.detach().numpy(), model.p, rtol=2e-6, atol=3e-8)
        if not model.quantized:
            assert "exp_avg" in state and state["exp_avg"].dtype == torch.float32
            continue
        for key, (codes, scale) in (("exp_avg", model.m), ("exp_avg_sq", model.v)):
            assert np.array_equal(as_numpy(state[f"{key}_codes"]), reference_codes(codes))
            assert np.array_equal(state[f"{key}_scale"].numpy(), scale)


def bnb_style_run(make, steps=50, shapes=((1024, 32), (1024, 1024), (1024, 4097)), seed=0):
    """bitsandbytes' test_optimizer8bit: after each step the quantized run's parameters are
    set to an fp32 AdamW run's, so only the state's error shows. Returns the mean absolute
    and mean relative parameter errors of every step, and the last states."""
    torch.manual_seed(seed)
    params = [torch.randn(shape) * 0.1 for shape in shapes]
    exact = [torch.nn.Parameter(p.clone()) for p in params]
    quantized = [torch.nn.Parameter(p.clone()) for p in params]
    torch_adamw = torch.optim.AdamW(exact, lr=1e-3, weight_decay=0.0)
    optimizer = make(quantized)
    errors = []
    for _ in range(steps):
        for a, b in zip(exact, quantized):
            grad = torch.randn(a.shape) * 0.01
            a.grad, b.grad = grad.clone(), grad.clone()
        torch_adamw.step()
        optimizer.step()
        absolute = [(a - b).abs().mean().item() for a, b in zip(exact, quantized)]
        relative = [((a - b).abs() / (a.abs() + 1e-6)).mean().item()
                    for a, b in zip(exact, quantized)]
        errors.append((max(absolute), max(relative)))
        with torch.no_grad():
            for a, b in zip(exact, quantized):
                b.copy_(a)
    return errors, torch_adamw, exact, optimizer, quantized


@pytest.mark.parametrize("name", ["int8", "int4", "fp8"])
def test_errors_are_no_worse_than_torchaos_and_within_bitsandbytes_bounds(name, pinned_maps):
    ours, torch_adamw, exact, optimizer, quantized = bnb_style_run(
        lambda ps: CLASSES[name](ps, lr=1e-3, weight_decay=0.0))
    theirs, *_ = bnb_style_run(lambda ps: TORCHAO[name](ps, lr=1e-3, weight_decay=0.0))
    for step, ((ours_abs, ours_rel), (ao_abs, ao_rel)) in enumerate(zip(ours, theirs)):
        assert ours_abs <= ao_abs * 1.02 + 1e-9, step
        assert ours_rel <= ao_rel * 1.02 + 1e-9, step
        if name != "int4":  # bitsandbytes has no 4-bit state: 4-bit is held to torchao
            assert ours_abs < 6e-5, step
    if name == "int4":
        return
    # bitsandbytes' bound on the dequantized states.
    state = optimizer.dequantized_state_dict()["state"]
    for index, param in enumerate(exact):
        reference_state = torch_adamw.state[param]
        for key in ("exp_avg", "exp_avg_sq"):
            close = torch.isclose(state[index][key], reference_state[key], atol=3e-3, rtol=1e-3)
            assert (~close).sum().item() < 20


def test_bitsandbytes_adamw8bit_is_no_more_accurate():
    ours, *_ = bnb_style_run(lambda ps: widefuse.optim.AdamW8bit(ps, lr=1e-3, weight_decay=0.0),
                             steps=20)
    bnb, *_ = bnb_style_run(
        lambda ps: bitsandbytes.optim.AdamW8bit(ps, lr=1e-3, weight_decay=0.0), steps=20)
    # bitsandbytes' CPU path updates as torch does (float64 bias corrections), widefuse as
    # torchao does: the first steps differ by rounding alone (1e-8), then by the state's error.
    for (ours_abs, _), (bnb_abs, _) in zip(ours, bnb):
        assert ours_abs <= bnb_abs * 1.05 + 1e-7
    assert max(bnb_abs for bnb_abs, _ in bnb) > 1e-6  # it quantized


@pytest.mark.parametrize("name", ["int8", "int4", "fp8"])
def test_two_steps_equal_torchaos_from_the_same_state(name, pinned_maps):
    torch.manual_seed(5)
    shapes = [(1024, 32), (1024, 1024), (128, 100)]
    ours = [torch.nn.Parameter(torch.randn(s) * 0.1) for s in shapes]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    mine, ao = CLASSES[name](ours), TORCHAO[name](theirs)
    for step in range(2):
        for a, b in zip(ours, theirs):
            grad = torch.randn(a.shape) * 0.01
            a.grad, b.grad = grad.clone(), grad.clone()
        mine.step()
        ao.step()
    for a, b in zip(ours, theirs):
        assert (a - b).abs().max().item() <= 1e-5
        if name == "int4":  # no map differs by a CPU's linspace: the same bits
            assert torch.equal(a, b)


@pytest.mark.parametrize("name", ["int8", "int4"])
def test_a_state_dict_round_trip_restores_exact_codes(name):
    torch.manual_seed(1)
    params = [torch.nn.Parameter(torch.randn(64, 256) * 0.1), torch.nn.Parameter(torch.randn(10))]
    optimizer = CLASSES[name](params)
    for step in range(30):
        for p in params:
            p.grad = torch.randn(p.shape) * 0.01
        optimizer.step()
        if step % 10 == 9:
            buffer = io.BytesIO()
            torch.save(optimizer.state_dict(), buffer)
            buffer.seek(0)
            loaded = torch.load(buffer, weights_only=True)
            before = {k: v.clone() for k, v in optimizer.state[params[0]].items()}
            optimizer = CLASSES[name](params)
            optimizer.load_state_dict(loaded)
            state = optimizer.state[params[0]]
            assert state["exp_avg_codes"].dtype == torch.uint8
            assert state["exp_avg_scale"].dtype == torch.float32
            for key, value in before.items():
                assert torch.equal(state[key], value), key


def test_checkpoints_move_to_and_from_torch_adamw():
    torch.manual_seed(2)
    params = [torch.nn.Parameter(torch.randn(32, 256) * 0.1)]
    optimizer = widefuse.optim.AdamW8bit(params)
    for _ in range(3):
        params[0].grad = torch.randn(32, 256) * 0.01
        optimizer.step()
    exported = optimizer.dequantized_state_dict()
    plain = torch.optim.AdamW([torch.nn.Parameter(params[0].detach().clone())])
    plain.load_state_dict(exported)
    state = plain.state[plain.param_groups[0]["params"][0]]
    own = optimizer.state[params[0]]
    fmt_values = exported["state"][0]["exp_avg"]
    assert torch.equal(state["exp_avg"], fmt_values)
    # Back: torch's state quantized on load. The unsigned map holds each block's absmax
    # exactly (code 1.0), so the second moment gets its codes back; the signed map's most
    # negative code is -0.99296875, so a block whose largest magnitude is negative scales anew.
    again = widefuse.optim.AdamW8bit(params)
    again.load_state_dict(plain.state_dict())
    assert torch.equal(again.state[params[0]]["exp_avg_sq_codes"], own["exp_avg_sq_codes"])
    values = again.dequantized_state_dict()["state"][0]["exp_avg"]
    scale = own["exp_avg_scale"].repeat_interleave(256).reshape(32, 256)
    assert ((values - fmt_values).abs() <= 0.02 * scale).all()


@pytest.mark.parametrize("name", ["int8", "int4"])
def test_a_torchao_checkpoint_loads_quantized_again(name):
    torch.manual_seed(4)
    theirs = [torch.nn.Parameter(torch.randn(32, 256) * 0.1)]
    ao = TORCHAO[name](theirs)
    for _ in range(2):
        theirs[0].grad = torch.randn(32, 256) * 0.01
        ao.step()
    ours = CLASSES[name]([torch.nn.Parameter(theirs[0].detach().clone())])
    ours.load_state_dict(ao.state_dict())
    state = ours.state[ours.param_groups[0]["params"][0]]
    values = ours.dequantized_state_dict()["state"][0]["exp_avg"]
    expected = ao.state[theirs[0]]["exp_avg"].dequantize()
    # Quantized again from torchao's values: a block whose largest magnitude is not a code of
    # magnitude 1 scales anew, so the values move by up to half a code's gap.
    gap = 0.02 if name == "int8" else 0.15
    scale = state["exp_avg_scale"].repeat_interleave(ours.param_groups[0]["block_size"])
    assert ((values - expected).abs().reshape(-1) <= gap * scale).all()
    assert state["exp_avg_codes"].dtype == torch.uint8


def test_any_pointwise_optimizer_quantizes_its_state_with_one_argument():
    torch.manual_seed(6)
    params = [torch.nn.Parameter(torch.randn(64, 128))]
    lion = widefuse.optim.Lion(params, lr=1e-4, state_format="int8")
    exact = widefuse.optim.Lion([torch.nn.Parameter(params[0].detach().clone())], lr=1e-4)
    for _ in range(5):
        grad = torch.randn(64, 128)
        params[0].grad = grad
        exact.param_groups[0]["params"][0].grad = grad.clone()
        lion.step()
        exact.step()
    state = lion.state[params[0]]
    assert set(state) == {"exp_avg_codes", "exp_avg_scale"}
    momentum = lion.dequantized_state_dict()["state"][0]["exp_avg"]
    reference_momentum = exact.state[exact.param_groups[0]["params"][0]]["exp_avg"]
    assert torch.allclose(momentum, reference_momentum, atol=0.02 * reference_momentum.abs().max())


@pytest.mark.parametrize("options", [dict(), dict(block_order="reverse"),
                                     dict(host_execution="verify")],
                         ids=["host", "reversed-blocks", "emulated-device"])
@pytest.mark.parametrize("name, arguments", [("AdamW8bit", {}),
                                             ("AdamW", dict(state_dtype=torch.float32))],
                         ids=["AdamW8bit", "AdamW"])
def test_stochastic_rounding_gives_the_references_bf16_bits(name, arguments, options):
    """A bf16 parameter's write is torchao's rule on the float32 update (an fp32 twin's), its
    random bits SplitMix64 of (seed, step, element): as the NumPy reference computes them.
    widefuse's AdamW takes the option too (computing the update in float32)."""
    torch.manual_seed(3)
    start = (torch.randn(64, 256) * 0.1).bfloat16()
    bf16 = torch.nn.Parameter(start.clone())
    fp32 = torch.nn.Parameter(start.float())
    cls = getattr(widefuse.optim, name)
    rounding = cls([bf16], lr=1e-2, bf16_stochastic_round=True, **arguments)
    rounding.set_fusion_options(**options)
    twin = cls([fp32], lr=1e-2, **arguments)
    for step in range(1, 4):
        grad = torch.randn(64, 256) * 0.01
        bf16.grad, fp32.grad = grad.bfloat16(), grad.bfloat16().float()
        rounding.step()
        twin.step()
        seed = int(rounding.state[bf16]["rounding_seed"])
        bits = reference.random_16_bits(seed, step, fp32.numel())
        expected = reference.stochastic_bf16(fp32.detach().numpy().ravel(), bits)
        assert np.array_equal(bf16.detach().view(torch.int16).numpy().ravel(),
                              expected.view(np.int16)), step
        fp32.data.copy_(bf16.detach().float())  # the twin goes on from what bf16 holds


def test_stochastic_rounding_is_reproducible_and_survives_a_checkpoint():
    torch.manual_seed(5)
    start = (torch.randn(32, 256) * 0.1).bfloat16()
    grads = [(torch.randn(32, 256) * 0.01).bfloat16() for _ in range(2)]

    def fresh(seed):
        torch.manual_seed(seed)  # what the parameters' rounding seeds are drawn from
        param = torch.nn.Parameter(start.clone())
        return param, widefuse.optim.AdamW8bit([param], bf16_stochastic_round=True)

    finals = []
    for _ in range(2):
        param, optimizer = fresh(6)
        for grad in grads:
            param.grad = grad.clone()
            optimizer.step()
        finals.append(param.detach().clone())
    assert torch.equal(finals[0], finals[1])
    # One step, a checkpoint through torch.save, a new optimizer (drawing other seeds), a step.
    param, optimizer = fresh(6)
    param.grad = grads[0].clone()
    optimizer.step()
    buffer = io.BytesIO()
    torch.save(optimizer.state_dict(), buffer)
    buffer.seek(0)
    resumed, optimizer = fresh(7)
    resumed.data.copy_(param.detach())
    optimizer.load_state_dict(torch.load(buffer, weights_only=True))
    resumed.grad = grads[1].clone()
    optimizer.step()
    assert torch.equal(resumed.detach(), finals[0])


class _RecordFloat32(TorchDispatchMode):
    """Records the shape of each float32 tensor an op makes off the meta device."""

    def __init__(self):
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(tensor, torch.Tensor) and tensor.dtype == torch.float32 and \
                    tensor.device.type != "meta":
                self.shapes.append(tuple(tensor.shape))
        return out


def test_zero_state_starts_as_codes_without_a_float32_copy():
    param = torch.nn.Parameter(torch.randn(64, 256) * 0.1)
    optimizer = widefuse.optim.AdamW8bit([param])
    param.grad = torch.randn(64, 256) * 0.01
    with _RecordFloat32() as recorded:
        optimizer.step()
    assert (64, 256) not in recorded.shapes
    assert set(optimizer.state[param]) == {"step", "exp_avg_codes", "exp_avg_scale",
                                           "exp_avg_sq_codes", "exp_avg_sq_scale"}
    assert recorded.shapes.count((64,)) <= 2  # the scales


class _OffsetLion(widefuse.optim.Lion):
    """Lion whose momentum starts at 0.25: its init_state changes the zeros it made."""

    def init_state(self, param):
        state = super().init_state(param)
        state["exp_avg"].add_(0.25)
        return state


class _StackedLion(widefuse.optim.Lion):
    """Lion whose momentum starts as a stack of its zeros (a list argument of an op)."""

    def init_state(self, param):
        zero = torch.zeros_like(param)
        return {"exp_avg": torch.stack([zero, zero]).sum(0) + 0.5}


def test_an_init_state_that_changes_its_zeros_runs_as_written():
    param = torch.nn.Parameter(torch.randn(64, 128))
    stacked = _StackedLion([param], lr=1e-4, state_format="int8")
    param.grad = torch.zeros(64, 128)
    stacked.step()
    momentum = stacked.dequantized_state_dict()["state"][0]["exp_avg"]
    assert torch.allclose(momentum, torch.full((64, 128), 0.5 * 0.99), rtol=1e-2)

    torch.manual_seed(7)
    start = torch.randn(64, 128)
    quantized = torch.nn.Parameter(start.clone())
    exact = torch.nn.Parameter(start.clone())
    lion = _OffsetLion([quantized], lr=1e-4, state_format="int8")
    reference_lion = _OffsetLion([exact], lr=1e-4)
    for _ in range(3):
        grad = torch.randn(64, 128) * 0.01
        quantized.grad, exact.grad = grad, grad.clone()
        lion.step()
        reference_lion.step()
    momentum = lion.dequantized_state_dict()["state"][0]["exp_avg"]
    expected = reference_lion.state[exact]["exp_avg"]
    assert expected.min() > 0.2
    assert torch.allclose(momentum, expected, atol=0.02 * expected.abs().max())


def test_a_skipped_step_keeps_codes_and_scales():
    params = [torch.nn.Parameter(torch.randn(32, 256) * 0.1)]
    optimizer = widefuse.optim.AdamW8bit(params)
    scaler = widefuse.optim.GradScaler("cpu", init_scale=1.0)
    scaler.scale(torch.ones(()))
    for step in range(3):
        grad = torch.randn(32, 256) * 0.01
        if step == 2:
            grad[0, 0] = float("inf")
        params[0].grad = grad
        before = {k: v.clone() for k, v in optimizer.state[params[0]].items()}
        scaler.step(optimizer)
        scaler.update()
    for key in ("exp_avg_codes", "exp_avg_scale", "exp_avg_sq_codes", "exp_avg_sq_scale"):
        assert torch.equal(optimizer.state[params[0]][key], before[key]), key


@pytest.mark.parametrize("arguments, error, message", [
    (dict(state_format="int3"), ValueError, "state_format='int3'"),
    (dict(state_format="int8", block_size=100), ValueError, "block_size=100"),
    (dict(block_size=256), ValueError, "needs a state_format"),
])
def test_bad_formats_are_refused_by_name(arguments, error, message):
    with pytest.raises(error, match=message):
        widefuse.optim.AdamW([torch.nn.Parameter(torch.zeros(4))], **arguments)


def test_stochastic_rounding_is_a_param_group_option_that_pickling_keeps():
    import pickle
    rounded = torch.nn.Parameter(torch.zeros(64, dtype=torch.bfloat16))
    nearest = torch.nn.Parameter(torch.zeros(64, dtype=torch.bfloat16))
    optimizer = widefuse.optim.AdamW([{"params": [rounded]},
                                      {"params": [nearest], "bf16_stochastic_round": False}],
                                     bf16_stochastic_round=True)
    copy = pickle.loads(pickle.dumps(optimizer))
    params = [p for group in copy.param_groups for p in group["params"]]
    assert [group["bf16_stochastic_round"] for group in copy.param_groups] == [True, False]
    for param in params:
        param.grad = torch.ones_like(param)
    copy.step()
    assert "rounding_seed" in copy.state[params[0]]
    assert "rounding_seed" not in copy.state[params[1]]


def test_stochastic_rounding_beside_remainders_is_refused_by_name():
    param = torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="store_param_remainders=True keeps that value exactly"):
        widefuse.optim.AdamW8bit([param], bf16_stochastic_round=True, master_weights=True,
                                 store_param_remainders=True)


def train_gpt2(make_optimizer, steps=200, dtype=torch.float32):
    """A small GPT-2 (transformers' config, random weights) learning a synthetic language: each
    token has four possible successors (a fixed random bigram chain), and every step draws
    new sequences, so the loss falls toward the chain's entropy instead of to a memorised
    zero. Returns the mean loss of the last 10 steps."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=256, n_positions=32, n_embd=64, n_layer=2,
                                     n_head=4)
    model = transformers.GPT2LMHeadModel(config).to(dtype)
    generator = torch.Generator().manual_seed(1)
    successors = torch.randint(0, 256, (256, 4), generator=generator)
    optimizer = make_optimizer(model.parameters())
    losses = []
    for _ in range(steps):
        tokens = torch.empty(16, 32, dtype=torch.long)
        tokens[:, 0] = torch.randint(0, 256, (16,), generator=generator)
        for t in range(1, 32):
            choice = torch.randint(0, 4, (16,), generator=generator)
            tokens[:, t] = successors[tokens[:, t - 1], choice]
        optimizer.zero_grad()
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses[-10:]) / 10


@pytest.fixture(scope="module")
def fp32_gpt2_loss():
    return train_gpt2(lambda ps: torch.optim.AdamW(ps, lr=1e-3))


def test_a_small_gpt2_trains_as_fp32_adamw_does(fp32_gpt2_loss):
    exact = fp32_gpt2_loss
    ours = train_gpt2(lambda ps: widefuse.optim.AdamW8bit(ps, lr=1e-3))
    theirs = train_gpt2(lambda ps: torchao.optim.AdamW8bit(ps, lr=1e-3))
    runs = f"fp32 AdamW {exact:.4f}, widefuse 8-bit {ours:.4f}, torchao 8-bit {theirs:.4f}"
    assert exact < 4.5, runs  # it learned (ln 256 = 5.55 at the start)
    assert abs(ours - exact) <= 0.01 * exact, runs


def test_a_bf16_gpt2_with_stochastic_rounding_trains_as_fp32_adamw_does(fp32_gpt2_loss):
    exact = fp32_gpt2_loss
    ours = train_gpt2(lambda ps: widefuse.optim.AdamW8bit(ps, lr=1e-3, bf16_stochastic_round=True),
                      dtype=torch.bfloat16)
    theirs = train_gpt2(lambda ps: torchao.optim.AdamW8bit(ps, lr=1e-3,
                                                           bf16_stochastic_round=True),
                        dtype=torch.bfloat16)
    nearest = train_gpt2(lambda ps: widefuse.optim.AdamW8bit(ps, lr=1e-3), dtype=torch.bfloat16)
    runs = (f"fp32 AdamW {exact:.4f}, bf16 with stochastic rounding: widefuse {ours:.4f}, "
            f"torchao {theirs:.4f}; bf16 rounded to nearest {nearest:.4f}")
    assert abs(ours - exact) <= 0.01 * exact, runs

