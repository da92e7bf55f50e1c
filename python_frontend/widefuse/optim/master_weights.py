"""Low-precision parameters, traced into the step: TransformerEngine's / Apex's
``store_param_remainders`` rule (the f32 master of a bf16 parameter is the parameter, its high
16 bits rounded, and an int16 remainder, its low 16 bits), flashoptim's 24-bit masters (the
parameter, rounded to nearest even, and an int8 correction in 127ths of half its ulp), and
torch's rules for bf16/f16
tensor ops (computed in float32 and rounded once, with torch's scalars, so that a bf16 step
equals torch's; lerp, addcmul and add's alpha are torch_arithmetic.py's).

The rule, TransformerEngine's kernel's: splitting keeps the master's low
half as the remainder and increments the high half when the low half's top bit is set (the
remainder is then negative), so the parameter is the master rounded to nearest in magnitude,
ties away from zero; rebuilding decrements the high half again when the remainder is negative
and joins the halves. The high half wraps modulo 2^16, so every bit pattern survives.

flashoptim's rule (its ``_compute_ecc_bits`` / ``_apply_error_correction``): the correction is
``round(clamp(e / h, -1, 1) * 127)``, rounding halves away from zero as ``floor(|x| + 0.5)``
does, where ``e`` is the master less the parameter and ``h`` half the parameter's ulp
(``2^(exponent - mantissa bits - 1)``, subnormals taking the smallest normal exponent); the
master is rebuilt as ``parameter + correction / 127 * h``. ``e / h`` and ``* h`` scale by a power
of two, so the rule is lossy only in the 127 steps: a 24-bit master is within h/254 of the
float32 one after each split."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data_type import DataType
from ..functions import where
from ..values import Value

_NARROW = (DataType.BFloat16, DataType.Half)

# flashoptim's int8 correction: its full scale, and each narrow dtype's (mantissa bits, bias).
CORRECTION_STEPS = 127
_FIELDS = {DataType.BFloat16: (7, 127), DataType.Half: (10, 15)}


def opmath(value: Any) -> Any:
    """The value in the type a torch kernel computes it in: float32 for bf16/f16."""
    return value.float() if value.dtype in _NARROW else value


def rounded(value: Any, dtype: DataType) -> Any:
    """`value` rounded once to `dtype` (nothing when it has that dtype already)."""
    return value if value.dtype is dtype else value.to(dtype)


def narrow(value: Any) -> bool:
    """True for a bf16/f16 traced tensor."""
    return value.dtype in _NARROW


def scalar_as(value: Any, dtype: DataType) -> Any:
    """A Python number or traced scalar rounded to `dtype`: torch's add (and add's alpha)
    casts a Python scalar to the tensor's dtype before computing in float32."""
    if isinstance(value, Value):
        return _cast(value, dtype)
    return float(np.asarray(value, dtype=dtype.numpy))


def _cast(value: Value, dtype: DataType) -> Value:
    return value.definition.apply_op("cast", (value,), dtype=dtype)


def rebuild_master(param: Any, remainder: Any) -> Any:
    """The float32 master of a bf16 parameter and its int16 remainder (traced values)."""
    high = param.view(DataType.Int16).to(DataType.Int32)
    low = remainder.to(DataType.Int32)
    high = where(low < 0, high - 1, high)  # a negative remainder: the high half was rounded up
    return ((high << 16) | (low & 0xFFFF)).view(DataType.Float)


def split_master(master: Any) -> tuple[Any, Any]:
    """The bf16 parameter and int16 remainder of a float32 master (traced values)."""
    bits = master.view(DataType.Int32)
    low = (bits & 0xFFFF).to(DataType.Int16)  # wraps: a set top bit is negative
    high = bits >> 16
    high = where(low < 0, high + 1, high)  # round the high half up: ties away from zero
    return high.to(DataType.Int16).view(DataType.BFloat16), low


def stochastic_bf16(value: Any, random16: Any) -> Any:
    """A float32 value (traced) rounded to bfloat16 as torchao's stochastic rounding does:
    away from zero with probability (its low 16 bits) / 2^16, from 16 random bits per element
    (random_bits.py)."""
    bits = value.view(DataType.Int32)
    toward_zero = bits & -0x10000
    rounded = where(random16 < (bits & 0xFFFF), toward_zero + 0x10000, toward_zero)
    return rounded.view(DataType.Float).to(DataType.BFloat16)


def half_ulp(narrow: Any) -> Any:
    """Half the spacing of bf16/f16 values at each element of the traced `narrow`, float32:
    2^(unbiased exponent - mantissa bits - 1), subnormals and zeros at the smallest normal
    exponent (flashoptim's scale). Shifts by constants and no floor: the host's loops
    vectorize it."""
    mantissa, bias = _FIELDS[narrow.dtype]
    field = (narrow.view(DataType.Int16).to(DataType.Int32) & 0x7FFF) >> mantissa
    exponent = where(field == 0, 1, field) - (bias + mantissa + 1)
    scale = ((exponent + 127) << 23).view(DataType.Float)
    if bias + mantissa > 126:  # bf16: its lowest exponents' scale is an f32 subnormal,
        # 2^(exponent + 64) * 2^-64, exact (a power of two)
        low = ((exponent + 127 + 64) << 23).view(DataType.Float) * 2.0 ** -64
        scale = where(exponent >= -126, scale, low)
    return scale


def rebuild_corrected(param: Any, correction: Any) -> Any:
    """The float32 master of a bf16/f16 parameter and its int8 correction (traced values)."""
    return param.float() + correction.float() / CORRECTION_STEPS * half_ulp(param)


def split_corrected(master: Any, dtype: DataType) -> tuple[Any, Any]:
    """The `dtype` parameter (the master rounded to nearest even) and int8 correction of a
    float32 master (traced values). A NaN master's correction is 0 (casts map NaN to 0)."""
    narrow = master.to(dtype)
    scaled = ((master - narrow.float()) / half_ulp(narrow)).clamp(-1, 1) * CORRECTION_STEPS
    # floor(|x| + 0.5) of a value in [0.5, 127.5] is its conversion to an integer (which
    # truncates), and NaN converts to 0.
    magnitude = (abs(scaled) + 0.5).to(DataType.Int32)
    return narrow, where(scaled < 0, -magnitude, magnitude).to(DataType.Int8)
