#pragma once
/// What the fuzzer draws of reductions (docs/reductions.md): the ops, the scopes,
/// and the rules that keep a drawn reduction valid and its value defined.

#include "ir/fusion_definition.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>

namespace widefuse::fuzz {

/// The reduction ops, every one drawn.
inline constexpr OpKind kReductionOps[] = {OpKind::Sum, OpKind::Max, OpKind::Min, OpKind::Any,
                                           OpKind::All};

/// The scopes the generator draws: the one place to add or drop a scope. All four run on
/// the host backend, and a component draws any mix of them (one body per way of reducing,
/// docs/segmenter.md §2.5). Kernels still refuse a reduction of a value computed from a block
/// result ("a kernel body that reads by blocks reduces nothing else, so far"; two levels of
/// blocks likewise): once a component reads a block result, it draws no further reduction.
inline constexpr ReductionScope kFuzzedScopes[] = {ReductionScope::Tensor, ReductionScope::Global,
                                                   ReductionScope::Rows, ReductionScope::Block};

/// The blocks the generator draws for the block scope (powers of two up to kMaxBlockElements).
inline constexpr int64_t kFuzzedBlocks[] = {1, 2, 4, 32, 64, 256, 1024};

/// Whether reductions read 0-d operands. Not yet: kernels refuse them ("'t' reduces the 0-d
/// value 'x'; kernels reduce tensors of rank >= 1 only so far", segmenter/components.cpp;
/// regressions/zero_d_reduction_refused.wf), so a case drawing one would only count as
/// refused. Operands are then domain values and lower-rank values of rank >= 1; once kernels
/// take 0-d ones, set this.
inline constexpr bool kReduceZeroD = false;

/// One operand of a reduction being drawn, with its run-time shape (which the IR's extents
/// do not give where they are symbolic).
struct ReductionOperand {
  Val value;
  llvm::SmallVector<int64_t, 4> shape;
};

/// True when `op` takes operands of `dtype` (ir/reduction.cpp: sum, max and min refuse
/// complex ones; any and all take every dtype).
bool reductionTakes(OpKind op, DataType dtype);

/// Applies `op` with `scope` to `operands` (one for the tensor, rows and block scopes, rows
/// reducing the innermost dimension, blocks of `block` elements; two or more for global). Max and
/// min over operands without an element at run time have no value, and the reference would refuse
/// the whole case before writing anything (both backends fail alike, so nothing would be compared):
/// there the generator draws `sum` instead, which has the same dtype rules. Throws Error where the
/// typing rules refuse the operands. `substituted` is set when max/min became sum.
Val applyReduction(FusionDefinition& fd, OpKind op, ReductionScope scope,
                   llvm::ArrayRef<ReductionOperand> operands, bool& substituted, int64_t block = 0);

/// `result`, a block reduction's of a domain value, read at the domain's elements through
/// expand_blocks: its extents from the reduced value's size values where symbolic.
Val expandToDomain(FusionDefinition& fd, const Val& result);

/// A pointwise op of the table with two operands, reading `result` (a reduction's) beside
/// `other` in a random order: a value of a later phase. Copysign is left out, as it would
/// read the sign of a NaN the reduction produced (unspecified: docs/ir_reference.md
/// section 5). The op and the value, or nullopt when the typing rules refused every op
/// tried (each refusal counted in `rejected`).
std::optional<std::pair<OpKind, Val>> readReduction(FusionDefinition& fd, const Val& result,
                                                    const Val& other, std::mt19937_64& random,
                                                    uint64_t& rejected);

/// True when `fusion` has what the generator steers around: a reduction of a 0-d operand
/// (while kReduceZeroD is off). The reducer skips such candidates, which would take a
/// reduction to another failure than the one it reduces.
bool hasKnownReductionBug(const Fusion& fusion);

/// "sum/global": the op and scope of a drawn reduction, for the campaign's coverage figures.
std::string reductionForm(OpKind op, ReductionScope scope);

} // namespace widefuse::fuzz
