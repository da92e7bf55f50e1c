"""One rank of test_optim_low_bit_distributed.py (started by the test; not collected by
pytest): quantized optimizer state of DTensor parameters on the gloo backend over 127.0.0.1.
Rank 0 saves what it found.

- exact: parameters distributed on dimension 0 (even shards, uneven ones, and a 1-D mesh
  dimension replicated beside a sharded one on 4 ranks) stepped by AdamW8bit, AdamW4bit and
  AdamWFp8 with the same grads as the same optimizer on the whole tensors in this process:
  parameters, codes and scales must be equal bit for bit (blocks never cross a shard);
  checkpoints round trip, and the dequantized state_dict is the whole run's dequantized;
- fsdp: a model under FSDP2 ``fully_shard`` trained with AdamW8bit beside the same model
  trained whole (full batch) in this process;
- refusal: a parameter sharded on dimension 1.

    python distributed_low_bit.py RANK WORLD_SIZE PORT OUTPUT SCENARIO...
"""

import os
import sys
import traceback

import torch
import torch.distributed as dist

import widefuse
import widefuse.optim

STEPS = 5
CLASSES = {"int8": widefuse.optim.AdamW8bit, "int4": widefuse.optim.AdamW4bit,
           "fp8": widefuse.optim.AdamWFp8}
# Shards of 8192 and 4096 elements on 2 ranks (blocks of 256 and 128 stay inside them); 33
# rows shard unevenly (17 and 16): that one keeps float32 state on every rank.
SHAPES = [(64, 256), (32, 256), (33, 256), (8, 16)]


def mesh_of(world_size):
    from torch.distributed.device_mesh import init_device_mesh
    if world_size == 4:  # HSDP's layout: replicated over dimension 0, sharded over 1
        return init_device_mesh("cpu", (2, 2)), 2
    return init_device_mesh("cpu", (world_size,)), 1


def placements(mesh):
    from torch.distributed.tensor import Replicate, Shard
    return [Replicate(), Shard(0)] if mesh.ndim == 2 else [Shard(0)]


def exact(world_size):
    from torch.distributed.tensor import distribute_tensor
    mesh, _ = mesh_of(world_size)
    found = {}
    for name, cls in CLASSES.items():
        torch.manual_seed(0)
        wholes = [torch.nn.Parameter(torch.randn(shape) * 0.1) for shape in SHAPES]
        grads = [[torch.randn(shape) * 0.01 for shape in SHAPES] for _ in range(STEPS)]
        shards = [torch.nn.Parameter(distribute_tensor(w.detach().clone(), mesh, placements(mesh)))
                  for w in wholes]
        ours, theirs = cls(shards, lr=1e-2), cls(wholes, lr=1e-2)
        for step in grads:
            for shard, whole, grad in zip(shards, wholes, step):
                shard.grad = distribute_tensor(grad, mesh, placements(mesh))
                whole.grad = grad.clone()
            ours.step()
            theirs.step()
        for k, (shard, whole) in enumerate(zip(shards, wholes)):
            state, expected = ours.state[shard], theirs.state[whole]
            keys = sorted(key for key in state if key != "step")
            if k == 2:  # uneven shards: full precision on every rank (the whole is quantized)
                assert keys == ["exp_avg", "exp_avg_sq"], (name, keys)
                continue
            assert torch.equal(shard.full_tensor(), whole), (name, k)
            for key in keys:  # this rank's part of the whole run's (gloo gathers no fp8)
                part = distribute_tensor(expected[key].view(torch.uint8), mesh, placements(mesh),
                                         src_data_rank=None).to_local()
                assert torch.equal(bits(state[key].to_local()), part.reshape(-1)), \
                    (name, k, key)
            found.setdefault(name, []).append(keys)
        assert ours.launches_per_step == 1
        check_checkpoints(cls, ours, theirs, shards, wholes)
    return found


def check_checkpoints(cls, ours, theirs, shards, wholes):
    saved = ours.state_dict()
    restored = cls([torch.nn.Parameter(s.detach().clone()) for s in shards], lr=1e-2)
    restored.load_state_dict(saved)
    for before, after in zip(saved["state"].values(), restored.state_dict()["state"].values()):
        for key, value in before.items():
            assert torch.equal(bits(local(value)), bits(local(after[key]))), key
    dequantized = ours.dequantized_state_dict()["state"]
    expected = theirs.dequantized_state_dict()["state"]
    for index in (0, 1, 3):  # 2, sharded unevenly, keeps float32 state here, not there
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(dequantized[index][key].full_tensor(), expected[index][key]), key


def bits(tensor):
    """The bytes of a tensor (fp8 codes compare by their bits)."""
    return tensor.reshape(-1).view(torch.uint8)


def local(tensor):
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def fsdp(world_size):
    from torch.distributed.fsdp import fully_shard
    mesh, _ = mesh_of(world_size)

    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Embedding(64, 128), torch.nn.Linear(128, 128),
                                   torch.nn.Tanh(), torch.nn.Linear(128, 64))

    sharded, whole = make(), make()
    start = [p.detach().clone() for p in whole.parameters()]
    for layer in sharded:
        if any(True for _ in layer.parameters()):
            fully_shard(layer, mesh=mesh)
    fully_shard(sharded, mesh=mesh)
    ours = widefuse.optim.AdamW8bit(sharded.parameters(), lr=1e-3)
    theirs = widefuse.optim.AdamW8bit(whole.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(1)
    rank = dist.get_rank()
    for _ in range(10):
        tokens = torch.randint(0, 64, (8, 16), generator=generator)
        rows = tokens.shape[0] // world_size
        for model, optimizer, batch in ((sharded, ours, tokens[rank * rows:(rank + 1) * rows]),
                                        (whole, theirs, tokens)):
            optimizer.zero_grad()
            logits = model(batch)
            torch.nn.functional.cross_entropy(logits.reshape(-1, 64), batch.reshape(-1)).backward()
            optimizer.step()
    quantized = [key for state in ours.state.values() for key in state if key.endswith("_codes")]
    worst = max((p.full_tensor() - q).abs().max().item()
                for p, q in zip(sharded.parameters(), whole.parameters()))
    moved = max((q - p).abs().max().item() for p, q in zip(start, whole.parameters()))
    return {"worst": worst, "moved": moved, "quantized": len(quantized),
            "launches": ours.launches_per_step}


def refusal(world_size):
    from torch.distributed.tensor import Shard, distribute_tensor
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (world_size,))
    param = torch.nn.Parameter(distribute_tensor(torch.zeros(16, 1024), mesh, [Shard(1)]))
    param.grad = distribute_tensor(torch.ones(16, 1024), mesh, [Shard(1)])
    optimizer = widefuse.optim.AdamW8bit([param], block_size=128)
    try:
        optimizer.step()
    except widefuse.Error as error:
        assert not optimizer.state[param]
        return str(error)
    return "no error"


def main() -> None:
    rank, world_size, port, output = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    results = {}
    try:
        for scenario in sys.argv[5:]:
            results[scenario] = globals()[scenario](world_size)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    if rank == 0:
        torch.save(results, output)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
