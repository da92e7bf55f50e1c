#include "codegen/body_emitter.h"
#include "codegen/constant_literal.h"
#include "codegen/emitter_internal.h"

#include <fmt/format.h>

namespace widefuse {

void BodyEmitter::hostPointerLocals() {
  forEachElementTensor(true, true, [&](const Slot& slot) {
    out_.line("{}{}* const {}_ = {};", slot.written ? "" : "const ", cppType(slot.dtype),
              slot.field, slotAccess(slot));
  });
}

ElementAccess BodyEmitter::hostAccess(std::function<std::string(const Slot&)> index,
                                      std::string element) const {
  auto read = [index](const Slot& slot) {
    if (isBitsStruct(slot.dtype))
      return fmt::format("{}{{{}_[{}].bits}}", cppType(slot.dtype), slot.field, index(slot));
    return fmt::format("{}_[{}]", slot.field, index(slot));
  };
  auto store = [index](const Slot& slot) {
    const char* bits = isBitsStruct(slot.dtype) ? ".bits" : "";
    return fmt::format("{0}_[{1}]{2} = out.{0}{2};", slot.field, index(slot), bits);
  };
  return {read, store, std::move(element)};
}

void BodyEmitter::hostFastFlatLoop() {
  elementLoop({fmt::format("for ({0} i = begin; i < end; ++i)", indexType_),
               {},
               hostAccess([](const Slot&) { return std::string("i"); }, "i")});
}

/// Walks [begin, end) row by row of the domain's innermost dimension: the coordinates of the
/// row's first element give each tensor's offset once, and the row is one loop with constant
/// strides (no division per element).
void BodyEmitter::hostFastStridedLoop() {
  unsigned rank = body_.domainRank;
  if (rank == 0) {
    elementLoop({fmt::format("for ({0} i = begin; i < end; ++i)", indexType_),
                 {},
                 hostAccess([](const Slot&) { return std::string("0"); }, "i")});
    return;
  }
  unsigned inner = rank - 1;
  // An empty member (an extent of 0) has no coordinates to find.
  out_.open("if (begin < end)");
  out_.line("{} c[{}]; // coordinates of element i in the domain", indexType_, rank);
  out_.line("{} rest = begin;", indexType_);
  out_.open("for (int d = {}; d > 0; --d)", inner);
  out_.line("c[d] = rest % {}(entry.extents[d]);", indexType_);
  out_.line("rest /= {}(entry.extents[d]);", indexType_);
  out_.close();
  out_.line("c[0] = rest;");
  out_.open("for ({0} i = begin; i < end;)", indexType_);
  out_.line("const {0} row_left = {0}(entry.extents[{1}]) - c[{1}];", indexType_, inner);
  out_.line("const {0} row = end - i < row_left ? end - i : row_left;", indexType_);
  forEachElementTensor(true, true, [&](const Slot& slot) {
    offsetLocal(slot, [](unsigned d) { return fmt::format("c[{}]", d); });
    out_.line("const {0} step_{1} = {0}(entry.{1}_strides[{2}]);", indexType_, slot.field, inner);
  });
  elementLoop(
      {fmt::format("for ({0} k = 0; k < row; ++k)", indexType_),
       {},
       hostAccess([](const Slot& slot) { return fmt::format("at_{0} + k * step_{0}", slot.field); },
                  "i + k")});
  out_.line("i += row;");
  out_.line("c[{}] += row;", inner);
  out_.open("for (int d = {}; d > 0 && c[d] == {}(entry.extents[d]); --d)", inner, indexType_);
  out_.line("c[d] = 0;");
  out_.line("++c[d - 1];");
  out_.close();
  out_.close();
  out_.close();
}

ElementsVariant BodyEmitter::hostFastElements() {
  return {fmt::format("inline void {}_host_fast_elements", body_.name),
          {fmt::format("/// Elements [begin, end) of one member of {} on the host's fast path: "
                       "one loop",
                       body_.name),
           "/// over consecutive elements, which the host compiler vectorizes."},
          [&] {
            out_.line("(void)params;");
            if (!body_.reducesRows && !body_.byBlocks)
              hostPointerLocals();
          },
          [&] { body_.byBlocks ? hostBlockLoop() : hostFastFlatLoop(); },
          [&] {
            if (body_.byBlocks)
              hostBlockLoop();
            else
              body_.reducesRows ? hostRowsReductionLoop() : hostFastStridedLoop();
          },
          "begin == 0"};
}

RunVariant BodyEmitter::hostFastRun() {
  RunVariant run;
  run.signature = fmt::format("inline void {}_host_fast_run", body_.name);
  run.comment = {
      fmt::format("/// Chunks [first, end) of member `member` of {} on the host's fast path: the",
                  body_.name),
      "/// block's work as one thread's loop; the deferred writes by the same ticket rule."};
  run.elements = [&] {
    if (!body_.reductions.empty() && !body_.reducesRows) {
      hostReductionRows();
      return;
    }
    out_.line("const {0}_uniform u = {0}_prologue(params, entry);", body_.name);
    elementRange();
    out_.line("{}_host_fast_elements(params, entry, u, begin, stop);", body_.name);
  };
  // One thread runs the whole block already.
  run.oneThread = [](llvm::function_ref<void()> work) { work(); };
  return run;
}

namespace {

/// The kernel's pointer fields for a checker that runs its launches on the host (the CUDA
/// driver double checks that each is a live device allocation written before the launch).
void launchAbi(const KernelPlan& plan, CodeWriter& out) {
  llvm::SmallVector<std::string, 16> fields;
  for (const BodyPlan& body : plan.bodies)
    for (const Slot& slot : body.slots) {
      if (slot.kind != SlotKind::ElementTensor && slot.kind != SlotKind::UniformTensor &&
          slot.kind != SlotKind::BlockTensor)
        continue;
      // Shared element tensors have no one numel to bound them by, block tensors another one.
      const char* reach =
          slot.kind == SlotKind::UniformTensor ? "wf_reach_one"
          : slot.kind == SlotKind::ElementTensor && body.indexing == Indexing::Flat && !slot.shared
              ? "wf_reach_numel"
              : "wf_reach_first";
      fields.push_back(fmt::format("{{{}, {}, \"{}\", {}, {}}}", slot.shared ? -1 : int(body.index),
                                   slot.offset, slot.field, byteSize(slot.dtype), reach));
    }
  size_t count = fields.size();
  if (fields.empty())
    fields.push_back("{-2, 0, \"\", 0, wf_reach_one}"); // no array of size 0 in C++
  bool inParameters = plan.tableLocation == TableLocation::KernelParameters;
  out.line(
      "/// Where the launch's pointers are (body -1: the parameter block; else offsets in that");
  out.line("/// body's member entry), for a checker that runs launches on the host.");
  out.open("static const wf_pointer_field {}_pointer_fields[] =", plan.name);
  for (size_t i = 0; i < fields.size(); ++i)
    out.line("{}{}", fields[i], i + 1 < fields.size() ? "," : "");
  out.close(";");
  out.wrapped(
      fmt::format("extern \"C\" __attribute__((visibility(\"default\"))) const wf_launch_abi "
                  "{}_launch_abi = {{",
                  plan.name),
      {std::to_string(plan.threadsPerBlock), std::to_string((plan.parameterBytes + 7) / 8 * 8),
       std::to_string(inParameters ? plan.tableOffset : 0), std::to_string(inParameters ? 1 : 0),
       std::to_string(plan.entryBytes), std::to_string(count), plan.name + "_pointer_fields"},
      ", ", "};");
}

} // namespace

void emitHostEntries(const KernelPlan& plan, CodeWriter& out) {
  out.line();
  out.directive("#ifndef __CUDACC__");
  out.line("/// Host backend, fast path: block `block` of a `grid`-block launch of {} as one loop",
           plan.name);
  out.line("/// per member run on this CPU thread (any grid size).");
  out.openWrapped(fmt::format("extern \"C\" void {}_host_fast_block(", plan.name),
                  {"const void* parameters", "u32 block", "u32 grid"}, ", ");
  out.line("const {0}& params = *static_cast<const {0}*>(parameters);", parameterTypeName(plan));
  chunkWalk(plan, "block", "grid", "_host_fast_run", out);
  out.close();
  out.directive("#endif");
  // Host builds, native or emulated, describe their launches; NVRTC has no use for it.
  out.directive("#ifndef __CUDACC_RTC__");
  launchAbi(plan, out);
  out.directive("#endif");
}

} // namespace widefuse
