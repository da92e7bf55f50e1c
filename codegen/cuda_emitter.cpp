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

/// The offsets of the entry header's fields, as scheduler/kernel_abi.h names them.
std::string entryHeaderPins() {
  return fmt::format("WF_CHECK_OFFSET(wf_entry_header, numel, {});\n"
                     "WF_CHECK_OFFSET(wf_entry_header, first_chunk, {});\n"
                     "WF_CHECK_OFFSET(wf_entry_header, body, {});\n"
                     "static_assert(sizeof(wf_entry_header) == {}, \"entry header\");\n",
                     abi::kEntryNumelOffset, abi::kEntryFirstChunkOffset, abi::kEntryBodyOffset,
                     abi::kEntryHeaderBytes);
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
)" + entryHeaderPins() +
         R"(

/// Tells the compiler that a pointer read from the member table addresses global memory, so
/// it emits ld.global/st.global (and their 16-byte forms) instead of generic accesses.
template <typename T> WF_DEVICE T* wf_global(T* pointer) {
#ifdef __CUDA_ARCH__
  __builtin_assume(__isGlobal(pointer));
#endif
  return pointer;
}

/// The member whose chunks include `chunk`: a binary search over the first_chunk prefix
/// sums (every member has at least one chunk, so they increase strictly).
template <typename Entry> WF_DEVICE i32 wf_find_member(const Entry* table, i32 count, i32 chunk) {
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
  pin("num_members", abi::kNumMembersOffset);
  pin("num_chunks", abi::kNumChunksOffset);
  pin("tickets", abi::kTicketsOffset);
  pin("table", abi::kTableOffset);
  for (const Slot* slot : shared)
    pin(slot->field, slot->offset);
  if (plan.tableLocation == TableLocation::KernelParameters)
    pin("members", plan.tableOffset);
  return text + fmt::format("static_assert(sizeof({}) == {}, \"parameter layout\");\n\n", name,
                            (plan.parameterBytes + 7) / 8 * 8);
}

/// The walk both entry points share: block `block` of `grid` takes the contiguous chunks
/// [block * per_block, (block + 1) * per_block) and hands each member's run of them to its
/// body's `<body><runFunction>(params, entry, member, first, end<extra>)`, so a block finds a
/// member once and computes its per-member values once.
std::string chunkWalk(const KernelPlan& plan, llvm::StringRef block, llvm::StringRef grid,
                      llvm::StringRef runFunction, llvm::StringRef extra) {
  std::string text = fmt::format(
      "  const {}* table = {};\n", entryTypeName(plan),
      plan.tableLocation == TableLocation::KernelParameters ? "params.members" : "params.table");
  text += fmt::format(
      "  const i32 per_block = (params.num_chunks + i32({1}) - 1) / i32({1});\n"
      "  i32 chunk = i32({0}) * per_block;\n"
      "  const i32 last = params.num_chunks - chunk < per_block ? params.num_chunks : chunk + "
      "per_block;\n"
      "  if (chunk >= last)\n    return;\n"
      "  for (i32 member = wf_find_member(table, params.num_members, chunk); chunk < last; "
      "++member) {{\n"
      "    const i32 next = member + 1 < params.num_members ? table[member + 1].header.first_chunk "
      ": params.num_chunks;\n"
      "    const i32 end = next < last ? next : last;\n",
      block.str(), grid.str());
  std::string call;
  if (plan.bodies.size() == 1) {
    call = fmt::format("    {}{}(params, table[member], member, chunk, end{});\n",
                       plan.bodies.front().name, runFunction.str(), extra.str());
  } else {
    call = "    switch (table[member].header.body) {\n";
    for (const BodyPlan& body : plan.bodies)
      call += fmt::format("    case {0}:\n      {1}{2}(params, table[member].body{0}, member, "
                          "chunk, end{3});\n      break;\n",
                          body.index, body.name, runFunction.str(), extra.str());
    call += "    }\n";
  }
  return text + call + "    chunk = end;\n  }\n";
}

std::string kernel(const KernelPlan& plan) {
  std::string text = fmt::format(
      "/// A persistent grid: block b runs the b-th of gridDim.x equal shares of all members'\n"
      "/// chunks, in order.\n"
      "/// No __launch_bounds__: it would override the register cap NVRTC is given "
      "(--maxrregcount),\n/// which compileFusion raises for a kernel that spills.\n"
      "extern \"C\" __global__ void {}(const __grid_constant__ {} params) {{\n",
      plan.name, parameterTypeName(plan));
  text += chunkWalk(plan, "blockIdx.x", "gridDim.x", "_run", "");
  return text + "}\n";
}

/// The kernel's pointer fields for a checker that runs its launches on the host (the CUDA
/// driver double checks that each is a live device allocation written before the launch).
std::string launchAbi(const KernelPlan& plan) {
  llvm::SmallVector<std::string, 16> fields;
  for (const BodyPlan& body : plan.bodies)
    for (const Slot& slot : body.slots)
      if (slot.kind == SlotKind::ElementTensor || slot.kind == SlotKind::UniformTensor)
        fields.push_back(fmt::format("{{{}, {}, \"{}\"}}", slot.shared ? -1 : int(body.index),
                                     slot.offset, slot.field));
  if (fields.empty())
    fields.push_back("{-2, 0, \"\"}"); // no array of size 0 in C++
  bool inParameters = plan.tableLocation == TableLocation::KernelParameters;
  return fmt::format(
      "/// Where the launch's pointers are (body -1: the parameter block; else offsets in that\n"
      "/// body's member entry), for a checker that runs launches on the host.\n"
      "static const wf_pointer_field {0}_pointer_fields[] = {{\n    {1}}};\n"
      "extern \"C\" const wf_launch_abi {0}_launch_abi = {{{7}, {2}, {3}, {4}, {5}, {6}, "
      "{0}_pointer_fields}};\n",
      plan.name, fmt::join(fields, ",\n    "), (plan.parameterBytes + 7) / 8 * 8,
      inParameters ? plan.tableOffset : 0, inParameters ? 1 : 0, plan.entryBytes,
      fields.front() == "{-2, 0, \"\"}" ? 0 : fields.size(), plan.threadsPerBlock);
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
  text += chunkWalk(plan, "block", "grid", "_host_run", ", block, grid, thread_order");
  return text + "}\n\n" + launchAbi(plan) + "#endif\n";
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
