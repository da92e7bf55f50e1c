"""torch's reductions on traced tensors (docs/reductions.md §5): the methods
``x.sum()``, ``x.amax(-1, keepdim=True)``, ``x.max()``, ``x.any()``, ``x.mean()``,
``x.norm(p)``, ... and the functions ``torch.sum``, ``torch.linalg.vector_norm``, ... that
functions.py exports (``widefuse.sum([a, b, c])``: one sum over several tensors).

torch's `dim` is normalised to one of widefuse's scopes: negative dimensions wrap and static
extent-1 dimensions are dropped from the set; then it must hold every other dimension (the
tensor scope) or one dimension followed only by static 1s (rows). torch's result shape
(keepdim or not) is rebuilt from widefuse's with a broadcast_in_dim.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Optional

from . import reductions
from ._widefuse import Error
from .data_type import DataType
from .errors import ArgumentValueError, DimensionIndexError
from .values import Tensor, UnsupportedOperationError, Value, add_tensor_methods


def _call(name: str, dim: Any) -> str:
    """`Tensor.sum(dim=0)`: the call as messages show it."""
    return f"{name}()" if dim is None or dim == () else f"{name}(dim={dim!r})"


def _reduced_set(x: Tensor, dim: Any, call: str) -> list[int]:
    """torch's `dim` (None, an int, or a list or tuple of ints; empty is every dimension) as
    the sorted dimensions it reduces, negative ones wrapped. A 0-d tensor takes 0 and -1."""
    rank = x.ndim
    if dim is None:
        return list(range(rank))
    entries = [dim] if isinstance(dim, int) and not isinstance(dim, bool) else dim
    if not isinstance(entries, (list, tuple)) or not builtins.all(
            isinstance(d, int) and not isinstance(d, bool) for d in entries):
        raise UnsupportedOperationError(f"{call}: dim must be an int or a list of ints")
    if not entries:
        return list(range(rank))
    bound = builtins.max(rank, 1)
    wrapped = []
    for d in entries:
        if not -bound <= d < bound:
            raise DimensionIndexError(f"{call}: Dimension out of range (expected to be in range "
                                      f"of [{-bound}, {bound - 1}], but got {d})")
        wrapped.append(d % bound)
    if len(set(wrapped)) != len(wrapped):
        raise ArgumentValueError(f"{call}: a dim appears multiple times in the list of dims")
    return sorted(d for d in wrapped if d < rank)


def _scope(x: Tensor, reduced: list[int], call: str) -> Optional[list[int]]:
    """widefuse's dims for torch's `reduced` dimensions of `x`: None (every element) or [d]
    (the rows of d); UnsupportedOperationError for any other set."""
    shape = list(x.shape)
    wanted = [d for d in reduced if shape[d] != 1]
    if wanted == [d for d in range(len(shape)) if shape[d] != 1]:
        return None
    if len(wanted) == 1 and builtins.all(e == 1 for e in shape[wanted[0] + 1:]):
        return wanted
    if not wanted:  # only extent-1 dimensions (torch's norm(dim=-1) of a [4, 1] tensor)
        for d in reduced:  # rows of length 1, of a dimension followed by static 1s
            if builtins.all(e == 1 for e in shape[d + 1:]):
                return [d]
    raise UnsupportedOperationError(f"{call} of a {shape} tensor: widefuse reduces every "
                                    "dimension or the innermost one only")


def _torch_shape(result: Tensor, x: Tensor, reduced: list[int], dims: Optional[list[int]],
                 keepdim: bool, call: str) -> Tensor:
    """`result`, widefuse's reduction of `x` over `dims`, in torch's shape: x's without the
    `reduced` dimensions, or with extent 1 there for keepdim."""
    rank = x.ndim
    remaining = [d for d in range(rank) if dims is not None and d != dims[0]]  # result's dims
    if keepdim:
        positions = remaining
        shape = [-1 if d in remaining else 1 for d in range(rank)]  # -1: the result's extent
    else:
        kept = [d for d in range(rank) if d not in reduced]
        dropped = [d for d in remaining if d not in kept]
        if dropped:  # broadcast_in_dim adds dimensions; none removes one
            raise UnsupportedOperationError(
                f"{call} of a {list(x.shape)} tensor: widefuse cannot drop the extent-1 "
                f"dimension{'s' if len(dropped) > 1 else ''} {dropped} from the result yet "
                "(pass keepdim=True, or leave them out of dim)")
        positions = [kept.index(d) for d in remaining]
        shape = [-1 if d in remaining else 1 for d in kept]
    if len(shape) == result.ndim:
        return result
    return result.definition.apply_op("broadcast_in_dim", (result,), shape=shape,
                                      broadcast_dims=positions)


def reduce_like_torch(x: Tensor, name: str, dim: Any, keepdim: bool,
                      reduction: Callable[[Optional[list[int]], str], Tensor]) -> Tensor:
    """torch's reduction `name` (``Tensor.sum``) of `x` over torch's `dim`: `reduction(dims,
    call)` over widefuse's dims for it (None or [d]; `call` names it for messages), in
    torch's result shape."""
    call = _call(name, dim)
    reduced = _reduced_set(x, dim, call)
    dims = _scope(x, reduced, call)
    return _torch_shape(reduction(dims, call), x, reduced, dims, keepdim, call)


def _plain(op: str, x: Tensor) -> Callable[[Optional[list[int]], str], Tensor]:
    """widefuse's reduction `op` of `x`, as reduce_like_torch's `reduction`."""
    return lambda dims, call: reductions.reduce(x.definition, op, x, dims)


# ---- Tensor methods -----------------------------------------------------------------------


def _sum(self: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The sum over `dim` (torch's Tensor.sum); `dtype` casts first. Integers and bool sum
    to int64, floating types in f32 (f64 for f64), rounded once to the tensor's dtype."""
    x = self if dtype is None else self.to(dtype)
    return reduce_like_torch(x, "Tensor.sum", dim, keepdim, _plain("sum", x))


def _amax(self: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The largest element over `dim` (torch's Tensor.amax); NaN wins."""
    return reduce_like_torch(self, "Tensor.amax", dim, keepdim, _plain("max", self))


def _amin(self: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The smallest element over `dim` (torch's Tensor.amin); NaN wins."""
    return reduce_like_torch(self, "Tensor.amin", dim, keepdim, _plain("min", self))


def _extremum(method: str, op: str, elementwise: str) -> Any:
    def extremum(self: Tensor, dim: Any = None, keepdim: bool = False) -> Value:
        if isinstance(dim, Value):  # torch.max(a, b) is elementwise
            return self.definition.pointwise(elementwise, (self, dim))
        if dim is not None:
            raise UnsupportedOperationError(
                f"Tensor.{method}(dim={dim!r}) returns values and indices in torch; widefuse "
                f"has no indices: use a{method}(dim={dim!r}) for the values")
        return reduce_like_torch(self, f"Tensor.{method}", None, keepdim, _plain(op, self))

    extremum.__doc__ = (f"The {'largest' if op == 'max' else 'smallest'} element (torch's "
                        f"Tensor.{method}() without dim; with a tensor, elementwise {elementwise})")
    return extremum


def _logical(op: str) -> Any:
    def logical(self: Tensor, dim: Any = None, keepdim: bool = False) -> Value:
        if isinstance(dim, (list, tuple)) and not dim:  # torch reduces nothing for dim=()
            result = self != 0
        else:
            result = reduce_like_torch(self, f"Tensor.{op}", dim, keepdim, _plain(op, self))
        # torch's any and all of a uint8 tensor are uint8.
        return result.to(DataType.UInt8) if self.dtype is DataType.UInt8 else result

    logical.__doc__ = (f"Whether {'some' if op == 'any' else 'every'} element over `dim` is "
                       f"nonzero (torch's Tensor.{op}): a bool tensor (uint8 for uint8)")
    return logical


def _mean(self: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean over `dim` (torch's Tensor.mean): summed in f32 (f64 for f64), divided by the
    count and rounded once to the tensor's dtype (or `dtype`, which casts first)."""
    x = self if dtype is None else self.to(dtype)
    return reduce_like_torch(x, "Tensor.mean", dim, keepdim,
                             lambda dims, call: reductions.mean(x.definition, x, dims, call=call))


def norm_order(p: Any, call: str) -> Any:
    """torch's `p` of norm as a vector norm's ord: 'fro' is 2."""
    if p == "fro":
        return 2
    if isinstance(p, str):
        raise UnsupportedOperationError(f"{call}: p={p!r} is not supported (vector norms only: "
                                        "a number or 'fro')")
    return p


def vector_norm_like_torch(x: Tensor, ord: Any, dim: Any, keepdim: bool, dtype: Any,
                           name: str) -> Tensor:
    """torch.linalg.vector_norm(x, ord, dim, keepdim, dtype=dtype), called `name`."""
    return reduce_like_torch(x, name, dim, keepdim,
                             lambda dims, call: reductions.vector_norm(
                                 x.definition, x, ord, dims, dtype=dtype, call=call))


def _norm(self: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
          dtype: Any = None) -> Tensor:
    """torch's Tensor.norm for vector norms: p a number or 'fro' (2), over `dim`."""
    return vector_norm_like_torch(self, norm_order(p, "Tensor.norm"), dim, keepdim, dtype,
                                  "Tensor.norm")


add_tensor_methods({"sum": _sum, "amax": _amax, "amin": _amin,
                    "max": _extremum("max", "max", "maximum"),
                    "min": _extremum("min", "min", "minimum"),
                    "any": _logical("any"), "all": _logical("all"), "mean": _mean,
                    "norm": _norm})


# ---- torch's functions (functions.py exports them) ----------------------------------------


def _first_tensor(function: str, xs: Any) -> Tensor:
    first = xs[0] if isinstance(xs, (list, tuple)) and xs else xs
    if not isinstance(first, Tensor):
        raise Error(f"widefuse.{function}: the input must be a traced tensor or a list of them")
    return first


def torch_sum(input: Any, dim: Any = None, keepdim: bool = False, *,
              dtype: Any = None) -> Tensor:
    """torch.sum; a list of tensors is one sum over all their elements (widefuse's)."""
    if isinstance(input, (list, tuple)):
        if dim is not None or keepdim:
            raise UnsupportedOperationError("widefuse.sum of a list of tensors takes no dim or "
                                            "keepdim: it sums every element of every tensor")
        return reductions.reduce(_first_tensor("sum", input).definition, "sum", input,
                                 dtype=dtype)
    return _first_tensor("sum", input).sum(dim, keepdim, dtype=dtype)


def torch_vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                      dtype: Any = None) -> Tensor:
    """torch.linalg.vector_norm; a list of tensors is one norm over all their elements
    (widefuse's: the global gradient norm)."""
    if isinstance(x, (list, tuple)):
        if dim is not None or keepdim:
            raise UnsupportedOperationError("widefuse.vector_norm of a list of tensors takes no "
                                            "dim or keepdim")
        return reductions.vector_norm(_first_tensor("vector_norm", x).definition, x, ord,
                                      dtype=dtype, call="widefuse.vector_norm")
    return vector_norm_like_torch(_first_tensor("vector_norm", x), ord, dim, keepdim, dtype,
                                  "torch.linalg.vector_norm")


def torch_sum_of_squares(xs: Any) -> Tensor:
    """The sum of the squares of every element of `xs` (a tensor or a list of tensors), in
    f32 (f64 for f64): widefuse's helper."""
    return reductions.sum_of_squares(_first_tensor("sum_of_squares", xs).definition, xs,
                                     call="widefuse.sum_of_squares")


def torch_norm(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False,
               out: Any = None, dtype: Any = None) -> Tensor:
    """torch.norm for vector norms (p a number or 'fro')."""
    if out is not None:
        raise UnsupportedOperationError("widefuse.norm: out= is not supported")
    return _first_tensor("norm", input).norm(p, dim, keepdim, dtype)
