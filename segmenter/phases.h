#pragma once
/// Phases: the level of the segmentation above kernels (docs/segmenter.md section 9). A value
/// that reads a reduction's result can only be computed once every element is reduced, so a
/// fusion whose values read reductions runs as phases, one after another: a phase's kernels
/// compute its reductions, and the phases after it read their results from memory the runtime
/// keeps (kept results). Pointwise values are recomputed in every phase that needs them, never
/// stored. A fusion without such reads is one phase.

#include "ir/fusion.h"

#include <string>
#include <vector>

namespace widefuse {

/// The phase of nothing (an expression that is not a live reduction).
inline constexpr unsigned kNoPhase = ~0u;

/// A reduction result a later phase reads: the runtime keeps it in memory between the launches.
struct KeptResult {
  const Value* value = nullptr;
  /// The phase computing it.
  unsigned phase = 0;
};

/// Which phase computes, reads and writes what.
struct PhasePlan {
  /// Number of phases, at least 1.
  unsigned count = 1;
  /// By expression id: the phase a reduction is computed in; kNoPhase for other expressions
  /// and for reductions nothing reads or returns (they are not computed).
  std::vector<unsigned> reductionPhase;
  /// By position in Fusion::aliases(): the phase that writes the copy_, the last one that
  /// reads its destination (so every phase before it reads the entry value).
  std::vector<unsigned> aliasPhase;
  /// By position in Fusion::outputs(): the phase that produces the output (a reduction result
  /// in the phase computing it).
  std::vector<unsigned> outputPhase;
  /// The reduction results a later phase reads, in fusion order: what the runtime keeps
  /// between the phases' launches.
  std::vector<KeptResult> kept;
  /// Per phase, by value id: the values the phase computes or reads (the cones of its work,
  /// cut at earlier phases' results). Empty for a fusion without reductions, whose one phase
  /// computes every value.
  std::vector<std::vector<bool>> needs;
  /// Sentences explaining where each reduction and copy_ went (for the segment report).
  std::vector<std::string> notes;

  /// True when phase `phase` computes the non-reduction value `value` or reads it.
  bool phaseNeeds(unsigned phase, const Value& value) const {
    return needs.empty() || needs[phase][value.id()];
  }
  /// True when `value` is the result of a reduction computed before `phase` (which reads it
  /// from memory).
  bool computedBefore(const Value& value, unsigned phase) const;
};

/// Plans the phases of a verified fusion: a reduction is computed in the phase of its
/// operands' latest level, a value reading its result in a later one, and each copy_ is
/// written in the last phase that reads its destination.
PhasePlan planPhases(const Fusion& fusion);

} // namespace widefuse
