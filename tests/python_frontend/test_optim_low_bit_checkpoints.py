"""Checkpoints of the low-bit optimizers (widefuse.optim.AdamW8bit, AdamW4bit, AdamWFp8): the
weight decay and the state format stay the optimizer's own whatever it loads, torchao's codes
load as they are, mismatched state is refused before anything changes, and bitsandbytes'
state loads. Held to the NumPy reference (lowbit_reference.py), torch, torchao and
bitsandbytes in the same tests."""

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

import ml_dtypes  # noqa: E402
import lowbit_reference as reference  # noqa: E402
import widefuse  # noqa: E402
import widefuse.optim  # noqa: E402

CLASSES = {"int8": widefuse.optim.AdamW8bit, "int4": widefuse.optim.AdamW4bit,
           "fp8": widefuse.optim.AdamWFp8}
TORCHAO = {"int8": torchao.optim.AdamW8bit, "int4": torchao.optim.AdamW4bit,
           "fp8": torchao.optim.AdamWFp8}
BLOCK = {"int8": 256, "int4": 128, "fp8": 256}
FORMATS = [None, "int8", "int4", "fp8"]


def low_bit(fmt, params, **options):
    """torchao's AdamW update with moments in `fmt` (None: float32, a param-group option)."""
    if fmt is None:
        return widefuse.optim.AdamW8bit([{"params": params, "state_format": None}], **options)
    return CLASSES[fmt](params, **options)


def grads(shapes, seed):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator) * 0.01 for shape in shapes]


def run(optimizer, params, seeds):
    for seed in seeds:
        for param, grad in zip(params, grads([p.shape for p in params], seed)):
            param.grad = grad
        optimizer.step()


def clones(params):
    return [torch.nn.Parameter(p.detach().clone()) for p in params]


def saved_copy(optimizer):
    """`optimizer`'s state_dict through torch.save, as a checkpoint is: torch's
    load_state_dict keeps the tensors it is given, which the saving optimizer goes on
    updating in place."""
    buffer = io.BytesIO()
    torch.save(optimizer.state_dict(), buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def numpy_codes(codes):
    array = codes.view(torch.uint8).numpy() if codes.dtype == torch.float8_e4m3fn else \
        codes.numpy()
    return array.view(ml_dtypes.float8_e4m3fn) if codes.dtype == torch.float8_e4m3fn else array


# 1. Decoupled weight decay.
@pytest.mark.parametrize("source", ["torchao", "torch AdamW", "torch AdamW without the key"])
@pytest.mark.parametrize("name", ["AdamW8bit", "AdamW4bit", "AdamWFp8", "Adam8bit"])
def test_the_weight_decay_is_the_classes_after_any_load(name, source):
    """One step with a strong weight decay from loaded (empty) state, against torch's AdamW
    or Adam from the same start: decoupled for the AdamW forms, L2 for Adam8bit, whatever the
    checkpoint's groups say or lack."""
    torch.manual_seed(0)
    start = torch.randn(64, 256)
    params = [torch.nn.Parameter(start.clone())]
    options = dict(lr=1e-2, weight_decay=0.5)
    if source == "torchao":
        saved = getattr(torchao.optim, name)(clones(params), **options).state_dict()
        assert "decoupled_weight_decay" not in saved["param_groups"][0]
    else:
        saved = torch.optim.AdamW(clones(params), **options).state_dict()
        if source == "torch AdamW without the key":
            del saved["param_groups"][0]["decoupled_weight_decay"]
    optimizer = getattr(widefuse.optim, name)(params, **options)
    optimizer.load_state_dict(saved)
    decoupled = name.startswith("AdamW")
    assert optimizer.param_groups[0]["decoupled_weight_decay"] is decoupled
    twin = [torch.nn.Parameter(start.clone())]
    exact = (torch.optim.AdamW if decoupled else torch.optim.Adam)(twin, **options)
    run(optimizer, params, [1])
    run(exact, twin, [1])
    # The first step's moments are the grad's (quantized after the update reads them): only
    # rounding separates the two, where the other decay moves a weight by up to 5e-3.
    torch.testing.assert_close(params[0], twin[0], rtol=0, atol=1e-6)


# 2. The optimizer's format, whatever the checkpoint's.
@pytest.mark.parametrize("target", FORMATS, ids=str)
@pytest.mark.parametrize("saved_format", FORMATS, ids=str)
def test_a_checkpoint_of_any_format_continues_in_the_optimizers(saved_format, target):
    """The state loads in the optimizer's own format: the reference's codes of the values the
    checkpoint's codes stand for (float32 values for a group without a format), and two more
    steps are the reference's from there."""
    torch.manual_seed(1)
    shapes = [(64, 256), (40, 50)]
    params = [torch.nn.Parameter(torch.randn(s) * 0.1) for s in shapes]
    saving = low_bit(saved_format, params)
    run(saving, params, [1, 2, 3])
    saved = saving.state_dict()
    resumed = clones(params)
    optimizer = low_bit(target, resumed)
    optimizer.load_state_dict(saved)
    group = optimizer.param_groups[0]
    assert (group["state_format"], group["block_size"]) == (target, BLOCK.get(target))
    models = []
    for param, index in zip(resumed, range(len(shapes))):
        state = saved["state"][index]
        values = {}
        for key, signed in (("exp_avg", True), ("exp_avg_sq", False)):
            if f"{key}_codes" in state:  # an independent reading of the saved codes
                fmt = reference.Format(saved_format)
                values[key] = fmt.dequantize(numpy_codes(state[f"{key}_codes"]),
                                             state[f"{key}_scale"].numpy(),
                                             signed).reshape(param.shape)
            else:
                values[key] = state[key].numpy().copy()
        model = reference.AdamW(param.detach().numpy().copy(),
                                target and reference.Format(target))
        model.step_count = np.float32(3)
        mine = optimizer.state[param]
        if model.quantized and saved_format == target:  # a round trip: the same codes
            model.m, model.v = ((numpy_codes(state[f"{key}_codes"]).copy(),
                                 state[f"{key}_scale"].numpy().copy())
                                for key in ("exp_avg", "exp_avg_sq"))
        elif model.quantized:
            model.m = model.fmt.quantize(values["exp_avg"], True)
            model.v = model.fmt.quantize(values["exp_avg_sq"], False)
        if model.quantized:
            for key, (codes, scale) in (("exp_avg", model.m), ("exp_avg_sq", model.v)):
                assert mine[f"{key}_codes"].dtype == (
                    torch.float8_e4m3fn if target == "fp8" else torch.uint8)
                assert np.array_equal(numpy_codes(mine[f"{key}_codes"]).view(np.uint8),
                                      codes.view(np.uint8)), key
                assert np.array_equal(mine[f"{key}_scale"].numpy(), scale), key
        else:
            model.m, model.v = values["exp_avg"], values["exp_avg_sq"]
            assert set(mine) == {"step", "exp_avg", "exp_avg_sq"}
            for key in ("exp_avg", "exp_avg_sq"):
                assert mine[key].dtype == torch.float32
                assert np.array_equal(mine[key].numpy(), values[key]), key
        models.append(model)
    run(optimizer, resumed, [4, 5])
    for seed in (4, 5):
        for model, grad in zip(models, grads(shapes, seed)):
            model.step(grad.numpy())
    for param, model in zip(resumed, models):
        np.testing.assert_allclose(param.detach().numpy(), model.p, rtol=2e-6, atol=3e-8)


def test_a_group_without_a_format_gets_no_block_and_a_format_its_own_block():
    """A group of AdamW8bit that names state_format=None keeps float32 moments (as torchao's
    update: torch's AdamW within rounding); one that names int4 gets int4's block."""
    torch.manual_seed(2)
    params = [torch.nn.Parameter(torch.randn(64, 256) * 0.1) for _ in range(3)]
    twin = clones(params[1:2])
    optimizer = widefuse.optim.AdamW8bit([{"params": params[:1]},
                                          {"params": params[1:2], "state_format": None},
                                          {"params": params[2:], "state_format": "int4"}])
    exact = torch.optim.AdamW(twin)
    assert [(g["state_format"], g["block_size"]) for g in optimizer.param_groups] == \
        [("int8", 256), (None, None), ("int4", 128)]
    run(optimizer, params, [1, 2])
    for seed in (1, 2):
        twin[0].grad = grads([p.shape for p in params], seed)[1]
        exact.step()
    assert optimizer.state[params[1]]["exp_avg"].dtype == torch.float32
    torch.testing.assert_close(optimizer.state[params[1]]["exp_avg"],
                               exact.state[twin[0]]["exp_avg"], rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(params[1], twin[0], rtol=0, atol=1e-6)
    assert optimizer.state[params[2]]["exp_avg_scale"].shape == (64 * 256 // 128,)
    assert optimizer.state[params[2]]["exp_avg_codes"].shape == (64 * 256 // 2,)
    with pytest.raises(ValueError, match="block_size=64 needs a state_format"):
        widefuse.optim.AdamW8bit([{"params": params[:1]},
                                  {"params": params[1:2], "state_format": None,
                                   "block_size": 64}])


# 3. torchao's codes, as they are.
@pytest.mark.parametrize("name", ["int8", "int4", "fp8"])
def test_a_torchao_checkpoint_resumes_as_torchao_goes_on(name, pinned_maps):
    torch.manual_seed(3)
    shapes = [(64, 256), (40, 50)]
    theirs = [torch.nn.Parameter(torch.randn(s) * 0.1) for s in shapes]
    ao = TORCHAO[name](theirs)
    run(ao, theirs, [1, 2, 3])
    ours = clones(theirs)
    optimizer = CLASSES[name](ours)
    optimizer.load_state_dict(saved_copy(ao))
    state, saved = optimizer.state[ours[0]], ao.state[theirs[0]]
    for key in ("exp_avg", "exp_avg_sq"):
        assert torch.equal(state[f"{key}_codes"].view(torch.uint8),
                           saved[key].codes.view(torch.uint8)), key
        assert torch.equal(state[f"{key}_scale"], saved[key].scale), key
    run(optimizer, ours, [4, 5, 6])
    run(ao, theirs, [4, 5, 6])
    for a, b in zip(ours, theirs):
        assert (a - b).abs().max().item() <= 1e-5


def test_torchao_state_of_another_block_or_format_is_quantized_again():
    """OptimState8bit codes in blocks of 256 into AdamW8bit(block_size=64) and AdamWFp8: the
    reference's codes of torchao's values (built here by hand, so nothing compiles)."""
    torch.manual_seed(4)
    values = torch.randn(64, 256) * 1e-3
    subclass = torchao.optim.subclass_8bit.OptimState8bit
    saved_m = subclass.zeros((64, 256), signed=True)
    saved_m.copy_(values)
    saved_v = subclass.zeros((64, 256), signed=False)
    saved_v.copy_(values.square())
    saved = {"state": {0: {"step": torch.tensor(3.0), "exp_avg": saved_m, "exp_avg_sq": saved_v}},
             "param_groups": [dict(torchao.optim.AdamW8bit(
                 [torch.nn.Parameter(torch.zeros(64, 256))]).param_groups[0], params=[0])]}
    for optimizer, fmt in ((widefuse.optim.AdamW8bit, reference.Format("int8", 64)),
                           (widefuse.optim.AdamWFp8, reference.Format("fp8"))):
        param = torch.nn.Parameter(torch.zeros(64, 256))
        loaded = optimizer([param], block_size=fmt.block)
        loaded.load_state_dict(saved)
        for key, tensor, signed in (("exp_avg", saved_m, True), ("exp_avg_sq", saved_v, False)):
            codes, scale = fmt.quantize(tensor.dequantize().numpy(), signed)
            mine = loaded.state[param]
            assert np.array_equal(numpy_codes(mine[f"{key}_codes"]).view(np.uint8),
                                  codes.view(np.uint8)), key
            assert np.array_equal(mine[f"{key}_scale"].numpy(), scale), key


# 4. Mismatched state: refused before anything changes.
def saved_adamw8bit(shape=(64, 256), lr=5e-3):
    params = [torch.nn.Parameter(torch.randn(shape) * 0.1)]
    optimizer = widefuse.optim.AdamW8bit(params, lr=lr)
    run(optimizer, params, [1, 2])
    return optimizer.state_dict()


def assert_refused_unchanged(optimizer, param, saved, error, *messages):
    before = {key: value.clone() for key, value in optimizer.state[param].items()}
    lr = optimizer.param_groups[0]["lr"]
    with pytest.raises(error) as raised:
        optimizer.load_state_dict(saved)
    for message in messages:
        assert message in str(raised.value), str(raised.value)
    assert optimizer.param_groups[0]["lr"] == lr
    assert set(optimizer.state[param]) == set(before)
    for key, value in before.items():
        assert torch.equal(optimizer.state[param][key], value), key
    run(optimizer, [param], [9])  # still usable
    return str(raised.value)


@pytest.mark.parametrize("shape", [(128, 128), (32, 256), (64, 128), (40, 50)])
def test_quantized_state_of_another_shape_is_refused_before_anything_loads(shape):
    torch.manual_seed(5)
    saved = saved_adamw8bit()
    param = torch.nn.Parameter(torch.randn(shape) * 0.1)
    optimizer = widefuse.optim.AdamW8bit([param], lr=1e-3)
    run(optimizer, [param], [1])
    message = assert_refused_unchanged(optimizer, param, saved, ValueError,
                                       "parameter 0 of param group 0", "'exp_avg_codes'",
                                       "[64, 256]", f"{list(shape)}", "nothing was loaded")
    assert "exp_avg_scale" in message


def test_codes_without_their_scale_and_torchao_state_of_another_shape_are_refused():
    torch.manual_seed(6)
    saved = saved_adamw8bit()
    del saved["state"][0]["exp_avg_sq_scale"]
    param = torch.nn.Parameter(torch.randn(64, 256) * 0.1)
    optimizer = widefuse.optim.AdamW8bit([param], lr=1e-3)
    run(optimizer, [param], [1])
    assert_refused_unchanged(optimizer, param, saved, ValueError, "'exp_avg_sq_codes'",
                             "'exp_avg_sq_scale'", "parameter 0 of param group 0")
    subclass = torchao.optim.subclass_8bit.OptimState8bit
    theirs = {"state": {0: {"step": torch.tensor(2.0),
                            "exp_avg": subclass.zeros((128, 128), signed=True),
                            "exp_avg_sq": subclass.zeros((128, 128), signed=False)}},
              "param_groups": [dict(optimizer.param_groups[0], params=[0], lr=5e-3)]}
    assert_refused_unchanged(optimizer, param, theirs, RuntimeError, "'exp_avg'",
                             "[128, 128]", "[64, 256]", "nothing was loaded")


# 6. bitsandbytes' state.
def test_a_bitsandbytes_checkpoint_continues_as_bitsandbytes_does():
    """bitsandbytes' AdamW8bit (blockwise 8-bit state; float32 below 4096 elements; a last
    partial block) into widefuse's AdamW8bit: the moments bitsandbytes dequantizes, in this
    optimizer's format, and three more steps end where bitsandbytes' own three end."""
    torch.manual_seed(7)
    shapes = [(64, 256), (40, 50), (4100,)]
    theirs = [torch.nn.Parameter(torch.randn(s) * 0.1) for s in shapes]
    bnb = bitsandbytes.optim.AdamW8bit(theirs, lr=1e-3)
    run(bnb, theirs, [1, 2, 3])
    saved = saved_copy(bnb)
    kept = {index: dict(state) for index, state in saved["state"].items()}
    ours = clones(theirs)
    optimizer = widefuse.optim.AdamW8bit(ours, lr=1e-3)
    optimizer.load_state_dict(saved)
    assert {index: dict(state) for index, state in saved["state"].items()} == kept
    exported = optimizer.dequantized_state_dict()["state"]
    for index, param in enumerate(theirs):
        state = bnb.state[param]
        for key, n in (("exp_avg", 1), ("exp_avg_sq", 2)):
            buffer = state[f"state{n}"]
            if buffer.dtype == torch.uint8:
                expected = bitsandbytes.functional.dequantize_blockwise(
                    buffer, absmax=state[f"absmax{n}"], code=state[f"qmap{n}"], blocksize=256)
            else:
                expected = buffer
            if index == 0:  # its codes and absmaxes, as they are (the maps: within 2 ulps)
                assert torch.equal(optimizer.state[ours[0]][f"{key}_codes"], buffer), key
                assert torch.equal(optimizer.state[ours[0]][f"{key}_scale"],
                                   state[f"absmax{n}"]), key
                torch.testing.assert_close(exported[index][key], expected, rtol=3e-7, atol=0)
            else:  # float32 state here: bitsandbytes' values
                assert torch.equal(exported[index][key], expected), (index, key)
    run(optimizer, ours, [4])
    run(bnb, theirs, [4])
    for a, b in zip(ours, theirs):  # from the same state: rounding alone
        assert (a - b).abs().max().item() <= 1e-7
    run(optimizer, ours, [5, 6])
    run(bnb, theirs, [5, 6])
    for a, b in zip(ours, theirs):
        # bitsandbytes updates in other float32 ops (and float64 bias corrections), so a code
        # at a rounding edge may part; 0.1 lr, where runs from the start part by 0.4 lr.
        assert (a - b).abs().max().item() <= 1e-4


def test_bitsandbytes_state_an_optimizer_cannot_read_is_refused_by_name():
    torch.manual_seed(8)
    theirs = [torch.nn.Parameter(torch.randn(64, 256) * 0.1)]
    bnb = bitsandbytes.optim.AdamW8bit(theirs)
    run(bnb, theirs, [1])
    param = torch.nn.Parameter(theirs[0].detach().clone())
    lion = widefuse.optim.Lion([param], lr=1e-4)
    run(lion, [param], [1])
    assert_refused_unchanged(lion, param, bnb.state_dict(), ValueError, "bitsandbytes",
                             "Lion", "parameter 0 of param group 0", "nothing was loaded")
