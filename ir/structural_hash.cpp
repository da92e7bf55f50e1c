#include "ir/structural_hash.h"

#include "ir/error.h"

#include <llvm/ADT/DenseMap.h>

#include <bit>
#include <cstring>

namespace widefuse {
namespace {

// Token tags keep different kinds of entries from colliding in the sequence.
enum Tag : uint64_t {
  kInputTag = 1ull << 56,
  kConstantTag = 2ull << 56,
  kExprTag = 3ull << 56,
  kAliasTag = 4ull << 56,
  kOutputTag = 5ull << 56,
  kReferenceTag = 6ull << 56,
  kContributionTag = 7ull << 56,
};

uint64_t constantBits(const ConstantValue& constant) {
  if (const bool* b = std::get_if<bool>(&constant))
    return *b;
  if (const int64_t* i = std::get_if<int64_t>(&constant))
    return uint64_t(*i);
  return std::bit_cast<uint64_t>(std::get<double>(constant));
}

class KeyBuilder {
public:
  KeyBuilder(const StructuralKeyOptions& options) : options_(options) {}

  StructuralKey build(const Subgraph& subgraph) {
    for (const Value* input : subgraph.inputs)
      addInput(*input);
    for (const Expr* expr : subgraph.exprs)
      addExpr(*expr);
    for (const Alias& alias : subgraph.aliases) {
      key_.append(kAliasTag);
      reference(alias.source);
      reference(alias.destination);
    }
    for (const Value* output : subgraph.outputs) {
      key_.append(kOutputTag);
      reference(output);
    }
    for (auto [reduction, operand] : subgraph.contributions) {
      key_.append(kContributionTag | uint64_t(reduction->op()) << 8 |
                  uint64_t(reduction->result()->dtype()));
      key_.append(uint64_t(reduction->attributes().reduction));
      // Rows: the reduced dimension counted from the end (ranks may differ within a class).
      if (reduction->attributes().reduction == ReductionScope::Rows)
        key_.append(uint64_t(reduction->operand(0)->rank() - 1 - reduction->attributes().dim));
      key_.append(uint64_t(reduction->attributes().block));
      reference(reduction->operand(operand));
    }
    return std::move(key_);
  }

private:
  void addInput(const Value& input) {
    positions_[&input] = next_++;
    key_.append(kInputTag | uint64_t(input.kind()) << 8 | uint64_t(input.dtype()));
    // Without ranks, a 0-d input (read by every element) must still differ from a full one.
    key_.append(options_.includeRanks ? input.rank() : uint64_t(input.rank() > 0));
    if (options_.includeExtents)
      for (int64_t extent : input.extents())
        key_.append(uint64_t(extent));
    for (int64_t order : input.layout().strideOrder)
      key_.append(uint64_t(order));
    for (bool contiguous : input.layout().contiguity)
      key_.append(contiguous);
  }

  void addExpr(const Expr& expr) {
    key_.append(kExprTag | uint64_t(expr.op()) << 8 | uint64_t(expr.result()->dtype()));
    for (const Value* operand : expr.operands())
      reference(operand);
    const OpAttributes& attributes = expr.attributes();
    key_.append(uint64_t(attributes.targetType));
    key_.append(attributes.broadcastDims.size());
    for (int64_t dim : attributes.broadcastDims)
      key_.append(uint64_t(dim));
    key_.append(attributes.broadcastShape.size());
    if (options_.includeExtents)
      for (int64_t extent : attributes.broadcastShape)
        key_.append(uint64_t(extent));
    // Which tensor an extent value names only changes run-time shapes, never the kernel.
    for (const Value* extent : attributes.broadcastExtents)
      key_.append(extent != nullptr);
    key_.append(uint64_t(attributes.dim));
    key_.append(uint64_t(attributes.reduction));
    key_.append(uint64_t(attributes.block));
    key_.append(uint64_t(attributes.codebook));
    if (isReduction(expr.op())) // the one op whose operand count varies
      key_.append(expr.operands().size());
    positions_[expr.result()] = next_++;
  }

  void reference(const Value* value) {
    if (value->isConstant()) {
      key_.append(kConstantTag | uint64_t(value->isWeak()) << 8 | uint64_t(value->dtype()));
      if (options_.includeConstantValues)
        key_.append(constantBits(*value->constant()));
      return;
    }
    auto it = positions_.find(value);
    WF_ASSERT(it != positions_.end(), "'{}' is used but not part of the subgraph", value->name());
    key_.append(kReferenceTag | it->second);
  }

  const StructuralKeyOptions& options_;
  StructuralKey key_;
  llvm::DenseMap<const Value*, uint64_t> positions_;
  uint64_t next_ = 0;
};

} // namespace

uint64_t StructuralKey::hash() const {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint64_t token : tokens_)
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (token >> (8 * byte)) & 0xff;
      hash *= 0x100000001b3ull;
    }
  return hash;
}

StructuralKey structuralKey(const Subgraph& subgraph, const StructuralKeyOptions& options) {
  return KeyBuilder(options).build(subgraph);
}

StructuralKey structuralKey(const Fusion& fusion, const StructuralKeyOptions& options) {
  std::vector<const Value*> inputs(fusion.inputs().begin(), fusion.inputs().end());
  llvm::ArrayRef<Expr*> exprList = fusion.exprList();
  std::vector<const Expr*> exprs(exprList.begin(), exprList.end());
  std::vector<const Value*> outputs(fusion.outputs().begin(), fusion.outputs().end());
  return structuralKey(Subgraph{inputs, exprs, fusion.aliases(), outputs}, options);
}

} // namespace widefuse
