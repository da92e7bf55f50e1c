#pragma once
/// Reductions (sum max min any all): their scopes, result types and accumulators, shared by
/// the op builder, the verifier, the parser, run-time shapes and the evaluator
/// (docs/reductions.md).

#include "ir/expr.h"
#include "ir/fusion.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <optional>

namespace widefuse {

/// True for a value a reduction defines.
bool isReductionResult(const Value& value);

/// True for a reduction whose result only later phases read: every scope but Block, whose
/// result the kernel computing it reads (docs/reductions.md §2).
bool isPhaseReduction(const Expr& expr);

/// True for a value a phase reduction defines: kernels of later phases read it from memory.
bool isPhaseReductionResult(const Value& value);

/// True for a value a block-scope reduction defines.
bool isBlockReductionResult(const Value& value);

/// True when an expression of the fusion is a reduction.
bool hasReductions(const Fusion& fusion);

/// The attributes of `op(operands)` reducing `dims`, as every frontend spells it: no list
/// is the tensor scope for one operand and the global scope for several; `[d]` is rows of
/// dimension `d` (the innermost, or one followed by static 1s); a list of every dimension is
/// the tensor scope. Throws Error naming the call for anything else (an empty list, a
/// non-innermost dimension, negative or repeated dimensions, a list with several operands).
OpAttributes reductionAttributes(OpKind op, llvm::ArrayRef<const Value*> operands,
                                 std::optional<llvm::ArrayRef<int64_t>> dims);

/// The most elements one block of a block-scope reduction may have: a thread block's chunk,
/// so that the kernel computing it can read it after a block barrier.
inline constexpr int64_t kMaxBlockElements = 1024;

/// The attributes of `op(x)` over each block of `block` consecutive elements of `x` in
/// logical order (scope Block). Throws Error naming the call unless there is one tensor
/// operand and `block` is a power of two up to kMaxBlockElements.
OpAttributes blockReductionAttributes(OpKind op, llvm::ArrayRef<const Value*> operands,
                                      int64_t block);

/// The blocks of `block` elements that cover `elements`: ceil(elements / block).
int64_t blockCount(int64_t elements, int64_t block);

/// The type of `op(operands)` under the scope in `attributes`. Throws Error naming the call
/// when an operand is a scalar, the scope does not fit the operands, a dtype is refused, or a
/// max/min has zero elements to combine by its static extents.
ValueType inferReductionType(OpKind op, llvm::ArrayRef<const Value*> operands,
                             const OpAttributes& attributes);

/// The type a reduction combines in: i64 for sums of integers and bool (wrapping), f32 for
/// sums of narrow floats and f32, f64 for f64; max/min combine in their result type, any/all
/// in b8. `resultType` is the reduction's result dtype.
DataType reductionAccumulatorType(OpKind op, DataType resultType);

/// The run-time shape of a reduction's result from its operand's run-time shape.
llvm::SmallVector<int64_t, 4> reductionResultShape(const OpAttributes& attributes,
                                                   llvm::ArrayRef<int64_t> operandShape);

/// Rows and row length of a rows reduction over `operandShape` (C = the extent of the reduced
/// dimension, R = the other elements).
struct RowCount {
  int64_t rows = 0;
  int64_t length = 0;
};
/// Rows and row length of a rows reduction of an operand of `operandShape`.
RowCount reductionRows(const OpAttributes& attributes, llvm::ArrayRef<int64_t> operandShape);

/// True when `op` over operands of these run-time shapes has no element to combine and no
/// value (max and min over zero elements, as torch's amax).
bool reductionHasNoValue(OpKind op, const OpAttributes& attributes,
                         llvm::ArrayRef<llvm::SmallVector<int64_t, 4>> operandShapes);

} // namespace widefuse
