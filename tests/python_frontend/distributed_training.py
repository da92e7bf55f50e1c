"""One rank of the 2-process training run of test_optim_distributed.py (started by the test;
not collected by pytest): the small model under FSDP2 ``fully_shard`` or DDP on the gloo
backend over 127.0.0.1, trained with widefuse.optim.AdamW; rank 0 saves the full parameters.

    python distributed_training.py RANK WORLD_SIZE PORT fsdp|ddp STEPS OUTPUT
"""

import os
import sys

import torch
import torch.distributed as dist

import widefuse.optim
from torch_models import batches, small_model


def rank_batch(batch, rank, world_size):
    """This rank's share of a global batch (the rows of its data-parallel slice)."""
    tokens, targets = batch
    rows = tokens.shape[0] // world_size
    return tokens[rank * rows:(rank + 1) * rows], targets[rank * rows:(rank + 1) * rows]


def main() -> None:
    rank, world_size, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    wrapper, steps, output = sys.argv[4], int(sys.argv[5]), sys.argv[6]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = small_model(with_empty=False)
    if wrapper == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (world_size,))
        for layer in (model.embedding, model.linear, model.norm, model.head):
            fully_shard(layer, mesh=mesh)
        trained = fully_shard(model, mesh=mesh)
    else:
        trained = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = widefuse.optim.AdamW(trained.parameters(), lr=1e-2)
    launches = set()
    for batch in batches(steps):
        tokens, targets = rank_batch(batch, rank, world_size)
        optimizer.zero_grad()
        logits = trained(tokens)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 targets.reshape(-1))
        loss.backward()
        optimizer.step()
        launches.add(optimizer.launches_per_step)
    full = {name: (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().clone()
            for name, p in trained.named_parameters()}
    state_kinds = sorted({type(value).__name__ for state in optimizer.state.values()
                          for value in state.values()})
    if rank == 0:
        torch.save({"parameters": full, "launches": sorted(launches),
                    "state_kinds": state_kinds}, output)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
