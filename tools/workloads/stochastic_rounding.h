#pragma once
/// Stochastic rounding of bf16 parameters for the tools' Adam workload (`widefuse adam
/// --stochastic-round`), op for op as widefuse.optim traces it (master_weights.py's
/// stochastic_bf16, random_bits.py): torchao's rule, away from zero with probability (the
/// dropped low 16 bits) / 2^16, its random bits from a counter-based generator. SplitMix64's
/// finalizer of (seed, step) gives the step's key and of (key, element index) each element's
/// bits, so a step is the same on every backend, in any block order and after a checkpoint.

#include "ir/fusion_definition.h"

#include <cstdint>

namespace widefuse::optim {

/// Int32 values in [0, 2^16), one per element of `like`, for the 0-d step count `step` of a
/// parameter whose 0-d i64 seed is `seed`.
Val random16Bits(Val like, Val seed, Val step);

/// The f32 `value` rounded to bf16 by torchao's rule with 16 random bits per element.
Val stochasticBf16(Val value, Val random16);

/// A parameter's seed, made on the host from a counter (the CLI's initial state): SplitMix64
/// of `counter`, as a signed 64-bit value.
int64_t roundingSeed(uint64_t counter);

} // namespace widefuse::optim
