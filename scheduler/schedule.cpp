#include "scheduler/schedule.h"

#include "ir/error.h"
#include "scheduler/body_plan.h"
#include "segmenter/signatures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <llvm/ADT/StringMap.h>

namespace widefuse {
namespace {

/// True when the component reduces a value over rows: its kernel needs the row length.
bool reducesRows(const Component& component) {
  return llvm::any_of(component.contributions, [](const Contribution& contribution) {
    return contribution.first->attributes().reduction == ReductionScope::Rows;
  });
}

/// Flat when every member of the class in this launch is flattenable and has dense inputs,
/// and reduces nothing over rows.
Indexing chooseIndexing(const SegmentedPhase& segmented, llvm::ArrayRef<unsigned> members,
                        const Specialization& specialization) {
  llvm::DenseMap<const Value*, unsigned> inputIndex;
  const Fusion& fusion = *segmented.fusion;
  for (unsigned i = 0; i < fusion.inputs().size(); ++i)
    inputIndex[fusion.inputs()[i]] = i;
  for (unsigned member : members) {
    const Component& component = segmented.components[member];
    if (!isFlattenable(component) || reducesRows(component))
      return Indexing::Strided;
    for (const Value* input : component.inputs)
      if (input->isInput() && !specialization.denseInputs[inputIndex[input]])
        return Indexing::Strided;
  }
  return Indexing::Flat;
}

/// The members of `group` that belong to signature class `classId`, in group order.
std::vector<unsigned> membersOfClass(const SegmentedPhase& segmented, const LaunchGroup& group,
                                     unsigned classId) {
  std::vector<unsigned> members;
  for (unsigned member : group.members)
    if (segmented.classOfComponent[member] == classId)
      members.push_back(member);
  return members;
}

class KernelPlanner {
public:
  KernelPlanner(const SegmentedPhase& segmented, const Specialization& specialization,
                const DeviceDescription& device, const ScheduleOptions& options)
      : segmented_(segmented), specialization_(specialization),
        needsInt64Index_(specialization.needsInt64Index[segmented.index]), device_(device),
        options_(options) {}

  KernelPlan plan(const LaunchGroup& group);

private:
  void addBodies(KernelPlan& plan, const LaunchGroup& group);
  void layOutParameters(KernelPlan& plan, size_t memberCount);

  const SegmentedPhase& segmented_;
  const Specialization& specialization_;
  const std::vector<bool>& needsInt64Index_;
  const DeviceDescription& device_;
  const ScheduleOptions& options_;
};

KernelPlan KernelPlanner::plan(const LaunchGroup& group) {
  KernelPlan plan;
  plan.phase = &segmented_;
  plan.device = device_;
  const std::string& fusionName = segmented_.name;
  // Named by its classes, so that per-component launches of equal classes share a plan;
  // packed kernels by their group.
  plan.name =
      segmented_.mode == SegmentationMode::Packed && group.signatureClasses.size() > 1
          ? fmt::format("{}_pack{}", fusionName, group.id)
          : fmt::format("{}_class{}{}", fusionName, group.signatureClasses.size() > 1 ? "es" : "",
                        fmt::join(group.signatureClasses, "_"));
  plan.minBlocksPerMultiprocessor = std::max(1u, options_.minBlocksPerMultiprocessor);
  unsigned threads = options_.threadsPerBlock;
  if (threads < 32 || threads > 1024 || (threads & (threads - 1)) != 0)
    fail("threads per block must be a power of two from 32 to 1024, not {}", threads);
  plan.threadsPerBlock = threads;
  int64_t segment = options_.rowSegmentColumns;
  if (segment < 32 || segment > (int64_t(1) << 20) || (segment & (segment - 1)) != 0)
    fail("row segments must be a power of two from 32 to 2^20 columns, not {}", segment);
  addBodies(plan, group);
  plan.maxGridBlocks = device_.multiprocessorCount * plan.minBlocksPerMultiprocessor;
  bool wide =
      llvm::any_of(group.members, [&](unsigned member) { return needsInt64Index_[member]; });
  plan.indexBits = wide ? 64 : 32;
  plan.notes.push_back(plan.indexBits == 32
                           ? "32-bit element indices: every member spans fewer than 2^31 elements"
                           : "64-bit element indices: some member spans 2^31 elements or more");
  layOutParameters(plan, group.members.size());
  return plan;
}

void KernelPlanner::addBodies(KernelPlan& plan, const LaunchGroup& group) {
  for (unsigned classId : group.signatureClasses) {
    std::vector<unsigned> members = membersOfClass(segmented_, group, classId);
    BodyRequest request;
    request.index = unsigned(plan.bodies.size());
    request.name = group.signatureClasses.size() == 1
                       ? plan.name
                       : fmt::format("{}_class{}", plan.name, classId);
    request.indexing = chooseIndexing(segmented_, members, specialization_);
    request.threadsPerBlock = plan.threadsPerBlock;
    request.members = members;
    request.prefetch = options_.prefetch;
    request.rowSegmentColumns = options_.rowSegmentColumns;
    plan.bodies.push_back(
        planBody(segmented_, segmented_.signatureClasses[classId], request, plan.notes));
    plan.needsTickets |= plan.bodies.back().needsFinisher();
    plan.entryBytes = std::max(plan.entryBytes, plan.bodies.back().entryBytes);
  }
  if (plan.needsTickets)
    plan.notes.push_back("deferred writes: a u32 ticket per member counts finished chunks; the "
                         "last block done with a member writes its deferred values and resets "
                         "the ticket, so any block order is correct");
}

void KernelPlanner::layOutParameters(KernelPlan& plan, size_t memberCount) {
  unsigned cursor = abi::kParameterHeaderBytes;
  auto place = [&](unsigned bytes, unsigned alignment) {
    cursor = (cursor + alignment - 1) / alignment * alignment;
    unsigned offset = cursor;
    cursor += bytes;
    return offset;
  };
  for (BodyPlan& body : plan.bodies)
    for (Slot& slot : body.slots) {
      if (!slot.shared)
        continue;
      slot.field =
          plan.bodies.size() == 1 ? slot.name : fmt::format("b{}_{}", body.index, slot.name);
      bool pointer = slot.kind == SlotKind::ElementTensor || slot.kind == SlotKind::UniformTensor;
      unsigned size = pointer ? 8 : unsigned(byteSize(slot.dtype));
      slot.offset = place(size, size);
    }
  plan.tableOffset = place(0, 8);
  // Exactly the group's members: the parameter block is copied at every launch.
  unsigned capacity = unsigned(std::max<size_t>(memberCount, 1));
  if (plan.tableOffset + capacity * plan.entryBytes <= device_.maxParameterBytes) {
    plan.tableLocation = TableLocation::KernelParameters;
    plan.tableCapacity = capacity;
    plan.parameterBytes = plan.tableOffset + capacity * plan.entryBytes;
    plan.notes.push_back(fmt::format(
        "member table in the kernel parameters: {} entries of {} bytes ({} members), {} "
        "bytes in all (limit {})",
        capacity, plan.entryBytes, memberCount, plan.parameterBytes, device_.maxParameterBytes));
  } else {
    plan.tableLocation = TableLocation::DeviceMemory;
    plan.tableCapacity = 0;
    plan.parameterBytes = plan.tableOffset;
    plan.notes.push_back(fmt::format(
        "member table in device memory: {} members x {} bytes do not fit in {} bytes of "
        "kernel parameters; uploaded when pointers change",
        memberCount, plan.entryBytes, device_.maxParameterBytes));
  }
}

} // namespace

Specialization declaredSpecialization(const SegmentedFusion& segmented) {
  Specialization specialization;
  for (const Value* input : segmented.fusion->inputs())
    specialization.denseInputs.push_back(input->isScalar() || input->layout().isDefault());
  for (const SegmentedPhase& phase : segmented.phases) {
    std::vector<bool>& phaseNeeds = specialization.needsInt64Index.emplace_back();
    for (const Component& component : phase.components) {
      int64_t elements = 1;
      for (int64_t extent : component.domain)
        elements = extent == kSymbolicExtent ? elements : elements * extent;
      phaseNeeds.push_back(elements >= kMaxInt32IndexElements);
    }
  }
  return specialization;
}

std::optional<KernelPlan> planAfterSpill(const KernelPlan& plan, unsigned spilledBytes) {
  if (plan.minBlocksPerMultiprocessor <= kFewestBlocksPerMultiprocessor)
    return std::nullopt;
  KernelPlan next = plan;
  --next.minBlocksPerMultiprocessor;
  next.maxGridBlocks = next.device.multiprocessorCount * next.minBlocksPerMultiprocessor;
  next.notes.push_back(fmt::format("with {} registers it spilled {} bytes; compiled again "
                                   "with {} ({} blocks per multiprocessor)",
                                   registerCap(plan), spilledBytes, registerCap(next),
                                   next.minBlocksPerMultiprocessor));
  return next;
}

ScheduledFusion schedule(const SegmentedFusion& segmented, const Specialization& specialization,
                         const DeviceDescription& device, const ScheduleOptions& options) {
  WF_ASSERT(specialization.denseInputs.size() == segmented.fusion->inputs().size());
  WF_ASSERT(specialization.needsInt64Index.size() == segmented.phases.size());
  ScheduledFusion scheduled;
  scheduled.segmented = &segmented;
  // Per-component groups of one class plan to the same kernel: keep one plan, many launches.
  // Equal plans have equal names, so only plans of one name are compared.
  llvm::StringMap<llvm::SmallVector<unsigned, 1>> plansNamed;
  for (const SegmentedPhase& phase : segmented.phases) {
    WF_ASSERT(specialization.needsInt64Index[phase.index].size() == phase.components.size());
    KernelPlanner planner(phase, specialization, device, options);
    for (const LaunchGroup& group : phase.groups) {
      KernelPlan plan = planner.plan(group);
      llvm::SmallVector<unsigned, 1>& candidates = plansNamed[plan.name];
      auto same = llvm::find_if(
          candidates, [&](unsigned index) { return samePlan(scheduled.plans[index], plan); });
      unsigned index = same != candidates.end() ? *same : unsigned(scheduled.plans.size());
      if (same == candidates.end()) {
        candidates.push_back(index);
        scheduled.plans.push_back(std::move(plan));
      }
      scheduled.launches.push_back({index, phase.index, group.id, group.members});
    }
  }
  return scheduled;
}

} // namespace widefuse
