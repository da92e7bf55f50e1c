"""yardstick shim: nvfuser.pytorch_utils. widefuse has no public counterpart; these are
harness glue mapping torch dtypes to widefuse.DataType members by nvFuser's names (a missing
member raises MissingInWidefuse naming it: FP8 / complex until they land)."""
import functools

import torch
import widefuse as _wf

from . import MissingInWidefuse

_NAMES = {
    torch.bool: "Bool", torch.uint8: "UInt8", torch.int8: "Int8", torch.int16: "Int16",
    torch.int32: "Int32", torch.int64: "Int", torch.float16: "Half",
    torch.bfloat16: "BFloat16", torch.float32: "Float", torch.float64: "Double",
    torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble",
    torch.float8_e4m3fn: "Float8_e4m3fn", torch.float8_e5m2: "Float8_e5m2",
    torch.float8_e8m0fnu: "Float8_e8m0fnu",
}
if hasattr(torch, "float4_e2m1fn_x2"):
    _NAMES[torch.float4_e2m1fn_x2] = "Float4_e2m1fn"


def _member(name):
    try:
        return getattr(_wf.DataType, name)
    except AttributeError:
        raise MissingInWidefuse(f"yardstick: widefuse has no DataType.{name}") from None


def torch_dtype_to_nvfuser_dtype(dtype):
    if isinstance(dtype, _wf.DataType):
        return dtype
    if dtype in (bool, int, float, complex):
        return python_scalar_to_nvfuser_dtype(dtype())
    return _member(_NAMES[dtype])


def python_scalar_to_nvfuser_dtype(a):
    if isinstance(a, bool):
        return _member("Bool")
    if isinstance(a, int):
        return _member("Int")
    if isinstance(a, float):
        return _member("Double")
    if isinstance(a, complex):
        return _member("ComplexDouble")
    raise ValueError(f"yardstick: not a Python scalar: {a!r}")


def retry_on_oom_or_skip_test(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper
