// widefuse prelude, part two: the element ops nvFuser has beyond the basic set (inverse
// trigonometric and hyperbolic functions, erf and its inverses, lgamma, relu, frac, signbit,
// integer division, remainder, nextafter, gcd, logical_right_shift). codegen/prelude.cuh
// includes it where its own element ops end (WF_REQUIRE and WF_BY_PRECISION are defined
// there), and the embedded prelude text has it inlined (codegen/CMakeLists.txt). Each
// wf_<op> mirrors its namesake in ir/element_ops.h.
#ifndef WIDEFUSE_PRELUDE_SPECIAL
#define WIDEFUSE_PRELUDE_SPECIAL

#ifndef __CUDACC__
// The host's erfinv/erfcinv: the reference evaluator's own text, for bit-for-bit equality.
#include "ir/inverse_erf.h"
#endif

// The unsigned type of T's own width (wf_unsigned widens to 32 bits, too wide for a logical
// shift of i8/i16).
template <typename T> struct wf_same_width_unsigned { typedef T type; };
template <> struct wf_same_width_unsigned<i8> { typedef u8 type; };
template <> struct wf_same_width_unsigned<i16> { typedef u16 type; };
template <> struct wf_same_width_unsigned<i32> { typedef u32 type; };
template <> struct wf_same_width_unsigned<i64> { typedef wf_u64 type; };

#define WF_FLOAT_UNARY(op, f32_expression, f64_expression)                                         \
  template <typename T> WF_DEVICE T wf_##op(T a) {                                                 \
    WF_REQUIRE(wf_is_floating, #op);                                                               \
    WF_BY_PRECISION(f32_expression, f64_expression);                                               \
  }
WF_FLOAT_UNARY(acos, acosf(a), acos(a))
WF_FLOAT_UNARY(acosh, acoshf(a), acosh(a))
WF_FLOAT_UNARY(asin, asinf(a), asin(a))
WF_FLOAT_UNARY(asinh, asinhf(a), asinh(a))
WF_FLOAT_UNARY(atan, atanf(a), atan(a))
WF_FLOAT_UNARY(atanh, atanhf(a), atanh(a))
WF_FLOAT_UNARY(cosh, coshf(a), cosh(a))
WF_FLOAT_UNARY(sinh, sinhf(a), sinh(a))
WF_FLOAT_UNARY(tan, tanf(a), tan(a))
WF_FLOAT_UNARY(log10, log10f(a), log10(a))
WF_FLOAT_UNARY(erf, erff(a), erf(a))
WF_FLOAT_UNARY(erfc, erfcf(a), erfc(a))
#ifdef __CUDACC__
WF_FLOAT_UNARY(lgamma, lgammaf(a), lgamma(a))
WF_FLOAT_UNARY(erfinv, erfinvf(a), erfinv(a))
WF_FLOAT_UNARY(erfcinv, erfcinvf(a), erfcinv(a))
#else
WF_FLOAT_UNARY(erfinv, wf_erfinv_host(a), wf_erfinv_host(a))
WF_FLOAT_UNARY(erfcinv, wf_erfcinv_host(a), wf_erfcinv_host(a))
#endif
#undef WF_FLOAT_UNARY

#ifndef __CUDACC__
/// lgamma writes the global signgam: the reentrant form keeps the host's threads apart.
template <typename T> T wf_lgamma(T a) {
  WF_REQUIRE(wf_is_floating, "lgamma");
  int sign = 0;
  WF_BY_PRECISION(lgammaf_r(a, &sign), lgamma_r(a, &sign));
}
#endif

/// nvFuser's relu, `a <= 0 ? 0 : a`: NaN stays NaN, -0.0 gives +0.0.
template <typename T> WF_DEVICE T wf_relu(T a) {
  WF_REQUIRE(wf_is_number, "relu");
  return a <= T(0) ? T(0) : a;
}

/// a - trunc(a); integers have no fraction.
template <typename T> WF_DEVICE T wf_frac(T a) {
  WF_REQUIRE(wf_is_number, "frac");
  if constexpr (!wf_is_floating<T>::value)
    return T(0);
  else
    WF_BY_PRECISION(a - truncf(a), a - trunc(a));
}

/// The sign bit (true for -0.0 and negative NaNs); integers: a < 0.
template <typename T> WF_DEVICE b8 wf_signbit(T a) {
  if constexpr (wf_is_floating<T>::value) {
    if constexpr (sizeof(T) == 4)
      return (wf_bitcast<u32>(a) >> 31) != 0;
    else
      return (wf_bitcast<wf_u64>(a) >> 63) != 0;
  } else {
    return wf_is_signed<T>::value && a < T(0);
  }
}

template <typename T> WF_DEVICE b8 wf_isneginf(T a) {
  if constexpr (wf_is_floating<T>::value)
    return a < wf_limits<T>::lowest;
  else
    return false;
}

template <typename T> WF_DEVICE b8 wf_isposinf(T a) {
  if constexpr (wf_is_floating<T>::value)
    return a > wf_limits<T>::max;
  else
    return false;
}

/// Every dtype of the IR is real.
template <typename T> WF_DEVICE b8 wf_isreal(T) {
  return true;
}

/// Floating point divides; integers truncate, a / 0 gives 0 and lowest / -1 wraps (no trap).
template <typename T> WF_DEVICE T wf_div(T a, T b) {
  WF_REQUIRE(wf_is_number, "div");
  if constexpr (wf_is_floating<T>::value) {
    return a / b;
  } else {
    if (b == T(0))
      return T(0);
    if (wf_is_signed<T>::value && b == T(-1))
      return wf_neg(a);
    return static_cast<T>(a / b);
  }
}

/// True division (integer operands are computed in floating point).
template <typename T> WF_DEVICE T wf_truediv(T a, T b) {
  WF_REQUIRE(wf_is_floating, "truediv");
  return a / b;
}

/// The sign of the divisor (Python's %): fmod, moved by b when the signs differ.
template <typename T> WF_DEVICE T wf_remainder(T a, T b) {
  WF_REQUIRE(wf_is_number, "remainder");
  T m = wf_fmod(a, b);
  if (wf_is_signed<T>::value && m != T(0) && ((b < T(0)) != (m < T(0))))
    m = static_cast<T>(m + b);
  return m;
}

template <typename T> WF_DEVICE T wf_nextafter(T a, T b) {
  WF_REQUIRE(wf_is_floating, "nextafter");
  WF_BY_PRECISION(nextafterf(a, b), nextafter(a, b));
}

/// Euclid on |a| and |b| in the unsigned wide type (|lowest| fits); gcd(0, 0) = 0.
template <typename T> WF_DEVICE T wf_gcd(T a, T b) {
  WF_REQUIRE(wf_is_integer, "gcd");
  typename wf_unsigned<T>::type x = wf_wide(a), y = wf_wide(b);
  if (wf_is_signed<T>::value && a < T(0))
    x = 0u - x;
  if (wf_is_signed<T>::value && b < T(0))
    y = 0u - y;
  while (y != 0u) {
    const typename wf_unsigned<T>::type rest = x % y;
    x = y;
    y = rest;
  }
  return static_cast<T>(x);
}

/// The bits of a shifted right with zeros; a negative amount or the width or more gives 0.
template <typename T> WF_DEVICE T wf_logical_right_shift(T a, T b) {
  WF_REQUIRE(wf_is_integer, "logical_right_shift");
  if (wf_out_of_shift_range(b))
    return T(0);
  return static_cast<T>(static_cast<typename wf_same_width_unsigned<T>::type>(a) >> b);
}

#endif // WIDEFUSE_PRELUDE_SPECIAL
