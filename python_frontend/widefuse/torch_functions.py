"""torch's functions applied to traced values (``__torch_function__``): ``torch.maximum(a, b)``
on proxies runs ``widefuse.maximum(a, b)``, and ``torch.Tensor.add(a, b)`` the proxy's own
method, so optimizer code written against torch traces unchanged."""

from __future__ import annotations

from typing import Any

from . import functions
from .values import Tensor, UnsupportedOperationError

# torch names whose widefuse function has another name.
_RENAMED = {"true_divide": "div", "multiply": "mul", "subtract": "sub", "clip": "clamp"}


def dispatch(func: Any, args: Any, kwargs: dict) -> Any:
    """Runs the widefuse equivalent of torch function or method `func`."""
    name = getattr(func, "__name__", repr(func))
    name = _RENAMED.get(name, name)
    qualified = getattr(func, "__qualname__", "") or ""
    is_method = qualified.startswith(("Tensor.", "TensorBase.")) or (
        getattr(func, "__objclass__", None) is not None)
    if not is_method:
        function = getattr(functions, name, None)
        if function is not None and callable(function):
            return function(*args, **kwargs)
    if args and isinstance(args[0], Tensor):
        method = getattr(type(args[0]), name, None)
        if method is not None and callable(method):
            return method(*args, **kwargs)
    raise UnsupportedOperationError(
        f"torch.{'Tensor.' if is_method else ''}{name} is not supported on traced values "
        "(pointwise ops only; see docs/python.md for the list)")
