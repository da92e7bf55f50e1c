"""What execute() hands to the executor, read in C++ by the argument reader
(python_frontend/bindings/arguments: read_arguments, read_outputs, read_layouts), and the
words for what it refuses.

The reader takes host arrays (NumPy arrays, bfloat16 and fp8 through ml_dtypes, CPU torch
tensors, CPU DLPack exporters, objects with an ``__array_interface__``), device arrays (CUDA
torch tensors, objects with ``__cuda_array_interface__`` (CuPy, Numba) or a CUDA
``__dlpack__``) and numbers, checks them against the fusion's inputs, and names the first it
refuses with a code and the facts of its message: REFUSALS below turns that into the error
Python users see. Every check happens before anything is written.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from . import _widefuse
from ._widefuse import Error
from .data_type import DataType, from_short_name, numpy_short_names, torch_short_names, \
    unsupported_numpy_dtype
from .errors import ArgumentTypeError


def _dtype(short_name: str) -> DataType:
    return from_short_name(short_name)


def _dlpack_export(name: str, facts: dict) -> Error:
    # The producer's own reason (torch: a tensor that requires grad) is clearer than ours.
    reason = facts["reason"]
    if reason is None:
        return Error(facts["message"])
    error = Error(f"input '{name}': its __dlpack__ export failed: {reason}")
    error.__cause__ = reason
    return error


# By refusal code (the reader's, in its order): the error for input (or object) `name` and the
# code's facts.
REFUSALS: dict[str, Callable[[str, dict], Exception]] = {
    # Reading an array.
    "numpy_dtype": lambda name, f: unsupported_numpy_dtype(f["dtype"], f"input '{name}'"),
    "not_aligned": lambda name, f: Error(
        f"input '{name}': the array is not aligned to its element size"),
    "negative_strides": lambda name, f: Error(
        f"input '{name}': negative strides {f['strides']} (bytes) are not supported; pass a "
        "copy (np.ascontiguousarray)"),
    "strides_not_elements": lambda name, f: Error(
        f"input '{name}': strides {f['strides']} (bytes) are not multiples of the element "
        f"size {f['itemsize']}"),
    "torch_layout": lambda name, f: Error(
        f"input '{name}' is a {f['fact']} tensor; widefuse reads dense (strided) tensors only "
        "(pass tensor.to_dense())"),
    "torch_quantized": lambda name, f: Error(
        f"input '{name}' is a quantized tensor ({f['fact']}); dequantize it first"),
    # torch.conj() and the imaginary part of a conjugate view are lazy: the memory holds the
    # unconjugated (unnegated) values and a bit says so. widefuse reads memory as it is.
    "torch_conjugated": lambda name, f: Error(
        f"input '{name}' is a lazily conjugated tensor (torch.conj's conjugate bit is set); "
        "pass tensor.resolve_conj()"),
    "torch_negated": lambda name, f: Error(
        f"input '{name}' is a lazily negated tensor (torch's negative bit is set, as on the "
        "imaginary part of a conjugate view); pass tensor.resolve_neg()"),
    "torch_meta": lambda name, f: Error(f"input '{name}' is a meta tensor: it has no data to "
                                        "run on"),
    "torch_device": lambda name, f: Error(
        f"input '{name}' is on device '{f['fact']}'; widefuse runs on the CPU and on CUDA "
        "devices"),
    # widefuse records no autograd graph: under torch.no_grad(), as in an optimizer step, a
    # tensor that requires grad is read and written in place as torch's in-place ops would.
    "requires_grad": lambda name, f: Error(
        f"input '{name}' requires grad: widefuse does not record autograd, so it runs on such "
        "tensors only under torch.no_grad() (or pass tensor.detach())"),
    "torch_dtype": lambda name, f: Error(
        f"input '{name}': torch dtype {f['dtype']} is not supported by widefuse"),
    "array_type": lambda name, f: Error(
        f"input '{name}': array type '{f['typestr']}' is not supported"),
    "dlpack_export": _dlpack_export,
    "dlpack_device": lambda name, f: Error(
        f"input '{name}': DLPack device type {f['device_type']} is neither the CPU nor a CUDA "
        "device"),
    "not_an_array": lambda name, f: ArgumentTypeError(
        f"input '{name}' is a tensor: expected a torch tensor, a NumPy array or a CUDA array "
        f"(__cuda_array_interface__ / __dlpack__), got {f['type'].__name__}"),
    # An array against its input's declaration, and the inputs together.
    "dtype_mismatch": lambda name, f: Error(
        f"input '{name}' is {_dtype(f['declared'])!r}; the array is {_dtype(f['actual'])!r}"),
    "layout": lambda name, f: Error(
        f"input '{name}': the array's strides {f['strides']} (in elements) do not match the "
        f"definition's stride_order {f['stride_order']} and contiguity {f['contiguity']}; "
        "pass an array with that layout (np.ascontiguousarray for row-major) or define the "
        "tensor with the array's layout"),
    "read_only": lambda name, f: Error(
        f"input '{name}' is updated in place (add_output alias / copy_) but the array is "
        "read-only"),
    "devices_differ": lambda name, f: Error(
        f"input '{name}' is on {f['device']} but input '{f['first_input']}' is on "
        f"{f['first_device']}; the tensors of one run must be on one device"),
    # A number for a runtime scalar input.
    "float_for_integer": lambda name, f: ArgumentTypeError(
        f"input '{name}' is a {_dtype(f['dtype'])!r} scalar; got the float {f['value']!r}"),
    "complex_scalar": lambda name, f: ArgumentTypeError(
        f"input '{name}' is a {_dtype(f['dtype'])!r} scalar; got the complex number "
        f"{f['value']!r} (scalar inputs cannot be complex: define a 0-d complex tensor and "
        "pass the value as one)"),
    "not_a_number": lambda name, f: ArgumentTypeError(
        f"input '{name}' is a {_dtype(f['dtype'])!r} scalar: expected a Python number, got "
        f"{type(f['value']).__name__}"),
    "integer_overflow": lambda name, f: Error(
        f"input '{name}': the integer {f['value']} does not fit in 64 bits"),
    # prepare(outputs=...): `name` is "output k".
    "output_count": lambda name, f: Error(
        f"prepare(): outputs= has {f['given']} arrays for the fusion's {f['expected']} plain "
        "outputs"),
    "output_dtype": lambda name, f: Error(
        f"{name} is {_dtype(f['declared'])!r}; the array given for it is "
        f"{_dtype(f['actual'])!r}"),
    "output_read_only": lambda name, f: Error(f"{name}: the array given for it is read-only"),
    "output_placement": lambda name, f: Error(
        f"{name}: the array given for it is in {'device' if f['on_device'] else 'host'} "
        "memory, the inputs are not"),
}


def refusal_error(refusal: Any, name: Optional[str] = None) -> Exception:
    """The error for a refusal of the argument reader (a _widefuse._Refusal); `name` names
    the object instead of the reader's name for it."""
    return REFUSALS[refusal.code](refusal.name if name is None else name, refusal.facts)


def read_arguments(fusion: Any, values: Sequence[Any]) -> Any:
    """The reader's arguments (a _widefuse._Arguments) of `values`, one per input of
    `fusion` (a _widefuse._Fusion); raises the error of the first value it refuses."""
    read = _widefuse.read_arguments(fusion, values, torch_short_names(), numpy_short_names())
    if type(read) is _widefuse._Refusal:
        raise refusal_error(read)
    return read


def read_outputs(fusion: Any, outputs: Sequence[Any], on_device: bool) -> Any:
    """The arrays prepare(outputs=...) writes `fusion`'s plain outputs into, as the reader
    read them (one per plain output, of its dtype, writable, where the inputs are: on the
    device when `on_device`); raises the error of the first it refuses."""
    read = _widefuse.read_outputs(fusion, outputs, on_device, torch_short_names(),
                                  numpy_short_names())
    if type(read) is _widefuse._Refusal:
        raise refusal_error(read)
    return read


def read_layouts(arrays: Sequence[Any], allow_grad: bool = False,
                 names: Optional[Sequence[str]] = None) -> list:
    """Each array's (dtype short name, shape, strides in elements, in device memory), equal
    layouts one tuple; raises the error of the first array the reader refuses, named
    ``names[i]`` (default "argument i"). A tensor that requires grad is refused under grad
    mode unless `allow_grad`."""
    read = _widefuse.read_layouts(arrays, allow_grad, torch_short_names(), numpy_short_names())
    if type(read) is _widefuse._Refusal:
        raise refusal_error(read, None if names is None else names[read.index])
    return read


def set_scalars(prepared: Any, indices: Sequence[int], values: Sequence[Any]) -> None:
    """Sets runtime scalar inputs `indices` of a _widefuse._PreparedRun to `values`, read as
    the reader reads execute()'s numbers; raises the error of the first it refuses."""
    refusal = prepared.set_scalars(indices, values, torch_short_names(), numpy_short_names())
    if refusal is not None:
        raise refusal_error(refusal)


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
