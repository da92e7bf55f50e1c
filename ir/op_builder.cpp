#include "ir/op_builder.h"

#include "ir/error.h"
#include "ir/extent_expression.h"
#include "ir/host_tensor.h"
#include "ir/reduction.h"
#include "ir/type_promotion.h"

#include <fmt/format.h>

#include <algorithm>

namespace widefuse {
namespace {

std::string describeCall(OpKind op, llvm::ArrayRef<const Value*> operands) {
  std::string text = opName(op).str() + "(";
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i)
      text += ", ";
    const Value* v = operands[i];
    text += v->isConstant() ? formatConstant(*v->constant()) : v->name();
    text += ": " + formatType(*v);
  }
  return text + ")";
}

bool allOperands(llvm::ArrayRef<const Value*> operands, bool (*predicate)(DataType)) {
  return std::all_of(operands.begin(), operands.end(),
                     [&](const Value* v) { return predicate(v->dtype()); });
}

bool isIntegerOrBool(DataType type) {
  return isInteger(type) || type == DataType::Bool;
}

/// code_value: an integer code, f32 result; nearest_code: an f32 value, u8 result; both with
/// a codebook.
template <typename Reject>
DataType codebookResultType(OpKind op, DataType operand, const OpAttributes& attributes,
                            Reject reject) {
  if (attributes.codebook == Codebook::None)
    return reject(fmt::format("{} needs a codebook ({})", opName(op).str(), codebookNames()));
  if (op == OpKind::CodeValue) {
    if (!isInteger(operand))
      return reject(
          fmt::format("code_value takes an integer code, not {}", shortName(operand).str()));
    return DataType::Float;
  }
  if (operand != DataType::Float)
    return reject(fmt::format("nearest_code takes an f32 value, not {} (cast it first)",
                              shortName(operand).str()));
  return DataType::UInt8;
}

/// Result data type under the op's typing rule; throws for operands the op rejects.
DataType inferDataType(OpKind op, llvm::ArrayRef<const Value*> operands,
                       const OpAttributes& attributes) {
  auto reject = [&](llvm::StringRef why) -> DataType {
    fail("{}: {}", describeCall(op, operands), why.str());
  };
  DataType promoted = promoteOperandTypes(operands);
  bool complexOperand = std::any_of(operands.begin(), operands.end(),
                                    [](const Value* v) { return isComplex(v->dtype()); });
  if (complexOperand && !acceptsComplex(op))
    return reject(fmt::format("{} is not defined for complex operands (docs/ir_reference.md lists "
                              "the ops that are; real() and imag() give the parts)",
                              opName(op).str()));
  switch (opTypeRule(op)) {
  case TypeRule::Arithmetic:
    if (promoted == DataType::Bool && op != OpKind::Maximum && op != OpKind::Minimum)
      return reject(fmt::format("{} is not defined for bool operands (use the logical_ or "
                                "bitwise_ ops, or cast first)",
                                opName(op).str()));
    if (op == OpKind::Abs && isComplex(promoted))
      return complexPartType(promoted); // the magnitude
    return promoted;
  case TypeRule::FloatMath:
  case TypeRule::TrueDivision:
    return isFloatingPoint(promoted) || isComplex(promoted) ? promoted : DataType::Float;
  case TypeRule::Predicate:
  case TypeRule::Comparison:
  case TypeRule::Logical:
    return DataType::Bool;
  case TypeRule::Bitwise:
    if (!allOperands(operands, isIntegerOrBool))
      return reject("bitwise ops take bool or integer operands (bitcast floats first)");
    return promoted;
  case TypeRule::Shift:
    if (!allOperands(operands, isInteger))
      return reject("shifts take integer operands");
    return promoted;
  case TypeRule::Integer:
    if (!allOperands(operands, isInteger))
      return reject(fmt::format("{} takes integer operands", opName(op).str()));
    return promoted;
  case TypeRule::Select:
    if (operands[0]->dtype() != DataType::Bool)
      // nvFuser's phrase first: tools written for nvFuser match on it.
      return reject("Condition should be of DataType Bool: the condition of where must be bool "
                    "(compare or cast it first)");
    return promoteOperandTypes(operands.drop_front(), operands[0]->isTensor());
  case TypeRule::FloatOnly:
    if (!allOperands(operands, isFloatingPoint))
      return reject(fmt::format("{} needs floating-point operands", opName(op).str()));
    return promoted;
  case TypeRule::SingleOrDouble:
    // An f16/bf16 result computed in f32 would step by an f32 ulp, not by its own.
    if (promoted != DataType::Float && promoted != DataType::Double)
      return reject(fmt::format("{} needs f32 or f64 operands (promoted type is {})",
                                opName(op).str(), shortName(promoted).str()));
    return promoted;
  case TypeRule::Identity:
  case TypeRule::Broadcast:
  case TypeRule::BlockExpansion:
    return operands[0]->dtype();
  case TypeRule::Position:
    return DataType::Int64;
  case TypeRule::Extent:
    if (!operands[0]->isTensor() || operands[0]->rank() == 0)
      return reject("size takes a tensor of rank >= 1");
    return DataType::Int64;
  case TypeRule::Cast:
    return attributes.targetType;
  case TypeRule::CodeLookup:
  case TypeRule::CodeSearch:
    return codebookResultType(op, operands[0]->dtype(), attributes, reject);
  case TypeRule::ComplexPart:
    if (op == OpKind::Imag && !isComplex(promoted))
      return reject("imag takes a complex operand (a real value has no imaginary part)");
    return complexPartType(operands[0]->dtype());
  case TypeRule::MakeComplex:
    if (promoted != DataType::Float && promoted != DataType::Double)
      return reject(fmt::format("complex takes f32 or f64 parts (promoted type is {}; cast them "
                                "first)",
                                shortName(promoted).str()));
    return complexTypeOf(promoted);
  case TypeRule::Bitcast: {
    DataType from = operands[0]->dtype(), to = attributes.targetType;
    if (from == DataType::Bool || to == DataType::Bool)
      return reject("bitcast does not take bool (use cast)");
    if (byteSize(from) != byteSize(to))
      return reject(fmt::format("bitcast to {} changes the width from {} to {} bytes",
                                shortName(to).str(), byteSize(from), byteSize(to)));
    return to;
  }
  case TypeRule::Reduction: // typed by inferReductionType, whose scopes need the attributes
    break;
  }
  WF_UNREACHABLE("unhandled type rule for {}", opName(op).str());
}

/// Joins the shapes of pointwise operands after implicitBroadcasts: 0-d tensors and scalars
/// broadcast, tensors of rank >= 1 must agree (a symbolic extent agrees with anything and is
/// checked at run time).
llvm::SmallVector<int64_t, 4> joinShapes(OpKind op, llvm::ArrayRef<const Value*> operands) {
  const Value* first = nullptr;
  llvm::SmallVector<int64_t, 4> extents;
  for (const Value* operand : operands) {
    if (!operand->isTensor() || operand->rank() == 0)
      continue;
    if (!first) {
      first = operand;
      extents.assign(operand->extents().begin(), operand->extents().end());
      continue;
    }
    bool same = operand->rank() == first->rank();
    for (unsigned d = 0; same && d < operand->rank(); ++d) {
      int64_t extent = operand->extents()[d];
      if (extent == kSymbolicExtent)
        continue;
      if (extents[d] == kSymbolicExtent)
        extents[d] = extent;
      else
        same = extents[d] == extent;
    }
    if (!same)
      fail("{}: shapes {} ('{}') and {} ('{}') do not broadcast: aligned at the last "
           "dimension, extents must be equal or 1 (a broadcast dimension)",
           describeCall(op, operands), formatExtents(first->extents()), first->name(),
           formatExtents(operand->extents()), operand->name());
  }
  return extents;
}

llvm::SmallVector<int64_t, 4> broadcastShape(llvm::ArrayRef<const Value*> operands,
                                             const OpAttributes& attributes) {
  const Value* input = operands[0];
  auto shape = attributes.broadcastShape;
  auto dims = attributes.broadcastDims;
  const auto& extents = attributes.broadcastExtents;
  std::string call = describeCall(OpKind::BroadcastInDim, operands) + " to " +
                     formatExtents(shape) + " with dims " + formatExtents(dims);
  // nvFuser's checks in nvFuser's order, with its phrases first (tools match them).
  if (shape.size() < input->rank())
    fail("{}: The new shape is expected to be greater-then-or-equal to the input. The output "
         "rank {} is smaller than the operand's rank {}",
         call, shape.size(), input->rank());
  if (dims.size() != input->rank())
    fail("{}: The broadcast dimensions should match the input dimensions. broadcast_dims needs "
         "one entry per operand dimension ({})",
         call, input->rank());
  if (!extents.empty() && extents.size() != shape.size())
    fail("{}: {} extent values for {} output dimensions", call, extents.size(), shape.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(shape.size()))
      fail("{}: Invalid broadcast_dims value. Broadcast dim {} is outside the output rank {}", call,
           dims[i], shape.size());
    if (i > 0 && dims[i] <= dims[i - 1])
      fail("{}: broadcast_dims must be strictly increasing", call);
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    auto mapped = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d));
    int64_t inputExtent =
        mapped == dims.end() ? 1 : input->extents()[std::distance(dims.begin(), mapped)];
    if (shape[d] < kSymbolicExtent)
      fail("{}: output extent {} is negative", call, shape[d]);
    if (!extents.empty() && extents[d]) {
      std::string context = fmt::format("{}: output extent {}", call, d);
      checkExtentExpression(*extents[d], context);
      std::optional<int64_t> known = evaluateExtent(*extents[d], staticExtentLeaf, context);
      if (known && *known < 0)
        fail("{} is '{}', which is {}: an extent cannot be negative", context, extents[d]->name(),
             *known);
      if (shape[d] != kSymbolicExtent && known && shape[d] != *known)
        fail("{} is given as {} and as '{}', which is {}", context, shape[d], extents[d]->name(),
             *known);
      if (shape[d] == kSymbolicExtent && known)
        shape[d] = *known;
      // A static operand extent other than 1 decides; the named one is checked at run time.
      if (shape[d] == kSymbolicExtent && inputExtent != 1)
        shape[d] = inputExtent;
    } else if (shape[d] == kSymbolicExtent) {
      if (mapped == dims.end())
        fail("{}: output dimension {} is symbolic but no operand dimension maps to it (name "
             "its extent with size(tensor, dim))",
             call, d);
      shape[d] = inputExtent; // takes the operand's extent (possibly symbolic)
      continue;
    }
    if (inputExtent != kSymbolicExtent && inputExtent != 1 && shape[d] != kSymbolicExtent &&
        inputExtent != shape[d])
      fail("{}: operand extent {} cannot broadcast to {} in output dimension {}", call, inputExtent,
           shape[d], d);
  }
  return shape;
}

/// expand_blocks(x) to `shape` by blocks of B: each output extent a number or an extent value,
/// and x a rank-1 tensor of ceil(n / B) elements (checked at run time where symbolic).
llvm::SmallVector<int64_t, 4> expandBlocksShape(llvm::ArrayRef<const Value*> operands,
                                                const OpAttributes& attributes) {
  const Value& input = *operands[0];
  auto shape = attributes.broadcastShape;
  const auto& extents = attributes.broadcastExtents;
  std::string call =
      fmt::format("{} to {} with block={}", describeCall(OpKind::ExpandBlocks, operands),
                  formatExtents(shape), attributes.block);
  if (!input.isTensor() || input.rank() != 1)
    fail("{}: the operand must be a rank-1 tensor, one element per block", call);
  if (attributes.block < 1 || attributes.block > kMaxBlockElements ||
      (attributes.block & (attributes.block - 1)) != 0)
    fail("{}: a block has a power of two of elements from 1 to {}", call, kMaxBlockElements);
  if (!extents.empty() && extents.size() != shape.size())
    fail("{}: {} extent values for {} output dimensions", call, extents.size(), shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    const Value* extent = extents.empty() ? nullptr : extents[d];
    if (!extent) {
      if (shape[d] < 0)
        fail("{}: output extent {} must be a number >= 0 or an extent value", call, d);
      continue;
    }
    std::string context = fmt::format("{}: output extent {}", call, d);
    checkExtentExpression(*extent, context);
    std::optional<int64_t> known = evaluateExtent(*extent, staticExtentLeaf, context);
    if (known && *known < 0)
      fail("{} is '{}', which is {}: an extent cannot be negative", context, extent->name(),
           *known);
    shape[d] = known ? *known : kSymbolicExtent;
  }
  int64_t blocks = input.extents()[0];
  if (!llvm::is_contained(shape, kSymbolicExtent) && blocks != kSymbolicExtent &&
      blocks != blockCount(numElements(shape), attributes.block))
    fail("{}: {} elements are {} blocks, but the operand has {}", call, numElements(shape),
         blockCount(numElements(shape), attributes.block), blocks);
  return shape;
}

} // namespace

ValueType inferResultType(OpKind op, llvm::ArrayRef<const Value*> operands,
                          const OpAttributes& attributes) {
  if (isReduction(op))
    return inferReductionType(op, operands, attributes);
  if (operands.size() != opArity(op))
    fail("{} takes {} operand(s), got {}", opName(op).str(), opArity(op), operands.size());
  ValueType type;
  type.dtype = inferDataType(op, operands, attributes);
  if (op == OpKind::BroadcastInDim) {
    type.kind = ValueKind::Tensor;
    type.extents = broadcastShape(operands, attributes);
    return type;
  }
  if (op == OpKind::ExpandBlocks) {
    type.kind = ValueKind::Tensor;
    type.extents = expandBlocksShape(operands, attributes);
    return type;
  }
  if (op == OpKind::Size) {
    if (attributes.dim < 0 || attributes.dim >= int64_t(operands[0]->rank()))
      fail("{}: dim {} is outside the operand's rank {}", describeCall(op, operands),
           attributes.dim, operands[0]->rank());
    type.kind = ValueKind::Scalar;
    return type;
  }
  bool anyTensor =
      std::any_of(operands.begin(), operands.end(), [](const Value* v) { return v->isTensor(); });
  type.kind = anyTensor ? ValueKind::Tensor : ValueKind::Scalar;
  type.weak = !anyTensor && std::all_of(operands.begin(), operands.end(),
                                        [](const Value* v) { return v->isWeak(); });
  // A cast or bitcast of a literal gives it a definite type (set keeps it weak).
  if (opTypeRule(op) == TypeRule::Cast || opTypeRule(op) == TypeRule::Bitcast)
    type.weak = false;
  type.extents = joinShapes(op, operands);
  return type;
}

namespace {

/// Keeps only the attributes `op` reads, and of broadcast_in_dim's extent values only those
/// known at run time only (a static one is in the shape already), so that equal programs
/// have equal attributes.
void canonicalizeAttributes(OpKind op, OpAttributes& attributes) {
  if (opTypeRule(op) != TypeRule::Cast && opTypeRule(op) != TypeRule::Bitcast)
    attributes.targetType = DataType::Float;
  if (!isReduction(op))
    attributes.reduction = ReductionScope::None;
  if (op != OpKind::CodeValue && op != OpKind::NearestCode)
    attributes.codebook = Codebook::None;
  if (op != OpKind::Size && attributes.reduction != ReductionScope::Rows)
    attributes.dim = 0;
  if (op != OpKind::ExpandBlocks && attributes.reduction != ReductionScope::Block)
    attributes.block = 0;
  if (op == OpKind::ExpandBlocks)
    attributes.broadcastDims.clear();
  else if (op != OpKind::BroadcastInDim) {
    attributes.broadcastShape.clear();
    attributes.broadcastDims.clear();
    attributes.broadcastExtents.clear();
    return;
  }
  for (size_t d = 0; d < attributes.broadcastExtents.size(); ++d) {
    const Value*& extent = attributes.broadcastExtents[d];
    if (!extent) // inferResultType accepted the others as extent expressions
      continue;
    if (std::optional<int64_t> known = evaluateExtent(*extent, staticExtentLeaf, "")) {
      attributes.broadcastShape[d] = *known;
      extent = nullptr;
    }
  }
  if (llvm::all_of(attributes.broadcastExtents, [](const Value* v) { return !v; }))
    attributes.broadcastExtents.clear();
}

/// The common shape of pointwise operands under nvFuser's implicit broadcasting (operands
/// aligned at their last dimension): per dimension a static extent other than 1 if any
/// operand has one, else `?` if one has it (`source` names that operand and dimension), else 1.
struct BroadcastTarget {
  llvm::SmallVector<int64_t, 4> extents;
  llvm::SmallVector<std::pair<Value*, int64_t>, 4> source;
  bool conflict = false; ///< two static extents other than 1 differ
};

BroadcastTarget broadcastTarget(llvm::ArrayRef<Value*> operands) {
  BroadcastTarget target;
  unsigned rank = 0;
  for (const Value* operand : operands)
    rank = std::max(rank, operand->isTensor() ? operand->rank() : 0u);
  target.extents.assign(rank, 1);
  target.source.assign(rank, {nullptr, 0});
  for (Value* operand : operands) {
    if (!operand->isTensor())
      continue;
    unsigned offset = rank - operand->rank();
    for (unsigned d = 0; d < operand->rank(); ++d) {
      int64_t extent = operand->extents()[d], &joined = target.extents[offset + d];
      if (extent == kSymbolicExtent && joined == 1) {
        joined = kSymbolicExtent;
        target.source[offset + d] = {operand, int64_t(d)};
      } else if (extent != kSymbolicExtent && extent != 1 &&
                 (joined == 1 || joined == kSymbolicExtent)) {
        joined = extent;
      } else if (extent != kSymbolicExtent && extent != 1 && joined != extent) {
        target.conflict = true;
      }
    }
  }
  return target;
}

/// `operand` broadcast to `target` with an explicit broadcast_in_dim, or itself when it has
/// the target's rank and no extent-1 dimension that must stretch.
Value* broadcastOperand(Fusion& fusion, Value* operand, const BroadcastTarget& target) {
  unsigned rank = unsigned(target.extents.size()), offset = rank - operand->rank();
  bool stretches = offset > 0;
  for (unsigned d = 0; d < operand->rank(); ++d)
    stretches |= operand->extents()[d] == 1 && target.extents[offset + d] != 1;
  if (!stretches)
    return operand;
  OpAttributes attributes;
  attributes.implicit = true;
  attributes.broadcastShape = target.extents;
  attributes.broadcastExtents.assign(rank, nullptr);
  for (unsigned d = 0; d < operand->rank(); ++d)
    attributes.broadcastDims.push_back(offset + d);
  for (unsigned t = 0; t < rank; ++t) {
    bool own = t >= offset && operand->extents()[t - offset] == kSymbolicExtent;
    if (target.extents[t] != kSymbolicExtent || own)
      continue;
    OpAttributes sizeAttributes;
    sizeAttributes.dim = target.source[t].second;
    sizeAttributes.implicit = true;
    attributes.broadcastExtents[t] =
        buildOp(fusion, OpKind::Size, {target.source[t].first}, sizeAttributes);
  }
  return buildOp(fusion, OpKind::BroadcastInDim, {operand}, std::move(attributes));
}

} // namespace

llvm::SmallVector<Value*, 3> implicitBroadcasts(Fusion& fusion, llvm::ArrayRef<Value*> operands) {
  llvm::SmallVector<Value*, 3> result(operands.begin(), operands.end());
  unsigned tensors = 0;
  for (const Value* operand : operands)
    tensors += operand->isTensor() && operand->rank() > 0;
  if (tensors < 2)
    return result;
  BroadcastTarget target = broadcastTarget(operands);
  if (target.conflict) // joinShapes reports it, naming the operands as written
    return result;
  for (Value*& operand : result)
    if (operand->isTensor() && operand->rank() > 0)
      operand = broadcastOperand(fusion, operand, target);
  return result;
}

void addBroadcastingAlias(Fusion& fusion, Value* source, Value* destination) {
  if (source->isTensor() && source->rank() > 0 && destination->isTensor() &&
      destination->rank() >= source->rank()) {
    BroadcastTarget target = broadcastTarget({source, destination});
    bool destinationStretches = target.conflict;
    for (size_t d = 0; d < destination->rank(); ++d)
      destinationStretches |= destination->extents()[d] == 1 && target.extents[d] != 1;
    if (!destinationStretches) // else addAlias reports the shapes as written
      source = broadcastOperand(fusion, source, target);
  }
  fusion.addAlias(source, destination);
}

Value* buildOp(Fusion& fusion, OpKind op, llvm::ArrayRef<Value*> operands, OpAttributes attributes,
               llvm::StringRef name) {
  for (Value* operand : operands)
    if (!fusion.owns(operand))
      fail("{}: operand '{}' belongs to another fusion than '{}'", opName(op).str(),
           operand->name(), fusion.name());
  for (const Value* extent : attributes.broadcastExtents)
    if (extent && !fusion.owns(extent))
      fail("{}: extent '{}' belongs to another fusion than '{}'", opName(op).str(), extent->name(),
           fusion.name());
  if (!isReduction(op) && operands.size() != opArity(op))
    fail("{} takes {} operand(s), got {}", opName(op).str(), opArity(op), operands.size());
  llvm::SmallVector<Value*, 3> broadcast(operands.begin(), operands.end());
  if (op != OpKind::BroadcastInDim && op != OpKind::ExpandBlocks && op != OpKind::Size &&
      !isReduction(op)) {
    // Check the operands as given first, so a type error names what the caller wrote.
    llvm::SmallVector<const Value*, 3> given(operands.begin(), operands.end());
    inferDataType(op, given, attributes);
    broadcast = implicitBroadcasts(fusion, operands);
  }
  llvm::SmallVector<const Value*, 3> constOperands(broadcast.begin(), broadcast.end());
  ValueType type = inferResultType(op, constOperands, attributes);
  canonicalizeAttributes(op, attributes);
  return fusion.appendExpr(op, broadcast, std::move(attributes), type, name);
}

DataType exprComputeType(const Expr& expr) {
  switch (opTypeRule(expr.op())) {
  case TypeRule::Comparison: {
    llvm::SmallVector<const Value*, 3> operands(expr.operands().begin(), expr.operands().end());
    return computeType(promoteOperandTypes(operands));
  }
  case TypeRule::Predicate:
  case TypeRule::ComplexPart:
    return computeType(expr.operand(0)->dtype());
  case TypeRule::MakeComplex:
    return complexPartType(expr.result()->dtype());
  case TypeRule::Logical:
    return DataType::Bool;
  case TypeRule::Reduction:
    return computeType(reductionAccumulatorType(expr.op(), expr.result()->dtype()));
  case TypeRule::Arithmetic: // abs of a complex value is real
    return computeType(expr.op() == OpKind::Abs ? expr.operand(0)->dtype()
                                                : expr.result()->dtype());
  default:
    return computeType(expr.result()->dtype());
  }
}

} // namespace widefuse
