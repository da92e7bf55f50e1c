#include "ir/printer.h"

#include "ir/fusion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

namespace widefuse {
namespace {

/// A one-line header longer than this is split, one parameter per line.
constexpr size_t kMaxHeaderColumns = 100;

/// Saturating double -> int64 with NaN -> 0, as GPU float-to-integer conversions do, so a
/// constant built through the C++ API with an out-of-range payload still prints as a literal
/// that parses.
int64_t saturateToInt64(double value) {
  if (std::isnan(value))
    return 0;
  if (value <= static_cast<double>(std::numeric_limits<int64_t>::min()))
    return std::numeric_limits<int64_t>::min();
  if (value >= static_cast<double>(std::numeric_limits<int64_t>::max()))
    return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(value);
}

/// Wraps an integer into `type`'s range (two's complement, as a C++ conversion does).
int64_t wrapToType(int64_t value, DataType type) {
  switch (type) {
  case DataType::Int8:
    return static_cast<int8_t>(value);
  case DataType::Int16:
    return static_cast<int16_t>(value);
  case DataType::Int32:
    return static_cast<int32_t>(value);
  case DataType::UInt8:
    return static_cast<uint8_t>(value);
  case DataType::UInt16:
    return static_cast<uint16_t>(value);
  case DataType::UInt32:
    return static_cast<uint32_t>(value);
  default:
    return value;
  }
}

/// The payload in the form the parser produces for `type`: double for floating types, an
/// in-range int64 for integer types, bool for b8. The C++ API accepts any payload with any
/// type; printing the canonical form keeps print(parse(print(f))) == print(f).
ConstantValue canonicalConstant(const ConstantValue& constant, DataType type) {
  double asDouble = std::visit([](auto v) { return static_cast<double>(v); }, constant);
  if (type == DataType::Bool)
    return std::visit([](auto v) { return v != 0; }, constant);
  if (isFloatingPoint(type))
    return asDouble;
  int64_t asInt = std::holds_alternative<double>(constant)
                      ? saturateToInt64(asDouble)
                      : std::visit([](auto v) { return static_cast<int64_t>(v); }, constant);
  return wrapToType(asInt, type);
}

/// A value as an operand: its name, or a literal for a constant (typed ones carry `:dtype`).
std::string formatOperand(const Value& value) {
  if (!value.isConstant())
    return value.name();
  std::string text = formatConstant(canonicalConstant(*value.constant(), value.dtype()));
  if (!value.isWeak())
    text += fmt::format(":{}", shortName(value.dtype()).str());
  return text;
}

/// `[1, 2, 0]`: unlike formatExtents, -1 stays a number (stride orders and dims are never
/// symbolic).
std::string formatIntegers(llvm::ArrayRef<int64_t> values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

std::string formatLayout(const TensorLayout& layout) {
  std::vector<std::string> keys;
  if (!layout.strideOrder.empty())
    keys.push_back(fmt::format("stride_order={}", formatIntegers(layout.strideOrder)));
  if (!layout.contiguity.empty()) {
    std::vector<const char*> flags;
    for (bool contiguous : layout.contiguity)
      flags.push_back(contiguous ? "true" : "false");
    keys.push_back(fmt::format("contiguity=[{}]", fmt::join(flags, ", ")));
  }
  return fmt::format("{{{}}}", fmt::join(keys, ", "));
}

std::string formatParameter(const Value& input) {
  std::string text = input.name() + ": " + formatType(input);
  if (input.isTensor() && !input.layout().isDefault())
    text += formatLayout(input.layout());
  return text;
}

void printHeader(const Fusion& fusion, std::string& out) {
  std::vector<std::string> params;
  for (const Value* input : fusion.inputs())
    params.push_back(formatParameter(*input));
  std::string oneLine = fmt::format("fusion {}({}) {{\n", fusion.name(), fmt::join(params, ", "));
  if (oneLine.size() - 1 <= kMaxHeaderColumns) {
    out += oneLine;
    return;
  }
  out += fmt::format("fusion {}(\n    {}) {{\n", fusion.name(), fmt::join(params, ",\n    "));
}

/// Output extent `d` of broadcast_in_dim: the name of the size value it is taken from, `?`,
/// or the number.
std::string formatShapeEntry(const OpAttributes& attributes, size_t d) {
  if (!attributes.broadcastExtents.empty() && attributes.broadcastExtents[d])
    return attributes.broadcastExtents[d]->name();
  int64_t extent = attributes.broadcastShape[d];
  return extent == kSymbolicExtent ? "?" : fmt::format("{}", extent);
}

std::string formatArguments(const Expr& expr) {
  std::vector<std::string> args;
  for (const Value* operand : expr.operands())
    args.push_back(formatOperand(*operand));
  const OpAttributes& attributes = expr.attributes();
  switch (opTypeRule(expr.op())) {
  case TypeRule::Cast:
  case TypeRule::Bitcast:
    args.push_back(shortName(attributes.targetType).str());
    break;
  case TypeRule::Broadcast: {
    std::vector<std::string> shape;
    for (size_t d = 0; d < attributes.broadcastShape.size(); ++d)
      shape.push_back(formatShapeEntry(attributes, d));
    args.push_back(fmt::format("[{}]", fmt::join(shape, ", ")));
    args.push_back(formatIntegers(attributes.broadcastDims));
    break;
  }
  case TypeRule::Extent:
    args.push_back(fmt::format("{}", attributes.dim));
    break;
  case TypeRule::CodeLookup:
  case TypeRule::CodeSearch:
    args.push_back(fmt::format("codebook={}", codebookName(attributes.codebook).str()));
    break;
  case TypeRule::BlockExpansion: {
    std::vector<std::string> shape;
    for (size_t d = 0; d < attributes.broadcastShape.size(); ++d)
      shape.push_back(formatShapeEntry(attributes, d));
    args.push_back(fmt::format("[{}]", fmt::join(shape, ", ")));
    args.push_back(fmt::format("block={}", attributes.block));
    break;
  }
  case TypeRule::Reduction:
    if (attributes.reduction == ReductionScope::Rows)
      args.push_back(fmt::format("[{}]", attributes.dim));
    if (attributes.reduction == ReductionScope::Block)
      args.push_back(fmt::format("block={}", attributes.block));
    break;
  default:
    break;
  }
  return fmt::format("{}", fmt::join(args, ", "));
}

} // namespace

std::string printFusion(const Fusion& fusion) {
  std::string out;
  printHeader(fusion, out);
  for (const Expr* expr : fusion.exprList())
    out += fmt::format("  {} = {}({})\n", expr->result()->name(), opName(expr->op()).str(),
                       formatArguments(*expr));
  for (const Alias& alias : fusion.aliases())
    out += fmt::format("  copy_({}, {})\n", formatOperand(*alias.source),
                       formatOperand(*alias.destination));
  if (!fusion.outputs().empty()) {
    std::vector<std::string> names;
    for (const Value* output : fusion.outputs())
      names.push_back(formatOperand(*output));
    out += fmt::format("  return {}\n", fmt::join(names, ", "));
  }
  out += "}\n";
  return out;
}

} // namespace widefuse
