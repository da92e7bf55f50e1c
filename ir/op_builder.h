#pragma once
/// Checked construction of expressions: every way of building a Fusion (the C++
/// FusionDefinition, the text parser, the Python frontend) adds ops through here.

#include "ir/expr.h"
#include "ir/fusion.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

namespace widefuse {

/// The type and shape of `op(operands)` under the op's typing rule and pointwise shape rules
/// (0-d tensors and scalars broadcast; other shapes must match, see broadcast_in_dim).
/// Throws Error naming the operands when the op does not accept them.
ValueType inferResultType(OpKind op, llvm::ArrayRef<const Value*> operands,
                          const OpAttributes& attributes);

/// Checks and appends `op(operands)` to `fusion`, returning the result value.
Value* buildOp(Fusion& fusion, OpKind op, llvm::ArrayRef<Value*> operands,
               OpAttributes attributes = {}, llvm::StringRef name = {});

/// The type an expression's arithmetic is carried out in: operands are converted to it, the
/// result is computed in it and then converted (rounded) to the result type. Half and
/// bfloat16 compute in float.
DataType exprComputeType(const Expr& expr);

} // namespace widefuse
