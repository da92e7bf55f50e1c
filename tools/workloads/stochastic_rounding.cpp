#include "tools/workloads/stochastic_rounding.h"

namespace widefuse::optim {
namespace {

// SplitMix64's constants, as the signed 64-bit values of their bits (i64 arithmetic wraps).
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t kMix1 = 0xBF58476D1CE4E5B9ULL;
constexpr uint64_t kMix2 = 0x94D049BB133111EBULL;

int64_t asSigned(uint64_t bits) {
  return static_cast<int64_t>(bits);
}

Val finalize(Val z) {
  z = bitwise_xor(z, logical_right_shift(z, 30)) * asSigned(kMix1);
  z = bitwise_xor(z, logical_right_shift(z, 27)) * asSigned(kMix2);
  return bitwise_xor(z, logical_right_shift(z, 31));
}

} // namespace

Val random16Bits(Val like, Val seed, Val step) {
  Val key = finalize(seed + cast(step, DataType::Int64) * asSigned(kGolden));
  Val bits = finalize(key + (element_index(like) + 1) * asSigned(kGolden));
  return cast(logical_right_shift(bits, 48), DataType::Int32);
}

Val stochasticBf16(Val value, Val random16) {
  Val bits = bitcast(value, DataType::Int32);
  Val towardZero = bitwise_and(bits, -0x10000);
  Val rounded = where(lt(random16, bitwise_and(bits, 0xFFFF)), towardZero + 0x10000, towardZero);
  return cast(bitcast(rounded, DataType::Float), DataType::BFloat16);
}

int64_t roundingSeed(uint64_t counter) {
  uint64_t z = counter * kGolden + kGolden;
  z = (z ^ (z >> 30)) * kMix1;
  z = (z ^ (z >> 27)) * kMix2;
  return asSigned(z ^ (z >> 31));
}

} // namespace widefuse::optim
