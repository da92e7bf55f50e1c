#pragma once
/// Passes: a fusion whose values read reductions of other values, cut into the fewest
/// fusions that run one after another (docs/segmenter.md section 9). Each pass is a fusion
/// of its own, without a reduction whose result it reads: its reductions' results are its
/// outputs, and later passes take them as inputs.

#include "ir/fusion.h"

#include <memory>
#include <string>
#include <vector>

namespace widefuse {

/// Where an input of a pass comes from.
struct PassInput {
  enum class Kind {
    FusionInput,   ///< `index` is an input of the whole fusion (by position)
    EarlierResult, ///< `index` is a PassPlan::results entry, computed by an earlier pass
  };
  Kind kind = Kind::FusionInput;
  unsigned index = 0;
};

/// What an output of a pass is: an output of the whole fusion, a result later passes read,
/// or both.
struct PassOutput {
  /// Position among the whole fusion's outputs, or -1.
  int fusionOutput = -1;
  /// Index into PassPlan::results, or -1.
  int result = -1;
};

/// A reduction result that leaves its pass: an output there, an input of the passes after.
struct PassResult {
  /// The reduction's result in the whole fusion.
  const Value* value = nullptr;
  /// The pass computing it and its position among that pass's outputs.
  unsigned pass = 0;
  unsigned output = 0;
};

/// One pass: a verified fusion and how its inputs, outputs and copies map to the whole one.
struct Pass {
  std::unique_ptr<Fusion> fusion;
  /// Per input of `fusion`, in order.
  std::vector<PassInput> inputs;
  /// Per output of `fusion`, in order.
  std::vector<PassOutput> outputs;
  /// Per copy_ of `fusion`: its position among the whole fusion's aliases.
  std::vector<unsigned> aliases;
};

/// The passes of a fusion, in the order they run.
struct PassPlan {
  std::vector<Pass> passes;
  std::vector<PassResult> results;
  /// Sentences explaining where each reduction and copy_ went (for the segment report).
  std::vector<std::string> decisions;
};

/// True when the fusion has a reduction.
bool hasReductions(const Fusion& fusion);

/// True when an expression or a copy_ reads a reduction result: the fusion needs more than
/// one pass. (One whose reductions are only returned runs as one.)
bool needsPasses(const Fusion& fusion);

/// Cuts a verified fusion into passes. A reduction is computed in the pass of its operands'
/// latest level; a value reading its result is in a later pass; pointwise values are
/// recomputed in every pass that needs them, never stored. Each copy_ is written in the last
/// pass that reads its destination, so every pass before it reads the entry value.
PassPlan splitPasses(const Fusion& fusion);

} // namespace widefuse
