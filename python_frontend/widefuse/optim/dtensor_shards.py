"""DTensor parameters' shards (FSDP2, HSDP): the local shard a step updates, how many
elements every shard holds, and a tensor laid out on the mesh as a parameter is.

Quantized state uses them: each rank quantizes its local shard, in blocks that never cross a
shard's edge, and the codes and scales are DTensors laid out as the parameter is.

A parameter sharded on dimension 0 holds a contiguous range of the flattened tensor on each
rank. When every shard has the same number of elements and that number is a multiple of the
block, the shards' blocks are the whole tensor's blocks: the codes (of the parameter's shape,
or flat halves for int4) and the scales (one per block) of all ranks together are exactly
what quantizing the whole tensor gives, and their DTensors are sharded on dimension 0 as the
parameter is. Which parameters quantize is decided from the global shape alone, so every rank
decides alike: shards of unequal size keep full-precision state on every rank.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from .._widefuse import Error


def is_dtensor(tensor: Any) -> bool:
    """True for a DTensor (a tensor with a device mesh and placements)."""
    return getattr(tensor, "_local_tensor", None) is not None


def local_of(tensor: Any) -> torch.Tensor:
    """A DTensor's local shard, else the tensor."""
    return tensor._local_tensor if is_dtensor(tensor) else tensor


def shard_elements(param: Any, key: str) -> Optional[int]:
    """The number of elements every shard of DTensor `param` holds, or None when shards
    differ in size. Raises Error for a placement whose shards are not contiguous ranges of
    the flattened tensor (state `key` names the entry in the message)."""
    from torch.distributed.tensor import Replicate, Shard

    shards = 1
    for dim, placement in enumerate(param.placements):
        if isinstance(placement, Shard) and placement.dim == 0:
            shards *= param.device_mesh.size(dim)
        elif not isinstance(placement, Replicate):
            raise Error(f"state '{key}': quantized state of a DTensor parameter needs shards "
                        f"of dimension 0 (Shard(0)) or replicas; this one has {placement} on "
                        f"mesh dimension {dim}, whose shards are no contiguous blocks; use "
                        "state_format=None for it")
    rows = param.shape[0] if param.dim() else 1
    if rows % shards:
        return None
    return param.numel() // shards


def like_param(local: torch.Tensor, param: Any, shape: tuple) -> Any:
    """`local` (this rank's part of a tensor of global `shape` laid out as DTensor `param`'s
    shards) as a DTensor on the parameter's mesh and placements."""
    from torch.distributed.tensor import DTensor

    stride = torch.empty(shape, device="meta").stride()
    return DTensor.from_local(local, param.device_mesh, param.placements, run_check=False,
                              shape=torch.Size(shape), stride=stride)
