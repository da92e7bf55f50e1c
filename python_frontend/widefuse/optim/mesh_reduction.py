"""A step over DTensor parameters reduces across the mesh: the reductions its later phase
reads (the clip's total norm, GradScaler's inf check, LAMB's norms), each computed over a
rank's local shards in phase 1, are all-reduced through torch.distributed at the phase
boundary, before phase 2 reads them. No grad is replicated, nothing is read on the host, and
the step stays one fused launch per phase (docs/torch.md §3).

Which parameters this reads: every parameter of the step a DTensor on one mesh, each sharded
(``Shard``) over the same mesh dimensions and replicated (``Replicate``) over the others, as
FSDP2's ``fully_shard`` makes them (on a 1-D mesh, or HSDP's 2-D one). A kept result is then
a sum, maximum or minimum over shards, combined over each sharded dimension's process group:
one all-reduce per sharded mesh dimension and step, of every kept result packed together. A
parameter replicated over a dimension is not combined over it, so it is counted once, as
torch's DTensor norm counts it. What this cannot combine right is refused before anything is
written: other placements (``Partial``, parameters sharded over different dimensions),
parameters on several meshes, DTensors beside plain tensors, and reductions that are not
whole-tensor ones (Adafactor's row and column factors).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from .._widefuse import Error
from .dtensor_shards import is_dtensor

# The all-reduce of each reduction. Beside sums, `any` travels as a count of true flags (a
# sum > 0) and `all` as a count of false ones (a sum == 0): one all-reduce for the clip's norm
# and GradScaler's inf check together.
_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN", "any": "MAX", "all": "MIN"}


def mesh_of(params: list, where: list[str]) -> Optional[tuple[Any, tuple[int, ...]]]:
    """(mesh, sharded mesh dimensions) of a step's parameters (`where`: each one's name in
    messages), or None when none is a DTensor. Raises Error for what MeshReduction cannot
    combine right."""
    dtensors = [is_dtensor(p) for p in params]
    if not any(dtensors):
        return None
    if not all(dtensors):
        plain = where[dtensors.index(False)]
        raise Error(f"{plain} is a plain tensor beside DTensor parameters: widefuse reduces a "
                    "step's norms across the mesh of DTensor parameters only; put every "
                    "parameter of the optimizer on the mesh (fully_shard the whole model)")
    from torch.distributed.tensor import Replicate, Shard

    mesh, sharded = None, None
    for param, name in zip(params, where):
        kinds = []
        for dim, placement in enumerate(param.placements):
            if isinstance(placement, Shard):
                kinds.append(dim)
            elif not isinstance(placement, Replicate):
                raise Error(f"{name} has placement {placement} on mesh dimension {dim}: "
                            "widefuse's step reads parameters that are sharded (Shard) or "
                            "replicated (Replicate) on each mesh dimension")
        if mesh is None:
            mesh, sharded = param.device_mesh, tuple(kinds)
        elif param.device_mesh != mesh:
            raise Error(f"{name} is on another device mesh than {where[0]}: one optimizer "
                        "step reduces across one mesh")
        elif tuple(kinds) != sharded:
            raise Error(f"{name} is sharded over mesh dimensions {tuple(kinds)}, {where[0]} "
                        f"over {sharded}: widefuse combines a step's norms over the same "
                        "sharded dimensions for every parameter")
    return mesh, sharded


class MeshReduction:
    """The phase boundary of a step over parameters sharded over `sharded` dimensions of
    `mesh`: all-reduces every kept result over each of those dimensions' process groups, in
    place, on the step's stream."""

    def __init__(self, mesh: Any, sharded: tuple[int, ...]) -> None:
        self.mesh = mesh
        self.sharded = sharded
        self.groups = [mesh.get_group(mesh_dim=dim) for dim in sharded]
        #: All-reduces issued by the last step (what the tests and benchmarks count).
        self.last_collectives = 0

    def __call__(self, phase: int, kept: list, stream: int) -> None:
        self.last_collectives = 0
        if not self.groups or not kept:
            return
        for result in kept:
            if result.reduction not in _OPS:
                raise Error(f"the step's reduction '{result.name}' is a {result.reduction}, "
                            "which widefuse cannot combine across a device mesh")
            if result.array.shape != ():
                raise Error(f"the step reads '{result.name}', a {result.reduction} over rows "
                            "of a tensor (Adafactor's factors): widefuse cannot combine it "
                            "across the shards of a DTensor; use torch's optimizer under FSDP2")
        tensors = [result.torch() for result in kept]
        reductions = [result.reduction for result in kept]
        device = tensors[0].device
        if (tensors[0].is_cuda and stream and
                stream != torch.cuda.current_stream(device).cuda_stream):
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=device)):
                self.combine(tensors, reductions)
        else:
            self.combine(tensors, reductions)

    def combine(self, tensors: list, reductions: list[str]) -> None:
        """All-reduces each 0-d tensor of a rank's shards, in place, by its reduction ("sum",
        "max", "min", "any", "all") over the sharded dimensions' groups: one all-reduce per
        group for all of them (two where maxima or minima meet sums), counted in
        last_collectives. On the current stream."""
        import torch.distributed as dist

        with_sums = "sum" in reductions

        def op_of(reduction: str) -> str:  # flags travel with the sums when there are any
            return "SUM" if with_sums and reduction in ("any", "all") else _OPS[reduction]

        for op in sorted({op_of(reduction) for reduction in reductions}):
            members = [k for k, reduction in enumerate(reductions) if op_of(reduction) == op]
            # `all` among sums travels as a count of false flags (0: all true).
            negated = [op == "SUM" and reductions[k] == "all" for k in members]
            packed = torch.stack([1.0 - tensors[k].to(torch.float64) if flip else
                                  tensors[k].to(torch.float64)
                                  for k, flip in zip(members, negated)])
            for group in self.groups:
                dist.all_reduce(packed, op=getattr(dist.ReduceOp, op), group=group)
                self.last_collectives += 1
            for k, flip, value in zip(members, negated, packed.unbind()):
                tensors[k].copy_(value == 0 if flip else value)  # a bool: value != 0
