#include "ir/text_literal.h"

#include "ir/error.h"

#include <fmt/format.h>

#include <charconv>
#include <string>
#include <variant>

namespace widefuse {
namespace {

/// Checks the Python-number syntax: digits [. digits] [e [+-] digits], or . digits [...].
/// Sets `isInteger` when there is neither a '.' nor an exponent.
bool isWellFormedNumber(llvm::StringRef s, bool& isInteger) {
  size_t i = 0;
  auto digits = [&] {
    size_t begin = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      ++i;
    return i - begin;
  };
  size_t mantissaDigits = digits();
  bool dot = i < s.size() && s[i] == '.';
  if (dot) {
    ++i;
    mantissaDigits += digits();
  }
  if (mantissaDigits == 0)
    return false;
  bool exponent = i < s.size() && (s[i] == 'e' || s[i] == 'E');
  if (exponent) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
      ++i;
    if (digits() == 0)
      return false;
  }
  isInteger = !dot && !exponent;
  return i == s.size();
}

} // namespace

ConstantValue numberLiteral(llvm::StringRef token, bool negative) {
  bool isInteger = false;
  if (!isWellFormedNumber(token, isInteger))
    fail("malformed number '{}'", token.str());
  std::string text = fmt::format("{}{}", negative ? "-" : "", token.str());
  const char* end = text.data() + text.size();
  if (isInteger) {
    int64_t value = 0;
    if (std::from_chars(text.data(), end, value).ec != std::errc())
      fail("integer literal '{}' does not fit in 64 bits (write {}.0 for a floating-point "
           "number)",
           text, text);
    return value;
  }
  double value = 0;
  if (std::from_chars(text.data(), end, value).ec != std::errc())
    fail("number '{}' is out of the range of f64", text);
  return value;
}

ConstantValue typedLiteral(const ConstantValue& value, DataType type, llvm::StringRef text) {
  std::string name = shortName(type).str();
  if (isComplex(type))
    fail("'{}:{}': a constant of type {} must be written complex(re, im) of two real constants",
         text.str(), name, name);
  if (type == DataType::Bool) {
    if (!std::holds_alternative<bool>(value))
      fail("'{}:b8': b8 constants are written true:b8 or false:b8", text.str());
    return value;
  }
  if (std::holds_alternative<bool>(value))
    fail("'{}:{}': true and false are b8 literals; write 1:{} or 0:{}", text.str(), name, name,
         name);
  if (isFloatingPoint(type))
    return std::visit([](auto v) { return static_cast<double>(v); }, value);
  if (!std::holds_alternative<int64_t>(value))
    fail("'{}:{}': {} is an integer dtype; write an integer literal", text.str(), name, name);
  auto [low, high] = integerRange(type);
  int64_t integer = std::get<int64_t>(value);
  if (integer < low || integer > high)
    fail("'{}:{}': {} is outside the range of {} ({} to {})", text.str(), name, integer, name, low,
         high);
  return value;
}

} // namespace widefuse
