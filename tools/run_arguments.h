#pragma once
/// Turning `--input NAME=PATH.npy` and `--scalar NAME=VALUE` command-line pairs into the
/// evaluator's argument list, with messages that name the offending input.

#include "ir/evaluator.h"
#include "ir/fusion.h"
#include "ir/host_tensor.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <deque>
#include <string>
#include <vector>

namespace widefuse {

/// One `NAME=VALUE` pair from the command line.
struct Assignment {
  std::string name;
  std::string value;
};

/// Splits `NAME=VALUE` at the first '='. `option` names the flag in messages (`--input`).
/// Throws Error when there is no '=' or the name or value is empty.
Assignment parseAssignment(llvm::StringRef text, llvm::StringRef option);

/// Parses a runtime scalar's value for its declared type: `true`/`false` for b8, a decimal
/// integer for integer types, a number (also `inf`, `nan`) for floating types. Throws Error
/// naming the scalar when the text is not such a value or does not fit the type (a
/// floating-point value that would round to infinity does not fit).
ScalarArgument parseScalarValue(llvm::StringRef text, DataType dtype, llvm::StringRef name);

/// A fusion's arguments: the tensors read from .npy files and the Argument list that views
/// them, in Fusion::inputs() order.
struct BoundArguments {
  /// The tensors the arguments point into; a deque, so that growing it moves no tensor.
  std::deque<HostTensor> tensors;
  /// One argument per fusion input.
  std::vector<Argument> arguments;
  /// Per fusion input, the tensor its argument points into (null for a scalar): the updated
  /// inputs are found by position, since empty tensors may share one data address.
  std::vector<const HostTensor*> inputTensors;
};

/// Reads every tensor input (checking its dtype against the declaration) and parses every
/// scalar input. Throws Error for an unknown or repeated name, a tensor given as a scalar or
/// the other way round, missing inputs (all named at once), or an unreadable or mistyped
/// file. Extents are checked later by checkArguments().
BoundArguments bindArguments(const Fusion& fusion, llvm::ArrayRef<Assignment> tensorInputs,
                             llvm::ArrayRef<Assignment> scalarInputs);

} // namespace widefuse
