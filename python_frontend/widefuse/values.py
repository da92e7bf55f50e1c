"""Values of a FusionDefinition: ``Tensor`` and ``Scalar``.

They support Python's operators and the torch-style methods optimizer code calls
(``x.sqrt()``, ``x.add(y, alpha=a)``, ``x.addcdiv(a, b, value=v)``, ...), so the same objects
serve a hand-written definition and the tracer's proxies. Python numbers mixed in stay
untyped literals and promote as torch promotes Python scalars.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable

from ._widefuse import Error
from .data_type import DataType, data_type_of, from_short_name
from .errors import DimensionIndexError, out_of_boundary

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition


class UnsupportedOperationError(Error, AttributeError):
    """An operation widefuse does not trace (a reduction, an in-place method, ...).

    Also an AttributeError, so ``hasattr(tensor, "sum")`` is simply False.
    """


class SpecializationRequest(Error):
    """Python control flow (``if weight_decay != 0:``) on a scalar computed only from runtime
    scalars that may be specialized, such as an optimizer's hyperparameters: whoever defined
    them catches this and traces again with `names` as constants."""

    def __init__(self, value: Value, names: frozenset) -> None:
        super().__init__(
            f"the value of '{value.name}' depends on the runtime scalar(s) "
            f"{', '.join(sorted(names))}, which are only known when the fusion runs")
        self.names = names


class Value:
    """A tensor or scalar of one FusionDefinition."""

    __slots__ = ("_fd", "_value", "_input", "_depends")

    def __init__(self, fd: FusionDefinition, value: Any, depends: frozenset = frozenset()) -> None:
        self._fd = fd
        self._value = value
        # The fusion input this handle stands for, kept when `out=` rebinds `_value`.
        self._input = value
        # The specializable runtime scalars this value is computed from (see
        # SpecializationRequest); empty for everything else.
        self._depends = depends

    @property
    def definition(self) -> FusionDefinition:
        """The FusionDefinition the value belongs to."""
        return self._fd

    @property
    def dtype(self) -> DataType:
        return from_short_name(self._value.dtype)

    @property
    def name(self) -> str:
        """The value's name in the text form."""
        return self._value.name

    def _apply(self, op: str, *operands: Any, **attributes: Any) -> Value:
        return self._fd.apply_op(op, operands, **attributes)

    # Python operators
    def __add__(self, other: Any) -> Value:
        return self._apply("add", self, other)

    def __radd__(self, other: Any) -> Value:
        return self._apply("add", other, self)

    def __sub__(self, other: Any) -> Value:
        return self._apply("sub", self, other)

    def __rsub__(self, other: Any) -> Value:
        return self._apply("sub", other, self)

    def __mul__(self, other: Any) -> Value:
        return self._apply("mul", self, other)

    def __rmul__(self, other: Any) -> Value:
        return self._apply("mul", other, self)

    def __truediv__(self, other: Any) -> Value:
        return self._apply("truediv", self, other)

    def __rtruediv__(self, other: Any) -> Value:
        return self._apply("truediv", other, self)

    def __pow__(self, other: Any) -> Value:
        return self._apply("pow", self, other)

    def __rpow__(self, other: Any) -> Value:
        return self._apply("pow", other, self)

    def __neg__(self) -> Value:
        return self._apply("neg", self)

    def __pos__(self) -> Value:
        return self

    def __abs__(self) -> Value:
        return self._apply("abs", self)

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

    def __lshift__(self, other: Any) -> Value:
        return self._apply("shift_left", self, other)

    def __rshift__(self, other: Any) -> Value:
        return self._apply("shift_right", self, other)

    def __rlshift__(self, other: Any) -> Value:
        return self._apply("shift_left", other, self)

    def __rrshift__(self, other: Any) -> Value:
        return self._apply("shift_right", other, self)

    # Comparisons build ops; handles stay hashable by identity.
    def __eq__(self, other: Any) -> Value:  # type: ignore[override]
        return self._apply("eq", self, other)

    def __ne__(self, other: Any) -> Value:  # type: ignore[override]
        return self._apply("ne", self, other)

    def __lt__(self, other: Any) -> Value:
        return self._apply("lt", self, other)

    def __le__(self, other: Any) -> Value:
        return self._apply("le", self, other)

    def __gt__(self, other: Any) -> Value:
        return self._apply("gt", self, other)

    def __ge__(self, other: Any) -> Value:
        return self._apply("ge", self, other)

    __hash__ = object.__hash__
    # NumPy scalars on the left defer to our reflected operators instead of making arrays.
    __array_ufunc__ = None

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        """torch's functions on traced values (``torch.maximum(a, b)``, ``torch.sqrt(x)``):
        the widefuse function of the same name, so torch-style optimizer code traces as is."""
        from .torch_functions import dispatch  # imported late: it imports widefuse.functions
        return dispatch(func, args, kwargs or {})

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
        if self._depends:
            raise SpecializationRequest(self, self._depends)
        raise Error(f"the truth value of '{self.name}' is only known when the fusion runs; "
                    "data-dependent Python control flow cannot be traced (use where())")

    def __float__(self) -> float:
        if self._depends:
            raise SpecializationRequest(self, self._depends)
        raise Error(f"'{self.name}' has no value while the fusion is being defined")

    __int__ = __float__
    __index__ = __float__

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dtype={self.dtype!r})"


class Scalar(Value):
    """A scalar of a fusion: a runtime input, a constant or a scalar expression."""

    __slots__ = ()


class Vector(list):
    """nvFuser's vector of extents (define_vector): a list of its entries, ints and Int
    Scalars. `name` is the input's printed name (V<n>) for a vector input, else None."""

    def __init__(self, entries: Any = (), name: Any = None) -> None:
        super().__init__(entries)
        self.name = name


def checked_arguments(function: Callable[..., Any], display_name: str) -> Callable[..., Any]:
    """`function` raising UnsupportedOperationError, not TypeError, for arguments it lacks
    (torch's `out=` on a method, `memory_format=`, ...), so tracing stops with widefuse's error."""
    signature = inspect.signature(function)
    shown = signature.replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty)
                    for p in signature.parameters.values()],
        return_annotation=inspect.Signature.empty)

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as error:
            raise UnsupportedOperationError(
                f"{display_name}(): {error}; widefuse supports {display_name}{shown}") from None
        return function(*args, **kwargs)

    return checked


def _checked_methods(cls: type) -> type:
    """Wraps every public method of `cls` with checked_arguments (see there)."""
    for name, method in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(method):
            setattr(cls, name, checked_arguments(method, f"{cls.__name__}.{name}"))
    return cls


class TensorShape(tuple):
    """A Tensor's shape both ways: a tuple of static extents (-1 where symbolic), as torch's
    ``shape`` property; called (``t.shape()``), nvFuser's vector of extent Scalars (a Vector,
    which fd.ops.at indexes)."""

    def __new__(cls, tensor: Tensor) -> TensorShape:
        shape = super().__new__(cls, tensor._value.shape)
        shape._tensor = tensor
        return shape

    def __call__(self) -> Vector:
        return Vector(self._tensor.size(d) for d in range(len(self)))


@_checked_methods
class Tensor(Value):
    """A tensor of a fusion; in a traced function, the proxy for an array argument."""

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
        return len(self._value.shape)

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

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def dim(self) -> int:
        return self.ndim

    # torch-style methods (out-of-place only)
    def add(self, other: Any, *, alpha: Any = 1) -> Value:
        return self + _scaled(other, alpha)

    def sub(self, other: Any, *, alpha: Any = 1) -> Value:
        return self - _scaled(other, alpha)

    def mul(self, other: Any) -> Value:
        return self * other

    def div(self, other: Any, *, rounding_mode: Any = None) -> Value:
        if rounding_mode is not None:
            raise Error(f"div(rounding_mode={rounding_mode!r}) is not supported; "
                        "only true division is")
        return self / other

    def pow(self, exponent: Any) -> Value:
        return self**exponent

    def lerp(self, end: Any, weight: Any) -> Value:
        return self._apply("lerp", self, end, weight)

    def addcmul(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Value:
        return self + _scaled(tensor1, value) * tensor2

    def addcdiv(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Value:
        return self + _scaled(tensor1, value) / tensor2

    def maximum(self, other: Any) -> Value:
        return self._apply("maximum", self, other)

    def minimum(self, other: Any) -> Value:
        return self._apply("minimum", self, other)

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

    def float(self) -> Value:
        return self.to(DataType.Float)

    def double(self) -> Value:
        return self.to(DataType.Double)

    def half(self) -> Value:
        return self.to(DataType.Half)

    def bfloat16(self) -> Value:
        return self.to(DataType.BFloat16)

    # Elementwise functions (torch's method names)
    def sqrt(self) -> Value:
        return self._apply("sqrt", self)

    def rsqrt(self) -> Value:
        return self._apply("rsqrt", self)

    def reciprocal(self) -> Value:
        return self._apply("reciprocal", self)

    def exp(self) -> Value:
        return self._apply("exp", self)

    def exp2(self) -> Value:
        return self._apply("exp2", self)

    def log(self) -> Value:
        return self._apply("log", self)

    def log2(self) -> Value:
        return self._apply("log2", self)

    def log1p(self) -> Value:
        return self._apply("log1p", self)

    def expm1(self) -> Value:
        return self._apply("expm1", self)

    def sin(self) -> Value:
        return self._apply("sin", self)

    def cos(self) -> Value:
        return self._apply("cos", self)

    def tanh(self) -> Value:
        return self._apply("tanh", self)

    def sigmoid(self) -> Value:
        return self._apply("sigmoid", self)

    def floor(self) -> Value:
        return self._apply("floor", self)

    def ceil(self) -> Value:
        return self._apply("ceil", self)

    def round(self) -> Value:
        return self._apply("round", self)

    def trunc(self) -> Value:
        return self._apply("trunc", self)

    def sign(self) -> Value:
        return self._apply("sign", self)

    def isnan(self) -> Value:
        return self._apply("isnan", self)

    def isinf(self) -> Value:
        return self._apply("isinf", self)

    def isfinite(self) -> Value:
        return self._apply("isfinite", self)

    def logical_not(self) -> Value:
        return self._apply("logical_not", self)

    def neg(self) -> Value:
        return self._apply("neg", self)

    def abs(self) -> Value:
        return self._apply("abs", self)

    def negative(self) -> Value:
        return self._apply("neg", self)

    # torch's in-place methods: the tensor holds the result from here on (later reads see it),
    # and a tensor input receives it when the fusion ends, as torch's optimizers update
    # parameters and state in place. The result is cast to the tensor's dtype, as in torch.
    def add_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._assign(self.add(other, alpha=alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._assign(self.sub(other, alpha=alpha))

    def mul_(self, other: Any) -> Tensor:
        return self._assign(self.mul(other))

    def div_(self, other: Any, *, rounding_mode: Any = None) -> Tensor:
        return self._assign(self.div(other, rounding_mode=rounding_mode))

    def pow_(self, exponent: Any) -> Tensor:
        return self._assign(self.pow(exponent))

    def lerp_(self, end: Any, weight: Any) -> Tensor:
        return self._assign(self.lerp(end, weight))

    def addcmul_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        return self._assign(self.addcmul(tensor1, tensor2, value=value))

    def addcdiv_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        return self._assign(self.addcdiv(tensor1, tensor2, value=value))

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        return self._assign(self.clamp(min, max))

    def sqrt_(self) -> Tensor:
        return self._assign(self.sqrt())

    def neg_(self) -> Tensor:
        return self._assign(self.neg())

    def abs_(self) -> Tensor:
        return self._assign(self.abs())

    def sign_(self) -> Tensor:
        return self._assign(self.sign())

    def copy_(self, src: Any) -> Tensor:
        """torch's Tensor.copy_: later reads see `src` (widefuse.copy_(src, dst) is the
        deferred form, whose later reads see the entry value)."""
        return self._assign(src)

    def _assign(self, value: Any) -> Tensor:
        self._fd.assign_in_place(self, value)
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
        if name.endswith("_") and not name.endswith("__"):
            raise UnsupportedOperationError(
                f"in-place method Tensor.{name}() is not supported (see docs/python.md for the "
                f"in-place methods that are); write tensor.copy_({name[:-1]}(...))")
        raise UnsupportedOperationError(
            f"Tensor.{name} is not supported by widefuse (pointwise ops only; see "
            "docs/python.md for the list)")






def _scaled(value: Any, factor: Any) -> Any:
    """`factor * value`, skipping the multiply for the default factor 1 as torch does."""
    if isinstance(factor, (bool, int, float)) and factor == 1 and not isinstance(factor, bool):
        return value
    return factor * value if isinstance(value, Value) else value * factor


# ---- for the rest of the package (fusion_definition, functions) ----------------------------


def handle(value: Value) -> Any:
    """The binding's handle of the value a Value stands for now."""
    return value._value


def input_handle(tensor: Tensor) -> Any:
    """The fusion input a Tensor handle stands for, even after rebind()."""
    return tensor._input


def specializable(scalar: Scalar, name: str) -> Scalar:
    """Marks runtime scalar input `scalar` as one a tracer may turn into a constant named
    `name` when Python control flow needs its value (see SpecializationRequest)."""
    scalar._depends = frozenset((name,))
    return scalar


def depends_of(operands: Any) -> frozenset:
    """The specializable scalars the values among `operands` are computed from."""
    depends: frozenset = frozenset()
    for operand in operands:
        if isinstance(operand, Value) and operand._depends:
            depends = depends | operand._depends
    return depends


def rebind(tensor: Tensor, value: Value) -> None:
    """Makes later reads of `tensor` see `value` (an in-place write or torch's out=)."""
    tensor._value = value._value
    tensor._depends = value._depends

