"""What execute() hands to the executor: each input checked against the definition and
described as (address, dtype, shape, strides in elements), or a Python number.

Host arrays are NumPy arrays (bfloat16 through ml_dtypes), CPU torch tensors or CPU DLPack
exporters; device arrays are CUDA torch tensors or objects with ``__cuda_array_interface__``
(CuPy, Numba) or a CUDA ``__dlpack__``. Every check happens here or in the C++ executor
before anything is written.
"""

from __future__ import annotations

import numbers
import sys
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from . import torch_tensors
from ._widefuse import Error, dlpack_view, torch_layout
from .errors import ArgumentTypeError
from .data_type import DataType, from_numpy, from_torch

# DLPack device types (dlpack.h): CPU, CUDA, pinned host memory, managed memory.
_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED = 1, 2, 3, 13


@dataclass
class ArrayView:
    """Where an array's elements are and how they are laid out."""

    address: int
    dtype: DataType
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    read_only: bool
    on_device: bool
    stream: Optional[int] = None  # the producer's stream (CUDA array interface)
    torch_device: Optional[str] = None  # 'cpu' or 'cuda:0' for a torch tensor

    def argument(self) -> tuple[int, str, list[int], list[int]]:
        return (self.address, self.dtype.value, list(self.shape), list(self.strides))


def _element_strides(byte_strides: Sequence[int], itemsize: int, name: str) -> tuple[int, ...]:
    for stride in byte_strides:
        if stride < 0:
            raise Error(f"input '{name}': negative strides {tuple(byte_strides)} (bytes) are not "
                        "supported; pass a copy (np.ascontiguousarray)")
        if stride % itemsize != 0:
            raise Error(f"input '{name}': strides {tuple(byte_strides)} (bytes) are not multiples "
                        f"of the element size {itemsize}")
    return tuple(stride // itemsize for stride in byte_strides)


def _dense_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        running *= max(extent, 1)
    return tuple(reversed(strides))


def _numpy_view(array: np.ndarray, name: str) -> ArrayView:
    dtype = from_numpy(array.dtype, f"input '{name}'")
    if not array.flags.aligned:
        raise Error(f"input '{name}': the array is not aligned to its element size")
    return ArrayView(address=array.__array_interface__["data"][0], dtype=dtype,
                     shape=tuple(array.shape),
                     strides=_element_strides(array.strides, array.itemsize, name),
                     read_only=not array.flags.writeable, on_device=False)


def _typestr_dtype(typestr: str, name: str) -> DataType:
    try:
        dtype = np.dtype(typestr)
    except TypeError:
        raise Error(f"input '{name}': array type '{typestr}' is not supported") from None
    return from_numpy(dtype, f"input '{name}'")


def _producer_stream(value: Any, interface: dict) -> Optional[int]:
    """The stream the producer's work on `value` is queued on: the interface's `stream`
    (version 3: CuPy, Numba), else, for torch tensors (whose interface names none), torch's
    current stream on the tensor's device. None means the legacy default stream."""
    stream = interface.get("stream")
    if stream is None and type(value).__module__.startswith("torch"):
        torch = sys.modules.get("torch")
        if torch is not None:
            stream = torch.cuda.current_stream(value.device).cuda_stream
    return stream


def _producer_device(value: Any) -> Optional[int]:
    """The CUDA device ordinal the producer says `value` lives on (torch: `device.index`,
    CuPy: `device.id`); None when it does not say. The interface itself names no device."""
    device = getattr(value, "device", None)
    for attribute in ("index", "id"):
        ordinal = getattr(device, attribute, None)
        if isinstance(ordinal, int):
            return ordinal
    return None


def _cuda_interface_view(value: Any, interface: dict, name: str) -> ArrayView:
    ordinal = _producer_device(value)
    if ordinal is not None and ordinal != 0:
        raise Error(f"input '{name}' is on CUDA device {ordinal}; widefuse runs on device 0")
    dtype = _typestr_dtype(interface["typestr"], name)
    shape = tuple(interface["shape"])
    itemsize = dtype.numpy.itemsize
    strides = interface.get("strides")
    address, read_only = interface["data"]
    return ArrayView(address=address, dtype=dtype, shape=shape,
                     strides=(_dense_strides(shape) if strides is None else
                              _element_strides(strides, itemsize, name)),
                     read_only=bool(read_only), on_device=True,
                     stream=_producer_stream(value, interface))


def _dlpack_view(value: Any, name: str) -> ArrayView:
    try:
        address, dtype, shape, strides, device_type, device_id, read_only = dlpack_view(value)
    except Error:
        try:  # the producer's own reason (torch: a tensor that requires grad) is clearer
            value.__dlpack__()
        except Exception as reason:
            raise Error(f"input '{name}': its __dlpack__ export failed: {reason}") from reason
        raise
    if device_type not in (_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED):
        raise Error(f"input '{name}': DLPack device type {device_type} is neither the CPU nor "
                    "a CUDA device")
    on_device = device_type in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED)
    if on_device and device_id != 0:
        raise Error(f"input '{name}' is on CUDA device {device_id}; widefuse runs on device 0")
    return ArrayView(address=address, dtype=DataType(dtype), shape=tuple(shape),
                     strides=tuple(strides), read_only=bool(read_only), on_device=on_device,
                     stream=_producer_stream(value, {}) if on_device else None)


def _torch_view(tensor: Any, name: str) -> ArrayView:
    # A plain dense tensor is read in C++ (torch_layout); anything else is checked here, where
    # the messages are.
    fast = torch_layout(tensor)
    if fast is not None:
        address, torch_dtype, shape, strides, device = fast
        dtype = from_torch(torch_dtype)
        if dtype is not None:
            on_device = device >= 0
            if not on_device or device == 0:
                return ArrayView(address=address, dtype=dtype, shape=shape, strides=strides,
                                 read_only=False, on_device=on_device,
                                 stream=torch_tensors.current_stream(tensor) if on_device else
                                 None, torch_device="cuda:0" if on_device else "cpu")
    dtype = torch_tensors.check_tensor(tensor, name)
    on_device = tensor.device.type == "cuda"
    return ArrayView(address=tensor.data_ptr(), dtype=dtype, shape=tuple(tensor.shape),
                     strides=tuple(tensor.stride()), read_only=False, on_device=on_device,
                     stream=torch_tensors.current_stream(tensor) if on_device else None,
                     torch_device=torch_tensors.device_name(tensor))


def array_view(value: Any, name: str) -> ArrayView:
    """Describes an array given for tensor input `name`; raises Error for anything else."""
    if isinstance(value, np.ndarray):
        return _numpy_view(value, name)
    if torch_tensors.is_tensor(value):
        return _torch_view(value, name)
    interface = None
    try:
        interface = getattr(value, "__cuda_array_interface__", None)
    except Exception:  # torch raises for types the interface lacks (bfloat16): use DLPack
        interface = None
    if interface is not None:
        return _cuda_interface_view(value, interface, name)
    if hasattr(value, "__dlpack__"):
        return _dlpack_view(value, name)
    if hasattr(value, "__array_interface__"):
        return _numpy_view(np.asarray(value), name)
    raise ArgumentTypeError(f"input '{name}' is a tensor: expected a NumPy array or a CUDA array "
                f"(__cuda_array_interface__ / __dlpack__), got {type(value).__name__}")


def scalar_argument(value: Any, name: str, dtype: DataType) -> Any:
    """A Python number for runtime scalar input `name`."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    elif isinstance(value, np.generic):
        value = value.item()
    elif torch_tensors.is_tensor(value) and value.ndim == 0:
        torch_tensors.check_tensor(value, name)
        value = value.item()
    if isinstance(value, (bool, numbers.Integral)):
        return bool(value) if isinstance(value, bool) else int(value)
    if isinstance(value, numbers.Real):
        if not dtype.is_floating_point:
            raise ArgumentTypeError(f"input '{name}' is a {dtype!r} scalar; got the float {value!r}")
        return float(value)
    if isinstance(value, numbers.Complex):  # no scalar input is complex (define_scalar refuses)
        raise ArgumentTypeError(f"input '{name}' is a {dtype!r} scalar; got the complex number "
                                f"{value!r} (scalar inputs cannot be complex: define a 0-d "
                                "complex tensor and pass the value as one)")
    raise ArgumentTypeError(f"input '{name}' is a {dtype!r} scalar: expected a Python number, got "
                f"{type(value).__name__}")


def check_layout(view: ArrayView, name: str, stride_order: Sequence[int],
                 contiguity: Sequence[bool]) -> None:
    """Raises Error when the array's strides break the layout the definition declared: each
    contiguous dimension needs the dense stride over the next inner one in stride order;
    non-contiguous dimensions may have any stride. Broadcast dimensions (extent 1, or
    non-contiguous with stride 0: expanded) are skipped, as nvFuser skips them; an empty
    stride_order or contiguity means row-major and dense.
    (The C++ twin for NumPy arrays is checkLayout in bindings/buffer_arguments.cpp.)
    """
    rank = len(view.shape)
    if 0 in view.shape:  # no element is ever addressed
        return
    if len(stride_order) != rank:
        stride_order = list(range(rank - 1, -1, -1))
    if len(contiguity) != rank:
        contiguity = [True] * rank
    inner_to_outer = sorted(range(rank), key=lambda d: stride_order[d])
    expected = 1
    for d in inner_to_outer:
        extent, stride = view.shape[d], view.strides[d]
        if extent == 1 or (stride == 0 and not contiguity[d]):
            continue
        if contiguity[d] and stride != expected:
            raise Error(
                f"input '{name}': the array's strides {view.strides} (in elements) do not "
                f"match the definition's stride_order {list(stride_order)} and contiguity "
                f"{list(contiguity)}; pass an array with that layout (np.ascontiguousarray "
                "for row-major) or define the tensor with the array's layout")
        expected = stride * extent


def layout_of(shape: Sequence[int],
              strides: Sequence[int]) -> tuple[list[int], list[Optional[bool]]]:
    """nvFuser's (stride_order, contiguity) for an array with these element strides, as its
    define_tensor(sizes=, strides=) computes them: dimensions sorted by stride, outermost
    first (ties keep their logical order; stride-0 dimensions keep their logical position),
    and contiguity listed in that allocation order, None for broadcast dimensions (extent 1
    or stride 0), True where the stride is dense over the next inner non-broadcast one."""
    rank = len(shape)
    if any(stride < 0 for stride in strides):
        raise Error(f"strides {list(strides)}: negative strides are not supported")
    if 0 in shape:  # no element is ever addressed: the default layout (one kernel body for all)
        return list(range(rank - 1, -1, -1)), [True] * rank
    order = sorted((d for d in range(rank) if strides[d] != 0), key=lambda d: -strides[d])
    for d in range(rank):
        if strides[d] == 0:
            order.insert(d, d)
    stride_order = [0] * rank
    for position, d in enumerate(order):
        stride_order[d] = rank - 1 - position
    contiguity: list[Optional[bool]] = [None] * rank
    expected = 1
    for position in reversed(range(rank)):
        d = order[position]
        if shape[d] == 1 or strides[d] == 0:
            continue
        contiguity[position] = strides[d] == expected
        expected = strides[d] * shape[d]
    return stride_order, contiguity


def compute_contiguity(sizes: Sequence[int], strides: Sequence[int]) -> list[Optional[bool]]:
    """nvFuser's compute_contiguity: contiguity per logical dimension (no reordering). A
    broadcast dimension (extent 1 or stride 0) is None and skipped; any other dimension is True
    where its stride is dense over the next inner non-broadcast dimension (1 for the innermost).
    For a row-major array this is what define_tensor(shape, contiguity) takes."""
    if len(sizes) != len(strides):
        raise Error(f"compute_contiguity: {len(sizes)} sizes but {len(strides)} strides")
    contiguity: list[Optional[bool]] = [None] * len(sizes)
    expected = 1
    for d in reversed(range(len(sizes))):
        if sizes[d] == 1 or strides[d] == 0:
            continue
        contiguity[d] = strides[d] == expected
        expected = strides[d] * sizes[d]
    return contiguity


def compute_tensor_descriptor(sizes: Sequence[int],
                              strides: Sequence[int]) -> tuple[list[Optional[bool]], list[int]]:
    """nvFuser's compute_tensor_descriptor: (contiguity in allocation order, stride_order),
    the pair define_tensor(shape, contiguity, dtype, stride_order=) takes for such an array
    (what define_tensor(sizes=, strides=) computes; see layout_of)."""
    if len(sizes) != len(strides):
        raise Error(f"compute_tensor_descriptor: {len(sizes)} sizes but {len(strides)} strides")
    stride_order, contiguity = layout_of(sizes, strides)
    return contiguity, stride_order
