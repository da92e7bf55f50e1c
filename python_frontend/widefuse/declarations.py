"""Checks and normalisation of what define_tensor and define_scalar are given, nvFuser's
conventions included (None contiguity for broadcast or expanded dimensions, negative stride
order entries, a dtype passed where the value goes)."""

from __future__ import annotations

import numbers
import operator
from typing import Any, Optional, Sequence

import numpy as np

from ._widefuse import Error
from .arguments import layout_of
from .errors import (ArgumentTypeError, ArgumentValueError, incompatible_arguments,
                     not_an_extent)
from .data_type import DataType, data_type_of

_INT64 = np.iinfo(np.int64)


def tensor_shape(shape: Sequence[Any], what: str = "shape") -> list[int]:
    """Extents as Python ints: -1 (symbolic) or a non-negative int64. Not a list of ints, or an
    int past 64 bits: ArgumentTypeError (nvFuser's binding refuses both as a TypeError); an
    int below -1: ArgumentValueError."""
    shown = list(shape) if isinstance(shape, Sequence) else shape
    try:
        extents = [operator.index(extent) for extent in shape]
    except TypeError:
        raise ArgumentTypeError(f"{incompatible_arguments('define_tensor')} define_tensor: "
                                f"{what} {shown!r} must be a list of integers (-1 for an "
                                "extent known at run time)") from None
    for index, extent in enumerate(extents):
        if extent > _INT64.max:
            raise ArgumentTypeError(f"{incompatible_arguments('define_tensor')} define_tensor: "
                                    f"{extent} in {what} {extents} does not fit in 64 bits")
        if extent < 0 and what == "strides":
            raise ArgumentValueError(f"define_tensor: stride {extent} in strides {extents} is "
                                     "negative")
        if extent < -1:
            raise ArgumentValueError(f"{not_an_extent(extent, index)} define_tensor: extent "
                                     f"{extent} in {what} {extents} is out of range (-1 for an "
                                     "extent known at run time, else at least 0)")
    return extents


def tensor_contiguity(contiguity: Any, shape: Sequence[int], order: Sequence[int]) -> list[bool]:
    """One flag per logical dimension, from nvFuser's contiguity: one bool (for every dimension
    of extent other than 1) or one entry per dimension listed in allocation order (outermost
    stride first; logical dimension d sits at rank-1-order[d], so with the default row-major
    order the two orders coincide). None (a broadcast dimension: extent 1, or expanded with
    stride 0) becomes False: such a dimension may have any stride. A dimension of static
    extent 1 is always True: its stride never matters, and one spelling keeps fusions that
    differ only there structurally equal (one kernel body for both)."""
    rank = len(shape)
    if contiguity is None or (isinstance(contiguity, Sequence) and len(contiguity) == 0):
        return [True] * rank
    if isinstance(contiguity, bool):
        return [contiguity or extent == 1 for extent in shape]
    if not isinstance(contiguity, Sequence) or isinstance(contiguity, str):
        raise ArgumentTypeError(f"define_tensor: contiguity must be a bool or a list of True, False or "
                    f"None, got {contiguity!r}")
    flags = []
    for flag in contiguity:
        if flag is not None and not isinstance(flag, (bool, np.bool_)):
            raise ArgumentTypeError(f"define_tensor: contiguity {list(contiguity)} must hold True, False or "
                        f"None, got {flag!r}")
        flags.append(bool(flag))
    if len(flags) != rank:
        raise ArgumentValueError(
            f"define_tensor: Length of contiguity argument ({len(flags)}) must match that of "
            f"shape argument ({rank}): contiguity {list(contiguity)} has {len(flags)} entries "
            f"for the rank-{rank} shape {list(shape)}")
    return [flags[rank - 1 - order[d]] or shape[d] == 1 for d in range(rank)]


# define_tensor's arguments checked and normalised: shape, stride order, one contiguity flag
# per logical dimension, and the dtype as given (define_tensor converts it last).
TensorDeclaration = tuple[list[int], list[int], list[bool], Any]


def tensor_declaration(shape: Sequence[Any], contiguity: Any, dtype: Any,
                       stride_order: Optional[Sequence[int]]) -> TensorDeclaration:
    """define_tensor's shape, stride_order and contiguity checked and normalised, in this
    order (each raising as define_tensor documents), with its dtype."""
    extents = tensor_shape(shape)
    order = tensor_stride_order(stride_order, len(extents))
    return extents, order, tensor_contiguity(contiguity, extents, order), dtype


def tensor_stride_order(stride_order: Optional[Sequence[int]], rank: int,
                        what: str = "define_tensor") -> list[int]:
    """A permutation of 0..rank-1 (negative entries count from the end, as in nvFuser)."""
    if not stride_order:
        return list(range(rank - 1, -1, -1))
    try:
        order = [operator.index(entry) for entry in stride_order]
    except TypeError:
        raise ArgumentTypeError(f"{what}: stride_order {list(stride_order)!r} must be a list "
                                "of ints") from None
    order = [entry + rank if entry < 0 else entry for entry in order]
    if sorted(order) != list(range(rank)):
        raise ArgumentValueError(f"{what}: stride_order {list(stride_order)} is not a "
                                 f"permutation of 0..{rank - 1}")
    return order


def constant_value(value: Any, dtype: Any) -> tuple[Any, DataType]:
    """A typed constant's Python value and DataType, refusing values the type cannot hold
    (a silently wrapped or truncated literal would be a wrong program). A complex dtype, or a
    complex value (ComplexDouble by default), gives a Python complex."""
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, numbers.Complex):  # bool, int and float are Complex numbers too
        raise ArgumentTypeError(f"define_scalar: {value!r} is not a number")
    if dtype is None:  # nvFuser's rule: the Python type decides; a complex is ComplexDouble
        dtype = (bool if isinstance(value, bool) else int if isinstance(value, int) else
                 float if isinstance(value, numbers.Real) else complex)
    data_type = data_type_of(dtype, "define_scalar")
    if data_type.is_complex:  # a real number is the complex number with imaginary part 0
        try:
            return complex(value), data_type
        except OverflowError:
            raise ArgumentValueError(f"define_scalar: {value!r} does not fit in "
                                     f"{data_type!r}") from None
    if not isinstance(value, numbers.Real):
        raise ArgumentValueError(f"define_scalar: {value!r} is complex; {data_type!r} cannot "
                                 "hold it (use dtype=DataType.ComplexDouble or ComplexFloat, or "
                                 "give value.real)")
    if data_type is DataType.Bool:
        if value not in (0, 1) or isinstance(value, float):
            raise ArgumentValueError(f"define_scalar: {value!r} is not a Bool (True, False, 0 or 1)")
        return bool(value), data_type
    if not data_type.is_floating_point:
        if isinstance(value, float) and not value.is_integer():
            raise ArgumentValueError(f"define_scalar: {value!r} is not an integer, as {data_type!r} needs")
        limits = np.iinfo(data_type.numpy)
        if not limits.min <= value <= limits.max:
            raise ArgumentValueError(f"define_scalar: {value!r} does not fit in {data_type!r} "
                        f"({limits.min}..{limits.max})")
        return int(value), data_type
    return (float(value) if not isinstance(value, bool) else value), data_type


def scalar_dtype_or_value(value: Any, dtype: Any) -> tuple[Any, Any]:
    """nvFuser's define_scalar(dtype) overload: a data type given as the value means a
    runtime scalar of that type."""
    if dtype is None and isinstance(value, DataType):
        return None, value
    return value, dtype


def layout_from_strides(sizes: Any, strides: Any,
                static_sizes: bool) -> tuple[list[int], list[int], list[Optional[bool]]]:
    """define_tensor's (shape, stride_order, contiguity) for an array of `sizes` and element
    `strides`, as nvFuser's define_tensor(sizes=, strides=) computes them."""
    extents = tensor_shape(() if sizes is None else sizes, "sizes")
    if strides is None:
        strides = [1] * len(extents)
        for d in range(len(extents) - 2, -1, -1):
            strides[d] = strides[d + 1] * max(extents[d + 1], 1)
    strides = tensor_shape(strides, "strides")
    if len(strides) != len(extents) or -1 in extents:
        raise Error(f"define_tensor: sizes {extents} and strides {strides} must be two lists of "
                    "non-negative ints of one length")
    stride_order, contiguity = layout_of(extents, strides)
    shape = extents if static_sizes else [1 if extent == 1 else -1 for extent in extents]
    return shape, stride_order, contiguity
