#include "codegen/constant_literal.h"

#include "ir/element_ops.h"
#include "ir/error.h"
#include "ir/half_float.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>

namespace widefuse {

std::string cppType(DataType dtype) {
  return shortName(dtype).str();
}

namespace {

/// A number as the evaluator holds it in some dtype: exact in one of these three.
struct Number {
  enum class Kind { Boolean, Integer, Floating } kind;
  bool boolean = false;
  int64_t integer = 0; // also holds the values of u32
  double floating = 0;
};

/// Converts like element::convertNumber into dtype `type`, rounding half/bfloat16 as the
/// evaluator stores them (the result is the decoded value, exactly representable).
template <typename From> Number convertTo(From value, DataType type) {
  using element::convertNumber;
  switch (type) {
  case DataType::Bool:
    return {Number::Kind::Boolean, convertNumber<bool>(value)};
  case DataType::Int8:
    return {Number::Kind::Integer, false, convertNumber<int8_t>(value)};
  case DataType::Int16:
    return {Number::Kind::Integer, false, convertNumber<int16_t>(value)};
  case DataType::Int32:
    return {Number::Kind::Integer, false, convertNumber<int32_t>(value)};
  case DataType::Int64:
    return {Number::Kind::Integer, false, convertNumber<int64_t>(value)};
  case DataType::UInt8:
    return {Number::Kind::Integer, false, convertNumber<uint8_t>(value)};
  case DataType::UInt16:
    return {Number::Kind::Integer, false, convertNumber<uint16_t>(value)};
  case DataType::UInt32:
    return {Number::Kind::Integer, false, convertNumber<uint32_t>(value)};
  case DataType::Half:
    return {Number::Kind::Floating, false, 0,
            halfBitsToFloat(toHalfBits(convertNumber<double>(value)))};
  case DataType::BFloat16:
    return {Number::Kind::Floating, false, 0,
            bfloat16BitsToFloat(toBFloat16Bits(convertNumber<double>(value)))};
  case DataType::Float:
    return {Number::Kind::Floating, false, 0, double(convertNumber<float>(value))};
  case DataType::Double:
    return {Number::Kind::Floating, false, 0, convertNumber<double>(value)};
  case DataType::Float8_e4m3fn:
  case DataType::Float8_e5m2:
  case DataType::Float8_e8m0fnu:
    return {Number::Kind::Floating, false, 0,
            narrowBitsToFloat(type, toNarrowBits(type, convertNumber<double>(value),
                                                 convertNumber<float>(value)))};
  case DataType::ComplexFloat:
  case DataType::ComplexDouble:
    break; // constantLiteral writes a complex target as a pair of its parts
  }
  WF_UNREACHABLE("unknown dtype");
}

Number convertNumberTo(const Number& number, DataType type) {
  switch (number.kind) {
  case Number::Kind::Boolean:
    return convertTo(number.boolean, type);
  case Number::Kind::Integer:
    return convertTo(number.integer, type);
  case Number::Kind::Floating:
    // Half/bfloat16 values are decoded to float before any conversion (exact either way).
    return convertTo(number.floating, type);
  }
  WF_UNREACHABLE("unknown number kind");
}

/// Shortest decimal text that reads back to `value` in type T, always with a '.' or an
/// exponent so it stays a floating-point literal.
template <typename T> std::string shortestDecimal(T value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::string floatingLiteral(double value, DataType type) {
  if (isNarrowFloat(type)) {
    uint16_t bits = toNarrowBits(type, value, float(value));
    return fmt::format("{}{{0x{:0{}x}}}", cppType(type), bits, 2 * byteSize(type));
  }
  if (std::isnan(value) || std::isinf(value)) {
    // Bits, because NVRTC and the host compiler spell infinities and NaNs differently.
    if (type == DataType::Float) {
      float narrow = float(value);
      uint32_t bits;
      std::memcpy(&bits, &narrow, sizeof bits);
      return fmt::format("wf_bitcast<f32>(u32(0x{:08x}u))", bits);
    }
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return fmt::format("wf_bitcast<f64>(i64(0x{:016x}ull))", bits);
  }
  std::string text =
      type == DataType::Float ? shortestDecimal(float(value)) + "f" : shortestDecimal(value);
  return std::signbit(value) ? "(" + text + ")" : text;
}

std::string integerLiteral(int64_t value, DataType type) {
  if (type == DataType::Int64 && value == INT64_MIN)
    return "(-9223372036854775807ll - 1)";
  bool fitsInt = value > INT32_MIN && value <= INT32_MAX;
  std::string digits = std::to_string(value);
  if (!fitsInt)
    digits += type == DataType::UInt32 ? "ull" : "ll";
  if (type == DataType::Int32)
    return value < 0 ? "(" + digits + ")" : digits;
  return fmt::format("{}({})", cppType(type), digits);
}

} // namespace

std::string constantLiteral(const Value& constant, DataType target) {
  WF_ASSERT(constant.isConstant());
  if (isComplex(target)) { // constants are real: the value with imaginary part 0
    DataType part = complexPartType(target);
    Number zero{Number::Kind::Integer, false, 0};
    return fmt::format("wf_complex_make({}, {})", constantLiteral(constant, part),
                       floatingLiteral(convertNumberTo(zero, part).floating, part));
  }
  Number literal = std::visit(
      [](auto value) -> Number {
        using T = decltype(value);
        if constexpr (std::is_same_v<T, bool>)
          return {Number::Kind::Boolean, value};
        else if constexpr (std::is_same_v<T, int64_t>)
          return {Number::Kind::Integer, false, value};
        else
          return {Number::Kind::Floating, false, 0, value};
      },
      *constant.constant());
  Number stored = convertNumberTo(literal, constant.dtype());
  Number used = convertNumberTo(stored, target);
  switch (used.kind) {
  case Number::Kind::Boolean:
    return used.boolean ? "true" : "false";
  case Number::Kind::Integer:
    return integerLiteral(used.integer, target);
  case Number::Kind::Floating:
    return floatingLiteral(used.floating, target);
  }
  WF_UNREACHABLE("unknown number kind");
}

} // namespace widefuse
