"""Random bits inside a step, from a counter-based generator: SplitMix64's finalizer, first of
(seed, step) for the step's key, then of (key, element index) for each element's bits. The
bits are a function of those three alone, so a step gives the same bits on the host and the
GPU, in any block order, and again after its checkpoint is loaded. A parameter's seed is
drawn from torch's generator when its state is made: ``torch.manual_seed`` makes a run
reproducible.
"""

from __future__ import annotations

from typing import Any

import torch

from ..data_type import DataType

# SplitMix64's constants, as the int64 values of their bits (traced integers wrap).
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
_MIX1 = 0xBF58476D1CE4E5B9 - (1 << 64)
_MIX2 = 0x94D049BB133111EB - (1 << 64)


def new_seed() -> torch.Tensor:
    """A parameter's seed: a 0-d int64 tensor drawn from torch's default generator."""
    return torch.randint(-(1 << 63), (1 << 63) - 1, (), dtype=torch.int64)


def _finalize(z: Any) -> Any:
    z = (z ^ z.definition.pointwise("logical_right_shift", (z, 30))) * _MIX1
    z = (z ^ z.definition.pointwise("logical_right_shift", (z, 27))) * _MIX2
    return z ^ z.definition.pointwise("logical_right_shift", (z, 31))


def random_16_bits(like: Any, seed: Any, step: Any) -> Any:
    """Int32 values in [0, 2^16), one per element of `like` (traced), for this `step` (a 0-d
    count) of the parameter with `seed`."""
    key = _finalize(seed + step.to(DataType.Int64) * _GOLDEN)
    index = like.definition.pointwise("element_index", (like,))
    bits = _finalize(key + (index + 1) * _GOLDEN)
    return bits.definition.pointwise("logical_right_shift", (bits, 48)).to(DataType.Int32)
