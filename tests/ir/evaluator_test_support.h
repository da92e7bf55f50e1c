#pragma once
// Helpers for evaluator tests: build one-op fusions, run them, and compute reference values
// with code independent of the evaluator (compiler-native _Float16, a bit-trick bfloat16).

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "ir/half_float.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace widefuse::testing {

/// float -> bfloat16 bits, ties to even (the classic bit trick; NaN kept quiet).
inline uint16_t referenceBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40);
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline float referenceBFloat16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

inline uint16_t referenceHalf(float value) {
  _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, 2);
  return bits;
}

inline float referenceHalfToFloat(uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, 2);
  return static_cast<float>(half);
}

/// Rounds a float result to `dtype` with these reference conversions (f16, bf16; others as
/// they are).
inline double roundTo(DataType dtype, float value) {
  switch (dtype) {
  case DataType::Half:
    return referenceHalfToFloat(referenceHalf(value));
  case DataType::BFloat16:
    return referenceBFloat16ToFloat(referenceBFloat16(value));
  default:
    return value;
  }
}

/// Element i of a tensor as double (half/bfloat16 decoded by the reference helpers).
inline double elementAsDouble(const HostTensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
  case DataType::Bool:
    return tensor.as<bool>()[i];
  case DataType::Int8:
    return tensor.as<int8_t>()[i];
  case DataType::Int16:
    return tensor.as<int16_t>()[i];
  case DataType::Int32:
    return tensor.as<int32_t>()[i];
  case DataType::Int64:
    return double(tensor.as<int64_t>()[i]);
  case DataType::UInt8:
    return tensor.as<uint8_t>()[i];
  case DataType::UInt16:
    return tensor.as<uint16_t>()[i];
  case DataType::UInt32:
    return tensor.as<uint32_t>()[i];
  case DataType::Half:
    return referenceHalfToFloat(tensor.as<uint16_t>()[i]);
  case DataType::BFloat16:
    return referenceBFloat16ToFloat(tensor.as<uint16_t>()[i]);
  case DataType::Float:
    return tensor.as<float>()[i];
  case DataType::Double:
    return tensor.as<double>()[i];
  case DataType::Float8_e4m3fn: // decoded as tests/ir/float8_test.cpp checks, pattern by pattern
  case DataType::Float8_e5m2:
  case DataType::Float8_e8m0fnu:
    return narrowBitsToFloat(tensor.dtype(), tensor.as<uint8_t>()[i]);
  case DataType::ComplexFloat: // the real part (as a cast to a real type reads it)
    return tensor.as<float>()[2 * i];
  case DataType::ComplexDouble:
    return tensor.as<double>()[2 * i];
  }
  return 0;
}

/// Writes a double into element i, exactly representable values only (test data).
inline void setElement(HostTensor& tensor, int64_t i, double value) {
  switch (tensor.dtype()) {
  case DataType::Bool:
    tensor.as<bool>()[i] = value != 0;
    break;
  case DataType::Int8:
    tensor.as<int8_t>()[i] = int8_t(value);
    break;
  case DataType::Int16:
    tensor.as<int16_t>()[i] = int16_t(value);
    break;
  case DataType::Int32:
    tensor.as<int32_t>()[i] = int32_t(value);
    break;
  case DataType::Int64:
    tensor.as<int64_t>()[i] = int64_t(value);
    break;
  case DataType::UInt8:
    tensor.as<uint8_t>()[i] = uint8_t(value);
    break;
  case DataType::UInt16:
    tensor.as<uint16_t>()[i] = uint16_t(value);
    break;
  case DataType::UInt32:
    tensor.as<uint32_t>()[i] = uint32_t(value);
    break;
  case DataType::Half:
    tensor.as<uint16_t>()[i] = referenceHalf(float(value));
    break;
  case DataType::BFloat16:
    tensor.as<uint16_t>()[i] = referenceBFloat16(float(value));
    break;
  case DataType::Float:
    tensor.as<float>()[i] = float(value);
    break;
  case DataType::Double:
    tensor.as<double>()[i] = value;
    break;
  case DataType::Float8_e4m3fn: // e8m0fnu has powers of two only: others round (no zero: 2^-127)
  case DataType::Float8_e5m2:
  case DataType::Float8_e8m0fnu:
    tensor.as<uint8_t>()[i] = uint8_t(toNarrowBits(tensor.dtype(), value, float(value)));
    break;
  case DataType::ComplexFloat: // imaginary part 0
    tensor.as<float>()[2 * i] = float(value);
    tensor.as<float>()[2 * i + 1] = 0;
    break;
  case DataType::ComplexDouble:
    tensor.as<double>()[2 * i] = value;
    tensor.as<double>()[2 * i + 1] = 0;
    break;
  }
}

/// A tensor of `dtype` holding `values` (which the dtype must represent).
inline HostTensor tensorOf(DataType dtype, const std::vector<double>& values) {
  HostTensor tensor(dtype, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    setElement(tensor, int64_t(i), values[i]);
  return tensor;
}

/// Builds `op(inputs...)` over 1-D tensors of the given dtypes and returns the output.
inline HostTensor runOneOp(const std::function<Val(std::vector<Val>&)>& build,
                           std::vector<HostTensor>& inputs) {
  FusionDefinition fd("one_op");
  std::vector<Val> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    values.push_back(fd.defineTensor(inputs[i].shape(), inputs[i].dtype()));
  fd.addOutput(build(values));
  auto fusion = fd.finalize();
  std::vector<Argument> arguments;
  for (HostTensor& input : inputs)
    arguments.push_back(input.ref());
  return std::move(evaluate(*fusion, arguments).outputs.at(0));
}

} // namespace widefuse::testing
