"""widefuse.optim steps captured into a CUDA graph (torch.cuda.graph) and replayed: the replays
must step as torch's capturable Adam does eagerly. Needs a GPU (marked `gpu`); the capture
protocol itself is proven without one by runtime_cuda_capture_test on the driver double."""

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


@pytest.mark.parametrize("mode", ["packed", "per-component"])
def test_captured_adam_replays_equal_torch_stepped_eagerly(mode):
    ours, theirs, static_grads, grads, ours_optimizer, theirs_optimizer = _setup(mode)
    # torch's recipe: warm up on a side stream, then capture there.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for step in range(WARMUP):
            for grad, new in zip(static_grads, grads[step]):
                grad.copy_(new)
            ours_optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        ours_optimizer.step()  # recorded, not run
    for step in range(WARMUP, WARMUP + REPLAYS):
        for grad, new in zip(static_grads, grads[step]):
            grad.copy_(new)
        graph.replay()
    torch.cuda.synchronize()
    for step in range(WARMUP + REPLAYS):
        for q, new in zip(theirs, grads[step]):
            q.grad = new.clone()
        theirs_optimizer.step()
    for p, q in zip(ours, theirs):
        torch.testing.assert_close(p, q)
        for key in ("exp_avg", "exp_avg_sq", "step"):
            torch.testing.assert_close(ours_optimizer.state[p][key],
                                       theirs_optimizer.state[q][key].to(
                                           ours_optimizer.state[p][key].dtype))


def test_capturing_on_another_stream_than_the_warm_up_is_an_error():
    ours, _, static_grads, grads, ours_optimizer, _ = _setup("packed")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP):
            ours_optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(Error, match="warm up on the stream you capture on"):
        with torch.cuda.graph(graph):  # torch's own private capture stream
            ours_optimizer.step()
