#pragma once
/// Shapes of every value of a fusion for one set of arguments: what symbolic extents leave to
/// run time, checked before any kernel runs (so a bad argument never half-updates a buffer).

#include "ir/evaluator.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <vector>

namespace widefuse {

/// The run-time shape of every value, by value id (scalars and 0-d tensors: empty).
struct RuntimeShapes {
  std::vector<llvm::SmallVector<int64_t, 4>> ofValue;
  /// The run-time shape of `value`.
  const llvm::SmallVector<int64_t, 4>& of(const Value* value) const { return ofValue[value->id()]; }
  /// The run-time value of `extent`, a value defined by size(tensor, dim).
  int64_t extentOf(const Value* extent) const;
};

/// Propagates the shapes of `arguments` (already accepted by checkArguments) through the
/// fusion. Throws Error, with the reference evaluator's messages, when pointwise operands
/// disagree, a broadcast does not fit, or a copy_ source and destination differ.
RuntimeShapes inferRuntimeShapes(const Fusion& fusion, llvm::ArrayRef<Argument> arguments);

} // namespace widefuse
