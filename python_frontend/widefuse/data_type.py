"""Element types, named as nvFuser's ``DataType`` names them, and their NumPy equivalents."""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np

from ._widefuse import Error


class DataType(enum.Enum):
    """The element type of a tensor or scalar. Values are the text form's short names."""

    Bool = "b8"
    Int8 = "i8"
    Int16 = "i16"
    Int32 = "i32"
    Int = "i64"
    Int64 = "i64"  # alias of Int (nvFuser calls int64 `Int`)
    UInt8 = "u8"
    UInt16 = "u16"
    UInt32 = "u32"
    Half = "f16"
    BFloat16 = "bf16"
    Float = "f32"
    Double = "f64"

    def __repr__(self) -> str:
        return f"DataType.{self.name}"

    __str__ = __repr__

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype holding this type (ml_dtypes.bfloat16 for BFloat16)."""
        return _NUMPY_OF[self]

    @property
    def is_floating_point(self) -> bool:
        return self in (DataType.Half, DataType.BFloat16, DataType.Float, DataType.Double)


_NUMPY_OF = {
    DataType.Bool: np.dtype(np.bool_),
    DataType.Int8: np.dtype(np.int8),
    DataType.Int16: np.dtype(np.int16),
    DataType.Int32: np.dtype(np.int32),
    DataType.Int: np.dtype(np.int64),
    DataType.UInt8: np.dtype(np.uint8),
    DataType.UInt16: np.dtype(np.uint16),
    DataType.UInt32: np.dtype(np.uint32),
    DataType.Half: np.dtype(np.float16),
    DataType.BFloat16: np.dtype(ml_dtypes.bfloat16),
    DataType.Float: np.dtype(np.float32),
    DataType.Double: np.dtype(np.float64),
}
_OF_NUMPY = {dtype: data_type for data_type, dtype in _NUMPY_OF.items()}


def from_short_name(name: str) -> DataType:
    """The DataType of a text-form short name ("f32")."""
    return DataType(name)


def from_numpy(dtype: np.dtype, context: str) -> DataType:
    """The DataType of a NumPy dtype; raises Error naming `context` for one widefuse lacks."""
    found = _OF_NUMPY.get(np.dtype(dtype))
    if found is None:
        supported = ", ".join(str(d) for d in _OF_NUMPY)
        raise Error(f"{context}: NumPy dtype {np.dtype(dtype)} is not supported "
                    f"(supported: {supported})")
    return found


def data_type_of(value: object, context: str) -> DataType:
    """A DataType given as a DataType, a short name, a NumPy dtype or a Python type."""
    if isinstance(value, DataType):
        return value
    if value is None:  # np.dtype(None) would be float64
        raise Error(f"{context}: None is not a data type (use widefuse.DataType)")
    if isinstance(value, str):
        try:
            return DataType(value)
        except ValueError:
            pass
    if value is bool:
        return DataType.Bool
    if value is int:
        return DataType.Int
    if value is float:
        return DataType.Double
    try:
        dtype = np.dtype(value)
    except TypeError:
        raise Error(f"{context}: {value!r} is not a data type (use widefuse.DataType)") from None
    return from_numpy(dtype, context)
