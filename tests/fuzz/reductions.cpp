#include "tests/fuzz/reductions.h"

#include "ir/error.h"
#include "ir/reduction.h"

#include <fmt/format.h>

#include <llvm/ADT/DenseSet.h>

#include <vector>

namespace widefuse::fuzz {

bool reductionTakes(OpKind op, DataType dtype) {
  return op == OpKind::Any || op == OpKind::All || !isComplex(dtype);
}

Val applyReduction(FusionDefinition& fd, OpKind op, ReductionScope scope,
                   llvm::ArrayRef<ReductionOperand> operands, bool& substituted, int64_t block) {
  substituted = false;
  llvm::SmallVector<const Value*, 4> values;
  llvm::SmallVector<Operand, 4> applied;
  llvm::SmallVector<llvm::SmallVector<int64_t, 4>, 4> shapes;
  for (const ReductionOperand& operand : operands) {
    values.push_back(operand.value.value());
    applied.push_back(operand.value);
    shapes.push_back(operand.shape);
  }
  if (scope == ReductionScope::Block) // blocks are never empty: max and min have a value
    return fd.apply(op, applied, blockReductionAttributes(op, values, block));
  std::optional<llvm::ArrayRef<int64_t>> dims;
  int64_t innermost[1] = {0};
  if (scope == ReductionScope::Rows) {
    if (operands.size() != 1 || operands[0].value.rank() < 2)
      throw InternalError("the fuzzer draws rows of one operand of rank >= 2");
    innermost[0] = int64_t(operands[0].value.rank()) - 1;
    dims = llvm::ArrayRef<int64_t>(innermost);
  } else if ((scope == ReductionScope::Global) != (operands.size() >= 2)) {
    throw InternalError("the fuzzer draws tensor scope of one operand, global of several");
  }
  OpAttributes attributes = reductionAttributes(op, values, dims);
  if (attributes.reduction != scope)
    throw InternalError(
        fmt::format("the fuzzer drew {} but built another scope", reductionForm(op, scope)));
  if (reductionHasNoValue(op, attributes, shapes)) {
    op = OpKind::Sum;
    substituted = true;
  }
  return fd.apply(op, applied, attributes);
}

Val expandToDomain(FusionDefinition& fd, const Val& result) {
  const Value* operand = result.value()->definition()->operand(0);
  OpAttributes attributes;
  attributes.block = result.value()->definition()->attributes().block;
  bool symbolic = false;
  for (size_t d = 0; d < operand->rank(); ++d) {
    int64_t extent = operand->extents()[d];
    attributes.broadcastShape.push_back(extent);
    attributes.broadcastExtents.push_back(nullptr);
    if (extent != kSymbolicExtent)
      continue;
    OpAttributes size;
    size.dim = int64_t(d);
    Val named = fd.apply(OpKind::Size, {Operand(Val(&fd, const_cast<Value*>(operand)))}, size);
    attributes.broadcastExtents.back() = named.value();
    symbolic = true;
  }
  if (!symbolic)
    attributes.broadcastExtents.clear();
  return fd.apply(OpKind::ExpandBlocks, {Operand(result)}, attributes);
}

std::optional<std::pair<OpKind, Val>> readReduction(FusionDefinition& fd, const Val& result,
                                                    const Val& other, std::mt19937_64& random,
                                                    uint64_t& rejected) {
  static const std::vector<OpKind> binaryOps = [] {
    std::vector<OpKind> ops;
    for (OpKind op : {
#define WF_OP(Enum, name, arity, rule) OpKind::Enum,
#include "ir/op_kinds.def"
         })
      if (opArity(op) == 2 && op != OpKind::Copysign)
        ops.push_back(op);
    return ops;
  }();
  for (int attempt = 0; attempt < 4; ++attempt) {
    OpKind op = binaryOps[random() % binaryOps.size()];
    bool resultFirst = random() % 2 == 0;
    try {
      Val value = fd.apply(
          op, {Operand(resultFirst ? result : other), Operand(resultFirst ? other : result)});
      return std::make_pair(op, value);
    } catch (const Error&) {
      ++rejected;
    }
  }
  return std::nullopt;
}

bool hasKnownReductionBug(const Fusion& fusion) {
  for (const Expr* expr : fusion.exprList())
    if (isReduction(expr->op()) && !kReduceZeroD)
      for (const Value* operand : expr->operands())
        if (operand->rank() == 0)
          return true;
  return false;
}

std::string reductionForm(OpKind op, ReductionScope scope) {
  const char* name = scope == ReductionScope::Tensor   ? "tensor"
                     : scope == ReductionScope::Global ? "global"
                     : scope == ReductionScope::Rows   ? "rows"
                     : scope == ReductionScope::Block  ? "block"
                                                       : "none";
  return fmt::format("{}/{}", opName(op).str(), name);
}

} // namespace widefuse::fuzz
