#pragma once
/// Checked construction of expressions: every way of building a Fusion (the C++
/// FusionDefinition, the text parser, the Python frontend) adds ops through here.

#include "ir/expr.h"
#include "ir/fusion.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

namespace widefuse {

/// The type and shape of `op(operands)` under the op's typing rule and pointwise shape rules
/// (0-d tensors and scalars broadcast; other shapes must match once implicitBroadcasts ran).
/// Throws Error naming the operands when the op does not accept them.
ValueType inferResultType(OpKind op, llvm::ArrayRef<const Value*> operands,
                          const OpAttributes& attributes);

/// nvFuser's implicit broadcasting of pointwise operands: an operand of lower rank gains
/// leading dimensions, and a static extent of 1 (a broadcast dimension) stretches to the
/// other operands' extent, through an explicit broadcast_in_dim appended to `fusion` (whose
/// symbolic output extents name the stretched-to extent with a size expression). A symbolic
/// extent never stretches, even when it is 1 at run time. Returns the operands to use.
llvm::SmallVector<Value*, 3> implicitBroadcasts(Fusion& fusion, llvm::ArrayRef<Value*> operands);

/// copy_(source, destination), torch's way: a source with broadcast (extent-1) or missing
/// leading dimensions is broadcast to the destination's shape first. The destination itself
/// never stretches (Fusion::addAlias refuses a source of another shape).
void addBroadcastingAlias(Fusion& fusion, Value* source, Value* destination);

/// Checks and appends `op(operands)` to `fusion`, returning the result value. Pointwise
/// operands are broadcast first (implicitBroadcasts).
Value* buildOp(Fusion& fusion, OpKind op, llvm::ArrayRef<Value*> operands,
               OpAttributes attributes = {}, llvm::StringRef name = {});

/// The type an expression's arithmetic is carried out in: operands are converted to it, the
/// result is computed in it and then converted (rounded) to the result type. Half and
/// bfloat16 compute in float.
DataType exprComputeType(const Expr& expr);

} // namespace widefuse
