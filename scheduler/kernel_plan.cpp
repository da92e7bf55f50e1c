#include "scheduler/kernel_plan.h"

#include "ir/error.h"

#include <fmt/format.h>
#include <llvm/Support/MathExtras.h>

#include <tuple>

#include <algorithm>

namespace widefuse {

llvm::StringRef indexingName(Indexing indexing) {
  return indexing == Indexing::Flat ? "flat" : "strided";
}

llvm::StringRef tableLocationName(TableLocation location) {
  return location == TableLocation::KernelParameters ? "parameters" : "device-memory";
}

namespace {

llvm::StringRef slotKindName(SlotKind kind) {
  switch (kind) {
  case SlotKind::ElementTensor:
    return "element tensor";
  case SlotKind::UniformTensor:
    return "0-d tensor";
  case SlotKind::Scalar:
    return "scalar";
  case SlotKind::LiftedConstant:
    return "lifted constant";
  case SlotKind::BlockTensor:
    return "block tensor";
  }
  WF_UNREACHABLE("unknown slot kind");
}

std::string describeSource(const SlotSource& source) {
  switch (source.kind) {
  case SlotSource::Kind::Input:
    return fmt::format("input #{}", source.index);
  case SlotSource::Kind::Output:
    return fmt::format("output #{}", source.index);
  case SlotSource::Kind::Constant:
    return fmt::format("lifted #{}", source.index);
  }
  WF_UNREACHABLE("unknown slot source");
}

std::string formatSlot(const Slot& slot) {
  std::string text = fmt::format("    {} {}: {} {}", slot.shared ? "param" : "entry", slot.field,
                                 slotKindName(slot.kind).str(), shortName(slot.dtype).str());
  text += fmt::format(", {}", describeSource(slot.source));
  if (slot.read)
    text += ", read";
  if (slot.written)
    text += slot.deferred ? ", written deferred" : ", written";
  if (slot.kind == SlotKind::BlockTensor)
    text += fmt::format(", one element per block of {}", slot.block);
  else if (!slot.view.empty())
    text += fmt::format(", view [{}]", fmt::join(slot.view, ", "));
  text += fmt::format(" @{}", slot.offset);
  if (slot.kind == SlotKind::ElementTensor && !slot.view.empty())
    text += fmt::format(" strides @{}", slot.stridesOffset);
  return text + "\n";
}

} // namespace

unsigned registerCap(const KernelPlan& plan) {
  unsigned perThread =
      65536 / (plan.threadsPerBlock * std::max(1u, plan.minBlocksPerMultiprocessor));
  return std::min(255u, perThread / 8 * 8);
}

int64_t combineSteps(int64_t values, unsigned threads) {
  auto levels = [](int64_t power) { return int64_t(llvm::Log2_64(uint64_t(power))); };
  int64_t steps = 0;
  while (values > 16 * int64_t(threads)) { // passes of groups of 8: a round of loads, 3 levels
    int64_t groups = llvm::divideCeil(values, 8);
    steps += llvm::divideCeil(groups, int64_t(threads)) * (1 + 3);
    values = groups;
  }
  int64_t group = 1;
  while (group * threads < values)
    group *= 2;
  // A group of 16 is two of 8, one after the other, and their combine.
  int64_t last = group > 8 ? 2 * (1 + 3) + 1 : 1 + levels(group);
  return steps + last + levels(threads);
}

unsigned widestAccessBytes(const KernelPlan& plan) {
  unsigned widest = 0;
  for (const BodyPlan& body : plan.bodies)
    for (const Slot& slot : body.slots)
      if (slot.kind == SlotKind::ElementTensor)
        widest =
            std::max(widest, std::min(16u, body.vectorElements * unsigned(byteSize(slot.dtype))));
  return widest;
}

std::string formatKernelPlan(const KernelPlan& plan) {
  std::string text = fmt::format("kernel {} for {} ({} multiprocessors)\n", plan.name,
                                 plan.device.arch, plan.device.multiprocessorCount);
  text += fmt::format("  {} threads per block, {} blocks per multiprocessor, grid up to {}, "
                      "{}-bit indices\n",
                      plan.threadsPerBlock, plan.minBlocksPerMultiprocessor, plan.maxGridBlocks,
                      plan.indexBits);
  text += fmt::format("  member table in {}: capacity {}, entry {} bytes, table at {}, "
                      "parameter block {} bytes{}\n",
                      tableLocationName(plan.tableLocation).str(), plan.tableCapacity,
                      plan.entryBytes, plan.tableOffset, plan.parameterBytes,
                      plan.needsTickets ? ", ticket workspace" : "");
  for (const BodyPlan& body : plan.bodies) {
    text += fmt::format("  body {} {}: signature class {}, names of component {}, {}, domain "
                        "rank {}, {} elements per access{}, chunk {} elements, entry {} bytes\n",
                        body.index, body.name, body.signatureClass, body.representative,
                        indexingName(body.indexing).str(), body.domainRank, body.vectorElements,
                        body.prefetch ? " (prefetched)" : "", body.chunkElements, body.entryBytes);
    if (body.indexing == Indexing::Strided)
      text += fmt::format("    entry extents: i64[{}] @{}\n", body.domainRank, body.extentsOffset);
    for (const Slot& slot : body.slots)
      text += formatSlot(slot);
  }
  text += fmt::format("  - {}\n", describeGrid(plan));
  for (const std::string& note : plan.notes)
    text += fmt::format("  - {}\n", note);
  return text;
}

bool samePlan(const KernelPlan& a, const KernelPlan& b) {
  auto fields = [](const KernelPlan& plan) {
    return std::tie(plan.name, plan.phase, plan.device, plan.bodies, plan.threadsPerBlock,
                    plan.minBlocksPerMultiprocessor, plan.maxGridBlocks, plan.indexBits,
                    plan.tableLocation, plan.tableCapacity, plan.entryBytes, plan.tableOffset,
                    plan.parameterBytes, plan.needsTickets);
  };
  return fields(a) == fields(b);
}

std::string describeGrid(const KernelPlan& plan) {
  return fmt::format(
      "{} threads per block, compiled for {} resident blocks per multiprocessor (at most {} "
      "registers); a persistent grid of up to {} blocks ({} multiprocessors x {}, or what the "
      "device's occupancy query allows) gives each block the contiguous chunks of an equal "
      "share of the members' elements",
      plan.threadsPerBlock, plan.minBlocksPerMultiprocessor, registerCap(plan), plan.maxGridBlocks,
      plan.device.multiprocessorCount, plan.minBlocksPerMultiprocessor);
}

} // namespace widefuse
