#pragma once
/// Random argument values with the edges mixed in: NaN, infinities, signed zeros, denormals,
/// integer extremes and small integers (in-range shift amounts and exponents).

#include "tests/fuzz/fuzz_case.h"

#include <random>

namespace widefuse::fuzz {

/// Fills every element of `storage` (a whole number of `dtype` elements) with random values.
void fillRandom(DataType dtype, std::vector<std::byte>& storage, std::mt19937_64& random);

/// A random value for a runtime scalar input of `dtype`, inside the range checkArguments
/// accepts for it.
ScalarArgument randomScalar(DataType dtype, std::mt19937_64& random);

/// A random constant for a literal or typed constant of `dtype` (edges included).
ConstantValue randomConstant(DataType dtype, std::mt19937_64& random);

} // namespace widefuse::fuzz
