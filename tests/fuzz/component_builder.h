#pragma once
/// Builds one component of a generated fusion: its inputs (with layouts and arguments), a
/// random chain of ops from the op table, copy_ updates and plain outputs.

#include "tests/fuzz/fuzz_case.h"
#include "tests/fuzz/reductions.h"

#include "ir/fusion_definition.h"

#include <random>
#include <string>
#include <vector>

namespace widefuse::fuzz {

/// The seeds and shape of one component. Two components with the same `structureSeed` and
/// rank are built alike (same ops, dtypes and operand choices) and differ only in extents and
/// constant values: one signature class, whose differing constants the scheduler lifts.
struct ComponentPlan {
  uint64_t structureSeed = 0;
  uint64_t valueSeed = 0;
  unsigned rank = 0;
  bool allowZeroExtents = true;
  unsigned maxExprs = 10;
  int64_t maxElements = 2000;
};

/// Values of a built component: those a reduction over several components may read, and
/// its outputs.
struct ComponentValues {
  std::vector<ReductionOperand> reducible;
  /// Plain outputs drawn, for the generator to add once the whole fusion is built.
  std::vector<Val> outputs;
};

/// Adds one component to `fd` and its arguments to `fuzzCase`. `sharedScalars` are runtime
/// scalar inputs every component may read (read-only scalars do not join components).
ComponentValues buildComponent(FusionDefinition& fd, FuzzCase& fuzzCase, const ComponentPlan& plan,
                               const std::string& prefix, const std::vector<Val>& sharedScalars,
                               GeneratorStats& stats);

} // namespace widefuse::fuzz
