#include "tests/fuzz/values.h"

#include "ir/half_float.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace widefuse::fuzz {
namespace {

/// A double from a mix of edge values and ordinary magnitudes.
double randomDouble(std::mt19937_64& random) {
  static const double kSpecials[] = {0.0,     -0.0,  INFINITY, -INFINITY, NAN,   1e-40,
                                     -1e-310, 65504, 1e30,     -3e38,     0.5,   -2.5,
                                     1.0,     -1.0,  2.0,      3.0e-5,    1e300, -7.0};
  std::uniform_int_distribution<int> pick(0, 39);
  int choice = pick(random);
  if (choice < int(std::size(kSpecials)))
    return kSpecials[choice];
  if (choice < 30)
    return std::normal_distribution<double>(0.0, 3.0)(random);
  return double(int64_t(random() % 21) - 10);
}

/// An integer of `dtype`'s range: extremes, small values or random bits (as the bits are
/// stored, so wrapping is the storage's).
int64_t randomInteger(DataType dtype, std::mt19937_64& random) {
  auto [low, high] = integerRange(dtype);
  switch (random() % 6) {
  case 0:
    return low;
  case 1:
    return high;
  case 2:
  case 3:
    return int64_t(random() % 11) - 3;
  default: {
    // Uniform bits within the range, computed without signed overflow.
    uint64_t span = uint64_t(high) - uint64_t(low);
    uint64_t offset =
        span == std::numeric_limits<uint64_t>::max() ? random() : random() % (span + 1);
    return int64_t(uint64_t(low) + offset);
  }
  }
}

} // namespace

void fillRandom(DataType dtype, std::vector<std::byte>& storage, std::mt19937_64& random) {
  size_t size = byteSize(dtype);
  for (size_t at = 0; at + size <= storage.size(); at += size) {
    std::byte* element = storage.data() + at;
    if (dtype == DataType::Bool) {
      element[0] = std::byte(random() & 1);
    } else if (dtype == DataType::Float) {
      float value = float(randomDouble(random));
      std::memcpy(element, &value, 4);
    } else if (dtype == DataType::Double) {
      double value = randomDouble(random);
      std::memcpy(element, &value, 8);
    } else if (dtype == DataType::ComplexFloat) {
      float parts[2] = {float(randomDouble(random)), float(randomDouble(random))};
      std::memcpy(element, parts, 8);
    } else if (dtype == DataType::ComplexDouble) {
      double parts[2] = {randomDouble(random), randomDouble(random)};
      std::memcpy(element, parts, 16);
    } else if (isNarrowFloat(dtype)) {
      double value = randomDouble(random);
      uint16_t bits = toNarrowBits(dtype, value, float(value));
      std::memcpy(element, &bits, size); // little-endian: the low byte for fp8
    } else {
      // Little-endian: the low `size` bytes of the integer are its value in `dtype`.
      int64_t value = randomInteger(dtype, random);
      std::memcpy(element, &value, size);
    }
  }
}

ScalarArgument randomScalar(DataType dtype, std::mt19937_64& random) {
  if (dtype == DataType::Bool)
    return bool(random() & 1);
  if (isInteger(dtype))
    return randomInteger(dtype, random);
  return randomDouble(random);
}

ConstantValue randomConstant(DataType dtype, std::mt19937_64& random) {
  return randomScalar(dtype, random);
}

} // namespace widefuse::fuzz
