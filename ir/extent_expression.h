#pragma once
/// Extent expressions: the integer scalars a broadcast_in_dim's output shape may hold. An
/// extent is the extent of a tensor (`size(t, d)`), a runtime integer input (nvFuser's
/// `define_vector(n)` entries), an integer constant, or integer arithmetic of those. The
/// kernels never compute them: their values become run-time shapes before any kernel runs.

#include "ir/value.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>

namespace widefuse {

class Fusion;

/// Checks that `extent` can be an output extent: an integer scalar whose definition uses only
/// size values, integer scalar inputs, integer constants and the ops an extent may use (add,
/// sub, mul, div, mod, remainder, maximum, minimum, neg, abs, integer casts, set). Throws
/// Error prefixed with `context` naming the first value that is not.
void checkExtentExpression(const Value& extent, llvm::StringRef context);

/// The leaves' values: a size value's extent or an integer input's value, nullopt when not
/// known (a symbolic extent, an input at build time).
using ExtentLeafValue = llvm::function_ref<std::optional<int64_t>(const Value& leaf)>;

/// Computes `extent` (already accepted by checkExtentExpression) in 64-bit integers, with
/// C's truncating division. Nullopt when a leaf is not known. Throws Error prefixed with
/// `context` for a division by zero or an overflow.
std::optional<int64_t> evaluateExtent(const Value& extent, ExtentLeafValue leaf,
                                      llvm::StringRef context);

/// The value of an integer constant or runtime argument (whose payload may be a bool or an
/// integral double, as written).
int64_t integerOf(const ConstantValue& constant);

/// The leaf values known when the fusion is built: the static extents of size values.
std::optional<int64_t> staticExtentLeaf(const Value& leaf);

/// The runtime scalar inputs some output extent reads (nvFuser's vector entries): a run's
/// shapes change with them, so a prepared run may not change them.
llvm::SmallVector<const Value*, 4> extentInputs(const Fusion& fusion);

} // namespace widefuse
