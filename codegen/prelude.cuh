// widefuse prelude: the types, conversions, element ops and vector memory accesses that every
// generated kernel starts with.
//
// It is our own text, with no CUDA header: NVRTC compiles it quickly, and the host compiler
// compiles the very same text for the host backend, which runs kernels on CPU threads. Each
// wf_<op> mirrors its namesake in ir/element_ops.h and the f16/bf16 code mirrors
// ir/half_float.cpp, so on the host every value equals the reference evaluator's bit for bit.
// On the device the math functions (expf, powf, ...) are CUDA's, which may differ in the last
// place, and NVRTC contracts the generated a*b+c into fma unless fmad is off (--no-fmad); the
// prelude's own ops keep one rounding each.
#ifndef WIDEFUSE_PRELUDE
#define WIDEFUSE_PRELUDE

#ifdef __CUDACC__
#define WF_DEVICE __device__ __forceinline__
#else
#define WF_DEVICE inline
#include <cmath>   // sqrtf, expf, ...: what the reference's std:: calls resolve to
#include <cstring> // memcpy (NVRTC declares it without a header)
#endif

// ---- types, named as the IR's dtypes --------------------------------------------------------

typedef bool b8;
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef float f32;
typedef double f64;
typedef unsigned long long wf_u64;
/// IEEE binary16 bits; storage only, computed in f32.
struct f16 {
  u16 bits;
};
/// bfloat16 bits (the top half of an f32); storage only, computed in f32.
struct bf16 {
  u16 bits;
};
/// fp8 bits (e4m3fn: no infinity; e5m2: the top byte of an f16; e8m0fnu: a power of two);
/// storage only, computed in f32.
struct f8e4m3fn {
  u8 bits;
};
struct f8e5m2 {
  u8 bits;
};
struct f8e8m0fnu {
  u8 bits;
};
// Complex numbers: wf_complex_number<T> and their arithmetic, one text with the reference's.
#include "ir/complex_math.h"
/// (real, imaginary) pairs of f32 and f64, as torch.complex64 and torch.complex128.
typedef wf_complex_number<f32> c64;
typedef wf_complex_number<f64> c128;

// ---- traits (NVRTC has no <type_traits>) ----------------------------------------------------

template <bool B> struct wf_bool_constant { static constexpr bool value = B; };
template <typename A, typename B> struct wf_is_same : wf_bool_constant<false> {};
template <typename A> struct wf_is_same<A, A> : wf_bool_constant<true> {};
/// f32 and f64 (f16/bf16 are storage types).
template <typename T>
struct wf_is_floating : wf_bool_constant<wf_is_same<T, f32>::value || wf_is_same<T, f64>::value> {};
/// Signed integers and floating point, as std::is_signed.
template <typename T>
struct wf_is_signed : wf_bool_constant<wf_is_same<T, i8>::value || wf_is_same<T, i16>::value ||
                                       wf_is_same<T, i32>::value || wf_is_same<T, i64>::value ||
                                       wf_is_floating<T>::value> {};
/// The seven integer types (not b8).
template <typename T>
struct wf_is_integer : wf_bool_constant<(wf_is_signed<T>::value && !wf_is_floating<T>::value) ||
                                        wf_is_same<T, u8>::value || wf_is_same<T, u16>::value ||
                                        wf_is_same<T, u32>::value> {};
/// The operand types of arithmetic: integers and floating point.
template <typename T>
struct wf_is_number : wf_bool_constant<wf_is_integer<T>::value || wf_is_floating<T>::value> {};
/// c64 and c128.
template <typename T> struct wf_is_complex : wf_bool_constant<false> {};
template <typename T> struct wf_is_complex<wf_complex_number<T>> : wf_bool_constant<true> {};

/// The smallest and largest finite values of a compute type.
template <typename T> struct wf_limits;
#define WF_LIMITS(T, low, high)                                                                    \
  template <> struct wf_limits<T> { static constexpr T lowest = low, max = high; };
WF_LIMITS(b8, false, true)
WF_LIMITS(i8, -128, 127)
WF_LIMITS(i16, -32768, 32767)
WF_LIMITS(i32, -2147483647 - 1, 2147483647)
WF_LIMITS(i64, -9223372036854775807LL - 1, 9223372036854775807LL)
WF_LIMITS(u8, 0, 255)
WF_LIMITS(u16, 0, 65535)
WF_LIMITS(u32, 0, 4294967295u)
WF_LIMITS(f32, -0x1.fffffep+127f, 0x1.fffffep+127f)
WF_LIMITS(f64, -0x1.fffffffffffffp+1023, 0x1.fffffffffffffp+1023)
#undef WF_LIMITS

/// Integer arithmetic wraps in an unsigned type. The reference wraps modulo 2^64; up to 32
/// bits, modulo 2^32 leaves the same low bits and is cheaper on the GPU.
template <typename T> struct wf_unsigned { typedef u32 type; };
template <> struct wf_unsigned<i64> { typedef wf_u64 type; };
template <typename T> WF_DEVICE typename wf_unsigned<T>::type wf_wide(T value) {
  return static_cast<typename wf_unsigned<T>::type>(value);
}

/// Reinterprets the bytes of a value as another type of the same size.
template <typename To, typename From> WF_DEVICE To wf_bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast needs types of the same size");
  To result;
  memcpy(&result, &x, sizeof(To));
  return result;
}

#include "codegen/prelude_narrow.cuh"

// ---- element ops over the compute type T: b8, an integer, f32 or f64 ------------------------
// A type the IR's rules exclude fails to compile (a codegen bug); the reference throws.

#define WF_REQUIRE(trait, op) static_assert(trait<T>::value, op ": unsupported compute type")
// f32 and f64 call the C function of their own precision, as std:: does on the host.
#define WF_BY_PRECISION(f32_expression, f64_expression)                                            \
  if constexpr (sizeof(T) == 4)                                                                    \
    return f32_expression;                                                                         \
  else                                                                                             \
    return f64_expression

/// a * b rounded on its own. NVVM would fuse a product and a sum into one fma; __fmul_rn is
/// never fused (the host compiles in strict ISO mode, which does not contract either).
template <typename T> WF_DEVICE T wf_mul_rn(T a, T b) {
#ifdef __CUDA_ARCH__
  WF_BY_PRECISION(__fmul_rn(a, b), __dmul_rn(a, b));
#else
  return a * b;
#endif
}

template <typename T> WF_DEVICE T wf_neg(T a) {
  WF_REQUIRE(wf_is_number, "neg");
  if constexpr (wf_is_floating<T>::value)
    return -a;
  else
    return static_cast<T>(0u - wf_wide(a));
}

template <typename T> WF_DEVICE T wf_abs(T a) {
  WF_REQUIRE(wf_is_number, "abs");
  if constexpr (wf_is_floating<T>::value) {
    WF_BY_PRECISION(fabsf(a), fabs(a));
  } else {
    return wf_is_signed<T>::value && a < 0 ? wf_neg(a) : a;
  }
}

#define WF_FLOAT_UNARY(op, f32_expression, f64_expression)                                         \
  template <typename T> WF_DEVICE T wf_##op(T a) {                                                 \
    WF_REQUIRE(wf_is_floating, #op);                                                               \
    WF_BY_PRECISION(f32_expression, f64_expression);                                               \
  }
WF_FLOAT_UNARY(sqrt, sqrtf(a), sqrt(a))
WF_FLOAT_UNARY(rsqrt, 1.0f / sqrtf(a), 1.0 / sqrt(a)) // two roundings, not an approximation
WF_FLOAT_UNARY(reciprocal, 1.0f / a, 1.0 / a)
WF_FLOAT_UNARY(exp, expf(a), exp(a))
WF_FLOAT_UNARY(exp2, exp2f(a), exp2(a))
WF_FLOAT_UNARY(log, logf(a), log(a))
WF_FLOAT_UNARY(log2, log2f(a), log2(a))
WF_FLOAT_UNARY(log1p, log1pf(a), log1p(a))
WF_FLOAT_UNARY(expm1, expm1f(a), expm1(a))
WF_FLOAT_UNARY(sin, sinf(a), sin(a))
WF_FLOAT_UNARY(cos, cosf(a), cos(a))
WF_FLOAT_UNARY(tanh, tanhf(a), tanh(a))
WF_FLOAT_UNARY(sigmoid, 1.0f / (1.0f + expf(-a)), 1.0 / (1.0 + exp(-a)))
#undef WF_FLOAT_UNARY

// Rounding leaves integers unchanged. round is nearbyint: ties to even, and unlike rint it
// quiets a signalling NaN on the host, as the reference does.
#define WF_ROUNDING_UNARY(op, f32_function, f64_function)                                          \
  template <typename T> WF_DEVICE T wf_##op(T a) {                                                 \
    WF_REQUIRE(wf_is_number, #op);                                                                 \
    if constexpr (!wf_is_floating<T>::value)                                                       \
      return a;                                                                                    \
    else                                                                                           \
      WF_BY_PRECISION(f32_function(a), f64_function(a));                                           \
  }
WF_ROUNDING_UNARY(floor, floorf, floor)
WF_ROUNDING_UNARY(ceil, ceilf, ceil)
WF_ROUNDING_UNARY(round, nearbyintf, nearbyint)
WF_ROUNDING_UNARY(trunc, truncf, trunc)
#undef WF_ROUNDING_UNARY

/// -1, 0 or 1; NaN and -0 give +0.
template <typename T> WF_DEVICE T wf_sign(T a) {
  WF_REQUIRE(wf_is_number, "sign");
  return static_cast<T>(int(T(0) < a) - int(wf_is_signed<T>::value && a < T(0)));
}

// No isnan/isinf macros (NVRTC has no <cmath>): NaN is the value unequal to itself, and the
// infinities lie beyond the finite limits.
#define WF_PREDICATE(op, float_expression, otherwise)                                              \
  template <typename T> WF_DEVICE b8 wf_##op(T a) {                                                \
    if constexpr (wf_is_floating<T>::value)                                                        \
      return float_expression;                                                                     \
    else                                                                                           \
      return otherwise;                                                                            \
  }
WF_PREDICATE(isnan, a != a, false)
WF_PREDICATE(isinf, (a < wf_limits<T>::lowest) || (a > wf_limits<T>::max), false)
WF_PREDICATE(isfinite, a >= wf_limits<T>::lowest && a <= wf_limits<T>::max, true)
#undef WF_PREDICATE

template <typename T> WF_DEVICE b8 wf_logical_not(T a) {
  return !a;
}

template <typename T> WF_DEVICE T wf_bitwise_not(T a) {
  static_assert(wf_is_same<T, b8>::value || wf_is_integer<T>::value, "bitwise_not: type");
  if constexpr (wf_is_same<T, b8>::value)
    return !a;
  else
    return static_cast<T>(~wf_wide(a));
}

#define WF_ARITHMETIC(op, float_expression, symbol)                                                \
  template <typename T> WF_DEVICE T wf_##op(T a, T b) {                                            \
    WF_REQUIRE(wf_is_number, #op);                                                                 \
    if constexpr (wf_is_floating<T>::value)                                                        \
      return float_expression;                                                                     \
    else                                                                                           \
      return static_cast<T>(wf_wide(a) symbol wf_wide(b));                                         \
  }
WF_ARITHMETIC(add, a + b, +)
WF_ARITHMETIC(sub, a - b, -)
WF_ARITHMETIC(mul, wf_mul_rn(a, b), *)
#undef WF_ARITHMETIC

/// Integers: power by squaring, wrapping; a negative exponent keeps the powers of 1 and -1 and
/// gives 0 for every other base (the integer part of the true result).
template <typename T> WF_DEVICE T wf_pow(T a, T b) {
  WF_REQUIRE(wf_is_number, "pow");
  if constexpr (wf_is_floating<T>::value) {
    WF_BY_PRECISION(powf(a, b), pow(a, b));
  } else {
    if constexpr (wf_is_signed<T>::value) {
      if (b < 0)
        return a == 1 ? T(1) : a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0);
    }
    typename wf_unsigned<T>::type result = 1, factor = wf_wide(a), e = wf_wide(b);
    for (; e != 0; e >>= 1, factor *= factor)
      result *= (e & 1u) ? factor : 1u;
    return static_cast<T>(result);
  }
}

/// Remainder with the sign of the dividend. Integers: by 0 gives 0 (no trap), and so does
/// by -1 (lowest % -1 overflows; the true remainder is 0).
template <typename T> WF_DEVICE T wf_fmod(T a, T b) {
  WF_REQUIRE(wf_is_number, "fmod");
  if constexpr (wf_is_floating<T>::value) {
    WF_BY_PRECISION(fmodf(a, b), fmod(a, b));
  } else {
    if (b == 0 || (wf_is_signed<T>::value && b == T(-1)))
      return T(0);
    return static_cast<T>(a % b);
  }
}

// NaN-propagating (torch.maximum/minimum); ties give b.
#define WF_EXTREMUM(op, symbol)                                                                    \
  template <typename T> WF_DEVICE T wf_##op(T a, T b) {                                            \
    if constexpr (wf_is_floating<T>::value) {                                                      \
      if (a != a || b != b)                                                                        \
        return a + b;                                                                              \
    }                                                                                              \
    return a symbol b ? a : b;                                                                     \
  }
WF_EXTREMUM(maximum, >)
WF_EXTREMUM(minimum, <)
#undef WF_EXTREMUM

template <typename T> WF_DEVICE T wf_atan2(T a, T b) {
  WF_REQUIRE(wf_is_floating, "atan2");
  WF_BY_PRECISION(atan2f(a, b), atan2(a, b));
}

template <typename T> WF_DEVICE T wf_hypot(T a, T b) {
  WF_REQUIRE(wf_is_floating, "hypot");
  WF_BY_PRECISION(hypotf(a, b), hypot(a, b));
}

template <typename T> WF_DEVICE T wf_copysign(T a, T b) {
  WF_REQUIRE(wf_is_floating, "copysign");
  WF_BY_PRECISION(copysignf(a, b), copysign(a, b));
}

#define WF_BOOL_BINARY(op, symbol)                                                                 \
  template <typename T> WF_DEVICE b8 wf_##op(T a, T b) {                                           \
    return a symbol b;                                                                             \
  }
WF_BOOL_BINARY(eq, ==)
WF_BOOL_BINARY(ne, !=)
WF_BOOL_BINARY(lt, <)
WF_BOOL_BINARY(le, <=)
WF_BOOL_BINARY(gt, >)
WF_BOOL_BINARY(ge, >=)
WF_BOOL_BINARY(logical_and, &&)
WF_BOOL_BINARY(logical_or, ||)
#undef WF_BOOL_BINARY

// The result of b8 operands, or of sign-extended ones, fits T again.
#define WF_BITWISE(op, symbol)                                                                     \
  template <typename T> WF_DEVICE T wf_##op(T a, T b) {                                            \
    static_assert(wf_is_same<T, b8>::value || wf_is_integer<T>::value, #op ": type");              \
    return static_cast<T>(a symbol b);                                                             \
  }
WF_BITWISE(bitwise_and, &)
WF_BITWISE(bitwise_or, |)
WF_BITWISE(bitwise_xor, ^)
#undef WF_BITWISE

/// A negative amount, or the width or more, shifts everything out (C++ leaves it undefined).
template <typename T> WF_DEVICE b8 wf_out_of_shift_range(T amount) {
  return (wf_is_signed<T>::value && amount < 0) || wf_wide(amount) >= 8 * sizeof(T);
}

template <typename T> WF_DEVICE T wf_shift_left(T a, T b) {
  WF_REQUIRE(wf_is_integer, "shift_left");
  return wf_out_of_shift_range(b) ? T(0) : static_cast<T>(wf_wide(a) << b);
}

/// Arithmetic for signed types: shifting everything out leaves the sign.
template <typename T> WF_DEVICE T wf_shift_right(T a, T b) {
  WF_REQUIRE(wf_is_integer, "shift_right");
  if (wf_out_of_shift_range(b))
    return wf_is_signed<T>::value && a < 0 ? T(-1) : T(0);
  return static_cast<T>(a >> b);
}

template <typename T> WF_DEVICE T wf_where(b8 condition, T a, T b) {
  return condition ? a : b;
}

// code_value and nearest_code over codebook tables (inlined into the embedded prelude text).
#include "codegen/prelude_codebook.cuh"

/// `condition ? a : b` by masks on the bits (`Bits` of the size of T).
template <typename Bits, typename T> WF_DEVICE T wf_select_bits(bool condition, T a, T b) {
  const Bits mask = Bits(0) - Bits(condition);
  return wf_bitcast<T>(Bits((wf_bitcast<Bits>(a) & mask) | (wf_bitcast<Bits>(b) & ~mask)));
}

/// PyTorch's lerp: exact at both ends.
template <typename T> WF_DEVICE T wf_lerp(T start, T end, T weight) {
  WF_REQUIRE(wf_is_floating, "lerp");
  // Both forms, then a select (`&`, not `&&`): a branch on the weight would keep the host
  // compiler from vectorizing a loop around it.
  const T low = start + wf_mul_rn(weight, end - start);
  const T high = end - wf_mul_rn(end - start, T(1) - weight);
  const bool near_start = (weight > T(-0.5)) & (weight < T(0.5)); // |weight| < 0.5; not NaN
#ifdef __CUDACC__
  return near_start ? low : high;
#else
  // As bits: the weight is often the same for every element, and the host compiler does not
  // vectorize a select on a loop-invariant condition.
  if constexpr (sizeof(T) == 4)
    return wf_select_bits<u32>(near_start, low, high);
  else
    return wf_select_bits<unsigned long long>(near_start, low, high);
#endif
}

/// One rounding for floating point; wrapping for integers.
template <typename T> WF_DEVICE T wf_fma(T a, T b, T c) {
  WF_REQUIRE(wf_is_number, "fma");
  if constexpr (wf_is_floating<T>::value) {
    WF_BY_PRECISION(fmaf(a, b, c), fma(a, b, c));
  } else {
    return wf_add(wf_mul(a, b), c);
  }
}

template <typename T> WF_DEVICE T wf_clamp(T x, T low, T high) {
  return wf_minimum(wf_maximum(x, low), high);
}

// div, truediv and nvFuser's other element ops (inlined into the embedded prelude text).
#include "codegen/prelude_special.cuh"
// The element ops on c64 and c128 (inlined too).
#include "codegen/prelude_complex.cuh"

#undef WF_BY_PRECISION
#undef WF_REQUIRE

// ---- vector memory --------------------------------------------------------------------------

/// 16, 8 and 4 bytes: one vector access each (ld.global.v4.u32, ...).
struct alignas(16) wf_bytes16 {
  u32 x, y, z, w;
};
struct alignas(8) wf_bytes8 {
  u32 x, y;
};
struct alignas(4) wf_bytes4 {
  u32 x;
};

/// How wf_load/wf_store access N elements of T: in units of the largest of 16, 8 and 4 bytes
/// that divides N * sizeof(T), else element by element. The address must be aligned to it.
template <typename T, int N, int Total = int(sizeof(T)) * N> struct wf_access {
  static constexpr int bytes = Total % 16 == 0  ? 16
                               : Total % 8 == 0 ? 8
                               : Total % 4 == 0 ? 4
                                                : int(sizeof(T));
};
template <typename T, int Bytes> struct wf_unit { typedef T type; };
template <typename T> struct wf_unit<T, 16> { typedef wf_bytes16 type; };
template <typename T> struct wf_unit<T, 8> { typedef wf_bytes8 type; };
template <typename T> struct wf_unit<T, 4> { typedef wf_bytes4 type; };

/// True when `address` is a multiple of `bytes` (a power of two).
WF_DEVICE bool wf_is_aligned(const void* address, unsigned bytes) {
  return (reinterpret_cast<wf_u64>(address) & (bytes - 1u)) == 0;
}

/// How many elements of `Size` bytes lie before `address` reaches a multiple of `Alignment`
/// bytes (a power of two); -1 when it never does (the address is not a multiple of Size).
template <unsigned Alignment, unsigned Size> WF_DEVICE int wf_head(const void* address) {
  const wf_u64 offset = reinterpret_cast<wf_u64>(address) & (Alignment - 1u);
  if (offset % Size != 0)
    return -1;
  return int(((Alignment - offset) & (Alignment - 1u)) / Size);
}

// The device moves whole units through typed pointers (one vector instruction each); the host
// copies the same bytes with memcpy, which keeps to strict aliasing.

/// Loads N elements from `address`, aligned to wf_access<T, N>::bytes, into `values`
/// (declared alignas(16)).
template <typename T, int N> WF_DEVICE void wf_load(T (&values)[N], const T* address) {
#ifdef __CUDA_ARCH__
  typedef typename wf_unit<T, wf_access<T, N>::bytes>::type Unit;
  for (int i = 0; i < N * int(sizeof(T)) / int(sizeof(Unit)); ++i) {
    const Unit unit = reinterpret_cast<const Unit*>(address)[i];
    memcpy(reinterpret_cast<char*>(values) + i * sizeof(Unit), &unit, sizeof(Unit));
  }
#else
  // The device faults on a misaligned vector access; the host traps too, so that the host
  // backend's tests catch a codegen bug the device would hit.
  if (!wf_is_aligned(address, wf_access<T, N>::bytes))
    __builtin_trap();
  memcpy(values, address, sizeof(values));
#endif
}

/// Stores the N elements of `values` (declared alignas(16)) to `address`, aligned to
/// wf_access<T, N>::bytes.
template <typename T, int N> WF_DEVICE void wf_store(T* address, const T (&values)[N]) {
#ifdef __CUDA_ARCH__
  typedef typename wf_unit<T, wf_access<T, N>::bytes>::type Unit;
  for (int i = 0; i < N * int(sizeof(T)) / int(sizeof(Unit)); ++i) {
    Unit unit;
    memcpy(&unit, reinterpret_cast<const char*>(values) + i * sizeof(Unit), sizeof(Unit));
    reinterpret_cast<Unit*>(address)[i] = unit;
  }
#else
  if (!wf_is_aligned(address, wf_access<T, N>::bytes))
    __builtin_trap();
  memcpy(address, values, sizeof(values));
#endif
}


#endif // WIDEFUSE_PRELUDE
