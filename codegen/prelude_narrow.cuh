// widefuse prelude, part three: the narrow floats (f16, bf16 and the fp8 types, decoded and
// rounded in software, as the reference does) and the conversions between all dtypes.
// codegen/prelude.cuh includes it after its types and traits, and the embedded prelude text
// has it inlined (codegen/CMakeLists.txt).
#ifndef WIDEFUSE_PRELUDE_NARROW
#define WIDEFUSE_PRELUDE_NARROW

// ---- f16 / bf16 -----------------------------------------------------------------------------

/// The exact f32 value of half bits; every NaN decodes to the quiet NaN of its sign. Selects,
/// not branches, so that a warp does not diverge on its data.
WF_DEVICE f32 wf_half_to_float(u16 bits) {
  const u32 exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  const f32 subnormal = f32(mantissa) * 0x1p-24f; // exact in f32
  const u32 magnitude = exponent == 0x1fu ? (mantissa ? 0x7fc00000u : 0x7f800000u)
                        : exponent == 0   ? wf_bitcast<u32>(subnormal)
                                          : ((exponent + 112u) << 23) | (mantissa << 13);
  return wf_bitcast<f32>((u32(bits & 0x8000u) << 16) | magnitude);
}

/// Rounds a double to the 16-bit format with E exponent and M mantissa bits: ties to even,
/// overflow to infinity, NaN to the quiet NaN of its sign, subnormals kept. The results of
/// roundToSmallFloat (ir/half_float.cpp) in integer arithmetic, without ldexp/ilogb.
template <int E, int M> WF_DEVICE u16 wf_round_double_to_16(f64 value) {
  const wf_u64 bits = wf_bitcast<wf_u64>(value);
  const int bias = (1 << (E - 1)) - 1, biased = int(bits >> 52) & 0x7ff;
  const u16 sign = u16((bits >> 63) << 15), exponent_mask = u16(((1u << E) - 1u) << M);
  wf_u64 significand = bits & ((1ull << 52) - 1);
  if (biased == 0x7ff)
    return u16(sign | exponent_mask | (significand ? 1u << (M - 1) : 0u));
  int exponent = -1022; // a subnormal double has no implicit one
  if (biased != 0) {
    exponent = biased - 1023;
    significand |= 1ull << 52;
  }
  int target = exponent > 1 - bias ? exponent : 1 - bias; // subnormals share the minimum
  const int shift = 52 - M + (target - exponent);
  if (shift > 53) // below half the smallest subnormal (or zero)
    return sign;
  wf_u64 scaled = significand >> shift;
  const wf_u64 rest = significand & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rest > half || (rest == half && (scaled & 1u)))
    ++scaled;
  if (scaled >> (M + 1)) { // rounding carried into the next binade
    scaled >>= 1;
    ++target;
  }
  if (target > bias)
    return u16(sign | exponent_mask);
  if ((scaled >> M) == 0)
    return u16(sign | u16(scaled));
  return u16(sign | u16((target + bias) << M) | u16(scaled - (1ull << M)));
}

/// The 16-bit float nearest to the f32 x (bf16 for E = 8, else f16), in integer arithmetic:
/// ties to even, overflow to infinity, subnormals kept, NaN to the quiet NaN of its sign.
template <int E, int M> WF_DEVICE u16 wf_round_float_to_16(f32 x) {
  if constexpr (E == 8) { // bf16: the top half of the f32, rounded half to even
    const u32 bits = wf_bitcast<u32>(x);
    const u16 rounded = u16((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
    return (bits & 0x7fffffffu) > 0x7f800000u ? u16(((bits >> 16) & 0x8000u) | 0x7fc0u) : rounded;
  } else {
    const u32 bits = wf_bitcast<u32>(x), magnitude = bits & 0x7fffffffu;
    const u32 sign = (bits >> 16) & 0x8000u;
    if (magnitude >= 0x47800000u) // 2^16 or more: infinity; or NaN
      return u16(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (magnitude < 0x38800000u) // subnormal: adding 0.5 rounds to multiples of 2^-24
      return u16(sign | (wf_bitcast<u32>(wf_bitcast<f32>(magnitude) + 0.5f) - 0x3f000000u));
    // Rebias the exponent (-112) and round the 13 dropped bits half to even.
    return u16(sign | ((magnitude + 0xc8000fffu + ((magnitude >> 13) & 1u)) >> 13));
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/// One cvt.rn.bf16.f32 (E = 8) or cvt.rn.f16.f32: rounds as wf_round_float_to_16, except that
/// every NaN becomes the canonical 0x7fff. The emulator runs its twin, with that NaN.
template <int E> WF_DEVICE u16 wf_cvt_rn(f32 x) {
#ifdef WF_EMULATED_DEVICE
  const u16 rounded = wf_round_float_to_16<E, E == 8 ? 7 : 10>(x);
  return x != x ? u16(0x7fffu) : rounded;
#else
  u16 rounded;
  if constexpr (E == 8)
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(rounded) : "f"(x));
  else
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(rounded) : "f"(x));
  return rounded;
#endif
}
#endif

/// The 16-bit float nearest to x. The reference rounds x converted to double (so an i64 above
/// 2^53 rounds twice). An f32 is exact in double, so rounding its own bits gives the same
/// result; f32 sources, the common case, take short exact paths: one instruction on sm_80 and
/// newer, whose NaN is replaced by x's own quiet NaN.
template <int E, int M, typename From> WF_DEVICE u16 wf_to_16(From x) {
  if constexpr (!wf_is_same<From, f32>::value) {
    return wf_round_double_to_16<E, M>(static_cast<f64>(x));
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const u32 bits = wf_bitcast<u32>(x);
    const u16 nan = u16(((bits >> 16) & 0x8000u) | (E == 8 ? 0x7fc0u : 0x7e00u));
    return (bits & 0x7fffffffu) > 0x7f800000u ? nan : wf_cvt_rn<E>(x);
#else
    return wf_round_float_to_16<E, M>(x);
#endif
  }
}

// ---- fp8 ------------------------------------------------------------------------------------
// The rules of ir/half_float.cpp (torch's), in integer arithmetic.

/// The exact f32 value of e4m3fn bits; 0x7f and 0xff (the only NaNs) give the quiet NaN of
/// their sign.
WF_DEVICE f32 wf_e4m3fn_to_float(u8 bits) {
  const u32 exponent = (bits >> 3) & 0xfu, mantissa = bits & 0x7u;
  // A subnormal m * 2^-9 in integer arithmetic, normalized by m's top bit, with constant
  // shifts: the host compiler vectorizes that, not a float op on a path it would speculate.
  const u32 subnormal = mantissa >= 4u   ? (120u << 23) | ((mantissa << 21) & 0x7fffffu)
                        : mantissa >= 2u ? (119u << 23) | ((mantissa << 22) & 0x7fffffu)
                        : mantissa == 1u ? 118u << 23
                                         : 0u;
  const u32 magnitude = (bits & 0x7fu) == 0x7fu ? 0x7fc00000u
                        : exponent == 0         ? subnormal
                                                : ((exponent + 120u) << 23) | (mantissa << 20);
  return wf_bitcast<f32>((u32(bits & 0x80u) << 24) | magnitude);
}

/// The exact f32 value of e8m0fnu bits: 2^(bits - 127), 0xff is NaN.
WF_DEVICE f32 wf_e8m0fnu_to_float(u8 bits) {
  const u32 magnitude = bits == 0xffu ? 0x7fc00000u : bits == 0 ? 0x00400000u : u32(bits) << 23;
  return wf_bitcast<f32>(magnitude);
}

/// Rounds an f32 to e4m3fn (E = 4, M = 3) or e5m2 (E = 5, M = 2), ties to even. A result past
/// the largest finite value is NaN (e4m3fn, which has no infinity) or infinity (e5m2); NaN
/// gives 0x7f with its sign.
template <int E, int M> WF_DEVICE u8 wf_float_to_f8(f32 x) {
  // Selects, no early return: the host compiler vectorizes loops that convert.
  const u32 bits = wf_bitcast<u32>(x), magnitude = bits & 0x7fffffffu;
  const u32 sign = (bits >> 24) & 0x80u;
  const int bias = (1 << (E - 1)) - 1, biased = int(magnitude >> 23);
  const u32 significand = (magnitude & 0x7fffffu) | (biased != 0 ? 0x800000u : 0u);
  const int exponent = biased != 0 ? biased - 127 : -126;
  const int target = exponent > 1 - bias ? exponent : 1 - bias; // subnormals share the minimum
  // Below half the smallest subnormal (a shift past 24) rounds to zero as a shift of 25 does:
  // the significand (< 2^24) is all rest, below half.
  const int shift = 23 - M + (target - exponent) < 25 ? 23 - M + (target - exponent) : 25;
  // Ties to even by one addition: half - 1 plus the kept part's last bit carries into it
  // exactly when the rest is above half, or is half and that bit is 1.
  const u32 half = 1u << (shift - 1);
  const u32 scaled = (significand + (half - 1u) + ((significand >> shift) & 1u)) >> shift;
  // A carry into the next binade moves the exponent by itself: the fields are adjacent.
  const u32 code = (scaled >> M) == 0 ? scaled : (u32(target + bias) << M) + scaled - (1u << M);
  const u32 limited = E == 4 ? (code > 0x7eu ? 0x7fu : code) : (code > 0x7bu ? 0x7cu : code);
  return u8(sign | (magnitude > 0x7f800000u ? 0x7fu : limited));
}

/// Rounds an f32 to e8m0fnu as torch does: its biased exponent, up when the mantissa is above
/// one half or exactly one half of a normal float (up from 254 is 255, NaN); no sign.
WF_DEVICE u8 wf_float_to_e8m0fnu(f32 x) {
  const u32 bits = wf_bitcast<u32>(x), exponent = (bits >> 23) & 0xffu, mantissa = bits & 0x7fffffu;
  if (exponent == 0xffu)
    return u8(0xffu);
  const b8 up = mantissa > 0x400000u || (mantissa == 0x400000u && exponent != 0);
  return u8(up ? exponent + 1u : exponent);
}

// ---- conversions ----------------------------------------------------------------------------

/// Converts between any two types as the reference evaluator does: a complex value to a real
/// type through its real part, to b8 as z != 0; f16/bf16/fp8 decode
/// exactly to f32 first, f16/bf16 targets are rounded to once (nearest even), fp8 targets
/// round the source converted to f32 (as torch does), and the rest is
/// element::convertNumber (to b8 is != 0; float to integer truncates, saturates and maps NaN
/// to 0; integers wrap).
template <typename To, typename From> WF_DEVICE To wf_convert(From x) {
  if constexpr (wf_is_same<To, From>::value) {
    return x;
  } else if constexpr (wf_is_complex<To>::value) { // parts converted; a real value gets im 0
    typedef decltype(To::re) Part;
    if constexpr (wf_is_complex<From>::value)
      return wf_complex_make(static_cast<Part>(x.re), static_cast<Part>(x.im));
    else
      return wf_complex_make(wf_convert<Part>(x), Part(0));
  } else if constexpr (wf_is_complex<From>::value) { // b8: z != 0; else the real part
    if constexpr (wf_is_same<To, b8>::value)
      return wf_complex_truth(x);
    else
      return wf_convert<To>(x.re);
  } else if constexpr (wf_is_same<From, f16>::value) {
    return wf_convert<To>(wf_half_to_float(x.bits));
  } else if constexpr (wf_is_same<From, bf16>::value) {
    return wf_convert<To>(wf_bitcast<f32>(u32(x.bits) << 16));
  } else if constexpr (wf_is_same<From, f8e4m3fn>::value) {
    return wf_convert<To>(wf_e4m3fn_to_float(x.bits));
  } else if constexpr (wf_is_same<From, f8e5m2>::value) {
    return wf_convert<To>(wf_half_to_float(u16(x.bits << 8)));
  } else if constexpr (wf_is_same<From, f8e8m0fnu>::value) {
    return wf_convert<To>(wf_e8m0fnu_to_float(x.bits));
  } else if constexpr (wf_is_same<To, f8e4m3fn>::value) { // from f32, as c10 converts
    return f8e4m3fn{wf_float_to_f8<4, 3>(static_cast<f32>(x))};
  } else if constexpr (wf_is_same<To, f8e5m2>::value) {
    return f8e5m2{wf_float_to_f8<5, 2>(static_cast<f32>(x))};
  } else if constexpr (wf_is_same<To, f8e8m0fnu>::value) {
    return f8e8m0fnu{wf_float_to_e8m0fnu(static_cast<f32>(x))};
  } else if constexpr (wf_is_same<To, f16>::value) {
    return f16{wf_to_16<5, 10>(x)};
  } else if constexpr (wf_is_same<To, bf16>::value) {
    return bf16{wf_to_16<8, 7>(x)};
  } else if constexpr (wf_is_same<To, b8>::value) {
    return x != From(0);
  } else if constexpr (wf_is_integer<To>::value && wf_is_floating<From>::value) {
    if (x != x)
      return To(0);
    if (x <= static_cast<From>(wf_limits<To>::lowest))
      return wf_limits<To>::lowest;
    if (x >= static_cast<From>(wf_limits<To>::max)) // max may round up (2^63 - 1 -> 2^63)
      return wf_limits<To>::max;
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

#endif // WIDEFUSE_PRELUDE_NARROW
