#pragma once
/// The arguments each op takes in the text form (ir/parser.h): its value operands, then its
/// attributes, and how a message names them.

#include "ir/op_kind.h"

#include <llvm/ADT/SmallVector.h>

#include <cstdint>
#include <string>

namespace widefuse {

/// What one argument of an op call is in the text: a value operand or an attribute.
enum class ArgumentForm : uint8_t { Value, DataType, Shape, Dims, Dim, Block, Codebook };

/// The arguments `op` takes in the text form: its value operands, then its attributes.
llvm::SmallVector<ArgumentForm, 3> argumentForms(OpKind op);

/// Names the attribute arguments of `op` for an argument-count message; empty for plain ops.
std::string describeForms(OpKind op);

} // namespace widefuse
