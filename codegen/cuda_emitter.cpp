#include "codegen/cuda_emitter.h"

#include "codegen/body_emitter.h"
#include "codegen/code_writer.h"
#include "codegen/constant_literal.h"
#include "codegen/emitter_internal.h"
#include "codegen/expression_text.h"
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

void headerComment(const KernelPlan& plan, CodeWriter& out) {
  const SegmentedPhase& segmented = *plan.phase;
  out.line("// widefuse kernel {} for {}", plan.name, plan.device.arch);
  if (segmented.name == segmented.fusion->name())
    out.line("// fusion '{}', {} mode", segmented.fusion->name(), modeName(segmented.mode).str());
  else
    out.line("// fusion '{}', phase {}, {} mode", segmented.fusion->name(), segmented.index + 1,
             modeName(segmented.mode).str());
  for (const BodyPlan& body : plan.bodies) {
    const SignatureClass& signature = segmented.signatureClasses[body.signatureClass];
    out.line("// body {}: signature class {} ({} members in the fusion), written with the names "
             "of component {}",
             body.index, body.signatureClass, signature.members.size(), body.representative);
    out.line("//   inputs {}", inputNames(segmented.components[body.representative]));
    out.line("//   {} indexing, {} elements per access, chunks of {} elements",
             indexingName(body.indexing).str(), body.vectorElements, body.chunkElements);
  }
  out.line("// {} threads per block, {}-bit indices, member table in {}", plan.threadsPerBlock,
           plan.indexBits, tableLocationName(plan.tableLocation).str());
  out.line();
}

/// The fields of a fixed header, with comments aligned, then a WF_CHECK_OFFSET per field.
void headerFields(llvm::ArrayRef<abi::HeaderField> fields, llvm::StringRef entryType,
                  llvm::StringRef structName, CodeWriter& out, std::string& pins) {
  std::vector<std::string> declarations;
  size_t width = 0;
  for (const abi::HeaderField& field : fields) {
    std::string type = fmt::format(fmt::runtime(field.type), fmt::arg("entry", entryType.str()));
    declarations.push_back(fmt::format("{} {};", type, field.name));
    width = std::max(width, declarations.back().size());
  }
  for (size_t index = 0; index < fields.size(); ++index) {
    out.line("{:<{}} // {}", declarations[index], width, fields[index].comment);
    pins += fmt::format("WF_CHECK_OFFSET({}, {}, {});\n", structName.str(), fields[index].name,
                        fields[index].offset);
  }
}

/// The entry header every member table starts its entries with.
std::string entryHeader() {
  CodeWriter out;
  std::string pins;
  out.line("/// First fields of every member-table entry.");
  out.open("struct wf_entry_header");
  headerFields(abi::kEntryHeader, "", "wf_entry_header", out, pins);
  out.close(";");
  return out.text() + pins +
         fmt::format("static_assert(sizeof(wf_entry_header) == {}, \"entry header\");\n",
                     abi::kEntryHeaderBytes);
}

/// The codebook tables the plan's bodies read, each defined once, and the host's code index
/// of each that nearest_code searches.
void codebookTables(const KernelPlan& plan, CodeWriter& out) {
  llvm::SmallVector<Codebook, 4> used, searched;
  for (const BodyPlan& body : plan.bodies)
    for (const Expr* expr : plan.phase->components[body.representative].exprs) {
      Codebook codebook = expr->attributes().codebook;
      if (codebook != Codebook::None && !llvm::is_contained(used, codebook))
        used.push_back(codebook);
      if (expr->op() == OpKind::NearestCode && !llvm::is_contained(searched, codebook))
        searched.push_back(codebook);
    }
  llvm::sort(used);
  for (Codebook codebook : used) {
    out.verbatim(codebookTable(codebook));
    if (llvm::is_contained(searched, codebook))
      out.verbatim(codeIndexText(codebook));
  }
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

)" + entryHeader() +
         "\n" + chunkSharesText().str() +
         R"(

/// Tells the compiler that a pointer read from the member table addresses global memory, so
/// it emits ld.global/st.global (and their 16-byte forms) instead of generic accesses.
template <typename T> WF_DEVICE T* wf_global(T* pointer) {
#ifdef __CUDA_ARCH__
  __builtin_assume(__isGlobal(pointer));
#endif
  return pointer;
}

)";
}

void entryType(const KernelPlan& plan, CodeWriter& out) {
  if (plan.bodies.size() == 1) {
    out.line("typedef {} {};", memberTypeName(plan.bodies.front()), entryTypeName(plan));
    out.line();
    return;
  }
  out.line("/// One member-table entry: the member's body says which field is in use.");
  out.open("union {}", entryTypeName(plan));
  out.line("wf_entry_header header;");
  for (const BodyPlan& body : plan.bodies)
    out.line("{} body{};", memberTypeName(body), body.index);
  out.close(";");
  out.line("static_assert(sizeof({}) == {}, \"member table layout\");", entryTypeName(plan),
           plan.entryBytes);
  out.line();
}

void parameterType(const KernelPlan& plan, CodeWriter& out) {
  std::string name = parameterTypeName(plan);
  out.line("/// The kernel's single argument.");
  out.open("struct {}", name);
  std::string pins;
  headerFields(abi::kParameterHeader, entryTypeName(plan), name, out, pins);
  std::vector<const Slot*> shared;
  for (const BodyPlan& body : plan.bodies)
    for (const Slot& slot : body.slots)
      if (slot.shared)
        shared.push_back(&slot);
  llvm::sort(shared, [](const Slot* a, const Slot* b) { return a->offset < b->offset; });
  for (const Slot* slot : shared) {
    std::string type = cppType(slot->dtype);
    if (slot->kind == SlotKind::UniformTensor || slot->kind == SlotKind::ElementTensor)
      out.line("const {}* {}; // 0-d tensor read by every member", type, slot->field);
    else
      out.line("{} {}; // the same for every member", type, slot->field);
  }
  bool inParameters = plan.tableLocation == TableLocation::KernelParameters;
  if (inParameters)
    out.line("{} members[{}];", entryTypeName(plan), plan.tableCapacity);
  out.close(";");
  auto pin = [&](llvm::StringRef field, unsigned offset) {
    out.line("WF_CHECK_OFFSET({}, {}, {});", name, field.str(), offset);
  };
  out.verbatim(pins);
  for (const Slot* slot : shared)
    pin(slot->field, slot->offset);
  if (inParameters)
    pin("members", plan.tableOffset);
  out.line("static_assert(sizeof({}) == {}, \"parameter layout\");", name,
           (plan.parameterBytes + 7) / 8 * 8);
  out.line();
}

} // namespace

/// The walk both entry points share: block `block` of `grid` takes the contiguous chunks that
/// start in its share of the launch's work (codegen/chunk_shares.h) and hands each member's run
/// of them to its body's `<body><runFunction>(params, entry, member, first, end)`, so a block
/// finds a member once and computes its per-member values once.
void chunkWalk(const KernelPlan& plan, llvm::StringRef block, llvm::StringRef grid,
               llvm::StringRef runFunction, CodeWriter& out) {
  out.line("const {}* table = {};", entryTypeName(plan),
           plan.tableLocation == TableLocation::KernelParameters ? "params.members"
                                                                 : "params.table");
  out.line("i32 chunk = 0, last = 0;");
  out.line(
      "wf_block_chunks(table, params.num_members, params.num_chunks, i64({}), i64({}), &chunk, "
      "&last);",
      block.str(), grid.str());
  out.line("if (chunk >= last)");
  out.indent();
  out.line("return;");
  out.dedent();
  out.open("for (i32 member = wf_find_member(table, params.num_members, chunk); chunk < last; "
           "++member)");
  out.line("const i32 next =");
  out.line("    member + 1 < params.num_members ? table[member + 1].header.first_chunk : "
           "params.num_chunks;");
  out.line("const i32 end = next < last ? next : last;");
  auto call = [&](const BodyPlan& body, const std::string& entry) {
    std::vector<std::string> arguments = {"params", entry, "member", "chunk", "end"};
    out.wrapped(body.name + runFunction.str() + "(", arguments, ", ", ");");
  };
  if (plan.bodies.size() == 1) {
    call(plan.bodies.front(), "table[member]");
  } else {
    out.open("switch (table[member].header.body)");
    out.dedent(); // case labels at the switch's depth, as .clang-format has them
    for (const BodyPlan& body : plan.bodies) {
      out.line("case {}:", body.index);
      out.indent();
      call(body, fmt::format("table[member].body{}", body.index));
      out.line("break;");
      out.dedent();
    }
    out.indent();
    out.close();
  }
  out.line("chunk = end;");
  out.close();
}

namespace {

void kernel(const KernelPlan& plan, CodeWriter& out) {
  out.line(
      "/// A persistent grid: block b runs the chunks that start in the b-th of gridDim.x equal");
  out.line("/// shares of all members' work, in order.");
  out.line("/// No __launch_bounds__: it would override the register cap NVRTC is given "
           "(--maxrregcount),");
  out.line("/// which compileFusion raises for a kernel that spills.");
  out.openWrapped(fmt::format("extern \"C\" __global__ void {}(", plan.name),
                  {fmt::format("const __grid_constant__ {} params", parameterTypeName(plan))},
                  ", ");
  chunkWalk(plan, "blockIdx.x", "gridDim.x", "_run", out);
  out.close();
}

} // namespace

std::string emitCuda(const KernelPlan& plan) {
  CodeWriter out;
  headerComment(plan, out);
  out.verbatim(devicePrelude());
  if (llvm::any_of(plan.bodies, [](const BodyPlan& body) {
        return !body.reductions.empty() || !body.blocks.empty();
      }))
    out.verbatim(reductionPrelude());
  out.line();
  codebookTables(plan, out);
  out.verbatim(skeletonHelpers());
  out.line("// ---- {} ----", plan.name);
  for (const BodyPlan& body : plan.bodies)
    emitBodyEntry(plan, body, out);
  entryType(plan, out);
  parameterType(plan, out);
  for (const BodyPlan& body : plan.bodies)
    emitBodyFunctions(plan, body, out);
  kernel(plan, out);
  emitHostEntries(plan, out);
  return out.text();
}

} // namespace widefuse
