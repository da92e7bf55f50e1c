"""``fd.ops``: one function per IR op, with nvFuser's names and argument order."""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Sequence

from . import _widefuse
from ._widefuse import Error
from .errors import ArgumentTypeError, DimensionIndexError, out_of_boundary
from .data_type import data_type_of
from . import reductions
from .values import Builder, Scalar, Tensor, UnsupportedOperationError, Value, Vector

# nvFuser's names for ops whose IR name differs.
NVFUSER_NAMES = {"shift_left": "bitwise_left_shift", "shift_right": "bitwise_right_shift"}
_ATTRIBUTE_OPS = ("cast", "bitcast", "broadcast_in_dim", "size")
# Reductions take a scope besides their operands (docs/reductions.md): the
# methods of Operators below, not the generic table.
REDUCTION_OPS = ("sum", "max", "min", "any", "all")
_REDUCTION_HELPERS = ("sum_of_squares", "vector_norm", "mean")
# nvFuser ops written here on top of the IR's ops.
_COMPOSITE_OPS = ("addcmul", "broadcast", "segment_set", "stride_order")


def _static_extents(shape: Any, op: str) -> list[int]:
    """A list of ints (broadcast_dims)."""
    if isinstance(shape, Value) or isinstance(shape, (str, bytes)) or not isinstance(
            shape, Sequence):
        raise ArgumentTypeError(f"fd.ops.{op}: expected a list of ints, got {type(shape).__name__}")
    extents = []
    for extent in shape:
        try:
            extents.append(operator.index(extent))
        except TypeError:
            raise ArgumentTypeError(f"fd.ops.{op}: {list(shape)!r} must hold ints, got {extent!r}") from None
    return extents


def _shape_entries(shape: Any, op: str) -> list[Any]:
    """A broadcast's output shape: ints (-1: the operand's extent) and extent Scalars
    (``t.size(d)``, the entries of ``t.shape()`` or of a define_vector)."""
    if isinstance(shape, Value) or isinstance(shape, (str, bytes)) or not isinstance(
            shape, Sequence):
        raise ArgumentTypeError(f"fd.ops.{op}: shape must be a list of ints and extent Scalars "
                    f"(t.shape(), t.size(d)), got {type(shape).__name__}")
    entries: list[Any] = []
    for extent in shape:
        if isinstance(extent, Scalar):
            entries.append(extent)
            continue
        try:
            entries.append(operator.index(extent))
        except TypeError:
            raise ArgumentTypeError(f"fd.ops.{op}: shape {list(shape)!r} must hold ints and extent "
                        f"Scalars, got {extent!r}") from None
    return entries


class Operators:
    """The ops of one FusionDefinition: ``fd.ops.add(a, b)``, ``fd.ops.cast(t, dtype)``, ...

    Arguments are values of the definition or Python numbers (untyped literals).
    """

    def __init__(self, fd: Builder) -> None:
        self._fd = fd

    def cast(self, x: Any, dtype: Any) -> Value:
        """Converts to `dtype`, rounding to nearest even for floating-point targets."""
        return self._fd.apply_op("cast", (x,), dtype=data_type_of(dtype, "cast"))

    def bitcast(self, x: Any, dtype: Any) -> Value:
        """Reinterprets the bits as `dtype` (same width)."""
        return self._fd.apply_op("bitcast", (x,), dtype=data_type_of(dtype, "bitcast"))

    def broadcast_in_dim(self, x: Any, shape: Sequence[Any],
                         broadcast_dims: Sequence[int]) -> Value:
        """Broadcasts `x` to `shape`; operand dimension i becomes dimension broadcast_dims[i].
        An entry of `shape` is an int (-1: the operand's extent) or an extent Scalar
        (``t.size(d)``, or ``t.shape()`` as the whole shape): that dimension takes the
        tensor's extent at run time."""
        return self._fd.apply_op("broadcast_in_dim", (x,),
                                 shape=_shape_entries(shape, "broadcast_in_dim"),
                                 broadcast_dims=_static_extents(broadcast_dims,
                                                                "broadcast_in_dim"))

    def size(self, x: Any, dim: int) -> Scalar:
        """The extent of dimension `dim` of tensor `x` (negative counts from the end): an
        Int scalar read when the fusion runs (nvFuser's fd.ops.size, also ``x.size(dim)``)."""
        if not isinstance(x, Tensor):
            raise ArgumentTypeError(f"fd.ops.size takes a Tensor, got {type(x).__name__}")
        return x.size(dim)

    def at(self, vector: Any, index: int) -> Any:
        """Entry `index` of a define_vector (negative counts from the end): an Int Scalar, or
        the int the vector was given."""
        if not isinstance(vector, Vector):
            raise ArgumentTypeError(f"fd.ops.at takes a Vector (define_vector), got "
                                    f"{type(vector).__name__}")
        count = len(vector)
        try:
            if isinstance(index, bool):
                raise TypeError
            index = operator.index(index)
        except TypeError:
            raise ArgumentTypeError(f"fd.ops.at: index must be an int, got {index!r}") from None
        if not -count <= index < count:
            raise DimensionIndexError(f"{out_of_boundary(index, count)} fd.ops.at: index "
                                      f"{index} is outside the vector of {count} entries")
        return vector[index]

    def broadcast(self, x: Any, is_broadcast_dim: Sequence[bool]) -> Value:
        """Inserts a dimension of extent 1 wherever `is_broadcast_dim` is True (nvFuser's
        broadcast: one flag per output dimension, False ones taking x's in order)."""
        flags = [bool(flag) for flag in is_broadcast_dim]
        kept = [d for d, flag in enumerate(flags) if not flag]
        rank = x.ndim if isinstance(x, Tensor) else 0
        if len(kept) != rank:
            raise Error(f"fd.ops.broadcast: Invalid broadcast, number of false entries in "
                        f"is_broadcast_dim expected to be {rank} but received {len(kept)}: "
                        f"is_broadcast_dim {flags} keeps {len(kept)} dimensions; the operand "
                        f"has {rank}")
        return self.broadcast_in_dim(x, [1 if flag else -1 for flag in flags], kept)

    def segment_set(self, x: Any) -> Value:
        """A copy of `x` (nvFuser cuts its kernels there; widefuse's segmenter decides
        kernels by itself, so here it is `set`)."""
        return self._fd.apply_op("set", (x,))

    def stride_order(self, x: Any, stride_order: Sequence[int]) -> Tensor:
        """`x`, whose plain output comes back laid out in `stride_order` (nvfuser_direct's
        op; the legacy API wrote ``add_output(x, stride_order=...)``)."""
        return self._fd.laid_out(x, stride_order)

    def addcmul(self, a: Any, b: Any, c: Any, value: Any) -> Value:
        """a + b * (c * value), as nvFuser composes it."""
        scaled = self._fd.apply_op("mul", (c, value))
        return self._fd.apply_op("add", (a, self._fd.apply_op("mul", (b, scaled))))

    # Reductions (reductions.py): the one tensor scope for a tensor, the global scope for a
    # list of tensors, rows for dims=[the innermost dimension]; nvFuser's keywords. block=B
    # (widefuse's) reduces each block of B elements: one result per block, which the kernel
    # computing it reads through expand_blocks.
    def sum(self, x: Any, dims: Any = None, keepdim: bool = False, dtype: Any = None,
            block: Optional[int] = None) -> Tensor:
        """The sum of the elements of `x` (a tensor, or a list of tensors: one sum over all of
        them) over `dims`; `dtype` casts the operand(s) first, `keepdim` keeps the reduced
        dimensions with extent 1. Integers and bool sum to Int (wrapping)."""
        return reductions.reduce(self._fd, "sum", x, dims, keepdim, dtype, block=block)

    def max(self, x: Any, dims: Any = None, keepdim: bool = False,
            block: Optional[int] = None) -> Tensor:
        """The largest element of `x` (a tensor or a list of tensors) over `dims`; NaN wins."""
        return reductions.reduce(self._fd, "max", x, dims, keepdim, block=block)

    def min(self, x: Any, dims: Any = None, keepdim: bool = False,
            block: Optional[int] = None) -> Tensor:
        """The smallest element of `x` (a tensor or a list of tensors) over `dims`; NaN wins."""
        return reductions.reduce(self._fd, "min", x, dims, keepdim, block=block)

    def any(self, x: Any, dims: Any = None, keepdim: bool = False,
            block: Optional[int] = None) -> Tensor:
        """Whether some element of `x` over `dims` is nonzero (a Bool tensor)."""
        return reductions.reduce(self._fd, "any", x, dims, keepdim, block=block)

    def all(self, x: Any, dims: Any = None, keepdim: bool = False,
            block: Optional[int] = None) -> Tensor:
        """Whether every element of `x` over `dims` is nonzero (a Bool tensor)."""
        return reductions.reduce(self._fd, "all", x, dims, keepdim, block=block)

    def expand_blocks(self, x: Any, shape: Sequence[Any], block: int) -> Tensor:
        """A tensor of `shape` whose block b of `block` elements (logical order) reads
        element b of the rank-1 `x` (a block reduction's result, a quantized tensor's
        scales). An entry of `shape` is an int or an extent Scalar (``t.size(d)``)."""
        return self._fd.apply_op("expand_blocks", (x,), shape=list(shape), block=block)

    def code_value(self, code: Any, codebook: str) -> Tensor:
        """The Float entry of `codebook` ("dynamic8_signed", "dynamic8_unsigned",
        "dynamic4_signed", "linear4_unsigned") at each integer code of `code` (its low
        log2(size) bits): a quantized state's normalised value."""
        return self._fd.apply_op("code_value", (code,), codebook=codebook)

    def nearest_code(self, x: Any, codebook: str) -> Tensor:
        """The UInt8 code of each Float element of `x` in `codebook`, rounded to nearest as
        torchao rounds (ties up; NaN gives 0)."""
        return self._fd.apply_op("nearest_code", (x,), codebook=codebook)

    def sum_of_squares(self, xs: Any, dims: Any = None, keepdim: bool = False) -> Tensor:
        """The sum of the squares of the elements of `xs` (a tensor or a list of tensors),
        computed in Float (Double for Double operands)."""
        return reductions.sum_of_squares(self._fd, xs, dims, keepdim)

    def vector_norm(self, xs: Any, ord: Any = 2, dims: Any = None, keepdim: bool = False,
                    dtype: Any = None) -> Tensor:
        """torch.linalg.vector_norm of the elements of `xs` (a tensor or a list of tensors:
        one norm over all of them), computed in Float (Double for Double)."""
        return reductions.vector_norm(self._fd, xs, ord, dims, keepdim, dtype)

    def mean(self, x: Any, dims: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        """The mean of the elements of tensor `x` over `dims`, summed in Float (Double for
        Double) and returned in x's dtype."""
        return reductions.mean(self._fd, x, dims, keepdim, dtype)

    def __dir__(self) -> list[str]:
        return sorted(set(object.__dir__(self)) | set(_OP_FUNCTIONS))

    def __getattr__(self, name: str) -> Callable[..., Value]:
        function = _OP_FUNCTIONS.get(name)
        if function is None:
            known = sorted([*_OP_FUNCTIONS, *_ATTRIBUTE_OPS, *_COMPOSITE_OPS, *REDUCTION_OPS,
                            *_REDUCTION_HELPERS])
            raise UnsupportedOperationError(
                f"fd.ops has no op '{name}'; widefuse's ops: {', '.join(known)}")
        fd = self._fd

        def op(*operands: Any, **keywords: Any) -> Value:
            if keywords:
                raise UnsupportedOperationError(
                    f"fd.ops.{name} takes positional arguments only, got {', '.join(keywords)}=")
            return function(fd, *operands)

        return op


def _op_function(op: str, arity: int) -> Callable[..., Value]:
    def apply(fd: Builder, *operands: Any) -> Value:
        if len(operands) != arity:
            raise ArgumentTypeError(f"fd.ops.{NVFUSER_NAMES.get(op, op)} takes {arity} argument"
                        f"{'s' if arity != 1 else ''}, got {len(operands)}")
        return fd.apply_op(op, operands)

    return apply


def _all_op_functions() -> dict[str, Callable[..., Value]]:
    functions: dict[str, Callable[..., Value]] = {}
    for op in _widefuse.op_names():
        if op in _ATTRIBUTE_OPS or op in REDUCTION_OPS:
            continue
        function = _op_function(op, _widefuse.op_arity(op))
        functions[op] = function
        if op in NVFUSER_NAMES:
            functions[NVFUSER_NAMES[op]] = function
    functions["mod"] = functions["fmod"]  # nvFuser's mod is C's %: fmod, for ints and floats
    return functions


_OP_FUNCTIONS = _all_op_functions()
