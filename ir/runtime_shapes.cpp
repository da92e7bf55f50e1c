#include "ir/runtime_shapes.h"

#include "ir/error.h"
#include "ir/extent_expression.h"
#include "ir/fusion.h"
#include "ir/host_tensor.h"
#include "ir/reduction.h"

namespace widefuse {
namespace {

llvm::SmallVector<int64_t, 4> pointwiseShape(const Expr& expr, const RuntimeShapes& shapes) {
  const Value* first = nullptr;
  for (const Value* operand : expr.operands()) {
    if (!operand->isTensor() || operand->rank() == 0)
      continue;
    if (!first) {
      first = operand;
      continue;
    }
    if (shapes.of(operand) != shapes.of(first))
      fail("{}: at run time '{}' has shape {} but '{}' has shape {}", expr.result()->name(),
           first->name(), formatExtents(shapes.of(first)), operand->name(),
           formatExtents(shapes.of(operand)));
  }
  return first ? shapes.of(first) : llvm::SmallVector<int64_t, 4>{};
}

llvm::SmallVector<int64_t, 4> broadcastShape(const Expr& expr, const RuntimeShapes& shapes,
                                             ExtentLeafValue leaf) {
  const auto& attributes = expr.attributes();
  llvm::SmallVector<int64_t, 4> shape = attributes.broadcastShape;
  const auto& operand = shapes.of(expr.operand(0));
  for (size_t d = 0; d < attributes.broadcastExtents.size(); ++d) {
    const Value* extent = attributes.broadcastExtents[d];
    if (!extent)
      continue;
    std::string context = fmt::format("{}: at run time output extent {}", expr.result()->name(), d);
    int64_t named = *evaluateExtent(*extent, leaf, context);
    if (named < 0)
      fail("{} ('{}') is {}: an extent cannot be negative", context, extent->name(), named);
    if (shape[d] != kSymbolicExtent && shape[d] != named)
      fail("{} ('{}') is {}, but the definition has {}", context, extent->name(), named, shape[d]);
    shape[d] = named;
  }
  for (size_t i = 0; i < attributes.broadcastDims.size(); ++i) {
    int64_t d = attributes.broadcastDims[i], extent = operand[i];
    if (shape[d] == kSymbolicExtent)
      shape[d] = extent;
    if (extent != 1 && extent != shape[d])
      fail("{}: at run time operand '{}' has extent {} in dimension {}, which cannot "
           "broadcast to {}",
           expr.result()->name(), expr.operand(0)->name(), extent, i, shape[d]);
  }
  if (!checkedByteCount(shape, expr.result()->dtype()))
    fail("{}: at run time the broadcast shape {} would take more than 2^63 bytes",
         expr.result()->name(), formatExtents(shape));
  return shape;
}

/// expand_blocks: its extents, and an operand of one element per block of them.
llvm::SmallVector<int64_t, 4> expandBlocksShape(const Expr& expr, const RuntimeShapes& shapes,
                                                ExtentLeafValue leaf) {
  llvm::SmallVector<int64_t, 4> shape = broadcastShape(expr, shapes, leaf);
  int64_t block = expr.attributes().block;
  int64_t blocks = shapes.of(expr.operand(0))[0];
  if (blocks != blockCount(numElements(shape), block))
    fail("{}: at run time {} elements are {} blocks of {}, but '{}' has {} elements",
         expr.result()->name(), numElements(shape), blockCount(numElements(shape), block), block,
         expr.operand(0)->name(), blocks);
  return shape;
}

/// A reduction's result shape; max and min over zero elements fail here, before any work.
llvm::SmallVector<int64_t, 4> reductionShape(const Expr& expr, const RuntimeShapes& shapes) {
  llvm::SmallVector<llvm::SmallVector<int64_t, 4>, 4> operandShapes;
  for (const Value* operand : expr.operands())
    operandShapes.push_back(shapes.of(operand));
  if (reductionHasNoValue(expr.op(), expr.attributes(), operandShapes))
    fail("{}: at run time '{}' has shape {}: {} over zero elements has no value",
         expr.result()->name(), expr.operand(0)->name(), formatExtents(operandShapes[0]),
         opName(expr.op()).str());
  return reductionResultShape(expr.attributes(), operandShapes[0]);
}

} // namespace

int64_t RuntimeShapes::extentOf(const Value* extent) const {
  const Expr* definition = extent->definition();
  WF_ASSERT(definition && definition->op() == OpKind::Size, "'{}' is not a size value",
            extent->name());
  return of(definition->operand(0))[size_t(definition->attributes().dim)];
}

RuntimeShapes inferRuntimeShapes(const Fusion& fusion, llvm::ArrayRef<Argument> arguments) {
  RuntimeShapes shapes;
  shapes.ofValue.resize(fusion.numValues());
  std::vector<int> argumentOf(fusion.numValues(), -1);
  for (size_t i = 0; i < arguments.size(); ++i) {
    argumentOf[fusion.inputs()[i]->id()] = int(i);
    if (const TensorRef* tensor = std::get_if<TensorRef>(&arguments[i]))
      shapes.ofValue[fusion.inputs()[i]->id()] = tensor->shape;
  }
  // An extent's leaves: size values from the shapes so far, integer inputs from the arguments.
  auto leaf = [&](const Value& value) -> std::optional<int64_t> {
    if (!value.isInput())
      return shapes.extentOf(&value);
    return integerOf(std::get<ScalarArgument>(arguments[size_t(argumentOf[value.id()])]));
  };
  for (size_t id = 0; id < fusion.numExprs(); ++id) {
    const Expr& expr = *fusion.expr(unsigned(id));
    auto& result = shapes.ofValue[expr.result()->id()];
    switch (expr.op()) {
    case OpKind::BroadcastInDim:
      result = broadcastShape(expr, shapes, leaf);
      break;
    case OpKind::ExpandBlocks:
      result = expandBlocksShape(expr, shapes, leaf);
      break;
    case OpKind::Size:
      break; // a scalar: its value is RuntimeShapes::extentOf
    case OpKind::Cast:
    case OpKind::Bitcast:
    case OpKind::Set:
      result = shapes.of(expr.operand(0));
      break;
    case OpKind::Sum:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Any:
    case OpKind::All:
      result = reductionShape(expr, shapes);
      break;
    default:
      result = pointwiseShape(expr, shapes);
      break;
    }
  }
  for (const Alias& alias : fusion.aliases()) {
    const auto& source = shapes.of(alias.source);
    const auto& destination = shapes.of(alias.destination);
    bool same = alias.source->isScalar() ? numElements(destination) == 1 : source == destination;
    if (!same)
      fail("copy_({}, {}): at run time the source has shape {} but the destination {}",
           alias.source->name(), alias.destination->name(), formatExtents(source),
           formatExtents(destination));
  }
  return shapes;
}

} // namespace widefuse
