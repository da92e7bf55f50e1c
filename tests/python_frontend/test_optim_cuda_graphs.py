"""widefuse.optim steps captured into a CUDA graph (torch.cuda.graph) and replayed: the replays
must step as torch's capturable Adam does eagerly, whether the capture runs on the warm-up's
side stream (stream=) or on torch.cuda.graph's own stream, since each step launches on torch's
current stream. Needs a GPU (marked `gpu`); the capture protocol itself is proven without one
by runtime_cuda_capture_test on the driver double.

torch.cuda.make_graphed_callables does not apply to an optimizer step: it graphs the forward
and backward of an autograd callable (its sample_args are the callable's tensor inputs, its
outputs get a backward graph), and torch's own recipe for it ("partial-network capture") runs
optimizer.step() eagerly beside the graphed callables. A step takes no inputs, returns nothing
and runs under no_grad; capturing it is torch.cuda.graph's job ("whole-network capture")."""

import pytest
import torch

import widefuse.optim
from widefuse import Error

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

SHAPES = [(64, 32), (7,), (1,), (4097,), (3, 5, 2), (16, 16)]
WARMUP, REPLAYS = 3, 5


def _setup(mode):
    torch.manual_seed(29)
    ours = [torch.randn(shape, device="cuda", requires_grad=True) for shape in SHAPES]
    theirs = [p.detach().clone().requires_grad_() for p in ours]
    static_grads = [torch.zeros_like(p) for p in ours]
    for p, grad in zip(ours, static_grads):
        p.grad = grad
    grads = [[torch.randn_like(p) for p in ours] for _ in range(WARMUP + REPLAYS)]
    ours_optimizer = widefuse.optim.Adam(ours, lr=1e-2, capturable=True, mode=mode)
    theirs_optimizer = torch.optim.Adam(theirs, lr=1e-2, capturable=True, foreach=False)
    return ours, theirs, static_grads, grads, ours_optimizer, theirs_optimizer


def _step_torch(theirs, theirs_optimizer, grads):
    for step_grads in grads:
        for q, new in zip(theirs, step_grads):
            q.grad = new.clone()
        theirs_optimizer.step()


def _assert_equal(ours, theirs, ours_optimizer, theirs_optimizer):
    for p, q in zip(ours, theirs):
        torch.testing.assert_close(p, q)
        for key in ("exp_avg", "exp_avg_sq", "step"):
            torch.testing.assert_close(ours_optimizer.state[p][key],
                                       theirs_optimizer.state[q][key].to(
                                           ours_optimizer.state[p][key].dtype))


def _load(static_grads, values):
    """Copies one step's grads into the static grads, as torch's recipe for graphs does."""
    for grad, new in zip(static_grads, values):
        grad.copy_(new)


@pytest.mark.parametrize("capture_stream", ["warm-up", "torch's own"])
@pytest.mark.parametrize("mode", ["packed", "per-component"])
def test_captured_adam_replays_equal_torch_stepped_eagerly(mode, capture_stream):
    ours, theirs, static_grads, grads, ours_optimizer, theirs_optimizer = _setup(mode)
    # torch's recipe: warm up on a side stream, then capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for step in range(WARMUP):
            _load(static_grads, grads[step])
            ours_optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    # Without stream=, torch.cuda.graph captures on a stream of its own, not the warm-up's.
    with torch.cuda.graph(graph, **({"stream": side} if capture_stream == "warm-up" else {})):
        ours_optimizer.step()  # recorded, not run
    for step in range(WARMUP, WARMUP + REPLAYS):
        _load(static_grads, grads[step])
        graph.replay()
    torch.cuda.synchronize()
    _step_torch(theirs, theirs_optimizer, grads)
    _assert_equal(ours, theirs, ours_optimizer, theirs_optimizer)


def test_eager_steps_after_a_capture_go_on_on_any_stream():
    # One prepared step serves every stream: the default one, a side stream, the graph.
    ours, theirs, static_grads, grads, ours_optimizer, theirs_optimizer = _setup("packed")
    side = torch.cuda.Stream()
    streams = [torch.cuda.current_stream(), side, torch.cuda.current_stream()]
    for step, stream in enumerate(streams):
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            _load(static_grads, grads[step])
            ours_optimizer.step()
        torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ours_optimizer.step()
    _load(static_grads, grads[len(streams)])
    graph.replay()
    for step in range(len(streams) + 1, WARMUP + REPLAYS):  # eager again, after the graph
        _load(static_grads, grads[step])
        ours_optimizer.step()
    torch.cuda.synchronize()
    _step_torch(theirs, theirs_optimizer, grads)
    _assert_equal(ours, theirs, ours_optimizer, theirs_optimizer)


def test_capturing_a_step_that_was_never_prepared_is_an_error():
    # The first steps trace, create the state and load kernels: nothing a capture may hold.
    _, _, _, _, ours_optimizer, _ = _setup("packed")
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(Error, match="needs a step prepared before the capture"):
        with torch.cuda.graph(graph):
            ours_optimizer.step()


def test_a_captured_clipped_step_replays_equal_clip_grad_norm_then_adamw():
    # max_grad_norm: two phases whose total norm stays in device memory, so the step is its
    # launches alone and can be captured.
    torch.manual_seed(31)
    ours = [torch.randn(shape, device="cuda") for shape in SHAPES]
    theirs = [p.clone() for p in ours]
    static_grads = [torch.zeros_like(p) for p in ours]
    for p, grad in zip(ours, static_grads):
        p.grad = grad
    grads = [[torch.randn_like(p) * 3 for p in ours] for _ in range(WARMUP + REPLAYS)]
    optimizer = widefuse.optim.AdamW(ours, lr=1e-2, capturable=True, max_grad_norm=1.0)
    reference = torch.optim.AdamW(theirs, lr=1e-2, capturable=True, foreach=False)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for step in range(WARMUP):
            _load(static_grads, grads[step])
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        optimizer.step()
    norms = []
    for step in range(WARMUP, WARMUP + REPLAYS):
        _load(static_grads, grads[step])
        graph.replay()
        norms.append(optimizer.grad_norm.clone())
    torch.cuda.synchronize()
    totals = []
    for step_grads in grads:
        for q, new in zip(theirs, step_grads):
            q.grad = new.clone()
        totals.append(torch.nn.utils.clip_grad_norm_(theirs, 1.0))
        reference.step()
    torch.testing.assert_close(torch.stack(norms), torch.stack(totals[WARMUP:]))
    for p, q in zip(ours, theirs):
        torch.testing.assert_close(p, q)


def test_a_whole_network_capture_of_a_thousand_parameters_reallocates_every_grad():
    # torch's whole-network recipe: zero_grad(set_to_none=True), forward and backward inside
    # the capture, so every grad has a new address in the graph. The clip's member table
    # (1000 entries) is in device memory and is rebound under the capture.
    torch.manual_seed(31)
    layers = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(500)]).cuda()
    reference = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(500)]).cuda()
    reference.load_state_dict(layers.state_dict())
    ours = widefuse.optim.AdamW(layers.parameters(), lr=1e-3, capturable=True,
                                max_grad_norm=1.0)
    theirs = torch.optim.AdamW(reference.parameters(), lr=1e-3, capturable=True, foreach=False)
    inputs = torch.randn(8, 4, device="cuda")

    def step(model, optimizer, clip):
        optimizer.zero_grad(set_to_none=True)
        model(inputs).square().sum().backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=False)
        optimizer.step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP):
            step(layers, ours, clip=False)
            step(reference, theirs, clip=True)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(layers, ours, clip=False)
    for _ in range(REPLAYS):
        graph.replay()
        step(reference, theirs, clip=True)
    torch.cuda.synchronize()
    for p, q in zip(layers.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)
