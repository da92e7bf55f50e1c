"""Block-quantized optimizer state: torchao's 8-bit, 4-bit and FP8 formats, stored as codes and
one float32 scale per block, dequantized and requantized inside the step's one kernel.

A quantized state entry ``K`` (``exp_avg``) is two tensors in the optimizer's state:
``K_codes`` (uint8 codes or float8_e4m3fn values of the parameter's shape; int4: flat uint8
bytes of two codes each) and ``K_scale`` (float32, one per block of ``block_size``
consecutive elements). ``update()`` still sees
``state["K"]``: a float32 value read from them, which it updates in place as usual; when it
wrote it, the step stores it back: the new absmax of each block (the same-kernel block
reduction), then each element's code.

The formats, as torchao defines them (``torchao/optim/subclass_8bit.py``, ``subclass_4bit.py``,
``subclass_fp8.py``):

| format | codes | scale | value |
|---|---|---|---|
| ``int8`` | index into a 256-entry dynamic map (signed for most state, unsigned for second moments) | block absmax, at least 1e-12 | ``map[code] * scale`` |
| ``int4`` | a 16-entry map (signed dynamic, or the zero-free linear k/16 for second moments), two codes per byte (the even element's high), flat | block absmax, at least 1e-12 | ``map[code] * scale`` |
| ``fp8`` | e4m3fn, ``x / scale`` rounded to nearest even | block absmax (at least 1e-12) / 448 | ``code * scale`` |

A parameter is quantized when its (local) element count is at least 4096 and a multiple of
the block size, as torchao decides; other state stays as ``init_state`` made it. A DTensor
parameter's shards quantize each on their own (dtensor_shards.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from .. import _widefuse
from .._widefuse import Error
from ..data_type import DataType
from .dtensor_shards import is_dtensor, like_param, local_of, shard_elements

# The fewest elements a quantized parameter has (torchao's and bitsandbytes' threshold).
MIN_QUANTIZED_ELEMENTS = 4096
# fp8 scales map each block's absmax to e4m3fn's largest finite value.
_FP8_MAX = 448.0
# torchao's floor on a block's absmax: an all-zero block divides by it, not by zero.
_MIN_ABSMAX = 1e-12
# State that keeps its precision whatever the format: it is the parameter's truth.
_NEVER_QUANTIZED = ("master_param",)
# State keys whose values are never negative: they use the unsigned map.
UNSIGNED_STATE = ("exp_avg_sq", "max_exp_avg_sq")

FORMATS = ("int8", "int4", "fp8")
DEFAULT_BLOCK_SIZE = {"int8": 256, "int4": 128, "fp8": 256}


@dataclass(frozen=True)
class StateFormat:
    """One quantized format with its block size."""

    name: str
    block_size: int

    @property
    def codes_dtype(self) -> torch.dtype:
        return torch.float8_e4m3fn if self.name == "fp8" else torch.uint8

    @property
    def bits(self) -> int:
        """Bits per code: int4 packs two codes in a byte (the even element's high)."""
        return 4 if self.name == "int4" else 8

    def codes_shape(self, shape: torch.Size) -> tuple:
        """The codes' shape for a state of `shape`: the same, or flat halves for int4."""
        return (shape.numel() // 2,) if self.bits == 4 else tuple(shape)

    def quantizes(self, param: Any, key: str, value: Any) -> bool:
        """torchao's rule: a floating-point state tensor of the parameter's shape whose
        parameter (each shard of a DTensor: dtensor_shards.py) has at least 4096 elements, a
        multiple of the block."""
        if not (key not in _NEVER_QUANTIZED and not key.endswith(("_codes", "_scale")) and
                isinstance(value, torch.Tensor) and
                value.dtype.is_floating_point and value.dim() != 0 and
                tuple(value.shape) == tuple(param.shape)):
            return False
        numel = shard_elements(param, key) if is_dtensor(param) else param.numel()
        return numel is not None and numel >= MIN_QUANTIZED_ELEMENTS and \
            numel % self.block_size == 0

    def codebook(self, signed: bool) -> Optional[torch.Tensor]:
        """The map an int8 or int4 code indexes (float32, on the host); None for fp8."""
        return None if self.name == "fp8" else _codebook(self.bits, signed)

    def zeros(self, shape: torch.Size, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """Codes and scales of a zero state, as torchao makes them (both zero)."""
        codes = torch.zeros(self.codes_shape(shape), dtype=self.codes_dtype, device=device)
        scale = torch.zeros(shape.numel() // self.block_size, dtype=torch.float32, device=device)
        return codes, scale

    # On tensors (loading, exporting, tests): the kernel's arithmetic with torch's ops.
    def quantize(self, value: torch.Tensor, signed: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Codes and scales of `value` (any float dtype, read as float32)."""
        blocks = value.detach().float().reshape(-1, self.block_size)
        absmax = blocks.abs().amax(-1).clamp(min=_MIN_ABSMAX)
        if self.name == "fp8":
            scale = absmax / _FP8_MAX
            codes = (blocks / scale[:, None]).to(torch.float8_e4m3fn)
        else:
            scale = absmax
            codes = _nearest_codes(blocks / scale[:, None], _codebook(self.bits, signed))
        if self.bits == 4:
            pairs = codes.reshape(-1, 2)
            return (pairs[:, 0] << 4) | pairs[:, 1], scale
        return codes.reshape(value.shape), scale

    def dequantize(self, codes: torch.Tensor, scale: torch.Tensor, signed: bool,
                   shape: torch.Size) -> torch.Tensor:
        """The float32 values of `shape` that `codes` and `scale` stand for."""
        if self.name == "fp8":
            values = codes.float().reshape(-1, self.block_size)
        else:
            if self.bits == 4:
                codes = torch.stack([codes >> 4, codes & 15], dim=-1)
            table = _codebook(self.bits, signed).to(codes.device)
            values = table[codes.long()].reshape(-1, self.block_size)
        return (values * scale[:, None]).reshape(shape)

    # Traced (in the step's fusion).
    def read(self, codes: Any, scale: Any, signed: bool, like: Any) -> Any:
        """The float32 value, of `like`'s shape, the traced `codes` and `scale` stand for."""
        fd = codes.definition
        if self.name == "fp8":
            values = codes.float()
        else:
            values = fd.ops.code_value(self._codes_of(codes, like),
                                       codebook=_codebook_name(self.bits, signed))
        return values * self._expanded(scale, like, self.block_size)

    def store(self, value: Any, codes: Any, scale: Any, signed: bool,
              skip: Optional[Any]) -> None:
        """Writes the traced float32 `value` into `codes` and `scale` when the step ends: each
        block's scale from its new absmax, in the step's kernel, then each code. With `skip`
        (a step GradScaler skips), both keep what they held."""
        fd = codes.definition
        magnitude = fd.ops.maximum(fd.ops.abs(value), _MIN_ABSMAX)
        if self.name == "fp8":
            # max(|x| / 448) over a block is max(|x|) / 448: rounding is monotonic.
            magnitude = magnitude / _FP8_MAX
        if skip is not None:  # then each element offers the old scale: the block keeps it
            magnitude = fd.ops.where(skip, self._expanded(scale, value, self.block_size),
                                     magnitude)
        new_scale = fd.ops.max(magnitude, block=self.block_size)
        normalised = value / self._expanded(new_scale, value, self.block_size)
        if self.name == "fp8":
            new_codes = normalised.to(DataType.Float8_e4m3fn)
        else:
            new_codes = fd.ops.nearest_code(normalised,
                                            codebook=_codebook_name(self.bits, signed))
        if skip is not None:
            new_codes = fd.ops.where(skip, self._codes_of(codes, value), new_codes)
        if self.bits == 4:
            # Each pair's byte: a second level of blocks, the even element's code shifted up.
            shifted = new_codes.to(DataType.Int32) << self._nibble_shift(value)
            new_codes = fd.ops.sum(shifted, block=2)
        fd.copy_(new_codes, codes)
        fd.copy_(new_scale, scale)

    def _codes_of(self, codes: Any, like: Any) -> Any:
        """Each element's code (traced): int4 takes its nibble of its pair's byte."""
        if self.bits != 4:
            return codes
        pair = self._expanded(codes, like, 2).to(DataType.Int32)
        return (pair >> self._nibble_shift(like)) & 15

    @staticmethod
    def _nibble_shift(like: Any) -> Any:
        """4 for even elements (the high nibble), 0 for odd ones (traced)."""
        index = like.definition.pointwise("element_index", (like,))
        return ((index & 1) ^ 1).to(DataType.Int32) * 4

    @staticmethod
    def _expanded(per_block: Any, like: Any, block: int) -> Any:
        fd = like.definition
        shape = [extent if extent >= 0 else like.size(d) for d, extent in enumerate(like.shape)]
        return fd.ops.expand_blocks(per_block, shape, block=block)


def group_format(group: dict) -> Optional[StateFormat]:
    """The format of a param group (its ``state_format`` and ``block_size``)."""
    return state_format(group.get("state_format"), group.get("block_size"))


def state_format(name: Optional[str], block_size: Optional[int]) -> Optional[StateFormat]:
    """The format a param group names (None: full-precision state); ValueError for an
    unknown name or a block size that is not a power of two from 1 to 1024."""
    if name is None:
        if block_size is not None:
            raise ValueError(f"block_size={block_size!r} needs a state_format "
                             f"({', '.join(FORMATS)})")
        return None
    if name not in FORMATS:
        raise ValueError(f"state_format={name!r}: widefuse quantizes optimizer state as "
                         f"{', '.join(repr(f) for f in FORMATS)} (or None: full precision)")
    size = DEFAULT_BLOCK_SIZE[name] if block_size is None else block_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1 or size > 1024 or \
            size & (size - 1):
        raise ValueError(f"block_size={block_size!r}: a block is a power of two of elements "
                         "from 1 to 1024")
    return StateFormat(name, size)


def is_signed(key: str) -> bool:
    """Whether state `key` takes the signed map (every key but second moments)."""
    return key not in UNSIGNED_STATE


def codes_key(key: str) -> str:
    return f"{key}_codes"


def scale_key(key: str) -> str:
    return f"{key}_scale"


def quantized_keys(state: dict) -> list[str]:
    """The entries of `state` stored quantized: K for each K_codes with its K_scale."""
    return [key[:-len("_codes")] for key in state
            if key.endswith("_codes") and scale_key(key[:-len("_codes")]) in state]


def fit_state(fmt: Optional[StateFormat], param: Any, state: dict) -> dict:
    """`state` stored as `fmt` says (a new dict): entries stored in another format (or in
    none) are read back first, then each entry `fmt` quantizes is quantized (zeros as
    torchao's zeros). Raises Error for codes and scales that fit no format."""
    converted = dict(state)
    for key in quantized_keys(state):
        stored = stored_format(key, converted[codes_key(key)], converted[scale_key(key)],
                               param.shape)
        if stored != fmt or not fmt.quantizes(param, key, param):
            converted = dequantize_state(stored, converted, param, [key])
    if fmt is None:
        return converted
    for key, value in list(converted.items()):
        if not fmt.quantizes(param, key, value):
            continue
        shard = local_of(value).detach()
        if not bool(shard.any()):
            codes, scale = fmt.zeros(shard.shape, shard.device)
        else:
            codes, scale = fmt.quantize(shard, is_signed(key))
        if is_dtensor(param):  # each rank's codes and scales, laid out as the parameter
            codes = like_param(codes, param, fmt.codes_shape(param.shape))
            scale = like_param(scale, param, (param.numel() // fmt.block_size,))
        del converted[key]
        converted[codes_key(key)], converted[scale_key(key)] = codes, scale
    return converted


def stored_format(key: str, codes: torch.Tensor, scale: torch.Tensor,
                  shape: torch.Size) -> StateFormat:
    """The format `codes` and `scale` of a state of `shape` are stored in, from their dtypes
    and sizes (int4: half as many uint8 codes as elements, flat)."""
    name = {torch.uint8: "int8", torch.float8_e4m3fn: "fp8"}.get(codes.dtype)
    numel = shape.numel()
    if name == "int8" and codes.dim() == 1 and 2 * codes.numel() == numel:
        name = "int4"
    elif codes.numel() != numel:
        name = None
    if name is None or scale.dtype != torch.float32 or scale.dim() != 1 or \
            scale.numel() == 0 or numel % scale.numel():
        raise Error(f"state '{key}_codes' ({codes.dtype}, {codes.numel()} elements) and "
                    f"'{key}_scale' ({scale.dtype}, shape {list(scale.shape)}) are no quantized "
                    f"state of {numel} elements: uint8 or float8_e4m3fn codes (int4: two per "
                    "byte) and one float32 scale per block")
    return state_format(name, numel // scale.numel())


def dequantize_state(fmt: StateFormat, state: dict, param: Any,
                     keys: Optional[list] = None) -> dict:
    """`state` (of `param`) with each quantized entry (of `keys`, default all) as a float32
    tensor under its own key; a DTensor parameter's as a DTensor laid out as the parameter."""
    converted = dict(state)
    for key in quantized_keys(state) if keys is None else keys:
        codes, scale = converted.pop(codes_key(key)), converted.pop(scale_key(key))
        value = fmt.dequantize(local_of(codes), local_of(scale), is_signed(key),
                               local_of(param).shape)
        converted[key] = like_param(value, param, tuple(param.shape)) \
            if is_dtensor(param) else value
    return converted


def traced_view(fmt: Optional[StateFormat], state: dict,
                param: Any) -> tuple[dict, Callable[..., None]]:
    """What update() receives for the traced `state` of the traced `param` (each quantized
    entry as its float32 value), and the function that stores what update() wrote back
    (given the step's skip flag, or None)."""
    keys = quantized_keys(state) if fmt is not None else []
    if not keys:
        return state, lambda view, skip: None
    view = {key: value for key, value in state.items()
            if not any(key in (codes_key(k), scale_key(k)) for k in keys)}
    read = {}
    for key in keys:
        view[key] = fmt.read(state[codes_key(key)], state[scale_key(key)], is_signed(key),
                             param)
        read[key] = view[key].handle  # an in-place write in update() rebinds the value

    def store(view: dict, skip: Optional[Any]) -> None:
        for key in keys:
            value = view[key]
            if value.handle is not read[key]:  # update() wrote it
                fmt.store(value, state[codes_key(key)], state[scale_key(key)],
                          is_signed(key), skip)
    return view, store


_CODEBOOKS: dict[tuple[int, bool], torch.Tensor] = {}


def _codebook_name(bits: int, signed: bool) -> str:
    return {(8, True): "dynamic8_signed", (8, False): "dynamic8_unsigned",
            (4, True): "dynamic4_signed", (4, False): "linear4_unsigned"}[(bits, signed)]


def _codebook(bits: int, signed: bool) -> torch.Tensor:
    """The table the kernels read (ir/codebook.h), as a float32 tensor."""
    table = _CODEBOOKS.get((bits, signed))
    if table is None:
        table = _CODEBOOKS[(bits, signed)] = torch.tensor(
            _widefuse.codebook_values(_codebook_name(bits, signed)), dtype=torch.float32)
    return table


def _nearest_codes(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """nearest_code on a tensor: the largest c with table[c] <= x, then up by half a gap."""
    table = table.to(x.device)
    size = table.numel()
    code = torch.zeros(x.shape, dtype=torch.long, device=x.device)
    step = size // 2
    while step:
        code += torch.where(x >= table[code + step], step, 0)
        step //= 2
    up = (code + 1).clamp(max=size - 1)
    low = table[code]
    code = torch.where(x - low >= (table[up] - low) * 0.5, up, code)
    return code.to(torch.uint8)
