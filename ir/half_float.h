#pragma once
/// Software half (IEEE binary16) and bfloat16: conversion to and from bits with
/// round-to-nearest-even, identical on every platform.

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

} // namespace widefuse
