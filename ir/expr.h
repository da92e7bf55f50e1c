#pragma once
/// Expressions of the IR: one op applied to value operands, defining one result value.

#include "ir/codebook.h"
#include "ir/data_type.h"
#include "ir/op_kind.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <cstdint>
#include <memory>

namespace widefuse {

class Value;

/// Which elements of a reduction's operands give one result (docs/reductions.md §2).
enum class ReductionScope : uint8_t {
  None,   ///< not a reduction
  Tensor, ///< every element of one operand: a 0-d result
  Global, ///< every element of two or more operands: one 0-d result
  Rows,   ///< per row of dimension `OpAttributes::dim`: the operand's shape without it
  Block,  ///< per block of `OpAttributes::block` elements in logical order: `[ceil(n / B)]`,
          ///< readable in the kernel that computes it
};

/// Attributes that some ops carry besides their value operands.
struct OpAttributes {
  /// Target type of cast and bitcast.
  DataType targetType = DataType::Float;
  /// Output shape of broadcast_in_dim.
  llvm::SmallVector<int64_t, 4> broadcastShape;
  /// broadcast_in_dim: output dimension each operand dimension maps to.
  llvm::SmallVector<int64_t, 4> broadcastDims;
  /// broadcast_in_dim: per output dimension, the `size` value whose run-time extent that
  /// dimension takes (null where the extent is static or comes from the operand). Empty when
  /// no dimension has one, so that attributes stay canonical.
  llvm::SmallVector<const Value*, 4> broadcastExtents;
  /// size: the operand dimension whose extent the result is; a rows reduction: the dimension
  /// it reduces.
  int64_t dim = 0;
  /// Reductions: the scope; None on every other op.
  ReductionScope reduction = ReductionScope::None;
  /// Block-scope reductions and expand_blocks: B, the elements of one block (a power of two,
  /// at most kMaxBlockElements); 0 on every other op.
  int64_t block = 0;
  /// code_value and nearest_code: the table of codes; None on every other op.
  Codebook codebook = Codebook::None;
  /// Inserted by implicit broadcasting (a size or broadcast_in_dim the caller did not write);
  /// nvFuser-style printing leaves it out, as the op that needs it inserts it again.
  bool implicit = false;

  bool operator==(const OpAttributes&) const = default;
};

/// One pointwise expression `result = op(operands...)`. Owned by its Fusion.
class Expr {
public:
  Expr(unsigned id, OpKind op, llvm::ArrayRef<Value*> operands, Value* result,
       OpAttributes attributes)
      : id_(id), op_(op), operands_(operands.begin(), operands.end()), result_(result) {
    if (!(attributes == noAttributes()))
      attributes_ = std::make_unique<const OpAttributes>(std::move(attributes));
  }

  /// Position in the fusion's expression list (a topological order).
  unsigned id() const { return id_; }
  OpKind op() const { return op_; }
  llvm::ArrayRef<Value*> operands() const { return operands_; }
  Value* operand(unsigned index) const { return operands_[index]; }
  Value* result() const { return result_; }
  const OpAttributes& attributes() const { return attributes_ ? *attributes_ : noAttributes(); }

private:
  /// The attributes of an op that has none (most of them).
  static const OpAttributes& noAttributes() {
    static const OpAttributes none;
    return none;
  }

  unsigned id_;
  OpKind op_;
  llvm::SmallVector<Value*, 3> operands_;
  Value* result_;
  /// Held apart, and only when not the default: a fusion of many parameters has millions of
  /// expressions, and a pointwise op's attributes would be most of its size.
  std::unique_ptr<const OpAttributes> attributes_;
};

} // namespace widefuse
