"""widefuse: a fusion compiler for pointwise tensor programs (optimizer steps first).

    from widefuse import FusionDefinition, DataType      # nvFuser's Python API (subset)
    import widefuse
    step = widefuse.trace(my_optimizer_step)              # a Thunder-like tracer

Errors raise ``widefuse.Error`` (a RuntimeError) with the C++ message.
"""

from ._version import Version, __version__, version
from ._widefuse import Error
from .arguments import compute_contiguity, compute_tensor_descriptor
from . import prims
from .data_type import DataType
from .errors import ArgumentTypeError, ArgumentValueError, DimensionIndexError
from .execution import PreparedExecution
from .fusion_definition import FusionDefinition
from .model_presets import model_shapes
from .functions import (abs, add, addcdiv, addcmul, atan2, clamp, complex, copy_, div, exp,
                        expm1, fmod, imag, isfinite, isinf, isnan, lerp, log, log1p, maximum,
                        minimum, mul, neg, negative, pow, real, reciprocal, rsqrt, sigmoid,
                        sign, sqrt, sub, tanh, where)
# Reductions (docs/reductions.md); sum([a, b, c]) is one sum over several tensors.
from .functions import (all, amax, amin, any, max, mean, min, norm, sum, sum_of_squares,
                        vector_norm)
from .tracer import TracedFunction, trace
from .values import Scalar, Tensor, UnsupportedOperationError, Value, Vector
from . import nvrtc as _nvrtc

# pip's NVRTC (the `nvidia` package) for the CUDA backend, before it compiles anything.
_nvrtc.register_nvidia_packages()


# torch's dtype names, so that `x.to(torch.float32)` runs under `import widefuse as torch`.
bool = DataType.Bool
int8, int16, int32, int64 = DataType.Int8, DataType.Int16, DataType.Int32, DataType.Int
uint8, uint16, uint32 = DataType.UInt8, DataType.UInt16, DataType.UInt32
float16 = half = DataType.Half
bfloat16 = DataType.BFloat16
float32 = float = DataType.Float
float64 = double = DataType.Double
complex64 = cfloat = DataType.ComplexFloat
complex128 = cdouble = DataType.ComplexDouble

# `from widefuse import *` exports no name that would shadow a builtin (abs, pow, bool,
# float, complex, sum, max, min, any, all); those stay available as widefuse.abs, ... for
# `import widefuse as torch`.
__all__ = [
    "ArgumentTypeError", "ArgumentValueError", "DataType", "DimensionIndexError", "Error",
    "FusionDefinition", "PreparedExecution", "Scalar", "Tensor", "TracedFunction", "Version",
    "compute_contiguity", "compute_tensor_descriptor", "model_shapes", "version",
    "UnsupportedOperationError", "Value", "Vector", "copy_", "prims", "trace",
    "add", "addcdiv", "addcmul", "atan2", "clamp", "div", "exp", "expm1", "fmod", "imag",
    "isfinite", "isinf", "isnan", "lerp", "log", "log1p", "maximum", "minimum", "mul", "neg",
    "negative", "real", "reciprocal", "rsqrt", "sigmoid", "sign", "sqrt", "sub", "tanh",
    "where", "amax", "amin", "mean", "norm", "sum_of_squares", "vector_norm",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "float16", "half",
    "bfloat16", "float32", "float64", "double", "complex64", "complex128", "cfloat",
    "cdouble",
]
