"""One rank of test_optim_mesh_clip.py (started by the test; not collected by pytest): each
scenario trains the same model twice in this process, with torch (clip_grad_norm_ +
AdamW(foreach=False), torch's GradScaler) and with widefuse.optim, under FSDP2 ``fully_shard``
(a 1-D mesh, or HSDP's 2-D mesh with a replicated dimension) or DDP, on the gloo backend over
127.0.0.1, or, with WIDEFUSE_TEST_DEVICE=cuda, on NCCL with rank r on CUDA device r (as
torchrun runs a node's ranks). Every step's total norm and the final full parameters must
agree; the launches and all-reduces of widefuse's steps are recorded. Rank 0 saves what it
found.

    python distributed_clip.py RANK WORLD_SIZE PORT OUTPUT SCENARIO...
"""

import math
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import widefuse.optim
from torch_models import SmallModel, batches

STEPS = 20
DEVICE_TYPE = os.environ.get("WIDEFUSE_TEST_DEVICE", "cpu")  # cpu (gloo) or cuda (NCCL)
DEVICE = torch.device("cpu")  # rank r's CUDA device r under cuda, set by main()
INF_STEP = 7  # the scaler scenarios' step whose grads overflow on every rank
MAX_NORM = 0.5  # below most steps' total norm: the clip acts


def model(empty_shard: bool = True) -> SmallModel:
    # 33 embedding rows, 5 classes: shards of uneven sizes over 2 and 4 ranks, and the
    # 1-element `scale` is empty on every rank but the first. Without `empty_shard` (torch's
    # inf norm refuses an empty shard) `scale` has one element per class.
    torch.manual_seed(0)
    module = SmallModel(vocabulary=33, classes=5, with_empty=False)
    if not empty_shard:
        module.scale = torch.nn.Parameter(torch.ones(5))
    return module.to(DEVICE)


def wrapped(module: SmallModel, kind: str, world_size: int):
    if kind == "ddp":
        return torch.nn.parallel.DistributedDataParallel(module)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    if kind == "hsdp":  # replicate over dimension 0, shard over dimension 1
        mesh = init_device_mesh(DEVICE_TYPE, (2, world_size // 2),
                                mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh(DEVICE_TYPE, (world_size,))
    for layer in (module.embedding, module.linear, module.norm, module.head):
        fully_shard(layer, mesh=mesh)
    return fully_shard(module, mesh=mesh)


def full(tensor: torch.Tensor) -> torch.Tensor:
    return (tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor).detach().clone()


def loss_of(trained, batch, rank: int, world_size: int) -> torch.Tensor:
    tokens, targets = (part.to(DEVICE) for part in batch)
    rows = tokens.shape[0] // world_size
    tokens, targets = tokens[rank * rows:(rank + 1) * rows], targets[rank * rows:(rank + 1) * rows]
    logits = trained(tokens)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             targets.reshape(-1))


def run(scenario: str, rank: int, world_size: int) -> dict:
    """`scenario`: wrapper-clip[-inf][-scaler], wrapper one of fsdp, hsdp, ddp; clip one of
    step (max_grad_norm=) and function (widefuse.optim.clip_grad_norm_)."""
    kind, clip, *options = scenario.split("-")
    norm_type = math.inf if "inf" in options else 2.0
    scaled = "scaler" in options
    # torch's inf norm raises on an empty shard ("cannot compute the inf norm on an empty
    # tensor"), where widefuse's takes the other shards' maximum.
    empty_shard = norm_type != math.inf
    reference = wrapped(model(empty_shard), kind, world_size)
    candidate = wrapped(model(empty_shard), kind, world_size)
    torch_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2, foreach=False)
    in_step = dict(max_grad_norm=MAX_NORM, norm_type=norm_type) if clip == "step" else {}
    optimizer = widefuse.optim.AdamW(candidate.parameters(), lr=1e-2, **in_step)
    torch_scaler = torch.amp.GradScaler(DEVICE_TYPE, init_scale=2.0 ** 8) if scaled else None
    scaler = widefuse.optim.GradScaler(DEVICE_TYPE, init_scale=2.0 ** 8) if scaled else None
    norms, launches, collectives, clip_launches = [], set(), set(), set()
    for step, batch in enumerate(batches(STEPS, vocabulary=33, classes=5)):
        overflow = float("inf") if scaled and step == INF_STEP else 1.0
        # torch
        torch_optimizer.zero_grad()
        loss = loss_of(reference, batch, rank, world_size) * overflow
        if scaled:
            torch_scaler.scale(loss).backward()
            torch_scaler.unscale_(torch_optimizer)
        else:
            loss.backward()
        expected = torch.nn.utils.clip_grad_norm_(reference.parameters(), MAX_NORM, norm_type)
        if scaled:
            torch_scaler.step(torch_optimizer)
            torch_scaler.update()
        else:
            torch_optimizer.step()
        # widefuse
        optimizer.zero_grad()
        loss = loss_of(candidate, batch, rank, world_size) * overflow
        (scaler.scale(loss) if scaled else loss).backward()
        if clip == "function":
            if scaled:
                scaler.unscale_(optimizer)
            norm = widefuse.optim.clip_grad_norm_(candidate.parameters(), MAX_NORM, norm_type)
            clip_launches.add(widefuse.optim.clip.last_launches)
        if scaled:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        if clip == "step":
            norm = optimizer.grad_norm
        launches.add(optimizer.launches_per_step)
        collectives.add(optimizer.collectives_per_step)
        expected, norm = full(expected).double(), full(norm).double()
        norms.append((expected.item(), norm.item()))
        if step != INF_STEP or not scaled:
            torch.testing.assert_close(norm, expected, rtol=1e-5, atol=0,
                                       msg=lambda m: f"{scenario} step {step}'s norm: {m}")
        if scaled:
            assert scaler.get_scale() == torch_scaler.get_scale(), (scenario, step)
    for (name, a), b in zip(candidate.named_parameters(), reference.parameters()):
        torch.testing.assert_close(full(a), full(b), rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f"{scenario} {name}: {m}")
    return dict(norms=norms, launches=sorted(launches), collectives=sorted(collectives),
                clip_launches=sorted(clip_launches))


def refused_step(trained, optimizer, what: str) -> str:
    """The widefuse.Error of `optimizer`'s step over `trained`'s grads, with every parameter of
    `trained` as it was."""
    before = [full(p) for p in trained.parameters()]
    try:
        optimizer.step()
    except widefuse.Error as error:
        message = str(error)
    else:
        raise AssertionError(f"{what} was not refused")
    for p, old in zip(trained.parameters(), before):
        assert torch.equal(full(p), old)
    return message


def refusal(rank: int, world_size: int) -> str:
    """A DTensor model's step with a plain parameter beside it, clipped: refused, and nothing
    written."""
    trained = wrapped(model(), "fsdp", world_size)
    extra = torch.nn.Parameter(torch.ones(3, device=DEVICE))
    optimizer = widefuse.optim.AdamW([*trained.parameters(), extra], lr=1e-2,
                                     max_grad_norm=MAX_NORM)
    loss_of(trained, batches(1, vocabulary=33, classes=5)[0], rank, world_size).backward()
    extra.grad = torch.ones(3, device=DEVICE)
    message = refused_step(trained, optimizer, "a plain parameter beside DTensors")
    assert torch.equal(extra.detach().cpu(), torch.ones(3)) and not optimizer.state
    return message


def adafactor_refusal(rank: int, world_size: int) -> str:
    """Adafactor's row and column factors over DTensor shards: refused before anything runs."""
    trained = wrapped(model(), "fsdp", world_size)
    optimizer = widefuse.optim.Adafactor(trained.parameters(), lr=1e-2)
    loss_of(trained, batches(1, vocabulary=33, classes=5)[0], rank, world_size).backward()
    return refused_step(trained, optimizer, "Adafactor's factors over shards")


def main() -> None:
    rank, world_size, port, output = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    global DEVICE
    if DEVICE_TYPE == "cuda":
        DEVICE = torch.device("cuda", rank)
        torch.cuda.set_device(DEVICE)
    dist.init_process_group("nccl" if DEVICE_TYPE == "cuda" else "gloo", rank=rank,
                            world_size=world_size, timeout=timedelta(seconds=120))
    results = {}
    for scenario in sys.argv[5:]:
        if scenario in ("refusal", "adafactor"):
            results[scenario] = (refusal if scenario == "refusal" else adafactor_refusal)(
                rank, world_size)
        else:
            results[scenario] = run(scenario, rank, world_size)
    if rank == 0:
        torch.save(results, output)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
