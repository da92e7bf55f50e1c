#include "ir/reduction.h"

#include "ir/error.h"
#include "ir/host_tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace widefuse {
namespace {

/// `sum(x: f32[4, 8], [0])`: the call as the caller wrote it, for messages.
std::string describeReduction(OpKind op, llvm::ArrayRef<const Value*> operands,
                              std::optional<llvm::ArrayRef<int64_t>> dims) {
  std::vector<std::string> arguments;
  for (const Value* v : operands)
    arguments.push_back((v->isConstant() ? formatConstant(*v->constant()) : v->name()) + ": " +
                        formatType(*v));
  if (dims)
    arguments.push_back(fmt::format("[{}]", fmt::join(*dims, ", ")));
  return fmt::format("{}({})", opName(op).str(), fmt::join(arguments, ", "));
}

std::optional<llvm::ArrayRef<int64_t>> writtenDims(const OpAttributes& attributes,
                                                   llvm::SmallVector<int64_t, 1>& storage) {
  if (attributes.reduction != ReductionScope::Rows)
    return std::nullopt;
  storage.assign(1, attributes.dim);
  return llvm::ArrayRef<int64_t>(storage);
}

/// `max(x: f32[4, 8], block=256)`: a block-scope call as the text form writes it.
std::string describeBlockReduction(OpKind op, llvm::ArrayRef<const Value*> operands,
                                   int64_t block) {
  std::string call = describeReduction(op, operands, std::nullopt);
  call.insert(call.size() - 1, fmt::format(", block={}", block));
  return call;
}

bool isBlockSize(int64_t block) {
  return block >= 1 && block <= kMaxBlockElements && (block & (block - 1)) == 0;
}

bool staticOne(const Value& operand, size_t from) {
  auto extents = operand.extents();
  return std::all_of(extents.begin() + from, extents.end(), [](int64_t e) { return e == 1; });
}

/// The promoted dtype of every operand alike, whatever its rank (no priority groups).
DataType promotedDataType(llvm::ArrayRef<const Value*> operands) {
  DataType promoted = operands[0]->dtype();
  for (const Value* operand : operands.drop_front())
    promoted = promoteTypes(promoted, operand->dtype());
  return promoted;
}

/// The number of elements, or nullopt when an extent is symbolic.
std::optional<int64_t> staticElements(llvm::ArrayRef<int64_t> extents) {
  if (llvm::is_contained(extents, kSymbolicExtent))
    return std::nullopt;
  return numElements(extents);
}

/// Max and min of zero elements fail when added if the static extents show it; symbolic
/// ones are checked by the run's shape step.
void checkHasValue(OpKind op, llvm::ArrayRef<const Value*> operands, const OpAttributes& attributes,
                   const std::string& call) {
  // Zero blocks are an empty result, as zero rows are: nothing has no value.
  if ((op != OpKind::Max && op != OpKind::Min) || attributes.reduction == ReductionScope::Block)
    return;
  bool empty = false;
  if (attributes.reduction == ReductionScope::Rows) {
    auto extents = operands[0]->extents();
    llvm::SmallVector<int64_t, 4> others(extents.begin(), extents.end());
    others.erase(others.begin() + attributes.dim);
    std::optional<int64_t> rows = staticElements(others);
    empty = extents[attributes.dim] == 0 && rows && *rows > 0;
  } else {
    empty = std::all_of(operands.begin(), operands.end(), [](const Value* v) {
      std::optional<int64_t> count = staticElements(v->extents());
      return count && *count == 0;
    });
  }
  if (empty)
    fail("{}: {} over zero elements has no value (torch raises too)", call, opName(op).str());
}

} // namespace

bool isReductionResult(const Value& value) {
  return value.definition() && isReduction(value.definition()->op());
}

bool isPhaseReduction(const Expr& expr) {
  return isReduction(expr.op()) && expr.attributes().reduction != ReductionScope::Block;
}

bool isPhaseReductionResult(const Value& value) {
  return value.definition() && isPhaseReduction(*value.definition());
}

bool isBlockReductionResult(const Value& value) {
  return value.definition() && value.definition()->attributes().reduction == ReductionScope::Block;
}

bool hasReductions(const Fusion& fusion) {
  return llvm::any_of(fusion.exprList(), [](const Expr* expr) { return isReduction(expr->op()); });
}

OpAttributes reductionAttributes(OpKind op, llvm::ArrayRef<const Value*> operands,
                                 std::optional<llvm::ArrayRef<int64_t>> dims) {
  std::string call = describeReduction(op, operands, dims);
  OpAttributes attributes;
  if (operands.empty())
    fail("{}: a reduction takes one or more tensors", call);
  if (!dims) {
    attributes.reduction = operands.size() == 1 ? ReductionScope::Tensor : ReductionScope::Global;
    return attributes;
  }
  if (operands.size() != 1)
    fail("{}: a reduction over rows takes one operand", call);
  if (dims->empty())
    fail("{}: name the dimensions to reduce, or write {}(x)", call, opName(op).str());
  const Value& x = *operands[0];
  if (!x.isTensor())
    fail("{}: reductions take tensors; '{}' is a scalar", call, x.name());
  llvm::SmallVector<int64_t, 4> sorted(dims->begin(), dims->end());
  llvm::sort(sorted);
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= int64_t(x.rank()))
      fail("{}: dimension {} is outside the operand's rank {}", call, sorted[i], x.rank());
    if (i > 0 && sorted[i] == sorted[i - 1])
      fail("{}: dimension {} is named twice", call, sorted[i]);
  }
  if (sorted.size() == x.rank()) {
    attributes.reduction = ReductionScope::Tensor;
    return attributes;
  }
  if (sorted.size() == 1 && x.rank() >= 2 && staticOne(x, size_t(sorted[0]) + 1)) {
    attributes.reduction = ReductionScope::Rows;
    attributes.dim = sorted[0];
    return attributes;
  }
  fail("{}: reducing dimension{} {} is not supported: only every dimension ({}(x)) or the "
       "innermost one ([{}])",
       call, sorted.size() == 1 ? "" : "s", fmt::join(sorted, ", "), opName(op).str(),
       x.rank() - 1);
}

OpAttributes blockReductionAttributes(OpKind op, llvm::ArrayRef<const Value*> operands,
                                      int64_t block) {
  std::string call = describeBlockReduction(op, operands, block);
  if (operands.size() != 1)
    fail("{}: a reduction over blocks takes one operand", call);
  if (!operands[0]->isTensor())
    fail("{}: reductions take tensors; '{}' is a scalar", call, operands[0]->name());
  if (!isBlockSize(block))
    fail("{}: a block has a power of two of elements from 1 to {}", call, kMaxBlockElements);
  OpAttributes attributes;
  attributes.reduction = ReductionScope::Block;
  attributes.block = block;
  return attributes;
}

int64_t blockCount(int64_t elements, int64_t block) {
  return elements / block + (elements % block != 0);
}

ValueType inferReductionType(OpKind op, llvm::ArrayRef<const Value*> operands,
                             const OpAttributes& attributes) {
  llvm::SmallVector<int64_t, 1> storage;
  std::string call = attributes.reduction == ReductionScope::Block
                         ? describeBlockReduction(op, operands, attributes.block)
                         : describeReduction(op, operands, writtenDims(attributes, storage));
  if (operands.empty())
    fail("{}: a reduction takes one or more tensors", call);
  for (const Value* operand : operands)
    if (!operand->isTensor())
      fail("{}: reductions take tensors; '{}' is a scalar", call,
           operand->isConstant() ? formatConstant(*operand->constant()) : operand->name());
  switch (attributes.reduction) {
  case ReductionScope::None:
    fail("{}: a reduction needs a scope", call);
  case ReductionScope::Tensor:
    if (operands.size() != 1)
      fail("{}: scope tensor takes one operand", call);
    break;
  case ReductionScope::Global:
    if (operands.size() < 2)
      fail("{}: scope global takes two or more operands", call);
    break;
  case ReductionScope::Rows:
    if (operands.size() != 1 || operands[0]->rank() < 2)
      fail("{}: scope rows needs one operand of rank >= 2", call);
    if (attributes.dim < 0 || attributes.dim >= int64_t(operands[0]->rank()) ||
        !staticOne(*operands[0], size_t(attributes.dim) + 1))
      fail("{}: scope rows reduces the innermost dimension, or one followed by static 1s", call);
    break;
  case ReductionScope::Block:
    if (operands.size() != 1)
      fail("{}: scope block takes one operand", call);
    if (!isBlockSize(attributes.block))
      fail("{}: a block has a power of two of elements from 1 to {}", call, kMaxBlockElements);
    break;
  }
  DataType promoted = promotedDataType(operands);
  bool complexOperand =
      llvm::any_of(operands, [](const Value* v) { return isComplex(v->dtype()); });
  ValueType type;
  type.kind = ValueKind::Tensor;
  switch (op) {
  case OpKind::Sum:
    if (complexOperand)
      fail("{}: sum of complex operands is not supported yet", call);
    type.dtype = isFloatingPoint(promoted) ? promoted : DataType::Int64;
    break;
  case OpKind::Max:
  case OpKind::Min:
    if (complexOperand)
      fail("{}: {} is not defined for complex operands (complex numbers have no order)", call,
           opName(op).str());
    type.dtype = promoted;
    break;
  case OpKind::Any:
  case OpKind::All:
    type.dtype = DataType::Bool;
    break;
  default:
    WF_UNREACHABLE("{} is not a reduction", opName(op).str());
  }
  if (attributes.reduction == ReductionScope::Rows) {
    auto extents = operands[0]->extents();
    type.extents.assign(extents.begin(), extents.end());
    type.extents.erase(type.extents.begin() + attributes.dim);
  }
  if (attributes.reduction == ReductionScope::Block) {
    std::optional<int64_t> elements = staticElements(operands[0]->extents());
    type.extents.assign(1, elements ? blockCount(*elements, attributes.block) : kSymbolicExtent);
  }
  checkHasValue(op, operands, attributes, call);
  return type;
}

DataType reductionAccumulatorType(OpKind op, DataType resultType) {
  switch (op) {
  case OpKind::Sum:
    return isFloatingPoint(resultType)
               ? (resultType == DataType::Double ? DataType::Double : DataType::Float)
               : DataType::Int64;
  case OpKind::Any:
  case OpKind::All:
    return DataType::Bool;
  default:
    return resultType;
  }
}

llvm::SmallVector<int64_t, 4> reductionResultShape(const OpAttributes& attributes,
                                                   llvm::ArrayRef<int64_t> operandShape) {
  if (attributes.reduction == ReductionScope::Block)
    return {blockCount(numElements(operandShape), attributes.block)};
  if (attributes.reduction != ReductionScope::Rows)
    return {};
  llvm::SmallVector<int64_t, 4> shape(operandShape.begin(), operandShape.end());
  shape.erase(shape.begin() + attributes.dim);
  return shape;
}

RowCount reductionRows(const OpAttributes& attributes, llvm::ArrayRef<int64_t> operandShape) {
  RowCount count;
  count.length = operandShape[size_t(attributes.dim)];
  count.rows = numElements(reductionResultShape(attributes, operandShape));
  return count;
}

bool reductionHasNoValue(OpKind op, const OpAttributes& attributes,
                         llvm::ArrayRef<llvm::SmallVector<int64_t, 4>> operandShapes) {
  if ((op != OpKind::Max && op != OpKind::Min) || attributes.reduction == ReductionScope::Block)
    return false;
  if (attributes.reduction == ReductionScope::Rows) {
    RowCount count = reductionRows(attributes, operandShapes[0]);
    return count.length == 0 && count.rows > 0;
  }
  return llvm::all_of(operandShapes, [](const auto& shape) { return numElements(shape) == 0; });
}

} // namespace widefuse
