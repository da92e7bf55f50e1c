// The fp8 conversions of ir/half_float.h against a reference written from the formats'
// definitions: every value of a format listed from its sign, exponent and mantissa fields, and
// float -> fp8 as a search for the nearest listed value (torch's rules for ties, overflow,
// infinities and NaN), on every one of the 256 patterns, their midpoints and a dense sweep.

#include "ir/data_type.h"
#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "ir/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace widefuse {
namespace {

struct Format {
  DataType type;
  int exponentBits, mantissaBits;
  bool hasInfinity; // e5m2; e4m3fn's top pattern 0x7f is NaN and it has no infinity
};

constexpr Format kE4M3Fn{DataType::Float8_e4m3fn, 4, 3, false};
constexpr Format kE5M2{DataType::Float8_e5m2, 5, 2, true};

/// The value of `bits` from the definition: (-1)^s 2^(e - bias) (1 + m / 2^M), or
/// 2^(1 - bias) (m / 2^M) for e = 0; NaN for the NaN patterns, +-inf for e5m2's.
double referenceValue(const Format& format, unsigned bits) {
  int bias = (1 << (format.exponentBits - 1)) - 1;
  unsigned e = (bits >> format.mantissaBits) & ((1u << format.exponentBits) - 1);
  unsigned m = bits & ((1u << format.mantissaBits) - 1);
  double sign = (bits & 0x80) ? -1 : 1;
  unsigned top = (1u << format.exponentBits) - 1;
  if (format.hasInfinity && e == top)
    return m ? std::nan("") : sign * INFINITY;
  if (!format.hasInfinity && e == top && m == (1u << format.mantissaBits) - 1)
    return std::nan("");
  double fraction = double(m) / double(1u << format.mantissaBits);
  if (e == 0)
    return sign * std::pow(2.0, 1 - bias) * fraction;
  return sign * std::pow(2.0, int(e) - bias) * (1 + fraction);
}

double referenceE8M0(unsigned bits) {
  return bits == 0xff ? std::nan("") : std::pow(2.0, int(bits) - 127);
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// The non-negative finite values of a format in pattern order, followed by the value one
/// step past the largest (480 for e4m3fn, which torch turns into NaN; 65536 for e5m2, its
/// infinity).
std::vector<double> gridOf(const Format& format) {
  unsigned lastFinite = format.hasInfinity ? 0x7b : 0x7e;
  std::vector<double> grid;
  for (unsigned bits = 0; bits <= lastFinite; ++bits)
    grid.push_back(referenceValue(format, bits));
  grid.push_back(2 * grid[lastFinite] - grid[lastFinite - 1]);
  return grid;
}

/// float -> e4m3fn / e5m2 by search: the nearest value of the grid, ties to the even pattern,
/// the sign put back at the end.
uint8_t referenceEncode(const Format& format, float value) {
  static const std::vector<double> grids[2] = {gridOf(kE4M3Fn), gridOf(kE5M2)};
  const std::vector<double>& grid = grids[format.hasInfinity];
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  uint8_t nan = sign | 0x7f;
  if (std::isnan(value))
    return nan;
  double magnitude = std::fabs(double(value));
  unsigned best = grid.size() - 1; // at or past the step beyond the largest value
  double bestDistance = INFINITY;
  for (unsigned bits = 0; bits < grid.size() && magnitude < grid.back(); ++bits) {
    double distance = std::fabs(grid[bits] - magnitude);
    if (distance < bestDistance || (distance == bestDistance && bits % 2 == 0)) {
      best = bits;
      bestDistance = distance;
    }
  }
  if (std::isinf(value) || best == grid.size() - 1)
    return format.hasInfinity ? uint8_t(sign | 0x7c) : nan;
  return uint8_t(sign | best);
}

/// torch's float -> e8m0fnu: the nearest power of two, halfway (1.5 * 2^e) rounding up, NaN
/// past 2^127; floats below 2^-126 (subnormal) give 2^-126 above 2^-127 and 2^-127 otherwise.
uint8_t referenceEncodeE8M0(float value) {
  if (!std::isfinite(value))
    return 0xff;
  double magnitude = std::fabs(double(value));
  if (magnitude < std::pow(2.0, -126))
    return magnitude > std::pow(2.0, -127) ? 1 : 0;
  static const std::vector<double> powers = [] {
    std::vector<double> table;
    for (int bits = 0; bits <= 255; ++bits)
      table.push_back(std::pow(2.0, bits - 127));
    return table;
  }();
  for (int bits = 0; bits < 255; ++bits) {
    double low = powers[bits], high = powers[bits + 1];
    if (magnitude < high)
      return uint8_t(magnitude >= (low + high) / 2 ? bits + 1 : bits);
  }
  return 0xff;
}

/// Same float bits, or both NaN with the same sign.
::testing::AssertionResult sameFloat(float actual, double expected) {
  if (std::isnan(expected) && std::isnan(actual))
    return ::testing::AssertionSuccess();
  if (floatBits(actual) == floatBits(float(expected)) && float(expected) == expected)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << actual << " != " << expected;
}

float decode(DataType type, unsigned bits) {
  return narrowBitsToFloat(type, uint16_t(bits));
}

TEST(Float8, DecodesEveryPatternAsTheFormatDefines) {
  for (unsigned bits = 0; bits < 256; ++bits) {
    EXPECT_TRUE(sameFloat(decode(DataType::Float8_e4m3fn, bits), referenceValue(kE4M3Fn, bits)))
        << "e4m3fn 0x" << std::hex << bits;
    EXPECT_TRUE(sameFloat(decode(DataType::Float8_e5m2, bits), referenceValue(kE5M2, bits)))
        << "e5m2 0x" << std::hex << bits;
    EXPECT_TRUE(sameFloat(decode(DataType::Float8_e8m0fnu, bits), referenceE8M0(bits)))
        << "e8m0fnu 0x" << std::hex << bits;
  }
  // The extremes and the NaNs, written out.
  EXPECT_EQ(decode(DataType::Float8_e4m3fn, 0x7e), 448.0f);
  EXPECT_EQ(decode(DataType::Float8_e4m3fn, 0x01), 0x1p-9f);
  EXPECT_TRUE(std::isnan(decode(DataType::Float8_e4m3fn, 0x7f)));
  EXPECT_TRUE(std::signbit(decode(DataType::Float8_e4m3fn, 0xff)));
  EXPECT_EQ(decode(DataType::Float8_e4m3fn, 0xf8), -256.0f); // e = 15 is finite in e4m3fn
  EXPECT_EQ(decode(DataType::Float8_e5m2, 0x7b), 57344.0f);
  EXPECT_EQ(decode(DataType::Float8_e5m2, 0x7c), INFINITY);
  EXPECT_EQ(decode(DataType::Float8_e5m2, 0x01), 0x1p-16f);
  EXPECT_EQ(decode(DataType::Float8_e8m0fnu, 0), 0x1p-127f);
  EXPECT_EQ(decode(DataType::Float8_e8m0fnu, 0xfe), 0x1p127f);
  EXPECT_TRUE(std::isnan(decode(DataType::Float8_e8m0fnu, 0xff)));
}

/// Every float to check: the 256 values of each format, the midpoints between neighbours and
/// the floats next to them, the edges, and a sweep over all floats in steps of 8191 patterns.
std::vector<float> sweep() {
  std::vector<float> values;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 8191) {
    uint32_t narrow = uint32_t(bits);
    float value;
    std::memcpy(&value, &narrow, sizeof value);
    values.push_back(value);
  }
  for (DataType type : {DataType::Float8_e4m3fn, DataType::Float8_e5m2, DataType::Float8_e8m0fnu})
    for (unsigned bits = 0; bits < 255; ++bits) {
      double low = decode(type, bits), high = decode(type, bits + 1);
      for (double point : {low, (low + high) / 2})
        for (float near : {float(point), std::nextafter(float(point), -INFINITY),
                           std::nextafter(float(point), INFINITY)})
          values.insert(values.end(), {near, -near});
    }
  for (float edge : {0.0f,
                     448.0f,
                     464.0f,
                     464.00003f,
                     479.99997f,
                     480.0f,
                     57344.0f,
                     61440.0f,
                     61439.996f,
                     65536.0f,
                     0x1p-9f,
                     0x1p-10f,
                     0x3p-11f,
                     0x1p-16f,
                     0x1p-17f,
                     0x1p-127f,
                     0x1p-126f,
                     0x1.8p127f,
                     0x1.7ffffep127f,
                     std::numeric_limits<float>::max(),
                     std::numeric_limits<float>::denorm_min(),
                     INFINITY,
                     std::numeric_limits<float>::quiet_NaN()})
    values.insert(values.end(), {edge, -edge});
  return values;
}

TEST(Float8, RoundsEveryFloatToTheNearestPatternAsTorchDoes) {
  for (float value : sweep()) {
    ASSERT_EQ(toFloat8E4M3FnBits(value), referenceEncode(kE4M3Fn, value))
        << "e4m3fn of " << value << " [0x" << std::hex << floatBits(value) << "]";
    ASSERT_EQ(toFloat8E5M2Bits(value), referenceEncode(kE5M2, value))
        << "e5m2 of " << value << " [0x" << std::hex << floatBits(value) << "]";
    ASSERT_EQ(toFloat8E8M0FnuBits(value), referenceEncodeE8M0(value))
        << "e8m0fnu of " << value << " [0x" << std::hex << floatBits(value) << "]";
  }
}

// torch 2.9's results (`torch.tensor([...]).to(dtype).view(torch.uint8)`), written out.
TEST(Float8, EdgeValuesGiveTorchsBits) {
  EXPECT_EQ(toFloat8E4M3FnBits(448), 0x7e);
  EXPECT_EQ(toFloat8E4M3FnBits(464), 0x7e); // the tie goes to the even 448
  EXPECT_EQ(toFloat8E4M3FnBits(465), 0x7f); // past it: NaN, not saturation
  EXPECT_EQ(toFloat8E4M3FnBits(1e30f), 0x7f);
  EXPECT_EQ(toFloat8E4M3FnBits(-1e30f), 0xff);
  EXPECT_EQ(toFloat8E4M3FnBits(INFINITY), 0x7f);
  EXPECT_EQ(toFloat8E4M3FnBits(-INFINITY), 0xff);
  EXPECT_EQ(toFloat8E4M3FnBits(-0.0f), 0x80);
  EXPECT_EQ(toFloat8E4M3FnBits(-std::numeric_limits<float>::quiet_NaN()), 0xff);
  EXPECT_EQ(toFloat8E5M2Bits(57344), 0x7b);
  EXPECT_EQ(toFloat8E5M2Bits(61439), 0x7b);
  EXPECT_EQ(toFloat8E5M2Bits(61440), 0x7c); // the tie goes to the even infinity
  EXPECT_EQ(toFloat8E5M2Bits(-1e30f), 0xfc);
  EXPECT_EQ(toFloat8E5M2Bits(std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(toFloat8E8M0FnuBits(1.5f), 128);
  EXPECT_EQ(toFloat8E8M0FnuBits(-4.0f), 129);
  EXPECT_EQ(toFloat8E8M0FnuBits(0.0f), 0);
  EXPECT_EQ(toFloat8E8M0FnuBits(6e-39f), 1);
  EXPECT_EQ(toFloat8E8M0FnuBits(0x1.4p127f), 254);
  EXPECT_EQ(toFloat8E8M0FnuBits(0x1.8p127f), 255);
  EXPECT_EQ(toFloat8E8M0FnuBits(INFINITY), 255);
}

// A double or an integer goes to float first, as c10's fp8 constructors take a float.
TEST(Float8, CastsFromDoubleAndIntegersRoundThroughFloat) {
  FusionDefinition fd("casts");
  Val d = fd.defineTensor({2}, DataType::Double, "d");
  Val i = fd.defineTensor({1}, DataType::Int64, "i");
  fd.addOutput(cast(d, DataType::Float8_e4m3fn));
  fd.addOutput(cast(i, DataType::Float8_e8m0fnu));
  std::unique_ptr<Fusion> fusion = fd.finalize();
  HostTensor doubles(DataType::Double, {2}), integers(DataType::Int64, {1});
  // 1.0625 is an e4m3fn tie (between 1 and 1.125, to even: 1). Just above it in double, but
  // not in float: through float it stays the tie; rounded from the double it would be 1.125.
  doubles.as<double>()[0] = 1.0625 + 0x1p-40;
  doubles.as<double>()[1] = 1.0625 + 0x1p-20; // above the tie in float too
  // 3 * 2^60 + 1 is 1.5 * 2^61 + 1: in float exactly 1.5 * 2^61, which rounds up to 2^62.
  integers.as<int64_t>()[0] = 3 * (int64_t(1) << 60) + 1;
  EvaluationResult result = evaluate(*fusion, {doubles.ref(), integers.ref()});
  EXPECT_EQ(result.outputs[0].as<uint8_t>()[0], 0x38); // 1.0
  EXPECT_EQ(result.outputs[0].as<uint8_t>()[1], 0x39); // 1.125
  EXPECT_EQ(result.outputs[1].as<uint8_t>()[0], 127 + 62);
}

} // namespace
} // namespace widefuse
