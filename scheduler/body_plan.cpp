#include "scheduler/body_plan.h"

#include "ir/error.h"
#include "ir/reduction.h"
#include "scheduler/element_views.h"
#include "segmenter/signatures.h"

#include <fmt/format.h>

#include <algorithm>

namespace widefuse {
namespace {

/// Loads per element stay at 16 bytes for the narrowest type and at most 32 bytes (two
/// 16-byte accesses) for the widest, which bounds registers per thread.
constexpr unsigned kAccessBytes = 16;
constexpr unsigned kMaxBytesPerThreadAccess = 32;
/// Bytes of element data one thread holds per vector iteration, each tensor counted once
/// whether read, written or both (a result takes the registers of the operands it no longer
/// needs): beyond it a body with many tensors would spill under the 64-register cap, so it
/// takes fewer elements per access. Counting read-and-written tensors twice held mixed-width
/// bodies (bf16 parameters with f32 masters or state) to 8-byte accesses of their 2-byte
/// tensors; counted once they get 16-byte ones, at 60-80 registers and no spills on sm_90.
constexpr unsigned kMaxBytesInFlight = 192;
/// Vector iterations per thread in one chunk, the unit blocks share work in: blocks take
/// contiguous runs of chunks and compute a member's shared values once per run, so a chunk
/// only needs to be small enough that small members and the last shares balance well.
constexpr unsigned kIterationsPerChunk = 4;

const HazardPlan* aliasPlanFor(const SegmentedPhase& segmented, unsigned component,
                               const Value* destination) {
  // planAliases emits plans component by component.
  auto first =
      std::partition_point(segmented.aliasPlans.begin(), segmented.aliasPlans.end(),
                           [&](const HazardPlan& plan) { return plan.component < component; });
  for (auto it = first; it != segmented.aliasPlans.end() && it->component == component; ++it)
    if (it->alias.destination == destination)
      return &*it;
  return nullptr;
}

bool isReadBy(const Component& component, const Value* value) {
  for (const Expr* expr : component.exprs)
    if (llvm::is_contained(expr->operands(), value))
      return true;
  return llvm::any_of(component.aliases, [&](const Alias& alias) { return alias.source == value; });
}

/// True when every member reads the same fusion value at input position `index`.
bool sameForAllMembers(const SegmentedPhase& segmented, llvm::ArrayRef<unsigned> members,
                       unsigned index) {
  const Value* first = segmented.components[members.front()].inputs[index];
  return llvm::all_of(members, [&](unsigned member) {
    return segmented.components[member].inputs[index] == first;
  });
}

class BodyPlanner {
public:
  BodyPlanner(const SegmentedPhase& segmented, const SignatureClass& signature,
              const BodyRequest& request, std::vector<std::string>& notes)
      : segmented_(segmented), signature_(signature), request_(request), notes_(notes),
        component_(segmented.components[signature.members.front()]), names_(segmented.name + "_") {}

  BodyPlan run() {
    body_.index = request_.index;
    body_.signatureClass = signature_.id;
    body_.representative = component_.id;
    body_.name = request_.name;
    body_.indexing = request_.indexing;
    body_.domainRank = request_.indexing == Indexing::Flat ? 1 : stridedRank();
    body_.elementInstances = computeElementInstances(component_, request_.indexing, names_);
    widenFlattenableViews();
    addInputSlots();
    addOutputSlots();
    addLiftedSlots();
    addReductionSlots();
    addBlockSlots();
    addUniformValues();
    chooseVectorWidth();
    layOutEntry();
    return std::move(body_);
  }

private:
  void addInputSlots();
  void addElementTensorSlots(const Value* input, unsigned index);
  void addOutputSlots();
  void addLiftedSlots();
  void addReductionSlots();
  void addBlockSlots();
  void checkBlockReads() const;
  bool dependsOnBlockResult(const Value* value) const;
  bool dependsOnValue(const Value* value, const Value* on) const;
  void checkSecondLevel(const Expr& late) const;
  void addUniformValues();
  void chooseVectorWidth();
  void layOutEntry();
  /// The view of a tensor indexed exactly like the domain (empty in flat bodies).
  ElementView identityView() const;
  /// The view a copy_ source or an output is written under: a block reduction's by blocks.
  ElementView writtenViewOf(const Value* source) const;
  /// Makes a slot read or written under a block view a block tensor.
  static void setBlock(Slot& slot);
  /// Names the block reduction a block tensor is written with.
  void setBlockSource(Slot& slot, const Value* source);
  /// The rank of a strided body: the representative's, or for a flattenable class (whose
  /// members may differ in rank) the largest member rank; lower ranks get leading 1s.
  unsigned stridedRank() const;
  /// Flattenable classes indexed with strides: every element value follows the whole domain.
  void widenFlattenableViews();

  const SegmentedPhase& segmented_;
  const SignatureClass& signature_;
  const BodyRequest& request_;
  std::vector<std::string>& notes_;
  const Component& component_;
  CppNames names_;
  BodyPlan body_;
};

void BodyPlanner::addInputSlots() {
  for (unsigned index = 0; index < component_.inputs.size(); ++index) {
    const Value* input = component_.inputs[index];
    if (!isUniformValue(*input, component_)) {
      addElementTensorSlots(input, index);
      continue;
    }
    Slot slot;
    slot.kind = input->isScalar() ? SlotKind::Scalar : SlotKind::UniformTensor;
    slot.source = {SlotSource::Kind::Input, index};
    slot.name = names_.claim(input->name());
    slot.dtype = input->dtype();
    slot.read = isReadBy(component_, input);
    if (const HazardPlan* plan = aliasPlanFor(segmented_, component_.id, input)) {
      slot.written = true;
      slot.deferred = plan->resolution == HazardResolution::DeferredWrite;
      body_.hasDeferredWrites |= slot.deferred;
    }
    slot.shared = !slot.written && sameForAllMembers(segmented_, request_.members, index);
    body_.slots.push_back(std::move(slot));
  }
}

void BodyPlanner::addElementTensorSlots(const Value* input, unsigned index) {
  const HazardPlan* plan = aliasPlanFor(segmented_, component_.id, input);
  if (plan && plan->resolution == HazardResolution::DeferredWrite)
    fail("cannot generate a kernel for copy_({}, {}): {}; widefuse defers only writes of 0-d "
         "tensors inside a kernel (split the fusion so that '{}' is written by a later one)",
         plan->alias.source->name(), input->name(), plan->note, input->name());
  bool writtenSlotFound = false;
  for (const ElementInstance& instance : body_.elementInstances) {
    if (instance.value != input)
      continue;
    Slot slot;
    slot.source = {SlotSource::Kind::Input, index};
    slot.name = instance.name;
    slot.dtype = input->dtype();
    slot.read = true;
    slot.view = instance.view;
    setBlock(slot);
    // Only the written view is written (the element, or the block's element, it was read at).
    slot.written = plan && instance.view == writtenViewOf(plan->alias.source);
    if (slot.written)
      setBlockSource(slot, plan->alias.source);
    writtenSlotFound |= slot.written;
    body_.slots.push_back(std::move(slot));
  }
  if (plan && !writtenSlotFound) { // written, never read
    Slot slot;
    slot.source = {SlotSource::Kind::Input, index};
    slot.name = names_.claim(input->name());
    slot.dtype = input->dtype();
    slot.written = true;
    slot.view = writtenViewOf(plan->alias.source);
    setBlock(slot);
    setBlockSource(slot, plan->alias.source);
    body_.slots.push_back(std::move(slot));
  }
}

ElementView BodyPlanner::writtenViewOf(const Value* source) const {
  return isBlockReductionResult(*source) ? blockView(source->definition()->attributes().block)
                                         : identityView();
}

void BodyPlanner::setBlock(Slot& slot) {
  if (int64_t block = blockOfView(slot.view)) {
    slot.kind = SlotKind::BlockTensor;
    slot.block = block;
  }
}

void BodyPlanner::setBlockSource(Slot& slot, const Value* source) {
  if (!isBlockReductionResult(*source))
    return;
  for (const Expr* expr : component_.exprs)
    if (expr->attributes().reduction == ReductionScope::Block) {
      if (expr->result() == source)
        return;
      ++slot.blockSource;
    }
  WF_UNREACHABLE("'{}' is not a block reduction of its component", source->name());
}

void BodyPlanner::addOutputSlots() {
  for (unsigned index = 0; index < component_.outputs.size(); ++index) {
    const Value* output = component_.outputs[index];
    Slot slot;
    slot.kind =
        isUniformValue(*output, component_) ? SlotKind::UniformTensor : SlotKind::ElementTensor;
    slot.source = {SlotSource::Kind::Output, index};
    slot.name = names_.claim(output->name() + "_out");
    slot.dtype = output->dtype();
    slot.written = true;
    if (slot.kind == SlotKind::ElementTensor)
      slot.view = writtenViewOf(output);
    setBlock(slot);
    setBlockSource(slot, output);
    body_.slots.push_back(std::move(slot));
  }
}

ElementView BodyPlanner::identityView() const {
  ElementView view;
  if (body_.indexing == Indexing::Strided)
    for (unsigned d = 0; d < body_.domainRank; ++d)
      view.push_back(int64_t(d));
  return view;
}

unsigned BodyPlanner::stridedRank() const {
  if (!isFlattenable(component_))
    return unsigned(component_.domain.size()); // ranks are part of the signature
  size_t rank = 0;
  for (unsigned member : request_.members)
    rank = std::max(rank, segmented_.components[member].domain.size());
  return unsigned(rank);
}

void BodyPlanner::widenFlattenableViews() {
  if (body_.indexing != Indexing::Strided || !isFlattenable(component_))
    return;
  for (ElementInstance& instance : body_.elementInstances)
    if (!blockOfView(instance.view)) // a block tensor is read by blocks in any body
      instance.view = identityView();
}

void BodyPlanner::addLiftedSlots() {
  for (unsigned index = 0; index < signature_.lifted.size(); ++index) {
    Slot slot;
    slot.kind = SlotKind::LiftedConstant;
    slot.source = {SlotSource::Kind::Constant, index};
    slot.name = names_.claim(fmt::format("lifted{}", index));
    slot.dtype = signature_.lifted[index].dtype;
    slot.read = true;
    body_.slots.push_back(std::move(slot));
  }
}

void BodyPlanner::addReductionSlots() {
  unsigned rows = 0;
  for (unsigned j = 0; j < component_.contributions.size(); ++j) {
    auto [reduction, operand] = component_.contributions[j];
    ReductionSlot slot;
    slot.contribution = j;
    slot.op = reduction->op();
    slot.global = reduction->attributes().reduction == ReductionScope::Global;
    if (reduction->attributes().reduction == ReductionScope::Rows) {
      unsigned trailing =
          unsigned(reduction->operand(0)->rank()) - 1 - unsigned(reduction->attributes().dim);
      // The segmenter gives each way of reducing a body of its own (segmenter.md §2.5).
      WF_ASSERT(rows++ == 0 || trailing == body_.rowTrailing,
                "'{}' is reduced over rows of two dimensions in one body",
                reduction->operand(0)->name());
      body_.rowTrailing = trailing;
    }
    slot.result = reduction->result()->dtype();
    slot.accumulator = reductionAccumulatorType(slot.op, slot.result);
    const Value* value = reduction->operand(operand);
    slot.operandType = value->dtype();
    for (const ElementInstance& instance : body_.elementInstances)
      if (instance.value == value && instance.view == identityView())
        slot.operand = instance.name;
    WF_ASSERT(!slot.operand.empty(), "no element value for the operand '{}'", value->name());
    slot.name = names_.claim(fmt::format("r{}", j));
    body_.reductions.push_back(std::move(slot));
  }
  body_.reducesRows = rows > 0;
  WF_ASSERT(rows == 0 || rows == body_.reductions.size(),
            "one body reduces over rows and over all elements");
  if (body_.reducesRows)
    WF_ASSERT(body_.indexing == Indexing::Strided && body_.domainRank > 0,
              "a reduction over rows needs the row length: strided indexing of rank >= 1");
}

void BodyPlanner::addBlockSlots() {
  for (const Expr* expr : component_.exprs) {
    if (expr->attributes().reduction != ReductionScope::Block)
      continue;
    BlockSlot slot;
    slot.op = expr->op();
    slot.block = expr->attributes().block;
    slot.result = expr->result()->dtype();
    slot.accumulator = reductionAccumulatorType(slot.op, slot.result);
    const Value* value = expr->operand(0);
    slot.operandType = value->dtype();
    for (const ElementInstance& instance : body_.elementInstances)
      if (instance.value == value && instance.view == identityView())
        slot.operand = instance.name;
    WF_ASSERT(!slot.operand.empty(), "no element value for the operand '{}'", value->name());
    slot.late = dependsOnBlockResult(value);
    slot.name = names_.claim(fmt::format("b{}", body_.blocks.size()));
    body_.blocks.push_back(std::move(slot));
  }
  body_.byBlocks = !body_.blocks.empty() || llvm::any_of(body_.slots, [](const Slot& slot) {
    return slot.kind == SlotKind::BlockTensor;
  });
  if (body_.byBlocks)
    checkBlockReads();
}

/// What kernels compute by blocks so far (docs/reductions.md §7): one level of block
/// reductions, each read through expand_blocks of its own blocks at the domain's elements, and
/// a second level that is only written (checkSecondLevel), in
/// a body that reduces nothing else (the segmenter gives other reductions bodies of their own
/// unless they reduce a value computed by blocks).
void BodyPlanner::checkBlockReads() const {
  if (!body_.reductions.empty())
    fail("'{}' reduces over {} a value computed by blocks; a kernel body that reads by blocks "
         "reduces nothing else, so far (reduce it in a fusion of its own)",
         component_.contributions.front().first->result()->name(),
         body_.reducesRows ? "rows" : "all its elements");
  for (const Expr* expr : component_.exprs) {
    for (const Value* operand : expr->operands()) {
      if (!isBlockReductionResult(*operand))
        continue;
      int64_t block = operand->definition()->attributes().block;
      if (expr->op() != OpKind::ExpandBlocks || expr->attributes().block != block)
        fail("'{}' reads the reduction over blocks '{}' other than through "
             "expand_blocks(…, block={}); a kernel reads a block's result at that block's "
             "elements only",
             expr->result()->name(), operand->name(), block);
    }
    if (expr->attributes().reduction == ReductionScope::Block &&
        dependsOnBlockResult(expr->operand(0)))
      checkSecondLevel(*expr);
  }
  for (const ElementInstance& instance : body_.elementInstances) {
    const Expr* expr = instance.value->definition();
    if (expr && expr->op() == OpKind::ExpandBlocks && instance.view != identityView())
      fail("'{}' = expand_blocks(…) is read at other elements than the domain's own; a kernel "
           "reads expand_blocks only at the domain's elements (give it the domain's shape)",
           instance.value->name());
  }
}

/// A reduction over blocks of values computed from other block results (a second level):
/// kernels compute its tree after the elements, so nothing may read it, its blocks must lie
/// inside the first level's and fit a warp, and it may not feed a third level.
void BodyPlanner::checkSecondLevel(const Expr& late) const {
  auto refuse = [&](llvm::StringRef why) {
    fail("'{}' reduces over blocks a value computed from another reduction over blocks; a "
         "kernel computes such a second level when {} (split the fusion)",
         late.result()->name(), why.str());
  };
  int64_t block = late.attributes().block;
  for (const Expr* expr : component_.exprs) {
    if (llvm::is_contained(expr->operands(), late.result()))
      refuse("nothing in the kernel reads it");
    if (expr->attributes().reduction != ReductionScope::Block || expr == &late)
      continue;
    bool first = !dependsOnBlockResult(expr->operand(0));
    if (first && (block > 32 || expr->attributes().block < block))
      refuse("its blocks (at most 32 elements) lie inside those of the first level");
    if (!first && dependsOnValue(late.operand(0), expr->result()))
      refuse("it reads no other second level");
  }
}

bool BodyPlanner::dependsOnValue(const Value* value, const Value* on) const {
  if (value == on)
    return true;
  const Expr* definition = value->definition();
  if (!definition || !llvm::is_contained(component_.exprs, definition))
    return false;
  return llvm::any_of(definition->operands(),
                      [&](const Value* operand) { return dependsOnValue(operand, on); });
}

bool BodyPlanner::dependsOnBlockResult(const Value* value) const {
  if (isBlockReductionResult(*value))
    return true;
  const Expr* definition = value->definition();
  if (!definition || !llvm::is_contained(component_.exprs, definition))
    return false;
  return llvm::any_of(definition->operands(),
                      [&](const Value* operand) { return dependsOnBlockResult(operand); });
}

void BodyPlanner::addUniformValues() {
  for (const Slot& slot : body_.slots)
    if (slot.source.kind == SlotSource::Kind::Input &&
        (slot.kind == SlotKind::Scalar || slot.kind == SlotKind::UniformTensor))
      body_.uniformValues.push_back({component_.inputs[slot.source.index], {}, slot.name});
  for (const Expr* expr : component_.exprs)
    if (isUniformValue(*expr->result(), component_))
      body_.uniformValues.push_back({expr->result(), {}, names_.claim(expr->result()->name())});
}

unsigned largestPowerOfTwoAtMost(unsigned value) {
  unsigned power = 1;
  while (power * 2 <= value)
    power *= 2;
  return power;
}

/// Elements per thread access of a flat body: 16-byte accesses of its narrowest type, at most
/// kMaxBytesPerThreadAccess of its widest, and at most kMaxBytesInFlight of tensors in flight.
unsigned flatVectorElements(unsigned narrowest, unsigned widest, unsigned bytesPerElement) {
  unsigned byAccess = std::min(kAccessBytes / narrowest, kMaxBytesPerThreadAccess / widest);
  unsigned byRegisters = kMaxBytesInFlight / std::max(1u, bytesPerElement);
  return largestPowerOfTwoAtMost(std::max(1u, std::min(byAccess, byRegisters)));
}

void BodyPlanner::chooseVectorWidth() {
  unsigned narrowest = 8, widest = 1, bytesPerElement = 0;
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor) {
      narrowest = std::min(narrowest, unsigned(byteSize(slot.dtype)));
      widest = std::max(widest, unsigned(byteSize(slot.dtype)));
      bytesPerElement += unsigned(byteSize(slot.dtype)) * (slot.read || slot.written);
    }
  if (body_.byBlocks) {
    body_.vectorElements = 1;
    notes_.push_back(fmt::format("{}: reads by blocks, one element per access; each thread holds "
                                 "its elements of a chunk until the chunk's block trees are done",
                                 body_.name));
  } else if (body_.reducesRows) {
    body_.vectorElements = 1;
    notes_.push_back(fmt::format(
        "{}: reduces {} value{} over rows, a warp per row (32 "
        "columns at a time, the row's tree by a counter in the lanes' "
        "registers); a chunk is {} rows by at most {} columns (longer "
        "rows: a partial per segment, combined by the last block)",
        body_.name, body_.reductions.size(), body_.reductions.size() == 1 ? "" : "s",
        request_.threadsPerBlock / 32 * kIterationsPerChunk, request_.rowSegmentColumns));
    body_.rowSegmentColumns = request_.rowSegmentColumns;
  } else if (!body_.reductions.empty() && body_.indexing == Indexing::Strided) {
    body_.vectorElements = 1;
    notes_.push_back(fmt::format("{}: reduces {} value{}, strided: one element per access",
                                 body_.name, body_.reductions.size(),
                                 body_.reductions.size() == 1 ? "" : "s"));
  } else if (!body_.reductions.empty()) {
    // Each thread's elements are consecutive, so that their tree is a subtree of the row's
    // (docs/reductions.md §8); 16-byte accesses where the member's tensors are aligned.
    body_.vectorElements = flatVectorElements(narrowest, widest, bytesPerElement);
    notes_.push_back(fmt::format("{}: reduces {} value{}, {} consecutive elements per thread "
                                 "and row (vector accesses where the member's tensors are "
                                 "aligned)",
                                 body_.name, body_.reductions.size(),
                                 body_.reductions.size() == 1 ? "" : "s", body_.vectorElements));
  } else if (body_.indexing == Indexing::Strided) {
    body_.vectorElements = 1;
    notes_.push_back(fmt::format("{}: strided indexing (broadcasts or non-dense tensors), one "
                                 "element per access",
                                 body_.name));
  } else if (component_.domain.empty()) {
    body_.vectorElements = 1;
    notes_.push_back(fmt::format("{}: a 0-d program, one element per member", body_.name));
  } else {
    unsigned byAccess = std::min(kAccessBytes / narrowest, kMaxBytesPerThreadAccess / widest);
    unsigned byRegisters = kMaxBytesInFlight / std::max(1u, bytesPerElement);
    body_.vectorElements = flatVectorElements(narrowest, widest, bytesPerElement);
    notes_.push_back(fmt::format(
        "{}: flat 1-D indexing; {} elements per thread: the narrowest type ({} bytes) moves {} "
        "bytes per access and the widest ({} bytes) {}{}; at run time a scalar head brings every "
        "tensor to its alignment (when one head does) and a scalar loop does the tail; "
        "this vector path, a scalar loop does the tail",
        body_.name, body_.vectorElements, narrowest, narrowest * body_.vectorElements, widest,
        widest * body_.vectorElements,
        byRegisters < byAccess
            ? fmt::format(" (fewer than 16-byte accesses allow: {} bytes of tensors per "
                          "element would exceed {} bytes in flight per thread)",
                          bytesPerElement, kMaxBytesInFlight)
            : std::string()));
  }
  // A rows chunk gives each warp of the block kIterationsPerChunk rows.
  unsigned workers = body_.reducesRows ? request_.threadsPerBlock / 32 : request_.threadsPerBlock;
  body_.chunkElements = int64_t(workers) * body_.vectorElements * kIterationsPerChunk;
  // A reducing thread holds its chunk's elements until the chunk's trees: kIterationsPerChunk
  // of them (or one vector), however wide its accesses.
  if (!body_.reductions.empty() && !body_.reducesRows)
    body_.chunkElements = int64_t(workers) * std::max(body_.vectorElements, kIterationsPerChunk);
  // A chunk holds whole blocks, so that one thread block computes each block's tree.
  for (const BlockSlot& slot : body_.blocks)
    body_.chunkElements = std::max(body_.chunkElements, slot.block);
  body_.prefetch = request_.prefetch && body_.vectorElements > 1;
  if (body_.prefetch)
    notes_.push_back(fmt::format("{}: each thread loads its next vector of every tensor before "
                                 "computing the current one (loads in flight while it computes)",
                                 body_.name));
}

/// Places `bytes` at the next multiple of `alignment`.
unsigned place(unsigned& cursor, unsigned bytes, unsigned alignment) {
  cursor = (cursor + alignment - 1) / alignment * alignment;
  unsigned offset = cursor;
  cursor += bytes;
  return offset;
}

void BodyPlanner::layOutEntry() {
  unsigned cursor = abi::kEntryHeaderBytes;
  if (body_.indexing == Indexing::Strided)
    body_.extentsOffset = place(cursor, 8 * body_.domainRank, 8);
  for (Slot& slot : body_.slots) {
    slot.field = slot.name;
    if (slot.shared)
      continue; // placed in the parameter block by the kernel planner
    if (slot.kind == SlotKind::ElementTensor || slot.kind == SlotKind::UniformTensor ||
        slot.kind == SlotKind::BlockTensor) {
      slot.offset = place(cursor, 8, 8);
      if (slot.kind == SlotKind::ElementTensor && body_.indexing == Indexing::Strided)
        slot.stridesOffset = place(cursor, 8 * body_.domainRank, 8);
    } else {
      unsigned size = unsigned(byteSize(slot.dtype));
      slot.offset = place(cursor, size, size);
    }
  }
  if (body_.reducesRows) {
    body_.rowTicketsOffset = place(cursor, 8, 8);
    body_.rowSegmentsOffset = place(cursor, 4, 4);
  }
  for (ReductionSlot& slot : body_.reductions) {
    slot.partialsOffset = place(cursor, 8, 8);
    slot.outOffset = place(cursor, 8, 8);
    slot.resultsOffset = place(cursor, 8, 8);
    slot.ticketOffset = place(cursor, 8, 8);
    slot.operandOffset = place(cursor, 4, 4);
    slot.operandsOffset = place(cursor, 4, 4);
  }
  body_.entryBytes = (cursor + 7) / 8 * 8;
}

} // namespace

BodyPlan planBody(const SegmentedPhase& segmented, const SignatureClass& signature,
                  const BodyRequest& request, std::vector<std::string>& notes) {
  return BodyPlanner(segmented, signature, request, notes).run();
}

} // namespace widefuse
