"""``fd.ops``: one function per IR op, with nvFuser's names and argument order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import _widefuse
from .data_type import data_type_of
from .values import UnsupportedOperationError

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition
    from .values import Value

# nvFuser's names for ops whose IR name differs.
NVFUSER_NAMES = {"shift_left": "bitwise_left_shift", "shift_right": "bitwise_right_shift"}
_ATTRIBUTE_OPS = ("cast", "bitcast", "broadcast_in_dim")


class Operators:
    """The ops of one FusionDefinition: ``fd.ops.add(a, b)``, ``fd.ops.cast(t, dtype)``, ...

    Arguments are values of the definition or Python numbers (untyped literals).
    """

    def __init__(self, fd: FusionDefinition) -> None:
        self._fd = fd

    def cast(self, x: Any, dtype: Any) -> Value:
        """Converts to `dtype`, rounding to nearest even for floating-point targets."""
        return self._fd.apply_op("cast", (x,), dtype=data_type_of(dtype, "cast"))

    def bitcast(self, x: Any, dtype: Any) -> Value:
        """Reinterprets the bits as `dtype` (same width)."""
        return self._fd.apply_op("bitcast", (x,), dtype=data_type_of(dtype, "bitcast"))

    def broadcast_in_dim(self, x: Any, shape: Sequence[int],
                         broadcast_dims: Sequence[int]) -> Value:
        """Broadcasts `x` to `shape`; operand dimension i becomes dimension broadcast_dims[i]."""
        return self._fd.apply_op("broadcast_in_dim", (x,), shape=list(shape),
                               broadcast_dims=list(broadcast_dims))

    def __dir__(self) -> list[str]:
        return sorted(set(object.__dir__(self)) | set(_OP_FUNCTIONS))

    def __getattr__(self, name: str) -> Callable[..., Value]:
        function = _OP_FUNCTIONS.get(name)
        if function is None:
            raise UnsupportedOperationError(
                f"fd.ops has no op '{name}'; widefuse's ops: "
                f"{', '.join(sorted([*_OP_FUNCTIONS, *_ATTRIBUTE_OPS]))}")
        fd = self._fd

        def op(*operands: Any, **keywords: Any) -> Value:
            if keywords:
                raise UnsupportedOperationError(
                    f"fd.ops.{name} takes positional arguments only, got {', '.join(keywords)}=")
            return function(fd, *operands)

        return op


def _op_function(op: str, arity: int) -> Callable[..., Value]:
    def apply(fd: FusionDefinition, *operands: Any) -> Value:
        if len(operands) != arity:
            from ._widefuse import Error

            raise Error(f"fd.ops.{NVFUSER_NAMES.get(op, op)} takes {arity} argument"
                        f"{'s' if arity != 1 else ''}, got {len(operands)}")
        return fd.apply_op(op, operands)

    return apply


def _all_op_functions() -> dict[str, Callable[..., Value]]:
    functions: dict[str, Callable[..., Value]] = {}
    for op in _widefuse.op_names():
        if op in _ATTRIBUTE_OPS:
            continue
        function = _op_function(op, _widefuse.op_arity(op))
        functions[op] = function
        if op in NVFUSER_NAMES:
            functions[NVFUSER_NAMES[op]] = function
    functions["mod"] = functions["fmod"]  # nvFuser's mod is C's %: fmod, for ints and floats
    return functions


_OP_FUNCTIONS = _all_op_functions()
