"""torch tensors as arguments and results, without widefuse importing torch: a value is a
torch tensor only when the caller has imported torch and ``isinstance`` says so.

A tensor's memory is read in place (``data_ptr``, ``stride``: no DLPack export, no copy);
CPU tensors run on the host backend, CUDA tensors on the GPU on torch's current stream.
Plain outputs come back as torch tensors on the inputs' device.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence

import numpy as np

from ._widefuse import Error
from .data_type import DataType, from_torch


def loaded_torch() -> Any:
    """The torch module when the program has imported it, else None."""
    return sys.modules.get("torch")


def is_tensor(value: Any) -> bool:
    """True for a torch.Tensor (and subclasses such as nn.Parameter)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def check_tensor(tensor: Any, name: str, allow_grad: bool = False) -> DataType:
    """Raises Error for a tensor widefuse cannot read or write in place; returns its DataType.
    A tensor that requires grad is refused while grad mode is on (widefuse records no autograd
    graph); under torch.no_grad(), as in an optimizer step, it is read and written in place as
    torch's own in-place ops would."""
    torch = loaded_torch()
    what = f"input '{name}'"
    if tensor.layout is not torch.strided:
        raise Error(f"{what} is a {tensor.layout} tensor; widefuse reads dense (strided) tensors "
                    "only (pass tensor.to_dense())")
    if tensor.is_quantized:
        raise Error(f"{what} is a quantized tensor ({tensor.dtype}); dequantize it first")
    # torch.conj() and the imaginary part of a conjugate view are lazy: the memory holds the
    # unconjugated (unnegated) values and a bit says so. widefuse reads memory as it is.
    if tensor.is_conj():
        raise Error(f"{what} is a lazily conjugated tensor (torch.conj's conjugate bit is set); "
                    "pass tensor.resolve_conj()")
    if tensor.is_neg():
        raise Error(f"{what} is a lazily negated tensor (torch's negative bit is set, as on the "
                    "imaginary part of a conjugate view); pass tensor.resolve_neg()")
    if tensor.device.type == "meta":
        raise Error(f"{what} is a meta tensor: it has no data to run on")
    if tensor.device.type not in ("cpu", "cuda"):
        raise Error(f"{what} is on device '{tensor.device}'; widefuse runs on the CPU and "
                    "on CUDA device 0")
    if tensor.device.type == "cuda" and tensor.device.index not in (None, 0):
        raise Error(f"{what} is on CUDA device {tensor.device.index}; widefuse runs on device 0")
    if tensor.requires_grad and not allow_grad and torch.is_grad_enabled():
        raise Error(f"{what} requires grad: widefuse does not record autograd, so it runs on "
                    "such tensors only under torch.no_grad() (or pass tensor.detach())")
    data_type = from_torch(tensor.dtype)
    if data_type is None:
        raise Error(f"{what}: torch dtype {tensor.dtype} is not supported by widefuse")
    return data_type


def device_name(tensor: Any) -> str:
    """'cpu' or 'cuda:0': where a tensor is, for the mixed-device check."""
    return "cpu" if tensor.device.type == "cpu" else "cuda:0"


def current_stream(tensor: Any) -> Optional[int]:
    """torch's current stream on a CUDA tensor's device (None for the CPU)."""
    if tensor.device.type != "cuda":
        return None
    return loaded_torch().cuda.current_stream(tensor.device).cuda_stream


def cuda_stream() -> int:
    """torch's current stream on CUDA device 0: where a steady execute() or a prepared step
    of torch CUDA tensors launches, read at each call (torch.cuda.graph captures on its own
    stream)."""
    return loaded_torch().cuda.current_stream(0).cuda_stream


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
