"""Quantized optimizer state of DTensor parameters (FSDP2, HSDP): 2 and 4 processes on the
gloo backend over 127.0.0.1 (distributed_low_bit.py, bounded in time). Each rank quantizes its
shard in blocks that stay inside it; with even shards on dimension 0 the parameters, codes
and scales equal the same optimizer's on the whole tensors bit for bit (AdamW8bit, AdamW4bit,
AdamWFp8), checkpoints round trip and dequantize; uneven shards keep float32 state on every
rank; FSDP2 training follows whole-model training; a parameter sharded on dimension 1 is
refused by name."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not os.environ.get("WIDEFUSE_REQUIRE_TORCH"):
    pytest.importorskip("torch.distributed.tensor")

WORKER = Path(__file__).with_name("distributed_low_bit.py")


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def run_ranks(world_size: int, scenarios: list[str], output: Path) -> dict:
    port = free_port()
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(WORKER.parent), os.environ.get("PYTHONPATH", "")]), OMP_NUM_THREADS="1")
    ranks = [subprocess.Popen([sys.executable, str(WORKER), str(rank), str(world_size), port,
                               str(output), *scenarios], env=environment,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(world_size)]
    try:
        logs = [rank.communicate(timeout=300)[0] for rank in ranks]
    finally:
        for rank in ranks:
            rank.kill()
    failed = [f"rank {number}:\n{log[-3000:]}" for number, (rank, log) in
              enumerate(zip(ranks, logs)) if rank.returncode != 0]
    assert not failed, "\n".join(failed)
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
