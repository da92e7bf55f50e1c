#include "ir/fusion.h"

#include "ir/error.h"
#include "ir/host_tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace widefuse {

bool TensorLayout::isDefault() const {
  for (size_t d = 0; d < strideOrder.size(); ++d)
    if (strideOrder[d] != static_cast<int64_t>(strideOrder.size() - 1 - d))
      return false;
  return std::all_of(contiguity.begin(), contiguity.end(), [](bool c) { return c; });
}

Value Value::tensor(unsigned id, std::string name, DataType dtype, llvm::ArrayRef<int64_t> extents,
                    TensorLayout layout) {
  Value v;
  v.id_ = id;
  v.name_ = std::move(name);
  v.dtype_ = dtype;
  v.kind_ = ValueKind::Tensor;
  v.extents_.assign(extents.begin(), extents.end());
  if (!(layout == TensorLayout{}))
    v.layout_ = std::make_shared<const TensorLayout>(std::move(layout));
  return v;
}

Value Value::scalar(unsigned id, std::string name, DataType dtype,
                    std::optional<ConstantValue> constant, bool weak) {
  Value v;
  v.id_ = id;
  v.name_ = std::move(name);
  v.dtype_ = dtype;
  v.kind_ = ValueKind::Scalar;
  v.constant_ = std::move(constant);
  v.weak_ = weak;
  return v;
}

std::string formatConstant(const ConstantValue& constant) {
  if (const bool* b = std::get_if<bool>(&constant))
    return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&constant))
    return fmt::format("{}", *i);
  double d = std::get<double>(constant);
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  // Shortest text that reads back to the same double; keep a '.' or exponent so it stays a
  // floating-point literal.
  std::string text = fmt::format("{}", d);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

namespace {

constexpr llvm::StringLiteral kKeywords[] = {"fusion", "return", "copy_", "true",
                                             "false",  "inf",    "nan"};

} // namespace

bool isIdentifier(llvm::StringRef name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

bool isValidName(llvm::StringRef name) {
  // Every value's name is checked (a million for a large optimizer step): one lookup in the
  // words a name must not be, not a scan of the data types and keywords.
  static const llvm::StringSet<> reserved = [] {
    llvm::StringSet<> words;
    for (DataType type : kAllDataTypes)
      words.insert(shortName(type));
    for (llvm::StringRef keyword : kKeywords)
      words.insert(keyword);
    return words;
  }();
  return isIdentifier(name) && !reserved.contains(name);
}

std::string formatExtents(llvm::ArrayRef<int64_t> extents) {
  std::string text = "[";
  for (size_t d = 0; d < extents.size(); ++d) {
    if (d)
      text += ", ";
    text += extents[d] == kSymbolicExtent ? std::string("?") : std::to_string(extents[d]);
  }
  return text + "]";
}

std::string formatType(const Value& value) {
  std::string text(shortName(value.dtype()));
  if (value.isTensor())
    text += formatExtents(value.extents());
  return text;
}

Fusion::Fusion(std::string name) : name_(std::move(name)) {
  if (!isIdentifier(name_))
    fail("invalid fusion name '{}': use an identifier (letters, digits, _)", name_);
}

void Fusion::checkName(llvm::StringRef name) const {
  if (!isValidName(name))
    fail("invalid value name '{}': use an identifier that is not a keyword or dtype name",
         name.str());
}

void Fusion::claimName(llvm::StringRef name) const {
  checkName(name);
  if (byName_.count(name))
    fail("duplicate name '{}' in fusion '{}'", name.str(), name_);
}

Value* Fusion::addValue(Value value) {
  WF_ASSERT(value.id() == values_.size());
  // One lookup claims the name (an op's result is checked here, not before: a fusion of many
  // parameters adds millions of values).
  auto [entry, inserted] = byName_.try_emplace(value.name(), nullptr);
  if (!inserted)
    fail("duplicate name '{}' in fusion '{}'", value.name(), name_);
  entry->second = new (valueArena_.Allocate()) Value(std::move(value));
  values_.push_back(entry->second);
  return entry->second;
}

std::string Fusion::uniqueName(llvm::StringRef base) {
  auto taken = [&](const std::string& name) {
    return byName_.count(name) || reserved_.count(name) || !isValidName(name);
  };
  // Continue from the last suffix handed out for this base: names are generated per value,
  // and restarting at 1 would make building a fusion quadratic. Once a suffix was handed out
  // the bare base is taken (names are never released), so it is not asked again: a traced
  // optimizer names a constant per Python number of every op.
  unsigned& suffix = nextSuffix_[base];
  std::string candidate = suffix ? fmt::format("{}{}", base.str(), ++suffix) : base.str();
  while (taken(candidate))
    candidate = fmt::format("{}{}", base.str(), ++suffix);
  return candidate;
}

namespace {

void checkLayout(llvm::StringRef name, unsigned rank, const TensorLayout& layout) {
  if (!layout.strideOrder.empty()) {
    if (layout.strideOrder.size() != rank)
      fail("input '{}': stride_order has {} entries for a rank-{} tensor", name.str(),
           layout.strideOrder.size(), rank);
    llvm::SmallVector<int64_t, 4> sorted(layout.strideOrder.begin(), layout.strideOrder.end());
    std::sort(sorted.begin(), sorted.end());
    for (unsigned d = 0; d < rank; ++d)
      if (sorted[d] != d)
        fail("input '{}': stride_order must be a permutation of 0..{}", name.str(), rank - 1);
  }
  if (!layout.contiguity.empty() && layout.contiguity.size() != rank)
    fail("input '{}': contiguity has {} entries for a rank-{} tensor", name.str(),
         layout.contiguity.size(), rank);
}

} // namespace

Value* Fusion::addTensorInput(llvm::StringRef name, DataType dtype, llvm::ArrayRef<int64_t> extents,
                              TensorLayout layout) {
  claimName(name);
  for (int64_t extent : extents)
    if (extent < 0 && extent != kSymbolicExtent)
      fail("input '{}': extent {} is negative (use -1 or ? for a symbolic extent)", name.str(),
           extent);
  if (!checkedByteCount(extents, dtype))
    fail("input '{}': shape {} of {} would take more than 2^63 bytes; no tensor that large can "
         "be addressed",
         name.str(), formatExtents(extents), shortName(dtype).str());
  checkLayout(name, static_cast<unsigned>(extents.size()), layout);
  if (layout.isDefault())
    layout = {};
  Value* value = addValue(Value::tensor(static_cast<unsigned>(values_.size()), name.str(), dtype,
                                        extents, std::move(layout)));
  value->markInput();
  inputs_.push_back(value);
  return value;
}

Value* Fusion::addScalarInput(llvm::StringRef name, DataType dtype) {
  // Run-time scalars travel as bool, int64 or double (ScalarArgument) to every backend.
  if (isComplex(dtype))
    fail("scalar input '{}': {} scalar inputs are not supported (a scalar argument is a bool, "
         "an integer or a double); pass a 0-d {} tensor, or its parts as two f64 scalars and "
         "complex(re, im)",
         name.str(), shortName(dtype).str(), shortName(dtype).str());
  claimName(name);
  Value* value = addValue(Value::scalar(static_cast<unsigned>(values_.size()), name.str(), dtype));
  value->markInput();
  inputs_.push_back(value);
  return value;
}

Value* Fusion::addConstant(ConstantValue constant, DataType dtype, bool weak) {
  if (isComplex(dtype))
    fail("a constant of type {} must be written complex(re, im) of two real constants",
         shortName(dtype).str());
  return addValue(Value::scalar(static_cast<unsigned>(values_.size()), uniqueName("c"), dtype,
                                std::move(constant), weak));
}

Value* Fusion::appendExpr(OpKind op, llvm::ArrayRef<Value*> operands, OpAttributes attributes,
                          const ValueType& resultType, llvm::StringRef name) {
  std::string resultName;
  if (name.empty()) {
    resultName = uniqueName(resultType.kind == ValueKind::Tensor ? "t" : "s");
  } else {
    checkName(name); // addValue claims it
    resultName = name.str();
  }
  for (Value* operand : operands)
    WF_ASSERT(owns(operand), "operand '{}' of {} is not in fusion '{}'", operand->name(),
              opName(op).str(), name_);
  if (!checkedByteCount(resultType.extents, resultType.dtype))
    fail("{}: the result's shape {} of {} would take more than 2^63 bytes; no tensor that "
         "large can be addressed",
         opName(op).str(), formatExtents(resultType.extents), shortName(resultType.dtype).str());
  unsigned id = static_cast<unsigned>(values_.size());
  Value* result = addValue(
      resultType.kind == ValueKind::Tensor
          ? Value::tensor(id, resultName, resultType.dtype, resultType.extents)
          : Value::scalar(id, resultName, resultType.dtype, std::nullopt, resultType.weak));
  exprs_.push_back(new (exprArena_.Allocate()) Expr(static_cast<unsigned>(exprs_.size()), op,
                                                    operands, result, std::move(attributes)));
  result->setDefinition(exprs_.back());
  return result;
}

void Fusion::addAlias(Value* source, Value* destination) {
  if (!destination->isInput() || !destination->isTensor())
    fail("copy_({}, {}): the destination '{}' is not an input tensor of fusion '{}'",
         source->name(), destination->name(), destination->name(), name_);
  if (const Alias* existing = aliasOf(destination))
    fail("copy_({}, {}): '{}' is already written by copy_({}, {}); two copies into one input",
         source->name(), destination->name(), destination->name(), existing->source->name(),
         destination->name());
  bool shapeOk =
      source->isScalar() ? destination->rank() == 0 : source->rank() == destination->rank();
  for (unsigned d = 0; shapeOk && source->isTensor() && d < source->rank(); ++d) {
    int64_t a = source->extents()[d], b = destination->extents()[d];
    shapeOk = a == kSymbolicExtent || b == kSymbolicExtent || a == b;
  }
  if (!shapeOk)
    fail("copy_({}, {}): the source has type {} but the destination has type {}; copy_ needs "
         "one shape (no broadcast into the destination)",
         source->name(), destination->name(), formatType(*source), formatType(*destination));
  aliasOfDestination_[destination] = unsigned(aliases_.size());
  aliases_.push_back({source, destination});
}

void Fusion::addOutput(Value* value) {
  if (!value->isTensor())
    fail("output '{}' of fusion '{}' is a scalar; outputs must be tensors", value->name(), name_);
  if (!isOutput_.insert(value).second)
    fail("'{}' is already an output of fusion '{}'", value->name(), name_);
  outputs_.push_back(value);
}

Value* Fusion::lookup(llvm::StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

const Alias* Fusion::aliasOf(const Value* destination) const {
  auto it = aliasOfDestination_.find(destination);
  return it == aliasOfDestination_.end() ? nullptr : &aliases_[it->second];
}

bool Fusion::owns(const Value* value) const {
  return value && value->id() < values_.size() && values_[value->id()] == value;
}

bool isExtentValue(const Value& value) {
  return value.definition() && value.definition()->op() == OpKind::Size;
}

} // namespace widefuse
