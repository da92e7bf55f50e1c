#include "ir/extent_expression.h"

#include "ir/error.h"
#include "ir/expr.h"
#include "ir/fusion.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>

namespace widefuse {
namespace {

/// The ops an extent may be computed with: integer arithmetic that stays integer.
bool isExtentOp(OpKind op) {
  switch (op) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Fmod:
  case OpKind::Remainder:
  case OpKind::Maximum:
  case OpKind::Minimum:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Cast:
  case OpKind::Set:
  case OpKind::Size:
    return true;
  default:
    return false;
  }
}

/// The first value of `extent`'s definition that an extent may not hold, with why. `checked`
/// holds the values already accepted (a value used twice is checked once).
std::optional<std::string> firstInvalid(const Value& extent,
                                        llvm::DenseSet<const Value*>& checked) {
  if (checked.count(&extent))
    return std::nullopt;
  if (!extent.isScalar() || !isInteger(extent.dtype()))
    return fmt::format("'{}' ({}) is not an integer scalar", extent.name(), formatType(extent));
  const Expr* definition = extent.definition();
  if (!definition)
    return std::nullopt; // an integer input or constant
  if (!isExtentOp(definition->op()))
    return fmt::format("'{}' is computed by {}, which an extent may not use (size, add, sub, "
                       "mul, div, fmod, remainder, maximum, minimum, neg, abs, cast, set)",
                       extent.name(), opName(definition->op()).str());
  if (definition->op() == OpKind::Size)
    return std::nullopt;
  for (const Value* operand : definition->operands())
    if (auto invalid = firstInvalid(*operand, checked))
      return invalid;
  checked.insert(&extent);
  return std::nullopt;
}

/// `value` when it fits `type`, else an Error naming the extent.
int64_t checkedFit(int64_t value, bool overflowed, const Value& result, llvm::StringRef context) {
  auto [low, high] = integerRange(result.dtype());
  if (overflowed || value < low || value > high)
    fail("{}: extent value '{}' overflows {}", context.str(), result.name(),
         shortName(result.dtype()).str());
  return value;
}

int64_t applyBinary(OpKind op, int64_t a, int64_t b, const Value& result, llvm::StringRef context) {
  int64_t out = 0;
  bool overflowed = false;
  switch (op) {
  case OpKind::Add:
    overflowed = __builtin_add_overflow(a, b, &out);
    break;
  case OpKind::Sub:
    overflowed = __builtin_sub_overflow(a, b, &out);
    break;
  case OpKind::Mul:
    overflowed = __builtin_mul_overflow(a, b, &out);
    break;
  case OpKind::Maximum:
    out = std::max(a, b);
    break;
  case OpKind::Minimum:
    out = std::min(a, b);
    break;
  default: // div, fmod, remainder
    if (b == 0)
      fail("{}: extent value '{}' divides by zero", context.str(), result.name());
    if (a == INT64_MIN && b == -1)
      overflowed = true;
    else if (op == OpKind::Div)
      out = a / b;
    else {
      out = a % b;
      if (op == OpKind::Remainder && out != 0 && (out < 0) != (b < 0))
        out += b; // torch's remainder takes the divisor's sign
    }
    break;
  }
  return checkedFit(out, overflowed, result, context);
}

} // namespace

void checkExtentExpression(const Value& extent, llvm::StringRef context) {
  llvm::DenseSet<const Value*> checked;
  if (auto invalid = firstInvalid(extent, checked))
    fail("{}: {}; an output extent is an integer computed from tensor extents (size), integer "
         "scalar inputs and constants",
         context.str(), *invalid);
}

namespace {

/// evaluateExtent with the values computed so far (a value used twice is computed once).
using ExtentValues = llvm::DenseMap<const Value*, std::optional<int64_t>>;

std::optional<int64_t> evaluate(const Value& extent, ExtentLeafValue leaf, llvm::StringRef context,
                                ExtentValues& known);

std::optional<int64_t> compute(const Value& extent, ExtentLeafValue leaf, llvm::StringRef context,
                               ExtentValues& known) {
  if (const auto& constant = extent.constant())
    return checkedFit(integerOf(*constant), false, extent, context);
  const Expr* definition = extent.definition();
  if (!definition || definition->op() == OpKind::Size)
    return leaf(extent);
  llvm::SmallVector<int64_t, 2> operands;
  for (const Value* operand : definition->operands()) {
    std::optional<int64_t> value = evaluate(*operand, leaf, context, known);
    if (!value)
      return std::nullopt;
    operands.push_back(*value);
  }
  switch (definition->op()) {
  case OpKind::Neg:
    return checkedFit(-operands[0], operands[0] == INT64_MIN, extent, context);
  case OpKind::Abs:
    return checkedFit(operands[0] < 0 ? -operands[0] : operands[0], operands[0] == INT64_MIN,
                      extent, context);
  case OpKind::Cast:
  case OpKind::Set:
    return checkedFit(operands[0], false, extent, context);
  default:
    return applyBinary(definition->op(), operands[0], operands[1], extent, context);
  }
}

std::optional<int64_t> evaluate(const Value& extent, ExtentLeafValue leaf, llvm::StringRef context,
                                ExtentValues& known) {
  if (auto found = known.find(&extent); found != known.end())
    return found->second;
  std::optional<int64_t> value = compute(extent, leaf, context, known);
  known[&extent] = value;
  return value;
}

} // namespace

std::optional<int64_t> evaluateExtent(const Value& extent, ExtentLeafValue leaf,
                                      llvm::StringRef context) {
  ExtentValues known;
  return evaluate(extent, leaf, context, known);
}

int64_t integerOf(const ConstantValue& constant) {
  if (const auto* integer = std::get_if<int64_t>(&constant))
    return *integer;
  if (const auto* flag = std::get_if<bool>(&constant))
    return *flag;
  return static_cast<int64_t>(std::get<double>(constant));
}

std::optional<int64_t> staticExtentLeaf(const Value& leaf) {
  const Expr* definition = leaf.definition();
  if (!definition) // a runtime input
    return std::nullopt;
  int64_t extent = definition->operand(0)->extents()[size_t(definition->attributes().dim)];
  return extent == kSymbolicExtent ? std::nullopt : std::optional<int64_t>(extent);
}

llvm::SmallVector<const Value*, 4> extentInputs(const Fusion& fusion) {
  llvm::SmallVector<const Value*, 4> inputs;
  llvm::DenseSet<const Value*> seen;
  llvm::SmallVector<const Value*, 8> pending;
  for (size_t id = 0; id < fusion.numExprs(); ++id)
    for (const Value* extent : fusion.expr(unsigned(id))->attributes().broadcastExtents)
      if (extent)
        pending.push_back(extent);
  while (!pending.empty()) {
    const Value* value = pending.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    if (value->isInput())
      inputs.push_back(value);
    else if (const Expr* definition = value->definition();
             definition && definition->op() != OpKind::Size)
      pending.append(definition->operands().begin(), definition->operands().end());
  }
  return inputs;
}

} // namespace widefuse
