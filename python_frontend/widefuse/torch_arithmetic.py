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
returns None and the caller composes the plain ops.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _widefuse
from .data_type import DataType

# Floating dtypes torch computes in float32 (opmath) and rounds back once.
_NARROW = (DataType.BFloat16, DataType.Half)
_REAL_FLOATING = (DataType.Float, DataType.Double, *_NARROW)


def _is_value(operand: Any) -> bool:
    return isinstance(operand, _widefuse.TracedValue)


def _common_dtype(operands: tuple) -> Optional[DataType]:
    """torch's result dtype of traced real floating `operands` (the widest; bf16 with f16 is
    f32), or None."""
    if not all(_is_value(x) for x in operands):
        return None
    dtypes = {x.dtype for x in operands}
    if not dtypes <= set(_REAL_FLOATING):
        return None
    if DataType.Double in dtypes:
        return DataType.Double
    if DataType.Float in dtypes or len(dtypes) > 1:
        return DataType.Float
    (dtype,) = dtypes
    return dtype


def _opmath(dtype: DataType) -> DataType:
    return DataType.Float if dtype in _NARROW else dtype


def _coefficient(value: Any, opmath: DataType, through: Optional[DataType] = None) -> Any:
    """A number or traced scalar as torch's kernel holds it: converted to the opmath type
    (first to `through`, where torch converts it to the tensor's dtype first)."""
    if _is_value(value):
        if value.dtype not in _REAL_FLOATING:
            return None
        return _as(value if through is None else _as(value, through), opmath)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if through is not None:
        value = float(np.asarray(value, dtype=through.numpy))
    return float(np.float32(value)) if opmath is DataType.Float else float(value)


def _as(value: Any, dtype: DataType) -> Any:
    """Traced `value` in `dtype` (no cast when it has it)."""
    return value if value.dtype is dtype else value.definition.apply_op("cast", (value,),
                                                                        dtype=dtype)


def _fma(a: Any, b: Any, c: Any) -> Any:
    definition = next(x for x in (a, b, c) if _is_value(x)).definition
    return definition.apply_op("fma", (a, b, c))


def add_scaled(input: Any, other: Any, alpha: Any, negate: bool = False) -> Optional[Any]:
    """torch.add(input, other, alpha=alpha) (torch.sub with `negate`), or None where the
    plain ops are torch's."""
    dtype = _common_dtype((input, other))
    if dtype is None:
        return None
    opmath = _opmath(dtype)
    # torch's add converts alpha to a bf16/f16 result's dtype before computing in float32.
    coefficient = _coefficient(alpha, opmath, dtype if dtype in _NARROW else None)
    if coefficient is None:
        return None
    if negate:
        coefficient = -coefficient
    return _as(_fma(coefficient, _as(other, opmath), _as(input, opmath)), dtype)


def addcmul(input: Any, tensor1: Any, tensor2: Any, value: Any) -> Optional[Any]:
    """torch.addcmul(input, tensor1, tensor2, value=value): the last multiply and the add
    fused, also for value 1; or None."""
    dtype = _common_dtype((input, tensor1, tensor2))
    if dtype is None:
        return None
    opmath = _opmath(dtype)
    coefficient = _coefficient(value, opmath)
    if coefficient is None:
        return None
    scaled = coefficient * _as(tensor1, opmath)
    return _as(_fma(scaled, _as(tensor2, opmath), _as(input, opmath)), dtype)


def lerp(start: Any, end: Any, weight: Any) -> Optional[Any]:
    """torch.lerp(start, end, weight) with a number or traced scalar weight, or None."""
    dtype = _common_dtype((start, end))
    if dtype is None:
        return None
    opmath = _opmath(dtype)
    w = _coefficient(weight, opmath)
    if w is None:
        return None
    low, high = _as(start, opmath), _as(end, opmath)
    difference = high - low
    if _is_value(w):
        definition = w.definition
        small = abs(w) < 0.5
        coefficient = definition.apply_op("where", (small, w, w - 1))
        base = definition.apply_op("where", (small, low, high))
    elif abs(w) < 0.5:
        coefficient, base = w, low
    else:
        coefficient = float(np.float32(w - 1)) if opmath is DataType.Float else w - 1
        base = high
    return _as(_fma(coefficient, difference, base), dtype)
