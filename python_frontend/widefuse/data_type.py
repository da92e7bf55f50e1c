"""Element types, named as nvFuser's ``DataType`` names them, and their NumPy and torch
equivalents (torch's only once the program has imported torch: widefuse never imports it)."""

from __future__ import annotations

import enum
import sys
from typing import Any, Optional

import numpy as np

from . import _widefuse
from ._widefuse import Error
from .errors import ArgumentTypeError


class _DataTypeBase(enum.Enum):
    """The element type of a tensor or scalar. Values are the text form's short names."""

    def __repr__(self) -> str:
        return f"DataType.{self.name}"

    __str__ = __repr__

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype holding this type (ml_dtypes' types for BFloat16 and the fp8
        types)."""
        return _numpy_of(self.value)

    @property
    def torch(self) -> Any:
        """The torch dtype of this type (torch must be imported)."""
        return next(t for t, d in _torch_table().items() if d is self)

    @property
    def is_floating_point(self) -> bool:
        """True for the real floating-point types (not the complex ones, as in torch)."""
        return self.value.startswith(("f", "bf"))

    @property
    def is_complex(self) -> bool:
        """True for ComplexFloat and ComplexDouble."""
        return self.value.startswith("c")

    @property
    def complex_part(self) -> "DataType":
        """The type of a complex type's real and imaginary parts (Float for ComplexFloat,
        Double for ComplexDouble); any other type itself."""
        return {"c64": DataType.Float, "c128": DataType.Double}.get(self.value, self)


# The members come from the extension, which lists the IR's types (nvFuser's names, the text
# form's short names); Int64 is an alias of Int, nvFuser's name for int64.
DataType = _DataTypeBase(  # type: ignore[misc]
    "DataType", [*_widefuse.data_types(), ("Int64", "i64")], module=__name__,
    qualname="DataType")
DataType.__doc__ = _DataTypeBase.__doc__


# Short names whose NumPy type ml_dtypes provides, by its name there. ml_dtypes is imported
# when one of them is first needed: importing it takes half a second, and an array of one of
# its types exists only once the program has imported it.
_ML_DTYPES = {"bf16": "bfloat16", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
              "f8e8m0fnu": "float8_e8m0fnu"}


def _numpy_of(short_name: str) -> np.dtype:
    """The NumPy dtype of a short name: b8 is bool, bf16 and the fp8 types come from
    ml_dtypes, and the others say their kind and width (i32: int32, u16: uint16, f64:
    float64, c64: complex64)."""
    if short_name == "b8":
        return np.dtype(np.bool_)
    if short_name in _ML_DTYPES:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, _ML_DTYPES[short_name]))
    kind = {"i": "int", "u": "uint", "f": "float", "c": "complex"}[short_name[0]]
    return np.dtype(f"{kind}{short_name[1:]}")


# The DataType of each NumPy dtype: NumPy's own now, ml_dtypes' once it is imported.
_OF_NUMPY = {member.numpy: member for member in DataType if member.value not in _ML_DTYPES}


def _of_numpy() -> dict:
    if "ml_dtypes" in sys.modules and len(_OF_NUMPY) < len(set(DataType)):
        _OF_NUMPY.update((member.numpy, member) for member in DataType)
    return _OF_NUMPY


_OF_TORCH: Optional[dict] = None  # torch.dtype -> DataType, built on first use


def _torch_table() -> dict:
    """torch's dtypes and their DataTypes, built from the torch module the program imported."""
    global _OF_TORCH
    if _OF_TORCH is None:
        torch = sys.modules["torch"]
        _OF_TORCH = {
            torch.bool: DataType.Bool, torch.int8: DataType.Int8, torch.int16: DataType.Int16,
            torch.int32: DataType.Int32, torch.int64: DataType.Int, torch.uint8: DataType.UInt8,
            torch.uint16: DataType.UInt16, torch.uint32: DataType.UInt32,
            torch.float16: DataType.Half, torch.bfloat16: DataType.BFloat16,
            torch.float32: DataType.Float, torch.float64: DataType.Double,
            torch.float8_e4m3fn: DataType.Float8_e4m3fn, torch.float8_e5m2: DataType.Float8_e5m2,
            torch.complex64: DataType.ComplexFloat, torch.complex128: DataType.ComplexDouble,
        }
        if hasattr(torch, "float8_e8m0fnu"):  # torch 2.7 and later
            _OF_TORCH[torch.float8_e8m0fnu] = DataType.Float8_e8m0fnu
    return _OF_TORCH


_SHORT_NAMES_OF_TORCH: dict = {}  # torch.dtype -> short name, once torch is imported
_SHORT_NAMES_OF_NUMPY: dict = {}  # numpy.dtype -> short name


def torch_short_names() -> dict:
    """torch's dtypes and their short names ("f32"), as the C++ argument reader maps a torch
    tensor's dtype (read_arguments, read_layouts); empty while the program has not imported
    torch."""
    if not _SHORT_NAMES_OF_TORCH and sys.modules.get("torch") is not None:
        _SHORT_NAMES_OF_TORCH.update((dtype, data_type.value)
                                     for dtype, data_type in _torch_table().items())
    return _SHORT_NAMES_OF_TORCH


def numpy_short_names() -> dict:
    """NumPy's dtypes and their short names, as the C++ argument reader maps the dtype of an
    array it does not read through the buffer protocol (ml_dtypes' types, once imported)."""
    table = _of_numpy()
    if len(_SHORT_NAMES_OF_NUMPY) != len(table):
        _SHORT_NAMES_OF_NUMPY.update((dtype, data_type.value) for dtype, data_type in table.items())
    return _SHORT_NAMES_OF_NUMPY


def from_torch(dtype: Any) -> Optional[DataType]:
    """The DataType of a torch dtype, or None for one widefuse lacks (complex32, the fnuz fp8
    types, float4, ...)."""
    return _torch_table().get(dtype)


def from_short_name(name: str) -> DataType:
    """The DataType of a text-form short name ("f32")."""
    return DataType(name)


def from_numpy(dtype: np.dtype, context: str) -> DataType:
    """The DataType of a NumPy dtype; raises Error naming `context` for one widefuse lacks."""
    found = _of_numpy().get(np.dtype(dtype))
    if found is None:
        raise unsupported_numpy_dtype(dtype, context)
    return found


def unsupported_numpy_dtype(dtype: np.dtype, context: str) -> Error:
    """The error for a NumPy dtype widefuse lacks, naming `context` and what is supported."""
    import ml_dtypes  # noqa: F401  (names its types in the list below)
    supported = ", ".join(str(d) for d in _of_numpy())
    return Error(f"{context}: NumPy dtype {np.dtype(dtype)} is not supported "
                 f"(supported: {supported})")


def data_type_of(value: object, context: str) -> DataType:
    """A DataType given as a DataType, a short name, a NumPy dtype, a torch dtype (x.to(
    torch.complex64) in traced torch code) or a Python type (bool, int, float, complex)."""
    if isinstance(value, DataType):
        return value
    if value is None:  # np.dtype(None) would be float64
        raise ArgumentTypeError(f"{context}: None is not a data type (use widefuse.DataType)")
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
    if value is complex:  # a Python complex is a pair of doubles
        return DataType.ComplexDouble
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        found = from_torch(value)
        if found is None:
            raise Error(f"{context}: widefuse has no data type for {value}")
        return found
    try:
        dtype = np.dtype(value)
    except TypeError:
        try:  # a name ml_dtypes gives NumPy ("bfloat16") before anything imported it
            import ml_dtypes  # noqa: F401
            dtype = np.dtype(value)
        except TypeError:
            raise ArgumentTypeError(f"{context}: {value!r} is not a data type (use "
                                    "widefuse.DataType)") from None
    return from_numpy(dtype, context)
