#pragma once
/// The code index: nearest_code without a search, for the host's vectorized loops. A value's
/// ordered key (its f32 bits, ordered as the values are) picks a bucket; the bucket holds the
/// code at its start and where, inside it, the one threshold it may contain lies. Built from
/// nearestCode itself, so it gives its codes for every f32 (NaN gives 0).

#include "ir/codebook.h"

#include <cstdint>
#include <vector>

namespace widefuse {

/// The buckets of one codebook's index. A key k is first squeezed (keys in [-zero, zero], where
/// no threshold lies, become 0), then clamped into [low, high]; its bucket is
/// (k - low) >> shift.
struct CodeIndex {
  unsigned shift = 0;
  int32_t zero = 0;
  int32_t low = 0;
  int32_t high = 0;
  /// Per bucket: the code at its start << 24 | the threshold's offset from its start (the
  /// first key whose code is one more), or 1 << shift when the bucket holds none.
  std::vector<uint32_t> entries;
};

/// The f32's bits as an int32 ordered as the values are (-0.0 just below +0.0).
int32_t orderedKey(float x);

/// The f32 of an ordered key.
float fromOrderedKey(int32_t key);

/// The index of `codebook`: the widest buckets that hold at most one threshold each.
const CodeIndex& codeIndex(Codebook codebook);

/// The code of `x` through the index, as generated host kernels compute it.
uint8_t indexedCode(const CodeIndex& index, float x);

} // namespace widefuse
