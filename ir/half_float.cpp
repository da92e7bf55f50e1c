#include "ir/half_float.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace widefuse {
namespace {

/// Rounds to a binary format with `exponentBits` and `mantissaBits` (16 bits in all), ties
/// to even. Rounding from double directly (not via float) avoids double rounding.
uint16_t roundToSmallFloat(double value, int exponentBits, int mantissaBits) {
  uint16_t sign = std::signbit(value) ? uint16_t(1u << 15) : uint16_t(0);
  uint16_t exponentMask = uint16_t(((1u << exponentBits) - 1) << mantissaBits);
  if (std::isnan(value))
    return sign | exponentMask | uint16_t(1u << (mantissaBits - 1)); // quiet NaN
  double magnitude = std::fabs(value);
  if (std::isinf(magnitude))
    return sign | exponentMask;
  if (magnitude == 0)
    return sign;
  int bias = (1 << (exponentBits - 1)) - 1;
  int exponent = std::max(std::ilogb(magnitude), 1 - bias); // subnormals share the minimum
  // Scaling by a power of two is exact; nearbyint rounds ties to even.
  double scaled = std::nearbyint(std::ldexp(magnitude, mantissaBits - exponent));
  double implicitOne = std::ldexp(1.0, mantissaBits);
  if (scaled >= 2 * implicitOne) { // rounding carried into the next binade
    scaled /= 2;
    ++exponent;
  }
  if (exponent > bias)
    return sign | exponentMask;
  if (scaled < implicitOne) // subnormal
    return sign | uint16_t(scaled);
  unsigned biased = unsigned(exponent + bias);
  return sign | uint16_t(biased << mantissaBits) | uint16_t(scaled - implicitOne);
}

float smallFloatToFloat(uint16_t bits, int exponentBits, int mantissaBits) {
  bool negative = bits >> 15;
  int bias = (1 << (exponentBits - 1)) - 1;
  unsigned biased = (bits >> mantissaBits) & ((1u << exponentBits) - 1);
  unsigned mantissa = bits & ((1u << mantissaBits) - 1);
  float magnitude;
  if (biased == (1u << exponentBits) - 1)
    magnitude =
        mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else if (biased == 0)
    magnitude = std::ldexp(float(mantissa), 1 - bias - mantissaBits);
  else
    magnitude =
        std::ldexp(float(mantissa + (1u << mantissaBits)), int(biased) - bias - mantissaBits);
  return negative ? -magnitude : magnitude;
}

} // namespace

uint16_t toHalfBits(double value) {
  return roundToSmallFloat(value, 5, 10);
}
float halfBitsToFloat(uint16_t bits) {
  return smallFloatToFloat(bits, 5, 10);
}

uint16_t toBFloat16Bits(double value) {
  return roundToSmallFloat(value, 8, 7);
}

float bfloat16BitsToFloat(uint16_t bits) {
  // bfloat16 is the top half of a float.
  uint32_t wide = uint32_t(bits) << 16;
  float result;
  std::memcpy(&result, &wide, sizeof result);
  return result;
}

} // namespace widefuse
