"""The generated part of traced values' classes (values.py): Python's operators and torch's
elementwise, cast and in-place methods of one IR op each, made from the name tables below,
and the argument check every public method gets.

An operator or one-op method records its op in one C++ call (``_widefuse.record``, which reads
the operands' fields: their definition's builder, handles and dependencies); where that
declines (None: an operand to convert, one of another definition, a finished definition), the
definition's ``pointwise`` converts the operands or refuses them by name. A traced optimizer
records hundreds of thousands of ops, and in Python each cost about as much as the builder.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from . import _widefuse
from .data_type import DataType
from .errors import UnsupportedOperationError

# Each IR op's number, as _widefuse.record and the builder's op() take it.
OP_KINDS = {name: kind for kind, name in enumerate(_widefuse.op_names())}
_record = _widefuse.record


# Python's operators of one IR op each: __<name>__ (and __r<name>__ for the reflected
# form, operands swapped) by the op.
_BINARY_OPERATORS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv",
                     "pow": "pow", "lshift": "shift_left", "rshift": "shift_right"}
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")  # no reflected form: Python swaps them
_UNARY_OPERATORS = {"neg": "neg", "abs": "abs"}


# Operators record their op in one C++ call (_widefuse.record), which declines (None) what
# the definition's pointwise() must convert or refuse by name.
def _binary_operator(op: str, reflected: bool) -> Callable[..., Any]:
    kind = OP_KINDS[op]
    if reflected:
        def operator(self, other: Any) -> Any:
            operands = (other, self)
            result = _record(kind, operands)
            return self.definition.pointwise(op, operands) if result is None else result
    else:
        def operator(self, other: Any) -> Any:
            operands = (self, other)
            result = _record(kind, operands)
            return self.definition.pointwise(op, operands) if result is None else result

    return operator


def _unary_operator(op: str) -> Callable[..., Any]:
    kind = OP_KINDS[op]

    def operator(self) -> Any:
        result = _record(kind, (self,))
        return self.definition.pointwise(op, (self,)) if result is None else result

    return operator


def install_operators(cls: type) -> None:
    """Adds Python's operators of one IR op each to `cls` (widefuse.values.Value)."""
    operators = {f"__{name}__": _binary_operator(op, False)
                 for name, op in _BINARY_OPERATORS.items()}
    operators.update((f"__r{name}__", _binary_operator(op, True))
                     for name, op in _BINARY_OPERATORS.items())
    operators.update((f"__{name}__", _binary_operator(name, False)) for name in _COMPARISONS)
    operators.update((f"__{name}__", _unary_operator(op)) for name, op in _UNARY_OPERATORS.items())
    for name, operator in operators.items():
        operator.__name__, operator.__qualname__ = name, f"{cls.__name__}.{name}"
        setattr(cls, name, operator)



def checked_arguments(function: Callable[..., Any], display_name: str) -> Callable[..., Any]:
    """`function` raising UnsupportedOperationError, not TypeError, for arguments it lacks
    (torch's `out=` on a method, `memory_format=`, ...), so tracing stops with widefuse's error."""
    signature = inspect.signature(function)
    shown = signature.replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty)
                    for p in signature.parameters.values()],
        return_annotation=inspect.Signature.empty)

    # Arguments are checked only when the call raises TypeError: Python binds them before
    # the body runs, so a call they do not fit has done nothing yet, and binding every call
    # up front would cost more than the op it records.
    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except TypeError:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as error:
                raise UnsupportedOperationError(
                    f"{display_name}(): {error}; widefuse supports {display_name}{shown}"
                ) from None
            raise

    return checked



# torch's elementwise methods of one IR op, by method name: the op of the tensor alone, or
# of the tensor and `other`.
UNARY_METHODS = {name: name for name in (
    "sqrt", "rsqrt", "reciprocal", "exp", "exp2", "log", "log2", "log1p", "expm1", "sin", "cos",
    "tanh", "sigmoid", "floor", "ceil", "round", "trunc", "sign", "isnan", "isinf", "isfinite",
    "logical_not", "neg", "abs")}
UNARY_METHODS["negative"] = "neg"
BINARY_METHODS = ("maximum", "minimum")
# Casts to a dtype named by the method.
CAST_METHODS = {"float": DataType.Float, "double": DataType.Double, "half": DataType.Half,
                "bfloat16": DataType.BFloat16}
# torch's in-place methods, each the out-of-place method of its name without the "_": the
# tensor holds the result from here on (later reads see it), and a tensor input receives it
# when the fusion ends, as torch's optimizers update parameters and state in place. The
# result is cast to the tensor's dtype, as in torch.
IN_PLACE_METHODS = ("add_", "sub_", "mul_", "div_", "pow_", "lerp_", "addcmul_", "addcdiv_",
                    "clamp_", "sqrt_", "neg_", "abs_", "sign_")


def _unary_method(name: str, op: str) -> Callable[..., Any]:
    method = _unary_operator(op)
    method.__doc__ = f"Elementwise {op} (torch's Tensor.{name})."
    return method


def _binary_method(name: str) -> Callable[..., Any]:
    method = _binary_operator(name, False)
    method.__doc__ = f"Elementwise {name} of the tensor and `other` (torch's Tensor.{name})."
    return method


def _cast_method(name: str, dtype: DataType) -> Callable[..., Any]:
    def method(self) -> Any:
        return self.to(dtype)

    method.__doc__ = f"The tensor cast to {dtype!r} (torch's Tensor.{name})."
    return method


def _in_place_method(name: str, out_of_place: Callable[..., Any]) -> Callable[..., Any]:
    # functools.wraps keeps the out-of-place signature, which checked_arguments enforces.
    @functools.wraps(out_of_place)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.definition.assign_in_place(self, out_of_place(self, *args, **kwargs))
        return self

    method.__doc__ = f"In-place {name[:-1]} (torch's Tensor.{name}): the tensor holds the result."
    method.__signature__ = inspect.signature(out_of_place).replace(  # type: ignore[attr-defined]
        return_annotation="Tensor")
    return method


def install_methods(cls: type) -> None:
    """Adds the generated methods to `cls` (widefuse.values.Tensor), then makes every public
    method check its arguments (checked_arguments)."""
    methods = {name: _unary_method(name, op) for name, op in UNARY_METHODS.items()}
    methods.update((name, _binary_method(name)) for name in BINARY_METHODS)
    methods.update((name, _cast_method(name, dtype)) for name, dtype in CAST_METHODS.items())
    methods.update((name, _in_place_method(name, vars(cls).get(name[:-1]) or methods[name[:-1]]))
                   for name in IN_PLACE_METHODS)
    for name, method in methods.items():
        method.__name__, method.__qualname__ = name, f"{cls.__name__}.{name}"
        setattr(cls, name, method)
    for name, method in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(method):
            setattr(cls, name, checked_arguments(method, f"{cls.__name__}.{name}"))
