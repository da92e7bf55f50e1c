"""Reductions as ``fd.ops`` spells them (docs/reductions.md): ``sum``, ``max``,
``min``, ``any``, ``all`` and the helpers built of them, ``sum_of_squares``, ``vector_norm``
and ``mean``.

The scope comes from the arguments: one tensor without `dims` is the tensor scope (a 0-d
result), a list of tensors the global scope (one 0-d result over all their elements), and
``dims=[d]`` the rows of the innermost dimension `d`. The builder decides and checks the
scope; dims it refuses raise UnsupportedOperationError with its message. Every backend runs
them; a fusion that reads a reduction's result runs as phases (docs/segmenter.md section 9).
"""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence

from ._widefuse import Error
from .data_type import DataType, data_type_of
from .errors import ArgumentTypeError
from .values import Builder, Tensor, UnsupportedOperationError, Value


def reduction_operands(xs: Any, call: str) -> tuple[list[Tensor], bool]:
    """The tensors of a reduction's first argument and whether it was a list (the global
    scope); anything but tensors raises ArgumentTypeError naming `call`."""
    is_list = isinstance(xs, (list, tuple))
    tensors = list(xs) if is_list else [xs]
    for x in tensors:
        if not isinstance(x, Tensor):
            shown = x.name if isinstance(x, Value) else repr(x)
            what = "a scalar" if isinstance(x, (Value, int, float, complex)) else "not a tensor"
            raise ArgumentTypeError(f"{call}({shown}): reductions take tensors; '{shown}' is "
                                    f"{what}")
    return tensors, is_list


def _dims_list(dims: Any, call: str, rank: Optional[int] = None) -> Optional[list[int]]:
    """`dims` as a list of ints (an int is one dimension), or None; a negative dimension
    counts from the end of `rank` dimensions, as nvFuser and torch count it (the IR takes
    them counted from the start)."""
    if dims is None:
        return None
    entries = [dims] if isinstance(dims, int) else dims
    try:
        if isinstance(entries, (str, bytes, Value)):
            raise TypeError
        listed = [operator.index(d) for d in entries]
    except TypeError:
        raise ArgumentTypeError(f"{call}: dims must be a list of ints, got {dims!r}") from None
    if rank is None:
        return listed
    return [d + rank if -rank <= d < 0 else d for d in listed]


def keep_dims(fd: Builder, result: Tensor, operand: Tensor,
              dims: Optional[list[int]]) -> Tensor:
    """`result`, a reduction of `operand` over `dims`, broadcast back to the operand's rank
    with extent 1 where dimensions were reduced (keepdim=True): every dimension for a 0-d
    result, else the one dimension of a rows reduction."""
    rank = operand.ndim
    if result.ndim == rank:  # a 0-d operand
        return result
    kept = [] if result.ndim == 0 else [d for d in range(rank) if d != dims[0]]
    shape = [-1 if d in kept else 1 for d in range(rank)]  # -1: the result's extent
    return fd.apply_op("broadcast_in_dim", (result,), shape=shape, broadcast_dims=kept)


def reduce(fd: Builder, op: str, xs: Any, dims: Any = None, keepdim: bool = False,
           dtype: Any = None, block: Optional[int] = None) -> Tensor:
    """Reduction `op` of `xs` (a tensor, or a list of tensors: the global scope) over `dims`
    (None: every element), or over each block of `block` elements of one tensor; `dtype`
    casts each operand first, `keepdim` puts the reduced dimensions back with extent 1."""
    call = f"fd.ops.{op}"
    tensors, is_list = reduction_operands(xs, call)
    if block is not None and (is_list or dims is not None or keepdim):
        raise UnsupportedOperationError(f"{call}(..., block={block}) reduces each block of one "
                                        "tensor; it takes no list, dims or keepdim")
    if is_list and keepdim:
        raise UnsupportedOperationError(f"{call}([...], keepdim=True): a reduction over a list "
                                        "of tensors has no dimensions to keep")
    if dtype is not None:
        target = data_type_of(dtype, call)
        tensors = [x if x.dtype is target else x.to(target) for x in tensors]
    if block is not None:
        return fd.apply_reduction(op, tensors, None, block)
    dims_list = _dims_list(dims, call, tensors[0].ndim if len(tensors) == 1 else None)
    result = fd.apply_reduction(op, tensors, dims_list)
    return keep_dims(fd, result, tensors[0], dims_list) if keepdim else result


def _float_types(tensors: list[Tensor], call: str) -> tuple[DataType, DataType]:
    """(P, F) of real floating operands: their promoted dtype and the type the helpers
    compute in (f64 for f64, else f32). Integer, bool and complex operands are refused, as
    torch's vector_norm refuses the first two."""
    for x in tensors:
        if not x.dtype.is_floating_point or x.dtype.is_complex:
            raise ArgumentTypeError(f"{call}: expected floating-point tensors, got '{x.name}' "
                                    f"of {x.dtype!r}" + (" (complex operands are not supported "
                                                         "yet)" if x.dtype.is_complex else ""))
    dtypes = {x.dtype for x in tensors}
    # Between real floating types promotion gives the one type, f64 with f64 among them, else f32.
    promoted = dtypes.pop() if len(dtypes) == 1 else (
        DataType.Double if DataType.Double in dtypes else DataType.Float)
    return promoted, DataType.Double if promoted is DataType.Double else DataType.Float


def _in(x: Value, dtype: DataType) -> Value:
    return x if x.dtype is dtype else x.to(dtype)


def sum_of_squares(fd: Builder, xs: Any, dims: Any = None, keepdim: bool = False, *,
                   call: str = "fd.ops.sum_of_squares") -> Tensor:
    """The sum of the squares of every element of `xs` (a tensor or a list of tensors), in
    f32 (f64 for f64 operands): one reduction over all of them. `call` names the caller in
    messages."""
    tensors, is_list = reduction_operands(xs, call)
    _, compute = _float_types(tensors, call)
    values = [_in(x, compute) for x in tensors]
    squares = [x * x for x in values]
    return reduce(fd, "sum", squares if is_list else squares[0], dims, keepdim)


def _has_no_elements(tensors: list[Tensor]) -> bool:
    return all(0 in x.shape for x in tensors)


def vector_norm(fd: Builder, xs: Any, ord: Any = 2, dims: Any = None,
                keepdim: bool = False, dtype: Any = None, *,
                call: str = "fd.ops.vector_norm") -> Tensor:
    """The `ord`-norm of every element of `xs` (a tensor or a list of tensors: one norm over
    all of them), as torch.linalg.vector_norm: computed in f32 (f64 for f64) and returned in
    the operands' dtype (or `dtype`, which casts them first). `call` names the caller in
    messages."""
    tensors, is_list = reduction_operands(xs, call)
    if dtype is not None:
        target = data_type_of(dtype, call)
        tensors = [_in(x, target) for x in tensors]
    promoted, compute = _float_types(tensors, call)
    try:
        order = float(ord)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{call}: ord must be a number, got {ord!r}") from None
    if math.isinf(order) and dims is None and _has_no_elements(tensors):
        raise Error(f"{call}(ord={ord}): linalg.vector_norm cannot compute the inf norm on an "
                    "empty tensor (no element, and max and min have no identity)")
    values = [_in(x, compute) for x in tensors]

    def over(op: str, elements: list[Value]) -> Tensor:
        return reduce(fd, op, elements if is_list else elements[0], dims, keepdim)

    if order == 2:
        norm = over("sum", [x * x for x in values]).sqrt()
    elif math.isinf(order):
        norm = over("max" if order > 0 else "min", [x.abs() for x in values])
    elif order == 1:
        norm = over("sum", [x.abs() for x in values])
    elif order == 0:
        norm = over("sum", [(x != 0).to(compute) for x in values])
    else:
        norm = over("sum", [x.abs() ** order for x in values]) ** (1.0 / order)
    return _in(norm, promoted)


def element_count(x: Tensor, dims: Optional[list[int]]) -> Any:
    """The number of elements a reduction of `x` over `dims` (None: all) combines into one
    result: an int where the extents are static, else a product of size values."""
    count: Any = 1
    for d in range(x.ndim) if dims is None or len(dims) == x.ndim else dims:
        extent = x.shape[d]
        count = count * (x.size(d) if extent == -1 else extent)
    return count


def mean(fd: Builder, x: Any, dims: Any = None, keepdim: bool = False, dtype: Any = None, *,
         call: str = "fd.ops.mean") -> Tensor:
    """The mean of the elements of tensor `x` (over `dims`: every element, or each row of the
    innermost dimension), summed in f32 (f64 for f64), divided by the element count there and
    returned in x's dtype (or `dtype`, which casts x first). Integer and bool tensors are
    refused, as torch's mean refuses them. `call` names the caller in messages."""
    if isinstance(x, (list, tuple)):
        raise ArgumentTypeError(f"{call} takes one tensor, not a list")
    (tensor,), _ = reduction_operands(x, call)
    if dtype is not None:
        tensor = _in(tensor, data_type_of(dtype, call))
    promoted, compute = _float_types([tensor], call)
    dims_list = _dims_list(dims, call, tensor.ndim)
    total = reduce(fd, "sum", _in(tensor, compute), dims_list)
    averaged = _in(total / element_count(tensor, dims_list), promoted)
    return keep_dims(fd, averaged, tensor, dims_list) if keepdim else averaged
