#pragma once
/// The value semantics of every op on one element, in its compute type. The reference
/// evaluator applies these; generated kernels must compute the same values (the codegen
/// prelude mirrors each function). Integer arithmetic wraps (two's complement), never traps.
///
/// Every function compiles for every compute type so one dispatch table serves all types;
/// combinations the type rules exclude (e.g. sqrt on int) are unreachable.

#include "ir/error.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ir/complex_math.h" // after <cmath>, which it uses
#include "ir/inverse_erf.h"  // after <cmath>, which it uses

namespace widefuse::element {

template <typename T> inline constexpr bool kFloating = std::is_floating_point_v<T>;
template <typename T> inline constexpr bool kBool = std::is_same_v<T, bool>;
template <typename T> inline constexpr bool kInteger = std::is_integral_v<T> && !kBool<T>;
template <typename T> inline constexpr bool kComplex = false;
template <typename T> inline constexpr bool kComplex<wf_complex_number<T>> = true;

/// Reached only when the type rules were bypassed: a bug.
template <typename R = bool> [[noreturn]] R unreachable(const char* op) {
  throw InternalError(fmt::format("element op {} reached with an unsupported type", op));
}

/// Wrapping integer arithmetic: computed modulo 2^64 in uint64_t (no promotion to int, whose
/// overflow would be undefined), then truncated to T's width.
template <typename T> uint64_t wide(T value) {
  return static_cast<uint64_t>(value);
}
template <typename T> T narrow(uint64_t bits) {
  return static_cast<T>(bits);
}

// ---- unary ----------------------------------------------------------------------------------

template <typename T> T Neg(T a) {
  if constexpr (kFloating<T>)
    return -a;
  else if constexpr (kInteger<T>)
    return narrow<T>(uint64_t(0) - wide(a));
  else
    return unreachable<T>("neg");
}

template <typename T> T Abs(T a) {
  if constexpr (kFloating<T>)
    return std::fabs(a);
  else if constexpr (std::is_signed_v<T>)
    return a < 0 ? Neg(a) : a;
  else if constexpr (kInteger<T>)
    return a;
  else
    return unreachable<T>("abs");
}

#define WF_FLOAT_UNARY(Name, expression)                                                           \
  template <typename T> T Name(T a) {                                                              \
    if constexpr (kFloating<T>)                                                                    \
      return expression;                                                                           \
    else                                                                                           \
      return unreachable<T>(#Name);                                                                \
  }
WF_FLOAT_UNARY(Sqrt, std::sqrt(a))
WF_FLOAT_UNARY(Rsqrt, T(1) / std::sqrt(a))
WF_FLOAT_UNARY(Reciprocal, T(1) / a)
WF_FLOAT_UNARY(Exp, std::exp(a))
WF_FLOAT_UNARY(Exp2, std::exp2(a))
WF_FLOAT_UNARY(Log, std::log(a))
WF_FLOAT_UNARY(Log2, std::log2(a))
WF_FLOAT_UNARY(Log1p, std::log1p(a))
WF_FLOAT_UNARY(Expm1, std::expm1(a))
WF_FLOAT_UNARY(Sin, std::sin(a))
WF_FLOAT_UNARY(Cos, std::cos(a))
WF_FLOAT_UNARY(Tanh, std::tanh(a))
WF_FLOAT_UNARY(Sigmoid, T(1) / (T(1) + std::exp(-a)))
WF_FLOAT_UNARY(Acos, std::acos(a))
WF_FLOAT_UNARY(Acosh, std::acosh(a))
WF_FLOAT_UNARY(Asin, std::asin(a))
WF_FLOAT_UNARY(Asinh, std::asinh(a))
WF_FLOAT_UNARY(Atan, std::atan(a))
WF_FLOAT_UNARY(Atanh, std::atanh(a))
WF_FLOAT_UNARY(Cosh, std::cosh(a))
WF_FLOAT_UNARY(Sinh, std::sinh(a))
WF_FLOAT_UNARY(Tan, std::tan(a))
WF_FLOAT_UNARY(Log10, std::log10(a))
WF_FLOAT_UNARY(Erf, std::erf(a))
WF_FLOAT_UNARY(Erfc, std::erfc(a))
WF_FLOAT_UNARY(Erfinv, wf_erfinv_host(a))   // no std:: version: ir/inverse_erf.h
WF_FLOAT_UNARY(Erfcinv, wf_erfcinv_host(a)) // no std:: version: ir/inverse_erf.h
#undef WF_FLOAT_UNARY

/// log|gamma(a)|, through glibc's reentrant lgamma(f)_r: std::lgamma also writes the global
/// `signgam`, a data race between the host backend's threads (same values otherwise).
template <typename T> T Lgamma(T a) {
  int sign = 0;
  if constexpr (std::is_same_v<T, float>)
    return ::lgammaf_r(a, &sign);
  else if constexpr (kFloating<T>)
    return ::lgamma_r(a, &sign);
  else
    return unreachable<T>("Lgamma");
}

/// Rounding ops leave integers unchanged.
#define WF_ROUNDING_UNARY(Name, function)                                                          \
  template <typename T> T Name(T a) {                                                              \
    if constexpr (kFloating<T>)                                                                    \
      return function(a);                                                                          \
    else if constexpr (kInteger<T>)                                                                \
      return a;                                                                                    \
    else                                                                                           \
      return unreachable<T>(#Name);                                                                \
  }
WF_ROUNDING_UNARY(Floor, std::floor)
WF_ROUNDING_UNARY(Ceil, std::ceil)
WF_ROUNDING_UNARY(Round, std::nearbyint) // ties to even, as torch.round
WF_ROUNDING_UNARY(Trunc, std::trunc)
#undef WF_ROUNDING_UNARY

/// -1, 0 or 1; NaN gives 0 (as PyTorch's sign).
template <typename T> T Sign(T a) {
  if constexpr (kBool<T>)
    return unreachable<T>("sign");
  else if constexpr (std::is_unsigned_v<T>)
    return T(a > 0);
  else
    return static_cast<T>(int(T(0) < a) - int(a < T(0)));
}

/// max(a, 0) as nvFuser writes it, `a <= 0 ? 0 : a`: NaN stays NaN and -0.0 gives +0.0.
template <typename T> T Relu(T a) {
  if constexpr (kBool<T>)
    return unreachable<T>("relu");
  else
    return a <= T(0) ? T(0) : a;
}

/// a - trunc(a) (sign of a; frac(+-inf) = NaN); integers have no fraction: 0.
template <typename T> T Frac(T a) {
  if constexpr (kFloating<T>)
    return a - std::trunc(a);
  else if constexpr (kInteger<T>)
    return T(0);
  else
    return unreachable<T>("frac");
}

/// The sign bit: true for -0.0 and negative NaNs; integers: a < 0.
template <typename T> bool Signbit(T a) {
  if constexpr (kFloating<T>)
    return std::signbit(a);
  else if constexpr (std::is_signed_v<T>)
    return a < T(0);
  else
    return false;
}

// IEEE classification; integer and bool operands are never NaN or infinite.
#define WF_CLASSIFY(Name, function, otherwise)                                                     \
  template <typename T> bool Name(T a) {                                                           \
    if constexpr (kFloating<T>)                                                                    \
      return function(a);                                                                          \
    else                                                                                           \
      return otherwise;                                                                            \
  }
WF_CLASSIFY(IsNan, std::isnan, false)
WF_CLASSIFY(IsInf, std::isinf, false)
WF_CLASSIFY(IsFinite, std::isfinite, true)
WF_CLASSIFY(IsNegInf, a < 0 && std::isinf, false)
WF_CLASSIFY(IsPosInf, a > 0 && std::isinf, false)
#undef WF_CLASSIFY

/// Real dtypes are real (complex operands take the evaluator's complex path).
template <typename T> bool IsReal(T) {
  return true;
}

template <typename T> bool LogicalNot(T a) {
  return !a;
}

template <typename T> T BitwiseNot(T a) {
  if constexpr (kBool<T>)
    return !a;
  else if constexpr (kInteger<T>)
    return narrow<T>(~wide(a));
  else
    return unreachable<T>("bitwise_not");
}

template <typename T> T Set(T a) {
  return a;
}

/// The real part of a real value is the value (complex operands take the complex path of
/// the evaluator, ir/evaluator.cpp).
template <typename T> T Real(T a) {
  return a;
}
template <typename T> T Imag(T) {
  return unreachable<T>("imag"); // the typing rule takes complex operands only
}

// ---- binary ---------------------------------------------------------------------------------

#define WF_ARITHMETIC_BINARY(Name, op)                                                             \
  template <typename T> T Name(T a, T b) {                                                         \
    if constexpr (kFloating<T>)                                                                    \
      return a op b;                                                                               \
    else if constexpr (kInteger<T>)                                                                \
      return narrow<T>(wide(a) op wide(b));                                                        \
    else                                                                                           \
      return unreachable<T>(#Name);                                                                \
  }
WF_ARITHMETIC_BINARY(Add, +)
WF_ARITHMETIC_BINARY(Sub, -)
WF_ARITHMETIC_BINARY(Mul, *)
#undef WF_ARITHMETIC_BINARY

/// nvFuser's div: floating point divides; integers truncate toward zero (C's `/`) and never
/// trap: a / 0 gives 0 (as fmod(a, 0) does) and lowest / -1 wraps to lowest.
template <typename T> T Div(T a, T b) {
  if constexpr (kFloating<T>)
    return a / b;
  else if constexpr (kInteger<T>) {
    if (b == 0)
      return 0;
    if constexpr (std::is_signed_v<T>)
      if (b == -1)
        return Neg(a);
    return static_cast<T>(a / b);
  } else
    return unreachable<T>("div");
}

/// True division: integer operands are computed in a floating type (the typing rule).
template <typename T> T TrueDiv(T a, T b) {
  if constexpr (kFloating<T>)
    return a / b;
  else
    return unreachable<T>("truediv");
}

/// Integer power by squaring, wrapping. Negative exponents: 1 and -1 keep their powers,
/// every other base gives 0 (the integer part of the true result).
template <typename T> T integerPower(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == 1)
        return 1;
      if (base == -1)
        return (exponent & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  uint64_t result = 1, factor = wide(base);
  for (uint64_t e = wide(exponent); e; e >>= 1) {
    if (e & 1)
      result *= factor;
    factor *= factor;
  }
  return narrow<T>(result);
}

template <typename T> T Pow(T a, T b) {
  if constexpr (kFloating<T>)
    return std::pow(a, b);
  else if constexpr (kInteger<T>)
    return integerPower(a, b);
  else
    return unreachable<T>("pow");
}

/// Remainder with the sign of the dividend. Integer fmod by 0 gives 0 (documented: no trap).
template <typename T> T Fmod(T a, T b) {
  if constexpr (kFloating<T>)
    return std::fmod(a, b);
  else if constexpr (kInteger<T>) {
    if (b == 0)
      return 0;
    if constexpr (std::is_signed_v<T>)
      if (b == -1)
        return 0; // avoids the INT_MIN % -1 overflow; the true remainder is 0
    return static_cast<T>(a % b);
  } else
    return unreachable<T>("fmod");
}

/// Remainder with the sign of the divisor (Python's %, torch.remainder): fmod, moved by b
/// when its sign differs from b's. Integers: remainder(a, 0) = 0, as fmod.
template <typename T> T Remainder(T a, T b) {
  if constexpr (kFloating<T> || kInteger<T>) {
    T m = Fmod(a, b);
    if constexpr (std::is_signed_v<T>)
      if (m != T(0) && ((b < T(0)) != (m < T(0))))
        m = static_cast<T>(m + b); // |m| < |b| with opposite signs: no overflow
    return m;
  } else
    return unreachable<T>("remainder");
}

/// NaN-propagating maximum (torch.maximum); ties give b.
template <typename T> T Maximum(T a, T b) {
  if constexpr (kFloating<T>) {
    if (std::isnan(a) || std::isnan(b))
      return a + b;
  }
  return a > b ? a : b;
}

/// NaN-propagating minimum (torch.minimum); ties give b.
template <typename T> T Minimum(T a, T b) {
  if constexpr (kFloating<T>) {
    if (std::isnan(a) || std::isnan(b))
      return a + b;
  }
  return a < b ? a : b;
}

// Floating-point binary functions of C (integer operands never reach them: the typing rule
// computes them in a floating type).
#define WF_FLOAT_BINARY(Name, expression)                                                          \
  template <typename T> T Name(T a, T b) {                                                         \
    if constexpr (kFloating<T>)                                                                    \
      return expression;                                                                           \
    else                                                                                           \
      return unreachable<T>(#Name);                                                                \
  }
WF_FLOAT_BINARY(Atan2, std::atan2(a, b))
/// sqrt(a^2 + b^2) without intermediate overflow or underflow.
WF_FLOAT_BINARY(Hypot, std::hypot(a, b))
/// The magnitude of a with the sign of b (signed zeros and NaNs included).
WF_FLOAT_BINARY(Copysign, std::copysign(a, b))
/// The next representable value after a in the direction of b.
WF_FLOAT_BINARY(Nextafter, std::nextafter(a, b))
#undef WF_FLOAT_BINARY

/// Greatest common divisor of |a| and |b| by Euclid, in 64-bit unsigned arithmetic so that
/// |lowest| does not overflow; gcd(0, 0) = 0, and a result of 2^(n-1) (gcd(lowest, 0))
/// wraps to lowest, as the other integer ops do.
template <typename T> T Gcd(T a, T b) {
  if constexpr (kInteger<T>) {
    uint64_t x = wide(a), y = wide(b);
    if constexpr (std::is_signed_v<T>) {
      x = a < 0 ? uint64_t(0) - x : x;
      y = b < 0 ? uint64_t(0) - y : y;
    }
    while (y != 0) {
      uint64_t rest = x % y;
      x = y;
      y = rest;
    }
    return narrow<T>(x);
  } else
    return unreachable<T>("gcd");
}

template <typename T> bool Eq(T a, T b) {
  return a == b;
}
template <typename T> bool Ne(T a, T b) {
  return a != b;
}
template <typename T> bool Lt(T a, T b) {
  return a < b;
}
template <typename T> bool Le(T a, T b) {
  return a <= b;
}
template <typename T> bool Gt(T a, T b) {
  return a > b;
}
template <typename T> bool Ge(T a, T b) {
  return a >= b;
}
template <typename T> bool LogicalAnd(T a, T b) {
  return a && b;
}
template <typename T> bool LogicalOr(T a, T b) {
  return a || b;
}

#define WF_BITWISE_BINARY(Name, op)                                                                \
  template <typename T> T Name(T a, T b) {                                                         \
    if constexpr (kBool<T>)                                                                        \
      return bool(a op b);                                                                         \
    else if constexpr (kInteger<T>)                                                                \
      return narrow<T>(wide(a) op wide(b));                                                        \
    else                                                                                           \
      return unreachable<T>(#Name);                                                                \
  }
WF_BITWISE_BINARY(BitwiseAnd, &)
WF_BITWISE_BINARY(BitwiseOr, |)
WF_BITWISE_BINARY(BitwiseXor, ^)
#undef WF_BITWISE_BINARY

template <typename T> bool outOfShiftRange(T amount) {
  if constexpr (std::is_signed_v<T>)
    if (amount < 0)
      return true;
  return wide(amount) >= 8 * sizeof(T);
}

/// Shifting by a negative amount or by the width or more gives 0 (no UB).
template <typename T> T ShiftLeft(T a, T b) {
  if constexpr (kInteger<T>) {
    if (outOfShiftRange(b))
      return 0;
    return narrow<T>(wide(a) << b);
  } else
    return unreachable<T>("shift_left");
}

/// Arithmetic shift for signed types; out-of-range amounts fill with the sign bit.
template <typename T> T ShiftRight(T a, T b) {
  if constexpr (kInteger<T>) {
    if (outOfShiftRange(b)) {
      if constexpr (std::is_signed_v<T>)
        return a < 0 ? T(-1) : T(0);
      else
        return T(0);
    }
    return static_cast<T>(a >> b);
  } else
    return unreachable<T>("shift_right");
}

/// Shifts the bits of a (as the unsigned type of its width) right, filling with zeros; a
/// negative amount or the width or more gives 0.
template <typename T> T LogicalRightShift(T a, T b) {
  if constexpr (kInteger<T>) {
    if (outOfShiftRange(b))
      return 0;
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) >> b);
  } else
    return unreachable<T>("logical_right_shift");
}

/// complex(re, im) of f32 or f64 parts.
template <typename T> auto Complex(T re, T im) {
  if constexpr (kFloating<T>)
    return wf_complex_make(re, im);
  else
    return unreachable<wf_complex_number<double>>("complex");
}

// ---- ternary --------------------------------------------------------------------------------

template <typename T> T Where(T condition, T a, T b) {
  return condition ? a : b;
}

/// PyTorch's lerp: exact at both ends.
template <typename T> T Lerp(T start, T end, T weight) {
  if constexpr (kFloating<T>)
    return std::fabs(weight) < T(0.5) ? start + weight * (end - start)
                                      : end - (end - start) * (T(1) - weight);
  else
    return unreachable<T>("lerp");
}

/// Fused multiply-add: one rounding for floating point; wrapping for integers.
template <typename T> T Fma(T a, T b, T c) {
  if constexpr (kFloating<T>)
    return std::fma(a, b, c);
  else if constexpr (kInteger<T>)
    return Add(Mul(a, b), c);
  else
    return unreachable<T>("fma");
}

template <typename T> T Clamp(T x, T low, T high) {
  return Minimum(Maximum(x, low), high);
}

// Structural ops: the evaluator handles them without per-element semantics.
template <typename T> T Cast(T) {
  return unreachable<T>("cast");
}
template <typename T> T Bitcast(T) {
  return unreachable<T>("bitcast");
}
template <typename T> T BroadcastInDim(T) {
  return unreachable<T>("broadcast_in_dim");
}
template <typename T> T Size(T) {
  return unreachable<T>("size");
}
template <typename T> T ExpandBlocks(T) {
  return unreachable<T>("expand_blocks");
}
template <typename T> T CodeValue(T) {
  return unreachable<T>("code_value");
}
template <typename T> T NearestCode(T) {
  return unreachable<T>("nearest_code");
}
template <typename T> T ElementIndex(T) {
  return unreachable<T>("element_index");
}

// ---- conversion -----------------------------------------------------------------------------

/// Converts between native types without undefined behaviour: float to integer truncates,
/// saturates at the type's range and maps NaN to 0; anything to bool tests `!= 0`. A complex
/// value converts to a real type through its real part (torch's cast) and to bool as z != 0;
/// a real value becomes a complex one with imaginary part 0.
template <typename To, typename From> To convertNumber(From value) {
  if constexpr (kComplex<To> && kComplex<From>) {
    using Part = decltype(To::re);
    return wf_complex_make(static_cast<Part>(value.re), static_cast<Part>(value.im));
  } else if constexpr (kComplex<To>) { // a real value: imaginary part 0
    using Part = decltype(To::re);
    return wf_complex_make(convertNumber<Part>(value), Part(0));
  } else if constexpr (kComplex<From>) { // to bool: z != 0; to a real type: the real part
    if constexpr (std::is_same_v<To, bool>)
      return wf_complex_truth(value);
    else
      return convertNumber<To>(value.re);
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(value))
      return 0;
    using Limits = std::numeric_limits<To>;
    if (value <= static_cast<From>(Limits::min()))
      return Limits::min();
    // max() may round up when converted (2^63 - 1 -> 2^63), so compare with >=.
    if (value >= static_cast<From>(Limits::max()))
      return Limits::max();
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

} // namespace widefuse::element
