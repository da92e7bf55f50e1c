#pragma once
// Shared by the tests that compare a backend with the reference evaluator bit for bit: random
// contents with every special value, and element-by-element comparison of two tensors.

#include "tests/support/same_element.h"

#include "ir/data_type.h"
#include "ir/half_float.h"
#include "ir/host_tensor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

namespace widefuse::testing {

/// Random contents for a tensor of `dtype`: ordinary values with zeros, infinities, NaN and
/// denormals mixed in for floating point; bools as 0/1.
inline void fillRandom(HostTensor& tensor, std::mt19937_64& random) {
  std::uniform_int_distribution<int> pick(0, 19);
  std::normal_distribution<double> normal(0.0, 3.0);
  const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, -2.5, 0.5};
  auto* bytes = static_cast<unsigned char*>(tensor.data());
  size_t size = byteSize(tensor.dtype());
  // A complex element is two values of its part type, each drawn like a real one.
  bool complex = isComplex(tensor.dtype());
  if (complex)
    size /= 2;
  for (int64_t i = 0; i < tensor.numel() * (complex ? 2 : 1); ++i) {
    unsigned char* at = bytes + i * size;
    DataType dtype = complexPartType(tensor.dtype());
    if (dtype == DataType::Bool) {
      at[0] = random() & 1;
    } else if (isFloatingPoint(dtype)) {
      int choice = pick(random);
      double value = choice < 8 ? specials[choice] : normal(random);
      if (dtype == DataType::Float) {
        float narrow = float(value);
        std::memcpy(at, &narrow, 4);
      } else if (dtype == DataType::Double) {
        std::memcpy(at, &value, 8);
      } else if (isFloat8(dtype) && choice % 2 == 0) {
        at[0] = uint8_t(random()); // any of the 256 patterns, NaNs included
      } else {
        uint16_t bits = toNarrowBits(dtype, value, float(value));
        std::memcpy(at, &bits, size); // little-endian: the low byte for fp8
      }
    } else {
      uint64_t bits = random();
      // Small values half of the time, so that shifts and pow see in-range amounts.
      if (pick(random) < 10)
        bits = uint64_t(int64_t(pick(random)) - 5);
      std::memcpy(at, &bits, size);
    }
  }
}

/// The bytes of an element in hex, highest address first (little-endian numbers read right).
inline std::string describeBytes(const unsigned char* element, size_t size) {
  std::string text = "0x";
  for (size_t i = size; i-- > 0;)
    text += fmt::format("{:02x}", element[i]);
  return text;
}

/// Elements that differ between `actual` and `expected`, the first one reported as a failure.
inline int64_t countDifferences(const HostTensor& actual, const HostTensor& expected,
                                const std::string& what) {
  EXPECT_EQ(actual.dtype(), expected.dtype()) << what;
  EXPECT_EQ(actual.shape(), expected.shape()) << what;
  int64_t differences = 0;
  size_t size = byteSize(actual.dtype());
  auto* a = static_cast<const unsigned char*>(actual.data());
  auto* b = static_cast<const unsigned char*>(expected.data());
  for (int64_t i = 0; i < std::min(actual.numel(), expected.numel()); ++i)
    if (!sameElement(a + i * size, b + i * size, actual.dtype()) && differences++ == 0)
      ADD_FAILURE() << what << ": first difference at element " << i << ": host "
                    << describeBytes(a + i * size, size) << ", reference "
                    << describeBytes(b + i * size, size);
  return differences;
}

} // namespace widefuse::testing
