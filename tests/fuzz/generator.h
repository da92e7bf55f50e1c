#pragma once
/// Random valid fusions, reproducible from (seed, case index). Ops come from ir/op_kinds.def,
/// so a new op is generated as soon as it is in the table; operand types are tried and a
/// combination the typing rules reject is counted and skipped.

#include "tests/fuzz/fuzz_case.h"

#include <cstdint>

namespace widefuse::fuzz {

/// What the generator may produce.
struct GeneratorOptions {
  /// Most disconnected components per fusion (clones of an earlier one included).
  unsigned maxComponents = 4;
  /// Most expressions per component.
  unsigned maxExprsPerComponent = 10;
  /// Most elements of a component's iteration domain.
  int64_t maxElements = 2000;
};

/// The seed of case `index` of a campaign started with `seed` (a mix of the two, so that
/// neighbouring cases are unrelated).
uint64_t caseSeed(uint64_t seed, uint64_t index);

/// Generates one case from its case seed. Never throws for a rejected op (those are counted in
/// `stats`); the result has passed FusionDefinition::finalize().
FuzzCase generateCase(uint64_t caseSeed, const GeneratorOptions& options, GeneratorStats& stats);

} // namespace widefuse::fuzz
