#include "tests/fuzz/component_builder.h"

#include "tests/fuzz/reductions.h"
#include "tests/fuzz/values.h"

#include "ir/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

namespace widefuse::fuzz {
namespace {

/// Every op of the table: the generator picks from it, so new ops are fuzzed automatically.
constexpr OpKind kAllOps[] = {
#define WF_OP(Enum, name, arity, rule) OpKind::Enum,
#include "ir/op_kinds.def"
};

/// Extents worth hitting: 1, odd sizes, a power of two, sizes past a vector width.
constexpr int64_t kExtents[] = {1, 2, 3, 5, 7, 8, 13, 17, 31, 64, 129};

/// After each expression, the chance (percent) of a reduction: about one component in four
/// reduces something. Each phase compiles kernels of its own, so this also sets how much
/// longer the CI budget runs (docs/testing.md, "Figures").
constexpr unsigned kReductionPercent = 5;

using ValuePredicate = std::function<bool(DataType)>;

class ComponentBuilder {
public:
  ComponentBuilder(FusionDefinition& fd, FuzzCase& fuzzCase, const ComponentPlan& plan,
                   std::string prefix, const std::vector<Val>& sharedScalars, GeneratorStats& stats)
      : fd_(fd), case_(fuzzCase), plan_(plan), prefix_(std::move(prefix)), stats_(stats),
        structure_(plan.structureSeed), values_(plan.valueSeed),
        complex_(plan.structureSeed ^ 0x636f6d706c6578ull),
        narrow_(plan.structureSeed ^ 0x6e6172726f77ull),
        reduce_(plan.structureSeed ^ 0x726564756365ull), scalars_(sharedScalars) {}

  ComponentValues build() {
    chooseShape();
    addInputs();
    addNarrowValue();
    unsigned exprs = 2 + unsigned(pick(std::max(plan_.maxExprs, 2u) - 1));
    for (unsigned i = 0; i < exprs; ++i) {
      for (int attempt = 0; attempt < 4; ++attempt)
        if (addExpression())
          break;
      if (reduce_() % 100 < kReductionPercent)
        addReduction();
    }
    addCopies();
    addOutputs();
    return values();
  }

private:
  /// Decisions that shape the component's structure (shared by clones).
  size_t pick(size_t n) { return n == 0 ? 0 : size_t(structure_() % n); }
  bool chance(unsigned percent) { return structure_() % 100 < percent; }
  /// Decisions that only change extents, layouts and values (differ between clones).
  size_t pickValue(size_t n) { return n == 0 ? 0 : size_t(values_() % n); }
  /// A real dtype (run-time scalars and constants are never complex).
  DataType pickRealDtype() { return kRealDataTypes[pick(std::size(kRealDataTypes))]; }
  /// A dtype for tensors and casts: f32 and f64 become c64 and c128 one time in four. That
  /// draw comes from a stream of its own (seeded by the structure), so the cases of a seed
  /// keep their structure from before complex types were drawn.
  DataType pickDtype() {
    DataType dtype = pickRealDtype();
    if ((dtype == DataType::Float || dtype == DataType::Double) && complex_() % 4 == 0)
      return complexTypeOf(dtype);
    return dtype;
  }

  void chooseShape() {
    shape_.clear();
    for (unsigned d = 0; d < plan_.rank; ++d) {
      bool zero = plan_.allowZeroExtents && pickValue(8) == 0;
      shape_.push_back(zero ? 0 : kExtents[pickValue(std::size(kExtents))]);
    }
    // Shrink the largest extents until the domain is small enough to run quickly, the leading
    // ones first: rows keep their length (past a row segment of the runs, 32 columns).
    while (numElements(shape_) > plan_.maxElements) {
      auto leading =
          shape_.size() > 1 && numElements(llvm::ArrayRef<int64_t>(shape_).drop_back()) > 1
              ? shape_.end() - 1
              : shape_.end();
      auto largest = std::max_element(shape_.begin(), leading);
      *largest = std::max<int64_t>(1, *largest / 3);
    }
  }

  void addInputs();
  Val addTensorInput(llvm::ArrayRef<int64_t> runtimeShape, DataType dtype);
  bool addExpression();
  void guardNanSign(OpKind op, llvm::MutableArrayRef<Operand> operands);
  std::optional<Val> broadcastOperand(OpAttributes& attributes);
  Operand pickOperand(const ValuePredicate& preferred);
  Operand pickConstant();
  void record(OpKind op, llvm::ArrayRef<Operand> operands, Val result);
  void addNarrowValue();
  void addReduction();
  std::optional<ReductionOperand> reductionOperand(OpKind op, ReductionScope scope);
  void useReduction(ReductionScope scope, Val result);
  void addCopies();
  void addOutputs();
  ComponentValues values() const;

  FusionDefinition& fd_;
  FuzzCase& case_;
  const ComponentPlan& plan_;
  std::string prefix_;
  GeneratorStats& stats_;
  std::mt19937_64 structure_;
  std::mt19937_64 values_;
  std::mt19937_64 complex_;
  /// Draws for the lower-rank output (a stream of its own, as complex_).
  std::mt19937_64 narrow_;
  /// Draws for reductions (a stream of its own too, seeded by the structure: clones reduce
  /// alike).
  std::mt19937_64 reduce_;
  /// Run-time shapes of the lower-rank values (their extents may be symbolic in the IR).
  std::map<const Value*, llvm::SmallVector<int64_t, 4>> lowRankShapes_;
  /// Lower-rank computed values that become plain outputs: the component then writes two
  /// shapes, and the segmenter splits it (each part recomputing what it shares).
  std::vector<Val> narrowOutputs_;
  /// The plain outputs drawn, in order: the generator adds them once every component and
  /// reduction is built, so that a reduction may still read them.
  std::vector<Val> outputs_;
  /// Whether a block reduction's result is read: one level of blocks, and no reduction after.
  bool blocksRead_ = false;
  llvm::SmallVector<int64_t, 4> shape_;
  /// Values by shape: the component's domain, 0-d tensors, scalars.
  std::vector<Val> full_, zeroD_, scalars_;
  /// Lower-rank inputs for broadcast_in_dim, with the output dimensions they map to.
  std::vector<std::pair<Val, llvm::SmallVector<int64_t, 4>>> lowRank_;
  /// Tensor inputs a copy_ may write (domain-shaped and 0-d ones).
  std::vector<Val> writable_;
  /// Tensors computed by expressions (candidates for plain outputs).
  std::vector<Val> computed_;
  unsigned nextInput_ = 0;
};

void ComponentBuilder::addInputs() {
  unsigned numFull = 1 + unsigned(pick(3));
  for (unsigned i = 0; i < numFull; ++i) {
    Val input = addTensorInput(shape_, pickDtype());
    (plan_.rank == 0 ? zeroD_ : full_).push_back(input);
    writable_.push_back(input);
  }
  for (size_t i = 0, n = pick(3); i < n; ++i) {
    Val input = addTensorInput({}, pickDtype());
    zeroD_.push_back(input);
    writable_.push_back(input);
  }
  for (size_t i = 0, n = plan_.rank == 0 ? 0 : pick(3); i < n; ++i) {
    llvm::SmallVector<int64_t, 4> runtimeShape, dims;
    for (unsigned d = 0; d < plan_.rank; ++d)
      if (chance(50)) {
        dims.push_back(d);
        runtimeShape.push_back(chance(50) ? 1 : shape_[d]);
      }
    lowRank_.push_back({addTensorInput(runtimeShape, pickDtype()), dims});
    lowRankShapes_[lowRank_.back().first.value()] = runtimeShape;
  }
  for (size_t i = 0, n = pick(2); i < n; ++i) {
    DataType dtype = pickRealDtype();
    std::string name = fmt::format("{}s{}", prefix_, nextInput_++);
    scalars_.push_back(fd_.defineScalar(dtype, name));
    InputData data;
    data.isScalar = true;
    data.dtype = dtype;
    data.scalar = randomScalar(dtype, values_);
    case_.inputs[name] = std::move(data);
  }
}

/// A tensor input of `runtimeShape`: each extent declared static or symbolic, and a layout
/// that is row-major, column-major, permuted and/or padded (strided), with the argument's
/// strides following it.
Val ComponentBuilder::addTensorInput(llvm::ArrayRef<int64_t> runtimeShape, DataType dtype) {
  std::string name = fmt::format("{}x{}", prefix_, nextInput_++);
  size_t rank = runtimeShape.size();
  llvm::SmallVector<int64_t, 4> declared;
  for (int64_t extent : runtimeShape)
    declared.push_back(pickValue(2) == 0 ? kSymbolicExtent : extent);
  InputData data;
  data.dtype = dtype;
  data.shape.assign(runtimeShape.begin(), runtimeShape.end());
  data.strides = contiguousStrides(runtimeShape);
  TensorLayout layout;
  if (rank >= 1 && pickValue(3) == 0) {
    // stride_order[d] = rank of d's stride; shuffle a permutation (identity = column-major).
    llvm::SmallVector<int64_t, 4> order;
    bool columnMajor = pickValue(2) == 0;
    for (size_t d = 0; d < rank; ++d)
      order.push_back(int64_t(columnMajor ? d : rank - 1 - d));
    if (pickValue(2) == 0)
      std::shuffle(order.begin(), order.end(), values_);
    layout.strideOrder = order;
    for (size_t d = 0; d < rank; ++d)
      layout.contiguity.push_back(pickValue(4) != 0);
    int64_t needed = 1;
    for (int64_t position = 0; position < int64_t(rank); ++position) {
      size_t d = size_t(std::find(order.begin(), order.end(), position) - order.begin());
      data.strides[d] = layout.contiguity[d] ? needed : needed + 1 + int64_t(pickValue(3));
      needed = data.strides[d] * std::max<int64_t>(runtimeShape[d], 1);
    }
  }
  int64_t span = 0;
  if (numElements(runtimeShape) > 0) {
    span = 1;
    for (size_t d = 0; d < rank; ++d)
      span += data.strides[d] * (runtimeShape[d] - 1);
  }
  // A few guard elements past the end: a kernel writing there is caught by the comparison.
  data.storage.resize(size_t(span + 3) * byteSize(dtype));
  fillRandom(dtype, data.storage, values_);
  Val input;
  try {
    input = fd_.defineTensor(declared, dtype, name, layout.isDefault() ? TensorLayout{} : layout);
  } catch (const Error&) {
    ++stats_.rejectedOps;
    data.strides = contiguousStrides(runtimeShape);
    input = fd_.defineTensor(declared, dtype, name);
  }
  stats_.dtypesCovered.insert(shortName(dtype).str());
  case_.inputs[name] = std::move(data);
  return input;
}

/// Applies a random op of the table to random operands; false when the typing rules reject
/// the combination (counted).
bool ComponentBuilder::addExpression() {
  OpKind op = kAllOps[pick(std::size(kAllOps))];
  TypeRule rule = opTypeRule(op);
  OpAttributes attributes;
  llvm::SmallVector<Operand, 3> operands;
  if (rule == TypeRule::Broadcast) {
    std::optional<Val> source = broadcastOperand(attributes);
    if (!source)
      return false;
    operands.push_back(*source);
  } else {
    for (unsigned i = 0; i < opArity(op); ++i) {
      ValuePredicate preferred = [](DataType) { return true; };
      if (rule == TypeRule::Select && i == 0)
        preferred = [](DataType t) { return t == DataType::Bool; };
      else if (rule == TypeRule::Shift || rule == TypeRule::Bitwise)
        preferred = [](DataType t) { return isInteger(t); };
      else if (rule == TypeRule::FloatOnly)
        preferred = [](DataType t) { return isFloatingPoint(t); };
      else if (rule == TypeRule::ComplexPart)
        preferred = [](DataType t) { return isComplex(t); };
      else if (rule == TypeRule::MakeComplex)
        preferred = [](DataType t) { return t == DataType::Float || t == DataType::Double; };
      else if (rule == TypeRule::CodeLookup)
        preferred = [](DataType t) { return isInteger(t); };
      else if (rule == TypeRule::CodeSearch)
        preferred = [](DataType t) { return t == DataType::Float; };
      operands.push_back(pickOperand(preferred));
    }
    attributes.targetType = pickDtype();
    if (rule == TypeRule::CodeLookup || rule == TypeRule::CodeSearch)
      attributes.codebook = kAllCodebooks[pick(std::size(kAllCodebooks))];
    // A bitcast needs a target of the operand's width: pick among those.
    if (rule == TypeRule::Bitcast && operands[0].val()) {
      llvm::SmallVector<DataType, 4> sameWidth;
      for (DataType t : kRealDataTypes)
        if (byteSize(t) == byteSize(operands[0].val().dtype()) && t != DataType::Bool)
          sameWidth.push_back(t);
      if (sameWidth.empty()) // c128: no real type is 16 bytes wide
        sameWidth.push_back(operands[0].val().dtype());
      attributes.targetType = sameWidth[pick(sameWidth.size())];
      if (attributes.targetType == DataType::Double && complex_() % 4 == 0)
        attributes.targetType = DataType::ComplexFloat; // 8 bytes too
    }
  }
  try {
    guardNanSign(op, operands);
    Val result = fd_.apply(op, operands, attributes);
    record(op, operands, result);
    return true;
  } catch (const Error&) {
    ++stats_.rejectedOps;
    return false;
  }
}

/// The sign and payload of a NaN that an expression produces are unspecified (docs/
/// ir_reference.md, section 5): GCC moves negations across divisions, GPUs return the
/// canonical NaN. An op that reads them (signbit, copysign's sign operand, a bitcast from a
/// float) gets a computed float operand with its NaNs replaced by 1, which every float dtype
/// holds; an input's NaNs are bits in memory and are read as they are.
void ComponentBuilder::guardNanSign(OpKind op, llvm::MutableArrayRef<Operand> operands) {
  size_t index = op == OpKind::Copysign ? 1 : 0;
  if (op != OpKind::Signbit && op != OpKind::Copysign && op != OpKind::Bitcast)
    return;
  Val x = operands[index].val();
  if (!x || !isFloatingPoint(x.dtype()) || x.value()->isInput())
    return;
  Val isNan = fd_.apply(OpKind::IsNan, {Operand(x)});
  operands[index] = fd_.apply(OpKind::Where, {Operand(isNan), Operand(1.0), Operand(x)});
  ++stats_.nanSignGuards;
}

/// A lower-rank input, a 0-d tensor or a scalar to broadcast to the component's domain.
std::optional<Val> ComponentBuilder::broadcastOperand(OpAttributes& attributes) {
  attributes.broadcastShape = shape_;
  size_t choice = pick(3);
  if (choice == 0 && !lowRank_.empty()) {
    auto& [source, dims] = lowRank_[pick(lowRank_.size())];
    attributes.broadcastDims = dims;
    return source;
  }
  if (choice == 1 && !zeroD_.empty())
    return zeroD_[pick(zeroD_.size())];
  if (!scalars_.empty())
    return scalars_[pick(scalars_.size())];
  return std::nullopt;
}

/// An operand: mostly a recent domain-shaped value, else a 0-d tensor, a scalar or a constant.
/// Most of the time one of the preferred dtype when there is one.
Operand ComponentBuilder::pickOperand(const ValuePredicate& preferred) {
  auto recent = [&](const std::vector<Val>& pool) {
    size_t back = std::min(pick(pool.size()), pick(pool.size()));
    return pool[pool.size() - 1 - back];
  };
  if (chance(80)) {
    std::vector<Val> fitting;
    for (const std::vector<Val>* pool : {&full_, &zeroD_, &scalars_})
      for (const Val& v : *pool)
        if (preferred(v.dtype()))
          fitting.push_back(v);
    if (!fitting.empty() && chance(70))
      return recent(fitting);
  }
  size_t choice = pick(100);
  if (choice < 55 && !full_.empty())
    return recent(full_);
  if (choice < 75 && !zeroD_.empty())
    return recent(zeroD_);
  if (choice < 85 && !scalars_.empty())
    return scalars_[pick(scalars_.size())];
  return pickConstant();
}

/// A weak literal (a Python number) or a typed constant. The kind and dtype are structure;
/// the value is not, so clones of a component get different constants.
Operand ComponentBuilder::pickConstant() {
  switch (pick(4)) {
  case 0:
    return std::get<double>(randomConstant(DataType::Double, values_));
  case 1:
    return std::get<int64_t>(randomConstant(DataType::Int64, values_));
  case 2:
    return pickValue(2) == 0;
  default: {
    DataType dtype = pickRealDtype();
    return fd_.constant(randomConstant(dtype, values_), dtype);
  }
  }
}

void ComponentBuilder::record(OpKind op, llvm::ArrayRef<Operand> operands, Val result) {
  ++stats_.builtExprs;
  stats_.opsCovered.insert(opName(op).str());
  stats_.dtypesCovered.insert(shortName(result.dtype()).str());
  if ((op == OpKind::Cast || op == OpKind::Bitcast) && operands[0].val())
    stats_.castPairs.insert(fmt::format("{} {}->{}", opName(op).str(),
                                        shortName(operands[0].val().dtype()).str(),
                                        shortName(result.dtype()).str()));
  const Value* value = result.value();
  if (value->isScalar())
    scalars_.push_back(result);
  else if (value->rank() == 0)
    zeroD_.push_back(result);
  else
    full_.push_back(result);
  if (value->isTensor())
    computed_.push_back(result);
}

/// One time in three, a unary op of a lower-rank input, broadcast to the domain for the
/// expressions that follow, and also a plain output of its own (lower) shape.
void ComponentBuilder::addNarrowValue() {
  if (lowRank_.empty() || narrow_() % 3 != 0)
    return;
  auto [source, dims] = lowRank_[narrow_() % lowRank_.size()];
  for (int attempt = 0; attempt < 4; ++attempt) {
    OpKind op = kAllOps[narrow_() % std::size(kAllOps)];
    TypeRule rule = opTypeRule(op);
    if (opArity(op) != 1 || rule == TypeRule::Broadcast || rule == TypeRule::Extent ||
        rule == TypeRule::Cast || rule == TypeRule::Bitcast)
      continue;
    try {
      Val result = fd_.apply(op, {Operand(source)}, OpAttributes{});
      record(op, {Operand(source)}, result);
      computed_.pop_back(); // an output anyway, not a candidate for another
      if (result.value()->rank() > 0)
        full_.pop_back(); // not of the domain's shape: operands come from lowRank_

      lowRank_.push_back({result, dims});
      lowRankShapes_[result.value()] = lowRankShapes_[source.value()];
      narrowOutputs_.push_back(result);
      // Broadcast to the domain right away: the next expressions most likely read it, so the
      // component writes both shapes from one subgraph.
      OpAttributes attributes;
      attributes.broadcastShape = shape_;
      attributes.broadcastDims = dims;
      Val wide = fd_.apply(OpKind::BroadcastInDim, {Operand(result)}, attributes);
      record(OpKind::BroadcastInDim, {Operand(result)}, wide);
      return;
    } catch (const Error&) {
      ++stats_.rejectedOps;
    }
  }
}

/// A recent value of a dtype `op` takes, with its run-time shape: mostly a domain value
/// (a pointwise expression of the component, or an input), else a 0-d (kReduceZeroD) or a
/// lower-rank one; rows takes domain values of rank >= 2 only. nullopt when there is none.
std::optional<ReductionOperand> ComponentBuilder::reductionOperand(OpKind op,
                                                                   ReductionScope scope) {
  std::vector<ReductionOperand> pool;
  auto take = [&](const Val& v, llvm::ArrayRef<int64_t> shape) {
    if (reductionTakes(op, v.dtype()))
      pool.push_back({v, llvm::SmallVector<int64_t, 4>(shape.begin(), shape.end())});
  };
  auto fromFull = [&] {
    for (const Val& v : full_)
      take(v, shape_);
  };
  auto fromZeroD = [&] {
    for (const Val& v : zeroD_)
      if (kReduceZeroD)
        take(v, {});
  };
  size_t choice = reduce_() % 100;
  if (scope == ReductionScope::Rows) {
    if (plan_.rank >= 2)
      fromFull();
  } else if (scope == ReductionScope::Block) {
    fromFull(); // read back at the domain's elements: a domain value
  } else if (choice < 70) {
    fromFull();
  } else if (choice < 85) {
    fromZeroD();
  } else {
    for (const auto& [v, dims] : lowRank_)
      if (kReduceZeroD || v.rank() > 0)
        take(v, lowRankShapes_[v.value()]);
  }
  if (pool.empty() && scope != ReductionScope::Rows && scope != ReductionScope::Block) {
    fromFull();
    fromZeroD();
  }
  if (pool.empty())
    return std::nullopt;
  size_t back = std::min(reduce_() % pool.size(), reduce_() % pool.size());
  return pool[pool.size() - 1 - back];
}

/// A reduction of a drawn scope (kFuzzedScopes) and op over recent values, then read by a
/// later op and/or returned (useReduction). Typing refusals are counted, as for other ops.
void ComponentBuilder::addReduction() {
  // One level of blocks, and nothing reduced after a block result is read: kernels refuse a
  // reduction of a value computed by blocks (kFuzzedScopes).
  if (blocksRead_)
    return;
  ReductionScope scope = kFuzzedScopes[reduce_() % std::size(kFuzzedScopes)];
  OpKind op = kReductionOps[reduce_() % std::size(kReductionOps)];
  std::vector<ReductionOperand> operands;
  for (size_t i = 0, n = scope == ReductionScope::Global ? 2 + reduce_() % 2 : 1; i < n; ++i) {
    std::optional<ReductionOperand> operand = reductionOperand(op, scope);
    if (!operand)
      return;
    operands.push_back(std::move(*operand));
  }
  try {
    bool substituted = false;
    int64_t block = kFuzzedBlocks[reduce_() % std::size(kFuzzedBlocks)];
    Val result = applyReduction(fd_, op, scope, operands, substituted, block);
    OpKind drawn = result.value()->definition()->op();
    ++stats_.reductions;
    stats_.emptyMaxMin += substituted;
    stats_.segmentedRows +=
        scope == ReductionScope::Rows && operands[0].shape.back() > kFuzzRowSegmentColumns;
    stats_.reductionForms.insert(reductionForm(drawn, scope));
    record(drawn, {}, result);
    useReduction(scope, result);
  } catch (const Error&) {
    ++stats_.rejectedOps;
  }
}

/// A reduction's result read by a pointwise op beside a recent domain value (that op runs in
/// a later phase), and/or returned as it is. A rows result is a lower-rank value: broadcast
/// back to the domain for the ops that follow, as addNarrowValue's.
void ComponentBuilder::useReduction(ReductionScope scope, Val result) {
  Val read = result;
  if (scope == ReductionScope::Rows) {
    full_.pop_back(); // not of the domain's shape
    llvm::SmallVector<int64_t, 4> dims;
    for (unsigned d = 0; d + 1 < plan_.rank; ++d)
      dims.push_back(d);
    lowRank_.push_back({result, dims});
    lowRankShapes_[result.value()].assign(shape_.begin(), shape_.end() - 1);
    OpAttributes attributes;
    attributes.broadcastShape = shape_;
    attributes.broadcastDims = dims;
    read = fd_.apply(OpKind::BroadcastInDim, {Operand(result)}, attributes);
    record(OpKind::BroadcastInDim, {Operand(result)}, read);
  }
  if (scope == ReductionScope::Block) {
    full_.pop_back(); // one element per block, not of the domain's shape
    read = expandToDomain(fd_, result);
    record(OpKind::ExpandBlocks, {Operand(result)}, read);
    blocksRead_ = true;
  }
  const std::vector<Val>& pool = full_.empty() ? zeroD_ : full_;
  if (reduce_() % 100 < 70 && !pool.empty()) {
    Val other = pool[pool.size() - 1 - reduce_() % std::min<size_t>(pool.size(), 3)];
    if (auto readBy = readReduction(fd_, read, other, reduce_, stats_.rejectedOps)) {
      record(readBy->first, {Operand(read), Operand(other)}, readBy->second);
      ++stats_.reductionsRead;
    }
  }
  if (reduce_() % 100 < 40)
    outputs_.push_back(result);
}

/// What the generator may reduce across components (the component's most recent domain and
/// 0-d values), and the outputs drawn.
ComponentValues ComponentBuilder::values() const {
  ComponentValues values;
  values.outputs = outputs_;
  if (blocksRead_) // values computed by blocks: reducing them otherwise would be refused
    return values;
  for (size_t i = full_.size() > 3 ? full_.size() - 3 : 0; i < full_.size(); ++i)
    values.reducible.push_back({full_[i], shape_});
  for (size_t i = zeroD_.size() > 2 ? zeroD_.size() - 2 : 0; i < zeroD_.size() && kReduceZeroD; ++i)
    values.reducible.push_back({zeroD_[i], {}});
  return values;
}

/// copy_ into some of the writable inputs, from values other expressions may still read
/// the destination next to (in place, 0-d deferred writes, broadcast reads of it).
void ComponentBuilder::addCopies() {
  for (const Val& destination : writable_) {
    if (!chance(45))
      continue;
    bool zeroD = destination.value()->rank() == 0;
    std::vector<Val> sources;
    for (const std::vector<Val>* pool : {zeroD ? &zeroD_ : &full_, zeroD ? &scalars_ : &full_})
      for (const Val& v : *pool)
        if (v.value() != destination.value())
          sources.push_back(v);
    if (sources.empty())
      continue;
    try {
      fd_.copy_(sources[sources.size() - 1 - std::min(pick(sources.size()), pick(3))], destination);
    } catch (const Error&) {
      ++stats_.rejectedOps;
    }
  }
}

void ComponentBuilder::addOutputs() {
  for (size_t i = 0, n = computed_.empty() ? 0 : 1 + pick(3); i < n; ++i) {
    Val output = computed_[computed_.size() - 1 - pick(std::min<size_t>(computed_.size(), 4))];
    if (llvm::any_of(outputs_, [&](const Val& v) { return v.value() == output.value(); }))
      continue;
    outputs_.push_back(output);
  }
  for (const Val& narrow : narrowOutputs_) {
    outputs_.push_back(narrow);
    ++stats_.narrowOutputs;
  }
}

} // namespace

ComponentValues buildComponent(FusionDefinition& fd, FuzzCase& fuzzCase, const ComponentPlan& plan,
                               const std::string& prefix, const std::vector<Val>& sharedScalars,
                               GeneratorStats& stats) {
  return ComponentBuilder(fd, fuzzCase, plan, prefix, sharedScalars, stats).build();
}

} // namespace widefuse::fuzz
