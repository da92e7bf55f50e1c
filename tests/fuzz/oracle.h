#pragma once
/// The float64 oracle: catches errors the evaluator and the kernels would share. The fusion
/// is evaluated again with every floating-point value kept in double (EvaluatorOptions::
/// oracle), and each floating-point output (and copy_ result) is compared with the
/// declared-precision result within an error bound derived from the fusion and its inputs.
///
/// The bound is a forward error analysis over a safe subset of ops (add, sub, mul, fma, neg,
/// abs, maximum, minimum, clamp, where on exact conditions, set, broadcast_in_dim, casts
/// into floating types or between integer types, and the reductions sum, max and min, whose
/// bounds take an upper bound on their element counts); values that leave the subset, could
/// overflow, or whose oracle value is not finite are not compared. Conservative by design:
/// it must never flake.

#include "tests/fuzz/fuzz_case.h"

#include "ir/evaluator.h"

#include <optional>
#include <string>

namespace widefuse::fuzz {

/// Compares `declared` (the reference evaluator's normal run of `fuzzCase`) with the float64
/// oracle; the first value outside its bound, described, or nullopt.
std::optional<std::string> checkOracle(const FuzzCase& fuzzCase, const EvaluationResult& declared);

/// Number of values the last checkOracle calls compared (for the campaign's figures).
uint64_t oracleComparedValues();

} // namespace widefuse::fuzz
