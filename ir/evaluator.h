#pragma once
/// The reference evaluator: runs a Fusion on host buffers, element by element, in the
/// declared data types. It is the ground truth every backend is compared with.

#include "ir/arguments.h"
#include "ir/host_tensor.h"
#include "ir/value.h"

#include <llvm/ADT/ArrayRef.h>

#include <string>
#include <variant>
#include <vector>

namespace widefuse {

class Fusion;

/// How the evaluator computes.
struct EvaluatorOptions {
  /// Oracle mode: every floating-point value is kept and computed in double, for measuring
  /// the error of the declared-precision result. Aliased inputs are then not written back;
  /// their final values are returned as f64 tensors.
  bool oracle = false;
};

/// What a run produced.
struct EvaluationResult {
  /// Plain outputs, in Fusion::outputs() order, as dense tensors.
  std::vector<HostTensor> outputs;
  /// Final value of every copied-into input, in Fusion::aliases() order (destination type;
  /// f64 for floating types in oracle mode).
  std::vector<HostTensor> aliasFinalValues;
};

/// Runs the fusion. Arguments are checked first; then every expression is evaluated; only
/// then, in normal mode, the aliased inputs receive their new values (copy_ deferred to the
/// end). Throws Error for bad arguments or shapes that disagree at run time.
EvaluationResult evaluate(const Fusion& fusion, llvm::ArrayRef<Argument> arguments,
                          const EvaluatorOptions& options = {});

} // namespace widefuse
