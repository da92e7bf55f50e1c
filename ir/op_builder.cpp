#include "ir/op_builder.h"

#include "ir/error.h"
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

/// Result data type under the op's typing rule; throws for operands the op rejects.
DataType inferDataType(OpKind op, llvm::ArrayRef<const Value*> operands,
                       const OpAttributes& attributes) {
  auto reject = [&](llvm::StringRef why) -> DataType {
    fail("{}: {}", describeCall(op, operands), why.str());
  };
  DataType promoted = promoteOperandTypes(operands);
  switch (opTypeRule(op)) {
  case TypeRule::Arithmetic:
    if (promoted == DataType::Bool && op != OpKind::Maximum && op != OpKind::Minimum)
      return reject(fmt::format("{} is not defined for bool operands (use the logical_ or "
                                "bitwise_ ops, or cast first)",
                                opName(op).str()));
    return promoted;
  case TypeRule::FloatMath:
  case TypeRule::TrueDivision:
    return isFloatingPoint(promoted) ? promoted : DataType::Float;
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
      return reject("the condition of where must be bool (compare or cast it first)");
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
    return operands[0]->dtype();
  case TypeRule::Cast:
    return attributes.targetType;
  case TypeRule::Bitcast: {
    DataType from = operands[0]->dtype(), to = attributes.targetType;
    if (from == DataType::Bool || to == DataType::Bool)
      return reject("bitcast does not take bool (use cast)");
    if (byteSize(from) != byteSize(to))
      return reject(fmt::format("bitcast to {} changes the width from {} to {} bytes",
                                shortName(to).str(), byteSize(from), byteSize(to)));
    return to;
  }
  }
  WF_UNREACHABLE("unhandled type rule for {}", opName(op).str());
}

/// Joins the shapes of pointwise operands: 0-d tensors and scalars broadcast, tensors of rank
/// >= 1 must agree (a symbolic extent agrees with anything and is checked at run time).
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
      fail("{}: shapes {} ('{}') and {} ('{}') differ; pointwise ops need one shape, use "
           "broadcast_in_dim to broadcast explicitly",
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
  std::string call = describeCall(OpKind::BroadcastInDim, operands) + " to " +
                     formatExtents(shape) + " with dims " + formatExtents(dims);
  if (dims.size() != input->rank())
    fail("{}: broadcast_dims needs one entry per operand dimension ({})", call, input->rank());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(shape.size()))
      fail("{}: broadcast dim {} is outside the output rank {}", call, dims[i], shape.size());
    if (i > 0 && dims[i] <= dims[i - 1])
      fail("{}: broadcast_dims must be strictly increasing", call);
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    auto mapped = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d));
    int64_t inputExtent =
        mapped == dims.end() ? 1 : input->extents()[std::distance(dims.begin(), mapped)];
    if (shape[d] < kSymbolicExtent)
      fail("{}: output extent {} is negative", call, shape[d]);
    if (shape[d] == kSymbolicExtent) {
      if (mapped == dims.end())
        fail("{}: output dimension {} is symbolic but no operand dimension maps to it", call, d);
      shape[d] = inputExtent; // takes the operand's extent (possibly symbolic)
      continue;
    }
    if (inputExtent != kSymbolicExtent && inputExtent != 1 && inputExtent != shape[d])
      fail("{}: operand extent {} cannot broadcast to {} in output dimension {}", call, inputExtent,
           shape[d], d);
  }
  return shape;
}

} // namespace

ValueType inferResultType(OpKind op, llvm::ArrayRef<const Value*> operands,
                          const OpAttributes& attributes) {
  if (operands.size() != opArity(op))
    fail("{} takes {} operand(s), got {}", opName(op).str(), opArity(op), operands.size());
  ValueType type;
  type.dtype = inferDataType(op, operands, attributes);
  if (op == OpKind::BroadcastInDim) {
    type.kind = ValueKind::Tensor;
    type.extents = broadcastShape(operands, attributes);
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

Value* buildOp(Fusion& fusion, OpKind op, llvm::ArrayRef<Value*> operands, OpAttributes attributes,
               llvm::StringRef name) {
  for (Value* operand : operands)
    if (!fusion.owns(operand))
      fail("{}: operand '{}' belongs to another fusion than '{}'", opName(op).str(),
           operand->name(), fusion.name());
  llvm::SmallVector<const Value*, 3> constOperands(operands.begin(), operands.end());
  ValueType type = inferResultType(op, constOperands, attributes);
  if (opTypeRule(op) != TypeRule::Cast && opTypeRule(op) != TypeRule::Bitcast)
    attributes.targetType = DataType::Float; // keep unused attributes canonical
  if (op != OpKind::BroadcastInDim) {
    attributes.broadcastShape.clear();
    attributes.broadcastDims.clear();
  }
  return fusion.appendExpr(op, operands, std::move(attributes), type, name);
}

DataType exprComputeType(const Expr& expr) {
  switch (opTypeRule(expr.op())) {
  case TypeRule::Comparison: {
    llvm::SmallVector<const Value*, 3> operands(expr.operands().begin(), expr.operands().end());
    return computeType(promoteOperandTypes(operands));
  }
  case TypeRule::Predicate:
    return computeType(expr.operand(0)->dtype());
  case TypeRule::Logical:
    return DataType::Bool;
  default:
    return computeType(expr.result()->dtype());
  }
}

} // namespace widefuse
