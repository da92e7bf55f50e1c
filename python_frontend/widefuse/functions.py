"""torch-style functions on traced values, so optimizer code runs unchanged under
``import widefuse as torch`` or with ``widefuse.maximum`` in place of ``torch.maximum``.

``out=`` follows torch: the array passed as `out` is updated in place (a copy_ landing when
the fusion ends) and later reads of that proxy in the traced function see the new value.
"""

from __future__ import annotations

from typing import Any, Optional

from ._widefuse import Error
from .values import Tensor, Value, _scaled, checked_arguments


def _definition_of(function: str, *arguments: Any) -> Any:
    for argument in arguments:
        if isinstance(argument, Value):
            return argument._fd
    raise Error(f"widefuse.{function}: at least one argument must be a traced tensor")


def copy_(source: Any, destination: Tensor) -> Any:
    """In-place update with the seed's semantics: `destination` (a tensor input) receives
    `source` when the fusion ends; reads of `destination` before then see its entry value.
    Returns `source`, the new value."""
    if not isinstance(destination, Tensor):
        raise Error(f"copy_: the destination must be a traced tensor input, got "
                    f"{type(destination).__name__}")
    fd = destination._fd
    fd._live().copy_(fd._operand(source, "copy_"), destination._input)
    return source


def _with_out(result: Value, out: Optional[Tensor], function: str) -> Value:
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise Error(f"widefuse.{function}: out= must be a traced tensor input")
    copy_(result, out)
    # torch semantics: later reads see the written value, in out's dtype.
    written = result if result.dtype is out.dtype else result.to(out.dtype)
    out._value = written._value
    return out


def _binary(op: str) -> Any:
    def function(input: Any, other: Any, *, out: Optional[Tensor] = None) -> Value:
        fd = _definition_of(op, input, other)
        return _with_out(fd._apply(op, (input, other)), out, op)

    function.__name__ = op
    function.__doc__ = f"Elementwise {op} (torch.{op})."
    return function


def _unary(op: str) -> Any:
    def function(input: Any, *, out: Optional[Tensor] = None) -> Value:
        fd = _definition_of(op, input)
        return _with_out(fd._apply(op, (input,)), out, op)

    function.__name__ = op
    function.__doc__ = f"Elementwise {op} (torch.{op})."
    return function


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


def add(input: Any, other: Any, *, alpha: Any = 1, out: Optional[Tensor] = None) -> Value:
    """input + alpha * other (torch.add)."""
    fd = _definition_of("add", input, other)
    scaled = _scaled(other, alpha)
    return _with_out(fd._apply("add", (input, scaled)), out, "add")


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Optional[Tensor] = None) -> Value:
    """input - alpha * other (torch.sub)."""
    fd = _definition_of("sub", input, other)
    scaled = _scaled(other, alpha)
    return _with_out(fd._apply("sub", (input, scaled)), out, "sub")


def div(input: Any, other: Any, *, rounding_mode: Any = None,
        out: Optional[Tensor] = None) -> Value:
    """True division (torch.div without rounding_mode)."""
    if rounding_mode is not None:
        raise Error(f"widefuse.div: rounding_mode={rounding_mode!r} is not supported")
    fd = _definition_of("div", input, other)
    return _with_out(fd._apply("div", (input, other)), out, "div")


def where(condition: Any, input: Any, other: Any) -> Value:
    """input where condition holds, else other (torch.where)."""
    return _definition_of("where", condition, input, other)._apply("where",
                                                                   (condition, input, other))


def lerp(input: Any, end: Any, weight: Any, *, out: Optional[Tensor] = None) -> Value:
    """input + weight * (end - input) (torch.lerp)."""
    fd = _definition_of("lerp", input, end, weight)
    return _with_out(fd._apply("lerp", (input, end, weight)), out, "lerp")


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1,
            out: Optional[Tensor] = None) -> Value:
    """input + value * tensor1 * tensor2 (torch.addcmul)."""
    _definition_of("addcmul", input, tensor1, tensor2)
    return _with_out(input + _scaled(tensor1, value) * tensor2, out,
                     "addcmul")


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1,
            out: Optional[Tensor] = None) -> Value:
    """input + value * tensor1 / tensor2 (torch.addcdiv)."""
    _definition_of("addcdiv", input, tensor1, tensor2)
    return _with_out(input + _scaled(tensor1, value) / tensor2, out,
                     "addcdiv")


def clamp(input: Any, min: Any = None, max: Any = None, *,
          out: Optional[Tensor] = None) -> Value:
    """Elementwise clamp to [min, max] (torch.clamp); either bound may be None."""
    if not isinstance(input, Tensor):
        raise Error("widefuse.clamp: the input must be a traced tensor")
    return _with_out(input.clamp(min, max), out, "clamp")


for _name in ("copy_", "maximum", "minimum", "mul", "pow", "atan2", "fmod", "sqrt", "rsqrt",
              "reciprocal", "exp", "log", "log1p", "expm1", "neg", "abs", "sign", "sigmoid",
              "tanh", "isnan", "isinf", "isfinite", "add", "sub", "div", "where", "lerp",
              "addcmul", "addcdiv", "clamp"):
    globals()[_name] = checked_arguments(globals()[_name], f"widefuse.{_name}")
negative = neg  # noqa: F821 (neg is rebound by the loop above)
