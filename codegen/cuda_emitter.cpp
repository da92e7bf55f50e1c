#include "codegen/cuda_emitter.h"

#include "codegen/body_emitter.h"
#include "codegen/constant_literal.h"
#include "codegen/prelude.h"

#include <fmt/format.h>

namespace widefuse {
namespace {

/// Names of the values of component `id`'s inputs, for the header comment.
std::string inputNames(const Component& component) {
  llvm::SmallVector<std::string, 8> names;
  for (const Value* input : component.inputs)
    names.push_back(input->name());
  return fmt::format("{}", fmt::join(names, " "));
}

std::string headerComment(const KernelPlan& plan) {
  const SegmentedFusion& segmented = *plan.segmented;
  std::string text = fmt::format("// widefuse kernel {} for {}\n", plan.name, plan.device.arch);
  text += fmt::format("// fusion '{}', {} mode\n", segmented.fusion->name(),
                      modeName(segmented.mode).str());
  for (const BodyPlan& body : plan.bodies) {
    const SignatureClass& signature = segmented.signatureClasses[body.signatureClass];
    text += fmt::format("// body {}: signature class {} ({} members in the fusion), written with "
                        "the names of component {} ({})\n",
                        body.index, body.signatureClass, signature.members.size(),
                        body.representative, inputNames(segmented.components[body.representative]));
    text += fmt::format("//   {} indexing, {} elements per access, chunks of {} elements\n",
                        indexingName(body.indexing).str(), body.vectorElements, body.chunkElements);
  }
  text += fmt::format("// {} threads per block, {}-bit indices, member table in {}\n",
                      plan.threadsPerBlock, plan.indexBits,
                      tableLocationName(plan.tableLocation).str());
  return text + "\n";
}

/// What every kernel shares: the entry header and the chunk -> member lookup.
std::string skeletonHelpers() {
  return R"(// ---- kernel skeleton ----
// The runtime fills the tables at the plan's offsets; the host compiler checks them (NVRTC has
// no offsetof, and device and host lay out these structs alike).
#ifdef __CUDACC_RTC__
#define WF_CHECK_OFFSET(type, field, offset)
#else
#define WF_CHECK_OFFSET(type, field, offset) \
  static_assert(__builtin_offsetof(type, field) == offset, "table layout of " #type)
#endif

/// First fields of every member-table entry.
struct wf_entry_header {
  i64 numel;       // elements of the member's domain
  i32 first_chunk; // global index of the member's first chunk (prefix sum)
  i32 body;        // which body runs the member (packed kernels)
};

/// Tells the compiler that a pointer read from the member table addresses global memory, so
/// it emits ld.global/st.global (and their 16-byte forms) instead of generic accesses.
template <typename T> WF_DEVICE T* wf_global(T* pointer) {
#ifdef __CUDA_ARCH__
  __builtin_assume(__isGlobal(pointer));
#endif
  return pointer;
}

/// The member whose chunks include `chunk`: `hint` (the previous member of this block) when
/// it still matches, else a binary search over the first_chunk prefix sums.
template <typename Entry>
WF_DEVICE i32 wf_find_member(const Entry* table, i32 count, i32 chunk, i32 hint) {
  if (table[hint].header.first_chunk <= chunk &&
      (hint + 1 == count || chunk < table[hint + 1].header.first_chunk))
    return hint;
  i32 low = 0, high = count - 1;
  while (low < high) {
    const i32 middle = (low + high + 1) / 2;
    if (table[middle].header.first_chunk <= chunk)
      low = middle;
    else
      high = middle - 1;
  }
  return low;
}

)";
}

std::string entryType(const KernelPlan& plan) {
  if (plan.bodies.size() == 1)
    return fmt::format("typedef {} {};\n\n", memberTypeName(plan.bodies.front()),
                       entryTypeName(plan));
  std::string text = fmt::format("/// One member-table entry: the member's body says which "
                                 "field is in use.\nunion {} {{\n  wf_entry_header header;\n",
                                 entryTypeName(plan));
  for (const BodyPlan& body : plan.bodies)
    text += fmt::format("  {} body{};\n", memberTypeName(body), body.index);
  return text + fmt::format("}};\nstatic_assert(sizeof({}) == {}, \"member table layout\");\n\n",
                            entryTypeName(plan), plan.entryBytes);
}

std::string parameterType(const KernelPlan& plan) {
  std::string name = parameterTypeName(plan);
  std::string text = fmt::format(
      "/// The kernel's single argument.\nstruct {} {{\n  i32 num_members;\n  i32 num_chunks;\n"
      "  u32* tickets; // one per member, zero between launches (deferred writes)\n"
      "  const {}* table; // the member table when it lives in device memory\n",
      name, entryTypeName(plan));
  std::vector<const Slot*> shared;
  for (const BodyPlan& body : plan.bodies)
    for (const Slot& slot : body.slots)
      if (slot.shared)
        shared.push_back(&slot);
  llvm::sort(shared, [](const Slot* a, const Slot* b) { return a->offset < b->offset; });
  for (const Slot* slot : shared) {
    std::string type = cppType(slot->dtype);
    bool pointer = slot->kind == SlotKind::UniformTensor || slot->kind == SlotKind::ElementTensor;
    text += pointer ? fmt::format("  const {}* {}; // 0-d tensor read by every member\n", type,
                                  slot->field)
                    : fmt::format("  {} {}; // the same for every member\n", type, slot->field);
  }
  if (plan.tableLocation == TableLocation::KernelParameters)
    text += fmt::format("  {} members[{}];\n", entryTypeName(plan), plan.tableCapacity);
  text += "};\n";
  auto pin = [&](const std::string& field, unsigned offset) {
    text += fmt::format("WF_CHECK_OFFSET({}, {}, {});\n", name, field, offset);
  };
  pin("tickets", 8);
  pin("table", 16);
  for (const Slot* slot : shared)
    pin(slot->field, slot->offset);
  if (plan.tableLocation == TableLocation::KernelParameters)
    pin("members", plan.tableOffset);
  return text + fmt::format("static_assert(sizeof({}) == {}, \"parameter layout\");\n\n", name,
                            (plan.parameterBytes + 7) / 8 * 8);
}

/// The walk both entry points share: the member table, then chunks `first`, `first + step`,
/// ... each handed to its body's `<body><chunkFunction>(params, entry, member, chunk<extra>)`.
std::string chunkWalk(const KernelPlan& plan, llvm::StringRef first, llvm::StringRef step,
                      llvm::StringRef chunkFunction, llvm::StringRef extra) {
  std::string text = fmt::format(
      "  const {}* table = {};\n", entryTypeName(plan),
      plan.tableLocation == TableLocation::KernelParameters ? "params.members" : "params.table");
  text += fmt::format("  i32 member = 0;\n"
                      "  for (i32 chunk = {}; chunk < params.num_chunks; chunk += {}) {{\n"
                      "    member = wf_find_member(table, params.num_members, chunk, member);\n",
                      first.str(), step.str());
  if (plan.bodies.size() == 1)
    return text + fmt::format("    {}{}(params, table[member], member, chunk{});\n  }}\n",
                              plan.bodies.front().name, chunkFunction.str(), extra.str());
  text += "    switch (table[member].header.body) {\n";
  for (const BodyPlan& body : plan.bodies)
    text += fmt::format("    case {0}:\n      {1}{2}(params, table[member].body{0}, member, "
                        "chunk{3});\n      break;\n",
                        body.index, body.name, chunkFunction.str(), extra.str());
  return text + "    }\n  }\n";
}

std::string kernel(const KernelPlan& plan) {
  std::string text = fmt::format(
      "/// A persistent grid: block b runs chunks b, b + gridDim.x, ... of all members.\n"
      "extern \"C\" __global__ void __launch_bounds__({}, {}) {}(const __grid_constant__ {} "
      "params) {{\n",
      plan.threadsPerBlock, plan.minBlocksPerMultiprocessor, plan.name, parameterTypeName(plan));
  text += chunkWalk(plan, "i32(blockIdx.x)", "i32(gridDim.x)", "_chunk", "");
  return text + "}\n";
}

/// The host backend's entry point: one block of the grid on the calling CPU thread.
std::string hostEntry(const KernelPlan& plan) {
  std::string text = fmt::format(
      "\n#ifndef __CUDACC__\n"
      "/// Host backend: runs block `block` of a `grid`-block launch of {0} on this CPU thread.\n"
      "extern \"C\" void {0}_host_block(const void* parameters, u32 block, u32 grid,\n"
      "                                 const u32* thread_order) {{\n"
      "  const {1}& params = *static_cast<const {1}*>(parameters);\n",
      plan.name, parameterTypeName(plan));
  text += chunkWalk(plan, "i32(block)", "i32(grid)", "_host_chunk", ", block, grid, thread_order");
  return text + "}\n#endif\n";
}

} // namespace

std::string emitCuda(const KernelPlan& plan) {
  std::string text = headerComment(plan);
  text += devicePrelude().str();
  text += "\n";
  text += skeletonHelpers();
  text += fmt::format("// ---- {} ----\n", plan.name);
  for (const BodyPlan& body : plan.bodies)
    text += emitBodyEntry(plan, body);
  text += entryType(plan);
  text += parameterType(plan);
  for (const BodyPlan& body : plan.bodies)
    text += emitBodyFunctions(plan, body);
  text += kernel(plan);
  text += hostEntry(plan);
  return text;
}

} // namespace widefuse
