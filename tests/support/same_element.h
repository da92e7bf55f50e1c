#pragma once
// Shared by the tests that compare backends bit for bit: one element of two buffers.

#include "ir/data_type.h"
#include "ir/half_float.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace widefuse::testing {

/// True when the element at `p`, of floating-point type `dtype`, is a NaN.
inline bool isNanElement(const void* p, DataType dtype) {
  if (dtype == DataType::Float) {
    float f;
    std::memcpy(&f, p, 4);
    return std::isnan(f);
  }
  if (dtype == DataType::Double) {
    double d;
    std::memcpy(&d, p, 8);
    return std::isnan(d);
  }
  if (isFloat8(dtype)) {
    uint8_t bits;
    std::memcpy(&bits, p, 1);
    return std::isnan(dtype == DataType::Float8_e4m3fn ? float8E4M3FnBitsToFloat(bits)
                      : dtype == DataType::Float8_e5m2 ? float8E5M2BitsToFloat(bits)
                                                       : float8E8M0FnuBitsToFloat(bits));
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return std::isnan(dtype == DataType::Half ? halfBitsToFloat(bits) : bfloat16BitsToFloat(bits));
}

/// True when a and b hold the same bits, or are both NaN of a floating-point dtype (the NaN
/// payload of an op on two NaNs is not specified; e4m3fn keeps its sign: 0x7f and 0xff).
/// A complex element compares part by part, each as its real type.
inline bool sameElement(const void* a, const void* b, DataType dtype) {
  if (std::memcmp(a, b, byteSize(dtype)) == 0)
    return true;
  if (isComplex(dtype)) {
    DataType part = complexPartType(dtype);
    size_t size = byteSize(part);
    auto* x = static_cast<const char*>(a);
    auto* y = static_cast<const char*>(b);
    return sameElement(x, y, part) && sameElement(x + size, y + size, part);
  }
  return isFloatingPoint(dtype) && isNanElement(a, dtype) && isNanElement(b, dtype);
}

} // namespace widefuse::testing
