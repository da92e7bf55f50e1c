"""torch-style functions on traced values, so optimizer code runs unchanged under
``import widefuse as torch`` or with ``widefuse.maximum`` in place of ``torch.maximum``.

``out=`` follows torch: the array passed as `out` is updated in place (a copy_ landing when
the fusion ends) and later reads of that proxy in the traced function see the new value.

torch's own functions on traced values (``__torch_function__``) run here too:
``torch.maximum(a, b)`` on proxies runs ``widefuse.maximum(a, b)``, and
``torch.Tensor.add(a, b)`` the proxy's own method, so optimizer code written against torch
traces unchanged.
"""

from __future__ import annotations

from typing import Any, Optional

from ._widefuse import Error
from . import tensor_reductions, torch_arithmetic
from .values import (Tensor, UnsupportedOperationError, Value, add_with_alpha,
                     checked_arguments, scaled, set_torch_dispatch)


def _checked(function: Any) -> Any:
    """checked_arguments for a torch-style function of this module."""
    return checked_arguments(function, f"widefuse.{function.__name__}")


def _definition_of(function: str, *arguments: Any) -> Any:
    for argument in arguments:
        if isinstance(argument, Value):
            return argument.definition
    raise Error(f"widefuse.{function}: at least one argument must be a traced tensor")


@_checked
def copy_(source: Any, destination: Tensor) -> Any:
    """In-place update with the seed's semantics: `destination` (a tensor input) receives
    `source` when the fusion ends; reads of `destination` before then see its entry value.
    Returns `source`, the new value."""
    if not isinstance(destination, Tensor):
        raise Error(f"copy_: the destination must be a traced tensor input, got "
                    f"{type(destination).__name__}")
    destination.definition.copy_(source, destination)
    return source


def _with_out(result: Value, out: Optional[Tensor], function: str) -> Value:
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise Error(f"widefuse.{function}: out= must be a traced tensor")
    out.definition.assign_in_place(out, result)  # later reads see it, in out's dtype (torch)
    return out


def _binary(op: str) -> Any:
    def function(input: Any, other: Any, *, out: Optional[Tensor] = None) -> Value:
        fd = _definition_of(op, input, other)
        return _with_out(fd.apply_op(op, (input, other)), out, op)

    function.__name__ = op
    function.__doc__ = f"Elementwise {op} (torch.{op})."
    return checked_arguments(function, f"widefuse.{op}")


def _unary(op: str) -> Any:
    def function(input: Any, *, out: Optional[Tensor] = None) -> Value:
        fd = _definition_of(op, input)
        return _with_out(fd.apply_op(op, (input,)), out, op)

    function.__name__ = op
    function.__doc__ = f"Elementwise {op} (torch.{op})."
    return checked_arguments(function, f"widefuse.{op}")


maximum = _binary("maximum")
minimum = _binary("minimum")
mul = _binary("mul")
pow = _binary("pow")
atan2 = _binary("atan2")
fmod = _binary("fmod")

sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
reciprocal = _unary("reciprocal")
exp = _unary("exp")
log = _unary("log")
log1p = _unary("log1p")
expm1 = _unary("expm1")
neg = _unary("neg")
abs = _unary("abs")
sign = _unary("sign")
sigmoid = _unary("sigmoid")
tanh = _unary("tanh")
isnan = _unary("isnan")
isinf = _unary("isinf")
isfinite = _unary("isfinite")


@_checked
def add(input: Any, other: Any, *, alpha: Any = 1, out: Optional[Tensor] = None) -> Value:
    """input + alpha * other (torch.add)."""
    _definition_of("add", input, other)
    return _with_out(add_with_alpha(input, other, alpha), out, "add")


@_checked
def sub(input: Any, other: Any, *, alpha: Any = 1, out: Optional[Tensor] = None) -> Value:
    """input - alpha * other (torch.sub)."""
    _definition_of("sub", input, other)
    return _with_out(add_with_alpha(input, other, alpha, negate=True), out, "sub")


@_checked
def div(input: Any, other: Any, *, rounding_mode: Any = None,
        out: Optional[Tensor] = None) -> Value:
    """True division (torch.div without rounding_mode)."""
    if rounding_mode is not None:
        raise Error(f"widefuse.div: rounding_mode={rounding_mode!r} is not supported")
    fd = _definition_of("div", input, other)
    return _with_out(fd.apply_op("truediv", (input, other)), out, "div")


@_checked
def where(condition: Any, input: Any, other: Any) -> Value:
    """input where condition holds, else other (torch.where)."""
    return _definition_of("where", condition, input, other).apply_op("where",
                                                                     (condition, input, other))


@_checked
def lerp(input: Any, end: Any, weight: Any, *, out: Optional[Tensor] = None) -> Value:
    """input + weight * (end - input) (torch.lerp)."""
    fd = _definition_of("lerp", input, end, weight)
    fused = torch_arithmetic.lerp(input, end, weight)  # torch's rounding
    return _with_out(fd.apply_op("lerp", (input, end, weight)) if fused is None else fused,
                     out, "lerp")


@_checked
def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1,
            out: Optional[Tensor] = None) -> Value:
    """input + value * tensor1 * tensor2 (torch.addcmul)."""
    _definition_of("addcmul", input, tensor1, tensor2)
    fused = torch_arithmetic.addcmul(input, tensor1, tensor2, value)  # torch's rounding
    return _with_out(input + scaled(tensor1, value) * tensor2 if fused is None else fused, out,
                     "addcmul")


@_checked
def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1,
            out: Optional[Tensor] = None) -> Value:
    """input + value * tensor1 / tensor2 (torch.addcdiv)."""
    _definition_of("addcdiv", input, tensor1, tensor2)
    return _with_out(input + scaled(tensor1, value) / tensor2, out,
                     "addcdiv")


@_checked
def clamp(input: Any, min: Any = None, max: Any = None, *,
          out: Optional[Tensor] = None) -> Value:
    """Elementwise clamp to [min, max] (torch.clamp); either bound may be None."""
    if not isinstance(input, Tensor):
        raise Error("widefuse.clamp: the input must be a traced tensor")
    return _with_out(input.clamp(min, max), out, "clamp")


negative = neg
real = _unary("real")
imag = _unary("imag")
# torch.complex(real, imag): f32 or f64 parts of one dtype.
complex = _binary("complex")  # shadows the builtin here, as abs and pow do




# Reductions (tensor_reductions.py). sum, sum_of_squares and vector_norm also take a list of
# tensors: one result over all their elements (widefuse's global scope).
def _method(name: str) -> Any:
    """widefuse.<name>(x, ...): the traced tensor's method `name`, as torch.<name> is."""
    def function(input: Any, *args: Any, **kwargs: Any) -> Value:
        if not isinstance(input, Tensor):
            raise Error(f"widefuse.{name}: the input must be a traced tensor")
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = name
    function.__doc__ = f"torch.{name} of a traced tensor (its method Tensor.{name})."
    return function


def _named(name: str, function: Any) -> Any:
    """`function` as widefuse.<name>, argument-checked as this module's functions are."""
    function.__name__ = function.__qualname__ = name
    return _checked(function)


sum = _named("sum", tensor_reductions.torch_sum)
vector_norm = _named("vector_norm", tensor_reductions.torch_vector_norm)
sum_of_squares = _named("sum_of_squares", tensor_reductions.torch_sum_of_squares)
norm = _named("norm", tensor_reductions.torch_norm)
amax, amin, max, min, any, all, mean = map(_method, ("amax", "amin", "max", "min", "any",
                                                     "all", "mean"))

# torch names whose widefuse function has another name.
_RENAMED = {"true_divide": "div", "multiply": "mul", "subtract": "sub", "clip": "clamp",
            "linalg_vector_norm": "vector_norm"}


def torch_dispatch(func: Any, args: Any, kwargs: dict) -> Any:
    """Runs the widefuse equivalent of torch function or method `func` (a value's
    ``__torch_function__``)."""
    name = getattr(func, "__name__", repr(func))
    name = _RENAMED.get(name, name)
    qualified = getattr(func, "__qualname__", "") or ""
    is_method = qualified.startswith(("Tensor.", "TensorBase.")) or (
        getattr(func, "__objclass__", None) is not None)
    if not is_method:
        function = globals().get(name)
        if function is not None and callable(function):
            return function(*args, **kwargs)
    if args and isinstance(args[0], Tensor):
        method = getattr(type(args[0]), name, None)
        if method is not None and callable(method):
            return method(*args, **kwargs)
    raise UnsupportedOperationError(
        f"torch.{'Tensor.' if is_method else ''}{name} is not supported on traced values "
        "(pointwise ops only; see docs/python_tracer.md for the list)")


set_torch_dispatch(torch_dispatch)
