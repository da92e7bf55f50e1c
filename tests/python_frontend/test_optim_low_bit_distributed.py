"""Quantized optimizer state of DTensor parameters (FSDP2, HSDP): 2 and 4 processes on the
gloo backend over 127.0.0.1 (distributed_low_bit.py, bounded in time). Each rank quantizes its
shard in blocks that stay inside it; with even shards on dimension 0 the parameters, codes
and scales equal the same optimizer's on the whole tensors bit for bit (AdamW8bit, AdamW4bit,
AdamWFp8), checkpoints round trip and dequantize; uneven shards keep float32 state on every
rank; FSDP2 training follows whole-model training; a parameter sharded on dimension 1 is
refused by name."""

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not os.environ.get("WIDEFUSE_REQUIRE_TORCH"):
    pytest.importorskip("torch.distributed.tensor")

from gloo_ranks import run_ranks as run_processes  # noqa: E402

WORKER = Path(__file__).with_name("distributed_low_bit.py")


def run_ranks(world_size: int, scenarios: list[str], output: Path) -> dict:
    run_processes(WORKER, world_size, [output, *scenarios])
    return torch.load(output)


def test_two_ranks_quantize_their_shards_as_the_whole_tensors_are(tmp_path):
    results = run_ranks(2, ["exact", "fsdp", "refusal"], tmp_path / "rank0.pt")
    quantized = ["exp_avg_codes", "exp_avg_scale", "exp_avg_sq_codes", "exp_avg_sq_scale"]
    for name in ("int8", "int4", "fp8"):  # the evenly sharded ones; the small one is not
        assert results["exact"][name] == [quantized, quantized, ["exp_avg", "exp_avg_sq"]], name
    fsdp = results["fsdp"]
    assert fsdp["quantized"] >= 6 and fsdp["launches"] == 1, fsdp
    # The grads differ from the whole model's in rounding (reduce-scattered), and a code
    # may round the other way: a few percent of how far training moved the weights.
    assert fsdp["worst"] < 0.05 * fsdp["moved"], fsdp
    assert "needs shards of dimension 0" in results["refusal"], results["refusal"]


def test_four_ranks_hsdp_quantize_their_shards_as_the_whole_tensors_are(tmp_path):
    results = run_ranks(4, ["exact"], tmp_path / "rank0.pt")
    assert sorted(results["exact"]) == ["fp8", "int4", "int8"]
