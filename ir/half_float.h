#pragma once
/// Software half (IEEE binary16), bfloat16 and the fp8 types: conversion to and from bits
/// with round-to-nearest-even, identical on every platform.

#include "ir/data_type.h"

#include <cstdint>

namespace widefuse {

/// The half nearest to `value` (ties to even; overflow to infinity; NaN stays NaN).
uint16_t toHalfBits(double value);
/// The exact float value of half bits.
float halfBitsToFloat(uint16_t bits);
/// The bfloat16 nearest to `value` (ties to even; overflow to infinity; NaN stays NaN).
uint16_t toBFloat16Bits(double value);
/// The exact float value of bfloat16 bits.
float bfloat16BitsToFloat(uint16_t bits);

// fp8, as torch (c10) converts: from a float (a double or an integer is converted to float
// first, as c10's constructors take a float), round to nearest even.

/// e4m3fn nearest to `value`. There is no infinity: a value that rounds past 448 (the
/// largest finite), an infinity and NaN all give NaN (0x7f) with the value's sign.
uint8_t toFloat8E4M3FnBits(float value);
/// e5m2 nearest to `value`: a value that rounds past 57344 gives infinity; NaN gives 0x7f
/// with its sign.
uint8_t toFloat8E5M2Bits(float value);
/// e8m0fnu (2^(bits - 127), no sign, no zero; 0xff is NaN) of `value` as torch rounds it:
/// the float's biased exponent, rounded up when its mantissa is above one half, or exactly
/// one half of a normal float (so a subnormal float above 2^-127 gives 2^-126), and NaN when
/// that passes 2^127. The sign is ignored, zero gives 2^-127, infinities and NaN give NaN.
uint8_t toFloat8E8M0FnuBits(float value);
/// The exact float value of fp8 bits; NaN patterns give the quiet NaN of their sign.
float float8E4M3FnBitsToFloat(uint8_t bits);
float float8E5M2BitsToFloat(uint8_t bits);
float float8E8M0FnuBitsToFloat(uint8_t bits);

/// The exact float value of the bits of a narrow-float (f16, bf16, fp8) element.
float narrowBitsToFloat(DataType type, uint16_t bits);
/// The bits of the narrow-float `type` nearest to `value`: f16/bf16 round the double
/// once; fp8 rounds `asFloat`, the source converted to float as torch converts it (callers
/// pass `float(source)`, so an i64 or f64 source rounds to float first, as in c10).
uint16_t toNarrowBits(DataType type, double value, float asFloat);

} // namespace widefuse
