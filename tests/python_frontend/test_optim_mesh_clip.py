"""widefuse.optim's clip and inf check over a DTensor mesh: 2 and 4 processes on the gloo
backend over 127.0.0.1 (distributed_clip.py, bounded in time) train the same model with torch
(clip_grad_norm_ + AdamW(foreach=False), torch's GradScaler) and with widefuse.optim, in the
same process, 20 steps: under FSDP2 (uneven shards, an empty one), HSDP's 2-D mesh with a
replicated dimension, and DDP; with max_grad_norm= (norm 2 and inf) and clip_grad_norm_,
with and without a GradScaler whose step 7 overflows (clip_grad_norm_'s norm is one fused
launch whose result is all-reduced). Every step's total norm and the final
full parameters agree with torch's (asserted in each rank); a clipped step is 2 launches and
1 all-reduce (0 under DDP, whose grads are whole)."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gloo_ranks import run_ranks as run_processes  # noqa: E402

WORKER = Path(__file__).with_name("distributed_clip.py")


def run_ranks(world_size: int, scenarios: list[str], output: Path, device: str = "cpu") -> dict:
    run_processes(WORKER, world_size, [output, *scenarios],
                  environment={"WIDEFUSE_TEST_DEVICE": device})
    return torch.load(output)


def test_two_ranks_clip_across_the_mesh_as_torch_does(tmp_path):
    scenarios = ["fsdp-step", "fsdp-step-inf", "fsdp-step-scaler", "fsdp-function",
                 "fsdp-function-scaler", "ddp-step", "refusal", "adafactor"]
    results = run_ranks(2, scenarios, tmp_path / "rank0.pt")
    for scenario in ("fsdp-step", "fsdp-step-inf", "fsdp-step-scaler"):
        assert results[scenario]["launches"] == [2], scenario
        assert results[scenario]["collectives"] == [1], scenario
    # clip_grad_norm_ over DTensor grads: the norm is one launch and the scaling is folded
    # into the step (which then reads no reduction: one launch, no all-reduce of its own).
    for scenario in ("fsdp-function", "fsdp-function-scaler"):
        assert results[scenario]["clip_launches"] == [1], scenario
    assert results["fsdp-function"]["launches"] == [1]
    assert results["ddp-step"]["launches"] == [2]
    assert results["ddp-step"]["collectives"] == [0]
    # The clip acted: torch's total norm is above max_norm in most steps.
    norms = [expected for expected, _ in results["fsdp-step"]["norms"]]
    assert sum(norm > 0.5 for norm in norms) > len(norms) // 2, norms
    assert "plain tensor beside DTensor parameters" in results["refusal"]
    assert "factored second moment" in results["adafactor"]
    assert "sharded across a mesh" in results["adafactor"]


def test_four_ranks_hsdp_and_uneven_fsdp_clip_as_torch_does(tmp_path):
    results = run_ranks(4, ["hsdp-step", "fsdp-step-scaler"], tmp_path / "rank0.pt")
    for scenario in ("hsdp-step", "fsdp-step-scaler"):
        assert results[scenario]["launches"] == [2], scenario
        # HSDP: one all-reduce over the sharded dimension; the replicated one has whole norms.
        assert results[scenario]["collectives"] == [1], scenario


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="needs two CUDA devices")
def test_two_ranks_on_two_gpus_clip_as_torch_does(tmp_path):
    """One rank per GPU on NCCL, as torchrun runs a node: rank 1 steps on cuda:1."""
    scenarios = ["fsdp-step", "fsdp-step-scaler", "fsdp-function", "ddp-step"]
    results = run_ranks(2, scenarios, tmp_path / "rank0.pt", device="cuda")
    assert results["fsdp-step"]["launches"] == [2]
    assert results["fsdp-step"]["collectives"] == [1]
    assert results["ddp-step"]["collectives"] == [0]
