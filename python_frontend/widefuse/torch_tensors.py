"""torch tensors as results, without widefuse importing torch: a value is a torch tensor only
when the caller has imported torch and ``isinstance`` says so.

The argument reader reads a tensor's memory in place (C++, torch_tensor_reader.h: no DLPack
export, no copy); CPU tensors run on the host backend, CUDA tensors on the GPU on torch's
current stream. Plain outputs come back as torch tensors on the inputs' device.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from .data_type import DataType


def loaded_torch() -> Any:
    """The torch module when the program has imported it, else None."""
    return sys.modules.get("torch")


def is_tensor(value: Any) -> bool:
    """True for a torch.Tensor (and subclasses such as nn.Parameter)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def cuda_stream(device: str) -> int:
    """torch's current stream on `device` ("cuda:1"): where a steady execute() or a prepared
    step of torch CUDA tensors launches, read at each call (torch.cuda.graph captures on its
    own stream)."""
    return loaded_torch().cuda.current_stream(device).cuda_stream


def host_outputs(raw: Sequence[np.ndarray], data_types: Sequence[DataType]) -> list:
    """The host backend's outputs (bool, f16, bf16 and fp8 as unsigned integers of the same
    width) as CPU torch tensors sharing their memory."""
    torch = loaded_torch()
    outputs = []
    for array, data_type in zip(raw, data_types):
        tensor = torch.from_numpy(array)
        target = data_type.torch
        outputs.append(tensor if tensor.dtype is target else tensor.view(target))
    return outputs


def device_outputs(raw: Sequence[Any]) -> list:
    """Device outputs (DLPack-capable arrays) as CUDA torch tensors sharing their memory."""
    torch = loaded_torch()
    return [torch.from_dlpack(array) for array in raw]


def mark_written(tensors: Sequence[Any]) -> None:
    """Bumps the version counter of `tensors` (torch tensors) a kernel wrote in place, as torch's own
    in-place ops do: autograd then refuses a backward that saved one of them before the
    write, instead of computing with the new values. (Tensors made under inference mode
    have no counter and are skipped.)"""
    loaded_torch()._C._increment_version(tensors)
