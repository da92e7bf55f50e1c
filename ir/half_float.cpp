#include "ir/half_float.h"

#include "ir/error.h"

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

/// Rounds a finite magnitude to the fp8 grid with `mantissaBits` and the exponent bias
/// `bias` (subnormals below 2^(1-bias)), ties to even, with no upper limit: the caller decides
/// what a result past the largest finite value means. Returns the rounded value (exact).
float roundToFloat8Grid(float magnitude, int mantissaBits, int bias) {
  if (magnitude == 0)
    return 0;
  int exponent = std::max(std::ilogb(magnitude), 1 - bias); // subnormals share the minimum
  // Scaling by a power of two is exact here; nearbyint rounds ties to even.
  float quantum = std::ldexp(1.0f, exponent - mantissaBits);
  return std::nearbyint(magnitude / quantum) * quantum;
}

/// The bits of a value on the grid of roundToFloat8Grid (not past the format's range).
uint8_t encodeFloat8(float rounded, int mantissaBits, int bias) {
  if (rounded == 0)
    return 0;
  int exponent = std::ilogb(rounded);
  if (exponent < 1 - bias) // subnormal: a multiple of the smallest quantum
    return uint8_t(std::ldexp(rounded, bias - 1 + mantissaBits));
  unsigned mantissa = unsigned(std::ldexp(rounded, mantissaBits - exponent)) - (1u << mantissaBits);
  return uint8_t(unsigned(exponent + bias) << mantissaBits | mantissa);
}

float decodeFloat8(uint8_t bits, int exponentBits, int mantissaBits, bool hasInfinity) {
  int bias = (1 << (exponentBits - 1)) - 1;
  unsigned biased = (bits >> mantissaBits) & ((1u << exponentBits) - 1);
  unsigned mantissa = bits & ((1u << mantissaBits) - 1);
  unsigned top = (1u << exponentBits) - 1, topMantissa = (1u << mantissaBits) - 1;
  float magnitude;
  if (hasInfinity && biased == top)
    magnitude =
        mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else if (!hasInfinity && biased == top && mantissa == topMantissa) // e4m3fn's only NaN
    magnitude = std::numeric_limits<float>::quiet_NaN();
  else if (biased == 0)
    magnitude = std::ldexp(float(mantissa), 1 - bias - mantissaBits);
  else
    magnitude =
        std::ldexp(float(mantissa + (1u << mantissaBits)), int(biased) - bias - mantissaBits);
  return (bits & 0x80) ? -magnitude : magnitude; // negation sets the sign bit, NaN included
}

} // namespace

uint8_t toFloat8E4M3FnBits(float value) {
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  if (!std::isfinite(value))
    return sign | 0x7f;
  float rounded = roundToFloat8Grid(std::fabs(value), 3, 7);
  return rounded > 448 ? uint8_t(sign | 0x7f) : uint8_t(sign | encodeFloat8(rounded, 3, 7));
}

uint8_t toFloat8E5M2Bits(float value) {
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  if (std::isnan(value))
    return sign | 0x7f;
  if (std::isinf(value))
    return sign | 0x7c;
  float rounded = roundToFloat8Grid(std::fabs(value), 2, 15);
  return rounded > 57344 ? uint8_t(sign | 0x7c) : uint8_t(sign | encodeFloat8(rounded, 2, 15));
}

uint8_t toFloat8E8M0FnuBits(float value) {
  if (!std::isfinite(value))
    return 0xff;
  float magnitude = std::fabs(value);
  const float smallestNormal = std::numeric_limits<float>::min(); // 2^-126
  if (magnitude < smallestNormal) // float exponent field 0: rounds up past half of 2^-126
    return magnitude > smallestNormal / 2 ? 1 : 0;
  int exponent = std::ilogb(magnitude);
  float fraction = std::ldexp(magnitude, -exponent) - 1; // exact, in [0, 1)
  int biased = exponent + 127 + (fraction >= 0.5f ? 1 : 0);
  return uint8_t(biased); // 255, NaN, past 2^127
}

float float8E4M3FnBitsToFloat(uint8_t bits) {
  return decodeFloat8(bits, 4, 3, false);
}

float float8E5M2BitsToFloat(uint8_t bits) {
  return decodeFloat8(bits, 5, 2, true);
}

float float8E8M0FnuBitsToFloat(uint8_t bits) {
  if (bits == 0xff)
    return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int(bits) - 127);
}

float narrowBitsToFloat(DataType type, uint16_t bits) {
  switch (type) {
  case DataType::Half:
    return halfBitsToFloat(bits);
  case DataType::BFloat16:
    return bfloat16BitsToFloat(bits);
  case DataType::Float8_e4m3fn:
    return float8E4M3FnBitsToFloat(uint8_t(bits));
  case DataType::Float8_e5m2:
    return float8E5M2BitsToFloat(uint8_t(bits));
  case DataType::Float8_e8m0fnu:
    return float8E8M0FnuBitsToFloat(uint8_t(bits));
  default:
    WF_UNREACHABLE("{} is not a narrow-float type", shortName(type).str());
  }
}

uint16_t toNarrowBits(DataType type, double value, float asFloat) {
  switch (type) {
  case DataType::Half:
    return toHalfBits(value);
  case DataType::BFloat16:
    return toBFloat16Bits(value);
  case DataType::Float8_e4m3fn:
    return toFloat8E4M3FnBits(asFloat);
  case DataType::Float8_e5m2:
    return toFloat8E5M2Bits(asFloat);
  case DataType::Float8_e8m0fnu:
    return toFloat8E8M0FnuBits(asFloat);
  default:
    WF_UNREACHABLE("{} is not a narrow-float type", shortName(type).str());
  }
}

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
