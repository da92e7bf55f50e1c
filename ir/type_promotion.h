#pragma once
/// Type promotion of op operands, following PyTorch's result_type rules.

#include "ir/data_type.h"

#include <llvm/ADT/ArrayRef.h>

namespace widefuse {

class Value;

/// The common type of an op's operands. As in PyTorch, operands fall in three priority
/// groups: tensors of rank >= 1, 0-d tensors, and scalars. A lower group changes the result
/// only when it is of a higher category (bool < integer < floating point); scalars then count
/// as Python numbers (floating -> float, integer -> int64). When every operand is a scalar,
/// typed scalars promote among themselves and untyped literals count as double / int64 of
/// lower priority, so `sub(1.0, beta1: f64)` is f64.
/// `besideTensor` promotes as if a tensor took part (where's condition is a tensor but does
/// not join the promotion).
DataType promoteOperandTypes(llvm::ArrayRef<const Value*> operands, bool besideTensor = false);

} // namespace widefuse
