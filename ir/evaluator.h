#pragma once
/// The reference evaluator: runs a Fusion on host buffers, element by element, in the
/// declared data types. It is the ground truth every backend is compared with.

#include "ir/host_tensor.h"
#include "ir/value.h"

#include <llvm/ADT/ArrayRef.h>

#include <string>
#include <variant>
#include <vector>

namespace widefuse {

class Fusion;

/// The value of a runtime scalar input: a bool, an integer or a floating-point number
/// (converted to the scalar's declared type).
using ScalarArgument = ConstantValue;

/// One argument of a fusion run, in the order of Fusion::inputs(): a tensor view for a tensor
/// input, a number for a runtime scalar.
using Argument = std::variant<TensorRef, ScalarArgument>;

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

/// Checks every argument against the fusion's inputs (count, kind, dtype, rank, extents,
/// strides of written inputs) and throws Error naming the first bad one. Nothing is written.
void checkArguments(const Fusion& fusion, llvm::ArrayRef<Argument> arguments);

/// Runs the fusion. Arguments are checked first; then every expression is evaluated; only
/// then, in normal mode, the aliased inputs receive their new values (copy_ deferred to the
/// end). Throws Error for bad arguments or shapes that disagree at run time.
EvaluationResult evaluate(const Fusion& fusion, llvm::ArrayRef<Argument> arguments,
                          const EvaluatorOptions& options = {});

} // namespace widefuse
