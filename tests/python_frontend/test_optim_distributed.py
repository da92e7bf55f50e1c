"""widefuse.optim under torch.distributed: two processes on the gloo backend over 127.0.0.1
(started here, bounded in time) train the small model under FSDP2 ``fully_shard`` (DTensor
parameters, stepped through their local shards, one of them empty on rank 1) and under DDP with
widefuse.optim.AdamW; the result equals single-process torch.optim.AdamW on the full model and
the full batch."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gloo_ranks import run_ranks as run_processes  # noqa: E402
from torch_models import batches, small_model  # noqa: E402

WORKER = Path(__file__).with_name("distributed_training.py")
STEPS = 30


def single_process_reference():
    model = small_model(with_empty=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=False)
    for tokens, targets in batches(STEPS):
        optimizer.zero_grad()
        logits = model(tokens)
        torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                          targets.reshape(-1)).backward()
        optimizer.step()
    return dict(model.named_parameters())


def run_ranks(wrapper: str, output: Path) -> None:
    run_processes(WORKER, 2, [wrapper, STEPS, output], timeout=240)


@pytest.mark.parametrize("wrapper", ["fsdp", "ddp"])
def test_two_process_training_equals_single_process_torch(wrapper, tmp_path):
    output = tmp_path / "rank0.pt"
    run_ranks(wrapper, output)
    result = torch.load(output)
    assert result["launches"] == [1]
    if wrapper == "fsdp":  # state follows torch's DTensor conventions
        assert result["state_kinds"] == ["DTensor", "Tensor"]
    expected = single_process_reference()
    for name, value in result["parameters"].items():
        torch.testing.assert_close(value, expected[name.removeprefix("module.")].detach(),
                                   msg=lambda m: f"{wrapper} {name}: {m}")
