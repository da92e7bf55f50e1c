"""torch's ``add``/``sub`` with ``alpha``, ``addcmul`` and ``lerp`` as its kernels round them,
for the traced methods and functions of those names (values.py, functions.py).

torch computes these in the operands' opmath type (float32 for bf16 and f16, else their own)
and its compiled kernels contract the last multiply and add into one fused multiply-add: the
CPU kernels (AVX2 and AVX-512 builds) and the CUDA ones alike. So ``x.add(y, alpha=a)`` is
``fma(a, y, x)``, ``x.addcmul(s, t, value=v)`` is ``fma(v * s, t, x)`` and ``x.lerp(y, w)`` is
``fma(w, y - x, x)`` for ``|w| < 0.5``, else ``fma(w - 1, y - x, y)``, each rounded once to the
result dtype. Written as IR ops (``fma``, ``where``, a cast), they give torch's bits on every
backend; the IR's own ``lerp`` keeps its documented, separately rounded form (nvFuser's
``fd.ops.lerp`` and Thunder's prims).

Only real floating tensors (promoted as torch promotes them) with a number or traced scalar
coefficient take this path; anything else (integers, complex, a number in a tensor's place)
returns None and the caller composes the plain ops. Traced optimizers record these for every
parameter, so the dtypes are compared by their short names, read once (tests/python_frontend/
test_tracer_scale.py counts the calls).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _widefuse
from .data_type import DataType

_TracedValue = _widefuse.TracedValue
_record = _widefuse.record
_FMA = {name: kind for kind, name in enumerate(_widefuse.op_names())}["fma"]
# Real floating dtypes by short name: the type torch computes each in (opmath).
_OPMATH = {"f32": "f32", "f64": "f64", "bf16": "f32", "f16": "f32"}


def _result(first: str, second: str) -> Optional[str]:
    """torch's result dtype of two real floating tensors (the wider; bf16 with f16 is f32),
    by short name, or None when either is not real floating."""
    if first not in _OPMATH or second not in _OPMATH:
        return None
    if first == second:
        return first
    return "f64" if "f64" in (first, second) else "f32"


def _types(*operands: Any) -> Optional[tuple[list, str, str]]:
    """The short dtype names of `operands`, torch's result dtype and the type it computes
    in; None unless every operand is a traced real floating value."""
    for x in operands:
        if not isinstance(x, _TracedValue):
            return None
    names = [x.handle.dtype for x in operands]
    dtype: Optional[str] = names[0]
    for name in names[1:]:
        dtype = dtype and _result(dtype, name)
    return None if dtype is None else (names, dtype, _OPMATH[dtype])


def _as(value: Any, name: str, dtype: str) -> Any:
    """Traced `value` of dtype `name` in `dtype` (no cast when it has it)."""
    if name == dtype:
        return value
    return value.definition.apply_op("cast", (value,), dtype=DataType(dtype))


def _coefficient(value: Any, opmath: str, through: Optional[str] = None) -> Any:
    """A number or traced scalar as torch's kernel holds it: converted to the opmath type
    (first to `through`, where torch converts it to the tensor's dtype first); None for
    anything else."""
    if isinstance(value, _TracedValue):
        name = value.handle.dtype
        if name not in _OPMATH:
            return None
        if through is not None:
            value, name = _as(value, name, through), through
        return _as(value, name, opmath)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if through is not None:
        value = float(np.asarray(value, dtype=DataType(through).numpy))
    return float(np.float32(value)) if opmath == "f32" else float(value)


def _fma(a: Any, b: Any, c: Any) -> Any:
    """fma(a, b, c) of traced `b` (and numbers or values of its definition)."""
    operands = (a, b, c)
    result = _record(_FMA, operands)
    return b.definition.pointwise("fma", operands) if result is None else result


def add_scaled(input: Any, other: Any, alpha: Any, negate: bool = False) -> Optional[Any]:
    """torch.add(input, other, alpha=alpha) (torch.sub with `negate`), or None where the
    plain ops are torch's."""
    types = _types(input, other)
    if types is None:
        return None
    (first, second), dtype, opmath = types
    # torch's add converts alpha to a bf16/f16 result's dtype before computing in float32.
    coefficient = _coefficient(alpha, opmath, None if dtype == opmath else dtype)
    if coefficient is None:
        return None
    if negate:
        coefficient = -coefficient
    fused = _fma(coefficient, _as(other, second, opmath), _as(input, first, opmath))
    return _as(fused, opmath, dtype)


def addcmul(input: Any, tensor1: Any, tensor2: Any, value: Any) -> Optional[Any]:
    """torch.addcmul(input, tensor1, tensor2, value=value): the last multiply and the add
    fused, also for value 1; or None."""
    types = _types(input, tensor1, tensor2)
    coefficient = None if types is None else _coefficient(value, types[2])
    if coefficient is None:
        return None
    names, dtype, opmath = types
    scaled = coefficient * _as(tensor1, names[1], opmath)
    fused = _fma(scaled, _as(tensor2, names[2], opmath), _as(input, names[0], opmath))
    return _as(fused, opmath, dtype)


def lerp(start: Any, end: Any, weight: Any) -> Optional[Any]:
    """torch.lerp(start, end, weight) with a number or traced scalar weight, or None."""
    types = _types(start, end)
    w = None if types is None else _coefficient(weight, types[2])
    if w is None:
        return None
    (first, second), dtype, opmath = types
    low, high = _as(start, first, opmath), _as(end, second, opmath)
    difference = high - low
    if isinstance(w, _TracedValue):
        definition = w.definition
        small = abs(w) < 0.5
        coefficient = definition.pointwise("where", (small, w, w - 1))
        base = definition.pointwise("where", (small, low, high))
    elif abs(w) < 0.5:
        coefficient, base = w, low
    else:
        coefficient = float(np.float32(w - 1)) if opmath == "f32" else w - 1
        base = high
    return _as(_fma(coefficient, difference, base), opmath, dtype)
