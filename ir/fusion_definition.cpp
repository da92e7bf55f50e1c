#include "ir/fusion_definition.h"

#include "ir/reduction.h"

#include "ir/error.h"
#include "ir/op_builder.h"
#include "ir/verifier.h"

#include <bit>
#include <type_traits>
#include <variant>

namespace widefuse {

DataType Val::dtype() const {
  return value_->dtype();
}
unsigned Val::rank() const {
  return value_->rank();
}
const std::string& Val::name() const {
  return value_->name();
}

FusionDefinition::FusionDefinition(std::string name)
    : fusion_(std::make_unique<Fusion>(std::move(name))) {}

Fusion& FusionDefinition::live() {
  if (!fusion_)
    fail("this FusionDefinition was already finalized; start a new one");
  return *fusion_;
}

const Fusion& FusionDefinition::fusion() const {
  if (!fusion_)
    fail("this FusionDefinition was already finalized; start a new one");
  return *fusion_;
}

Value* FusionDefinition::unwrap(const Val& val, llvm::StringRef context) {
  if (!val)
    fail("{}: an empty Val handle was passed", context.str());
  if (val.owner() != this || !live().owns(val.value()))
    fail("{}: value '{}' comes from another FusionDefinition", context.str(), val.name());
  return val.value();
}

Val FusionDefinition::defineTensor(llvm::ArrayRef<int64_t> shape, DataType dtype,
                                   llvm::StringRef name, TensorLayout layout) {
  Fusion& fusion = live();
  std::string chosen = name.empty() ? fusion.uniqueName("t") : name.str();
  return Val(this, fusion.addTensorInput(chosen, dtype, shape, std::move(layout)));
}

Val FusionDefinition::defineScalar(DataType dtype, llvm::StringRef name) {
  Fusion& fusion = live();
  std::string chosen = name.empty() ? fusion.uniqueName("s") : name.str();
  return Val(this, fusion.addScalarInput(chosen, dtype));
}

Val FusionDefinition::constant(ConstantValue value, DataType dtype) {
  return Val(this, live().addConstant(value, dtype, /*weak=*/false));
}

Val FusionDefinition::literal(ConstantValue value) {
  Fusion& fusion = live();
  uint64_t bits = std::visit(
      [](auto number) -> uint64_t {
        if constexpr (std::is_same_v<decltype(number), double>)
          return std::bit_cast<uint64_t>(number); // -0.0 and 0.0 stay two literals
        else
          return static_cast<uint64_t>(number);
      },
      value);
  Value*& shared = literals_[{static_cast<unsigned>(value.index()), bits}];
  if (!shared) {
    DataType dtype = std::holds_alternative<bool>(value)      ? DataType::Bool
                     : std::holds_alternative<int64_t>(value) ? DataType::Int64
                                                              : DataType::Double;
    shared = fusion.addConstant(value, dtype, /*weak=*/true);
  }
  return Val(this, shared);
}

Val FusionDefinition::materialize(const Operand& operand) {
  if (operand.literal())
    return literal(*operand.literal());
  unwrap(operand.val(), "operand");
  return operand.val();
}

Val FusionDefinition::apply(OpKind op, llvm::ArrayRef<Operand> operands, OpAttributes attributes,
                            llvm::StringRef name) {
  llvm::SmallVector<Value*, 3> values;
  for (const Operand& operand : operands) {
    if (operand.literal()) {
      values.push_back(literal(*operand.literal()).value());
      continue;
    }
    values.push_back(unwrap(operand.val(), opName(op)));
  }
  return Val(this, buildOp(live(), op, values, std::move(attributes), name));
}

void FusionDefinition::copy_(const Operand& source, Val destination) {
  Value* dst = unwrap(destination, "copy_");
  Value* src = materialize(source).value();
  addBroadcastingAlias(live(), src, dst);
}

void FusionDefinition::addOutput(Val value) {
  live().addOutput(unwrap(value, "add_output"));
}

std::unique_ptr<Fusion> FusionDefinition::finalize() {
  verify(live());
  return std::move(fusion_);
}

namespace {

/// Finds the definition an op call belongs to: that of its first Val operand.
FusionDefinition& ownerOf(llvm::ArrayRef<Operand> operands, OpKind op) {
  for (const Operand& operand : operands)
    if (!operand.literal() && operand.val())
      return *operand.val().owner();
  fail("{}: at least one argument must be a value of a FusionDefinition, not only numbers",
       opName(op).str());
}

Val applyOp(OpKind op, std::initializer_list<Operand> operands, OpAttributes attributes = {}) {
  llvm::ArrayRef<Operand> list(operands.begin(), operands.end());
  return ownerOf(list, op).apply(op, list, std::move(attributes));
}

} // namespace

#define WF_DEFINE_1(name, kind)                                                                    \
  Val name(const Operand& x) {                                                                     \
    return applyOp(OpKind::kind, {x});                                                             \
  }
#define WF_DEFINE_2(name, kind)                                                                    \
  Val name(const Operand& a, const Operand& b) {                                                   \
    return applyOp(OpKind::kind, {a, b});                                                          \
  }
#define WF_DEFINE_3(name, kind)                                                                    \
  Val name(const Operand& a, const Operand& b, const Operand& c) {                                 \
    return applyOp(OpKind::kind, {a, b, c});                                                       \
  }
#define WF_OP(Enum, name, arity, rule) WF_DEFINE_##arity(name, Enum)
#define WF_ATTRIBUTE_OP(Enum, name, arity, rule)
#include "ir/op_kinds.def"
#undef WF_DEFINE_1
#undef WF_DEFINE_2
#undef WF_DEFINE_3

Val cast(const Operand& x, DataType dtype) {
  OpAttributes attributes;
  attributes.targetType = dtype;
  return applyOp(OpKind::Cast, {x}, attributes);
}

Val bitcast(const Operand& x, DataType dtype) {
  OpAttributes attributes;
  attributes.targetType = dtype;
  return applyOp(OpKind::Bitcast, {x}, attributes);
}

Val broadcast_in_dim(const Operand& x, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<int64_t> dims) {
  OpAttributes attributes;
  attributes.broadcastShape.assign(shape.begin(), shape.end());
  attributes.broadcastDims.assign(dims.begin(), dims.end());
  return applyOp(OpKind::BroadcastInDim, {x}, attributes);
}

Val broadcast_in_dim_to_extents(const Operand& x, llvm::ArrayRef<ShapeEntry> shape,
                                llvm::ArrayRef<int64_t> dims) {
  OpAttributes attributes;
  attributes.broadcastDims.assign(dims.begin(), dims.end());
  for (const ShapeEntry& entry : shape) {
    attributes.broadcastShape.push_back(entry.size ? kSymbolicExtent : entry.extent);
    attributes.broadcastExtents.push_back(entry.size ? entry.size.value() : nullptr);
  }
  return applyOp(OpKind::BroadcastInDim, {x}, attributes);
}

Val size(const Val& x, int64_t dim) {
  OpAttributes attributes;
  attributes.dim = dim;
  return applyOp(OpKind::Size, {x}, attributes);
}

Val expand_blocks(const Val& x, llvm::ArrayRef<ShapeEntry> shape, Blocks blocks) {
  OpAttributes attributes;
  attributes.block = blocks.elements;
  for (const ShapeEntry& entry : shape) {
    attributes.broadcastShape.push_back(entry.size ? kSymbolicExtent : entry.extent);
    attributes.broadcastExtents.push_back(entry.size ? entry.size.value() : nullptr);
  }
  return applyOp(OpKind::ExpandBlocks, {x}, attributes);
}

Val code_value(const Val& code, Codebook codebook) {
  OpAttributes attributes;
  attributes.codebook = codebook;
  return applyOp(OpKind::CodeValue, {code}, attributes);
}

Val element_index(const Val& x) {
  return applyOp(OpKind::ElementIndex, {x}, OpAttributes());
}

Val nearest_code(const Val& x, Codebook codebook) {
  OpAttributes attributes;
  attributes.codebook = codebook;
  return applyOp(OpKind::NearestCode, {x}, attributes);
}

Val reduceBlocks(OpKind op, const Val& x, Blocks blocks) {
  if (!x)
    fail("{}: the operand is an empty Val (not a value of a FusionDefinition)", opName(op).str());
  const Value* value = x.value();
  OpAttributes attributes = blockReductionAttributes(op, {value}, blocks.elements);
  return x.owner()->apply(op, {Operand(x)}, std::move(attributes));
}

namespace {

Val reduceValues(OpKind op, llvm::ArrayRef<Val> xs, std::optional<llvm::ArrayRef<int64_t>> dims) {
  llvm::SmallVector<const Value*, 4> values;
  for (const Val& x : xs) {
    if (!x)
      fail("{}: an operand is an empty Val (not a value of a FusionDefinition)", opName(op).str());
    values.push_back(x.value());
  }
  if (xs.empty())
    fail("{}: a reduction takes one or more tensors", opName(op).str());
  OpAttributes attributes = reductionAttributes(op, values, dims);
  llvm::SmallVector<Operand, 4> operands(xs.begin(), xs.end());
  return xs[0].owner()->apply(op, operands, std::move(attributes));
}

} // namespace

#define WF_DEFINE_REDUCTION(name, kind)                                                            \
  Val name(const Val& x) {                                                                         \
    return reduceValues(OpKind::kind, {x}, std::nullopt);                                          \
  }                                                                                                \
  Val name(llvm::ArrayRef<Val> xs) {                                                               \
    return reduceValues(OpKind::kind, xs, std::nullopt);                                           \
  }                                                                                                \
  Val name(const Val& x, llvm::ArrayRef<int64_t> dims) {                                           \
    return reduceValues(OpKind::kind, {x}, dims);                                                  \
  }
WF_DEFINE_REDUCTION(sum, Sum)
WF_DEFINE_REDUCTION(max, Max)
WF_DEFINE_REDUCTION(min, Min)
WF_DEFINE_REDUCTION(any, Any)
WF_DEFINE_REDUCTION(all, All)
#undef WF_DEFINE_REDUCTION

Val operator+(const Operand& a, const Operand& b) {
  return add(a, b);
}
Val operator-(const Operand& a, const Operand& b) {
  return sub(a, b);
}
Val operator*(const Operand& a, const Operand& b) {
  return mul(a, b);
}
Val mod(const Operand& a, const Operand& b) {
  return fmod(a, b);
}

Val operator/(const Operand& a, const Operand& b) {
  return div(a, b);
}
Val operator-(const Val& x) {
  return neg(x);
}

} // namespace widefuse
