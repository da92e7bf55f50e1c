"""Values of a FusionDefinition: ``Tensor`` and ``Scalar``.

They support Python's operators and the torch-style methods optimizer code calls
(``x.sqrt()``, ``x.add(y, alpha=a)``, ``x.addcdiv(a, b, value=v)``, ...), so the same objects
serve a hand-written definition and the tracer's proxies. Python numbers mixed in stay
untyped literals and promote as torch promotes Python scalars.

A value builds through its definition's ``Builder`` (the protocol below, which
FusionDefinition implements); this module knows nothing else of the definition. Most methods
and operators are one op each and are generated from the name tables of value_methods.py.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, Sequence

from . import _widefuse, torch_arithmetic
from ._widefuse import Error
from .data_type import DataType, data_type_of, from_short_name
from .errors import (DimensionIndexError, SpecializationRequest, UnsupportedOperationError,
                     out_of_boundary)
from .value_methods import checked_arguments, install_methods, install_operators


class Builder(Protocol):
    """The definition values belong to, as values, ``fd.ops`` and widefuse's functions use
    it (FusionDefinition is the one implementation)."""

    def apply_op(self, op: str, operands: Sequence[Any], dtype: Optional[DataType] = None,
                 shape: Sequence[Any] = (), broadcast_dims: Sequence[int] = (),
                 dim: int = 0, block: int = 0) -> Value:
        """Adds IR op `op` of `operands` (values of this definition or Python numbers)."""

    def pointwise(self, op: str, operands: Sequence[Any]) -> Value:
        """apply_op for an op without attributes: the operators' and methods' one call."""

    def apply_reduction(self, op: str, operands: Sequence[Tensor],
                        dims: Optional[Sequence[int]], block: Optional[int] = None) -> Tensor:
        """Adds reduction `op` (sum max min any all) of tensors `operands` reducing `dims`
        (None: every element), or each block of `block` elements; UnsupportedOperationError
        for dims or a block that give no scope."""

    def assign_in_place(self, tensor: Tensor, value: Any) -> None:
        """Makes later reads of `tensor` see `value`; a tensor input receives it at the end."""

    def copy_(self, source: Any, destination: Tensor) -> None:
        """The tensor input `destination` receives `source` when the fusion ends."""

    def laid_out(self, tensor: Tensor, stride_order: Sequence[int]) -> Tensor:
        """`tensor`, whose plain output comes back laid out in `stride_order`."""

    def transposed(self, tensor: Tensor) -> Tensor:
        """torch's ``tensor.mT``: its last two dimensions swapped, where the definition can
        read that view as an input of its own; UnsupportedOperationError elsewhere."""


# torch's functions on traced values (``__torch_function__``). functions.py, which holds
# widefuse's torch-style functions and is built on this module, installs the dispatcher.
_torch_dispatch: Optional[Callable[[Any, Any, dict], Any]] = None


def set_torch_dispatch(dispatch: Callable[[Any, Any, dict], Any]) -> None:
    """Installs `dispatch(func, args, kwargs)`, which runs torch function `func` on values."""
    global _torch_dispatch
    _torch_dispatch = dispatch


# The dependencies of a value computed from no specializable scalar (most values): empty.
NO_DEPENDS: frozenset = frozenset()


class Value(_widefuse.TracedValue):
    """A tensor or scalar of one FusionDefinition.

    Its fields are the extension's (_widefuse.TracedValue): `definition`, `handle` (the
    builder's handle of what it stands for now), `input_handle` (what it was made with: a
    tensor input stays that input after an in-place write) and `depends` (the specializable
    runtime scalars it is computed from, see SpecializationRequest). Its definition's builder
    makes it; the recording hot path (_widefuse.record) makes the results of pointwise ops.
    """

    __slots__ = ()

    @property
    def dtype(self) -> DataType:
        return from_short_name(self.handle.dtype)

    @property
    def name(self) -> str:
        """The value's name in the text form."""
        return self.handle.name

    def _apply(self, op: str, *operands: Any, **attributes: Any) -> Value:
        if attributes:
            return self.definition.apply_op(op, operands, **attributes)
        return self.definition.pointwise(op, operands)

    def __pos__(self) -> Value:
        return self

    def __invert__(self) -> Value:
        return self._apply("logical_not" if self.dtype is DataType.Bool else "bitwise_not", self)

    def _bitwise(self, name: str, left: Any, right: Any) -> Value:
        logical = self.dtype is DataType.Bool and name in ("and", "or")
        return self._apply(f"logical_{name}" if logical else f"bitwise_{name}", left, right)

    def __and__(self, other: Any) -> Value:
        return self._bitwise("and", self, other)

    def __rand__(self, other: Any) -> Value:
        return self._bitwise("and", other, self)

    def __or__(self, other: Any) -> Value:
        return self._bitwise("or", self, other)

    def __ror__(self, other: Any) -> Value:
        return self._bitwise("or", other, self)

    def __xor__(self, other: Any) -> Value:
        return self._bitwise("xor", self, other)

    def __rxor__(self, other: Any) -> Value:
        return self._bitwise("xor", other, self)

    # Comparisons build ops (generated below); handles stay hashable by identity.
    __hash__ = object.__hash__
    # NumPy scalars on the left defer to our reflected operators instead of making arrays.
    __array_ufunc__ = None

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        """torch's functions on traced values (``torch.maximum(a, b)``, ``torch.sqrt(x)``):
        the widefuse function of the same name, so torch-style optimizer code traces as is."""
        if _torch_dispatch is None:
            raise Error("torch functions on traced values need widefuse.functions imported")
        return _torch_dispatch(func, args, kwargs or {})

    def __mod__(self, other: Any) -> Value:
        raise UnsupportedOperationError(
            "'%' (Python's remainder) is not supported; fd.ops.fmod is C's fmod")

    __rmod__ = __mod__

    def __floordiv__(self, other: Any) -> Value:
        raise UnsupportedOperationError(
            "'//' (floor division) is not supported; write floor(a / b) for floating point")

    __rfloordiv__ = __floordiv__

    def __matmul__(self, other: Any) -> Value:
        raise UnsupportedOperationError("'@' is not supported (pointwise ops only)")

    __rmatmul__ = __matmul__

    def __bool__(self) -> bool:
        if self.depends:
            raise SpecializationRequest(self, self.depends)
        raise Error(f"the truth value of '{self.name}' is only known when the fusion runs; "
                    "data-dependent Python control flow cannot be traced (use where())")

    def __float__(self) -> float:
        if self.depends:
            raise SpecializationRequest(self, self.depends)
        raise Error(f"'{self.name}' has no value while the fusion is being defined")

    __int__ = __float__
    __index__ = __float__

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dtype={self.dtype!r})"


install_operators(Value)


class Scalar(Value):
    """A scalar of a fusion: a runtime input, a constant or a scalar expression."""

    __slots__ = ()


class Vector(list):
    """nvFuser's vector of extents (define_vector): a list of its entries, ints and Int
    Scalars. `name` is the input's printed name (V<n>) for a vector input, else None."""

    def __init__(self, entries: Any = (), name: Any = None) -> None:
        super().__init__(entries)
        self.name = name


class TensorShape(tuple):
    """A Tensor's shape both ways: a tuple of static extents (-1 where symbolic), as torch's
    ``shape`` property; called (``t.shape()``), nvFuser's vector of extent Scalars (a Vector,
    which fd.ops.at indexes)."""

    def __new__(cls, tensor: Tensor) -> TensorShape:
        shape = super().__new__(cls, tensor.handle.shape)
        shape._tensor = tensor
        return shape

    def __call__(self) -> Vector:
        return Vector(self._tensor.size(d) for d in range(len(self)))


class Tensor(Value):
    """A tensor of a fusion; in a traced function, the proxy for an array argument.

    Besides the methods written here it has torch's elementwise methods of one op each
    (``sqrt``, ``exp``, ``maximum``, ...), casts (``float``, ``half``, ...) and in-place
    forms (``add_``, ``mul_``, ...): see the tables after the class. The reductions (``sum``,
    ``amax``, ``mean``, ``norm``, ...) are added by tensor_reductions.py.
    """

    __slots__ = ()

    @property
    def shape(self) -> TensorShape:
        """Static extents, -1 where the extent is only known at run time (a tuple, as torch's
        property); called, ``t.shape()`` is nvFuser's: a Vector of extent Scalars."""
        return TensorShape(self)

    def size(self, dim: Any = None) -> Any:
        """nvFuser's ``t.size(dim)``: the extent of dimension `dim` (negative counts from the
        end), an Int Scalar read when the fusion runs. Without `dim`, the shape (torch's
        ``size()``)."""
        if dim is None:
            return self.shape
        rank = self.ndim
        explanation = (f"{self.name}.size({dim!r}): dim must be an int in [-{rank}, {rank}) "
                       f"for this rank-{rank} tensor")
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise DimensionIndexError(explanation)
        if not -rank <= dim < rank:
            raise DimensionIndexError(f"{out_of_boundary(dim, rank)} {explanation}")
        return self._apply("size", self, dim=dim % rank)

    @property
    def ndim(self) -> int:
        return len(self.handle.shape)

    @property
    def real(self) -> Value:
        """The real part (torch's ``Tensor.real``: a real tensor itself), a new value of the
        part's dtype (Float for ComplexFloat, Double for ComplexDouble)."""
        return self._apply("real", self)

    @property
    def imag(self) -> Value:
        """The imaginary part of a complex tensor (torch's ``Tensor.imag``); a real tensor has
        none (Error, as in torch)."""
        return self._apply("imag", self)

    def unsqueeze(self, dim: int) -> Tensor:
        """torch's Tensor.unsqueeze: a dimension of extent 1 inserted at `dim` (a
        broadcast_in_dim)."""
        rank = self.ndim
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise UnsupportedOperationError("Tensor.unsqueeze(dim): dim must be an int")
        if not -rank - 1 <= dim <= rank:
            raise DimensionIndexError(f"Tensor.unsqueeze: Dimension out of range (expected to "
                                      f"be in range of [{-rank - 1}, {rank}], but got {dim})")
        dim %= rank + 1
        shape = [-1] * rank
        shape.insert(dim, 1)
        kept = [d for d in range(rank + 1) if d != dim]
        return self.definition.apply_op("broadcast_in_dim", (self,), shape=shape,
                                        broadcast_dims=kept)

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def dim(self) -> int:
        return self.ndim

    # torch-style methods with arguments of their own (out-of-place)
    def add(self, other: Any, *, alpha: Any = 1) -> Value:
        """self + alpha * other, rounded as torch's kernels round it (torch_arithmetic.py)."""
        return add_with_alpha(self, other, alpha)

    def sub(self, other: Any, *, alpha: Any = 1) -> Value:
        """self - alpha * other, rounded as torch's kernels round it (torch_arithmetic.py)."""
        return add_with_alpha(self, other, alpha, negate=True)

    def mul(self, other: Any) -> Value:
        return self * other

    def div(self, other: Any, *, rounding_mode: Any = None) -> Value:
        if rounding_mode is not None:
            raise Error(f"div(rounding_mode={rounding_mode!r}) is not supported; "
                        "only true division is")
        return self / other

    def pow(self, exponent: Any) -> Value:
        return self**exponent

    def square(self) -> Value:
        """The tensor times itself (torch's Tensor.square)."""
        return self * self

    def lerp(self, end: Any, weight: Any) -> Value:
        """torch's lerp, rounded as its kernels round it (torch_arithmetic.py)."""
        fused = torch_arithmetic.lerp(self, end, weight)
        return self._apply("lerp", self, end, weight) if fused is None else fused

    def addcmul(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Value:
        """self + value * tensor1 * tensor2, rounded as torch's kernels round it."""
        fused = torch_arithmetic.addcmul(self, tensor1, tensor2, value)
        return self + scaled(tensor1, value) * tensor2 if fused is None else fused

    def addcdiv(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Value:
        return self + scaled(tensor1, value) / tensor2

    def clamp(self, min: Any = None, max: Any = None) -> Value:
        result: Value = self
        if min is not None:
            result = result._apply("maximum", result, min)
        if max is not None:
            result = result._apply("minimum", result, max)
        return result

    def where(self, condition: Any, other: Any) -> Value:
        return self._apply("where", condition, self, other)

    def clone(self) -> Value:
        """A copy (torch.clone): a new value, even in an output."""
        return self._apply("set", self)

    def detach(self) -> Value:
        """The value itself: traced values have no autograd graph to detach from."""
        return self

    def to(self, dtype: Any) -> Value:
        return self._apply("cast", self, dtype=data_type_of(dtype, "to"))

    def view(self, dtype: Any) -> Value:
        """torch's view(dtype) for a dtype of the same width: the same bits read as `dtype`."""
        target = data_type_of(dtype, "view")
        if target.numpy.itemsize != self.dtype.numpy.itemsize:
            raise UnsupportedOperationError(
                f"Tensor.view({target!r}) changes the element width of a {self.dtype!r} tensor; "
                "only same-width views (bitcasts) are supported")
        return self._apply("bitcast", self, dtype=target)

    def type_as(self, other: Value) -> Value:
        return self.to(other.dtype)

    def copy_(self, src: Any) -> Tensor:
        """torch's Tensor.copy_: later reads see `src` (widefuse.copy_(src, dst) is the
        deferred form, whose later reads see the entry value)."""
        self.definition.assign_in_place(self, src)
        return self

    def __getitem__(self, index: Any) -> Any:
        raise UnsupportedOperationError("indexing a Tensor is not supported (pointwise ops only)")

    def __setitem__(self, index: Any, value: Any) -> None:
        raise UnsupportedOperationError(
            "item assignment is not supported: write widefuse.copy_(new_value, tensor)")

    def __iter__(self) -> Any:
        raise UnsupportedOperationError("iterating over a Tensor is not supported")

    def __len__(self) -> int:
        raise UnsupportedOperationError("len() of a Tensor is not supported; use .shape")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "mT":
            # torch's Tensor.mT (the last two dimensions swapped). widefuse has no transpose
            # op: the definition reads the same memory with the last two strides swapped as
            # a second input, which widefuse.optim does for a grad in update(); anywhere else
            # it raises UnsupportedOperationError. Here and not a property, whose
            # AttributeError (UnsupportedOperationError is one) would land in __getattr__.
            return self.definition.transposed(self)
        if name in ("item", "tolist"):
            raise UnsupportedOperationError(
                f"Tensor.{name}() is not supported: a traced value (a reduction's result too) "
                "is only known when the fusion runs, so Python cannot read or branch on it "
                "(use where())")
        if name.endswith("_") and not name.endswith("__"):
            raise UnsupportedOperationError(
                f"in-place method Tensor.{name}() is not supported (see "
                f"docs/python_tracer.md for the in-place methods that are); write "
                f"tensor.copy_({name[:-1]}(...))")
        raise UnsupportedOperationError(
            f"Tensor.{name} is not supported by widefuse (pointwise ops only; see "
            "docs/python_tracer.md for the list)")


install_methods(Tensor)


def add_tensor_methods(methods: dict[str, Callable[..., Any]]) -> None:
    """Adds torch-style methods written in another module (tensor_reductions.py) to Tensor,
    named and argument-checked as its own."""
    for name, method in methods.items():
        method.__name__, method.__qualname__ = name, f"Tensor.{name}"
        setattr(Tensor, name, checked_arguments(method, f"Tensor.{name}"))


# ---- for the rest of the package (fusion_definition, functions) ----------------------------


def add_with_alpha(input: Any, other: Any, alpha: Any, negate: bool = False) -> Any:
    """torch.add(input, other, alpha=alpha) (torch.sub with `negate`): one fused
    multiply-add for floating tensors and alpha other than 1 (torch_arithmetic.py)."""
    if not _is_one(alpha):
        fused = torch_arithmetic.add_scaled(input, other, alpha, negate)
        if fused is not None:
            return fused
    other = scaled(other, alpha)
    return input - other if negate else input + other


def _is_one(factor: Any) -> bool:
    return isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor == 1


def scaled(value: Any, factor: Any) -> Any:
    """`factor * value`, skipping the multiply for the default factor 1 as torch does."""
    if _is_one(factor):
        return value
    return factor * value if isinstance(value, Value) else value * factor


def snapshot(value: Value) -> Value:
    """A new value of `value`'s definition standing for what `value` stands for now: a later
    in-place write into `value` does not move it."""
    return _widefuse.snapshot(value)


def specializable(scalar: Scalar, name: str) -> Scalar:
    """Marks runtime scalar input `scalar` as one a tracer may turn into a constant named
    `name` when Python control flow needs its value (see SpecializationRequest)."""
    scalar.depends = frozenset((name,))
    return scalar


def depends_of(operands: Any) -> frozenset:
    """The specializable scalars the values among `operands` are computed from."""
    depends: frozenset = NO_DEPENDS
    for operand in operands:
        if isinstance(operand, Value) and operand.depends:
            depends = depends | operand.depends
    return depends


def rebind(tensor: Tensor, value: Value) -> None:
    """Makes later reads of `tensor` see `value` (an in-place write or torch's out=)."""
    tensor.handle = value.handle
    tensor.depends = value.depends
