#pragma once
/// The arguments of a fusion run and their checks, shared by the reference evaluator and the
/// runtime: nothing is written to a caller's buffer before every argument has passed.

#include "ir/host_tensor.h"
#include "ir/value.h"

#include <llvm/ADT/ArrayRef.h>

#include <variant>

namespace widefuse {

class Fusion;

/// The value of a runtime scalar input: a bool, an integer or a floating-point number
/// (converted to the scalar's declared type).
using ScalarArgument = ConstantValue;

/// One argument of a fusion run, in the order of Fusion::inputs(): a tensor view for a tensor
/// input, a number for a runtime scalar.
using Argument = std::variant<TensorRef, ScalarArgument>;

/// Checks every argument against the fusion's inputs (count, kind, dtype, rank, extents,
/// strides of written inputs; copy_ destinations overlapping another input) and throws Error
/// naming the first bad one. Nothing is written.
void checkArguments(const Fusion& fusion, llvm::ArrayRef<Argument> arguments);

/// Checks the number given for runtime scalar input `input` (kind and range) as
/// checkArguments does; throws Error naming the input.
void checkScalarArgument(const Value& input, const ScalarArgument& scalar);

/// Throws Error naming `input` when `data` is not a multiple of `dtype`'s size (checkArguments
/// checks it, and so does a prepared run's rebind).
void checkAlignedData(const Value& input, const void* data, DataType dtype);

} // namespace widefuse
