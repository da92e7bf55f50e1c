#pragma once
/// TransformerEngine's / Apex's `store_param_remainders` (shared/seeds: TE PR #1408): the f32
/// master weight of a bf16 parameter kept as the parameter itself (the master's high 16 bits,
/// rounded) and an int16 remainder (its low 16 bits), so that the master costs 2 bytes per
/// element instead of 4 and is still exact. Part of the tools' frozen Adam workload
/// (tools/workloads/adam.h); widefuse.optim's master_weights.py is the library's rule.
///
/// The rule (TE's kernel): splitting takes the low half as the remainder and increments the
/// high half when the low half's top bit is set (the remainder is then negative): the bf16
/// parameter is the master rounded to nearest in magnitude, ties away from zero. Rebuilding
/// decrements the high half again when the remainder is negative and joins the halves.
/// Integer arithmetic wraps modulo 2^16 in the high half, so every one of the 2^32 bit
/// patterns survives split + rebuild exactly, NaNs and infinities included. What the bf16
/// parameter shows is another matter at the edges, while the master is kept exactly:
/// - overflow: a finite master of magnitude >= 0x7F7F8000's (the midpoint between the
///   largest finite bf16 and the next power of two) gives an infinite parameter, as round to
///   nearest even does;
/// - NaN: a NaN master whose payload lies in its low half only (high half 0x7F80 or 0xFF80,
///   low half below 0x8000) gives an infinite parameter; one whose high half is 0x7FFF or
///   0xFFFF with a low half >= 0x8000 gives -0.0 or +0.0 (the increment wraps); every other
///   NaN master gives a NaN parameter.

#include "ir/fusion_definition.h"

#include <cstdint>
#include <utility>

namespace widefuse::optim {

/// The f32 master of a bf16 parameter and its int16 remainder, as IR (bitcasts, shifts,
/// where): inside a fusion, the kernel rebuilds the master from the two tensors.
Val reconstructMaster(Val param, Val remainder);

/// The inverse of reconstructMaster, as IR: the bf16 parameter and the int16 remainder of an
/// f32 master.
std::pair<Val, Val> splitMaster(Val master);

/// The bf16 bits and the remainder of one f32 master, on the host (what the CLI's initial
/// state and the tests' expectations are made with).
struct SplitMaster {
  uint16_t paramBits = 0;
  int16_t remainder = 0;
};
SplitMaster splitMasterValue(float master);

/// The f32 master of one bf16 parameter (bits) and remainder, on the host.
float reconstructMasterValue(uint16_t paramBits, int16_t remainder);

} // namespace widefuse::optim
