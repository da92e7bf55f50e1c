#include "codegen/body_emitter.h"

#include "codegen/constant_literal.h"
#include "codegen/emitter_internal.h"
#include "ir/error.h"
#include "ir/reduction.h"
#include "scheduler/element_views.h"
#include "segmenter/components.h"

#include <fmt/format.h>

#include <functional>

namespace widefuse {

std::string parameterTypeName(const KernelPlan& plan) {
  return plan.name + "_params";
}

std::string entryTypeName(const KernelPlan& plan) {
  return plan.name + "_entry";
}

std::string memberTypeName(const BodyPlan& body) {
  return body.name + "_member";
}

namespace {

bool isPointerSlot(const Slot& slot) {
  return slot.kind == SlotKind::ElementTensor || slot.kind == SlotKind::UniformTensor ||
         slot.kind == SlotKind::BlockTensor;
}

/// The declaration of a slot's field: `const f32* g0`, `f64 lr`.
std::string fieldDeclaration(const Slot& slot) {
  std::string type = cppType(slot.dtype);
  if (isPointerSlot(slot))
    return fmt::format("{}{}* {}", slot.written ? "" : "const ", type, slot.field);
  return fmt::format("{} {}", type, slot.field);
}

std::string slotComment(const Slot& slot) {
  std::string what;
  switch (slot.kind) {
  case SlotKind::ElementTensor:
    what = "tensor";
    break;
  case SlotKind::UniformTensor:
    what = "0-d tensor";
    break;
  case SlotKind::Scalar:
    what = "scalar";
    break;
  case SlotKind::LiftedConstant:
    return fmt::format("constant #{} of the class, different in each member", slot.source.index);
  case SlotKind::BlockTensor:
    what = fmt::format("tensor of one element per block of {}", slot.block);
    break;
  }
  std::string origin = slot.source.kind == SlotSource::Kind::Output ? "output" : "input";
  std::string access = slot.read && slot.written ? "read and written"
                       : slot.written            ? "written"
                                                 : "read";
  if (slot.deferred)
    access += " once, after the member's last chunk";
  return fmt::format("{} {}, {}", what, origin, access);
}

} // namespace

BodyEmitter::BodyEmitter(const KernelPlan& plan, const BodyPlan& body, CodeWriter& out)
    : plan_(plan), body_(body), values_(plan, body), out_(out) {
  indexType_ = plan.indexBits == 64 ? "i64" : "i32";
  for (const Expr* expr : values_.component().exprs)
    readsElementIndex_ |= expr->op() == OpKind::ElementIndex && expr->result()->rank() > 0;
}

std::vector<std::string> BodyEmitter::tableParameters() const {
  return {fmt::format("const {}& params", parameterTypeName(plan_)),
          fmt::format("const {}& entry", memberTypeName(body_))};
}

void BodyEmitter::forEachElementTensor(bool reads, bool writes,
                                       const std::function<void(const Slot&)>& each) const {
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor && ((reads && slot.read) || (writes && slot.written)))
      each(slot);
}

void BodyEmitter::entry() {
  std::string name = memberTypeName(body_);
  out_.line("/// Member-table entry of {}: one member's tensors and values.", body_.name);
  out_.open("struct {}", name);
  out_.line("wf_entry_header header;");
  bool strided = body_.indexing == Indexing::Strided;
  if (strided)
    out_.line("i64 extents[{}]; // the member's domain", body_.domainRank);
  for (const Slot& slot : body_.slots) {
    if (slot.shared)
      continue;
    out_.line("{}; // {}", fieldDeclaration(slot), slotComment(slot));
    if (slot.kind == SlotKind::ElementTensor && strided)
      out_.line("i64 {}_strides[{}]; // in elements, 0 where broadcast", slot.field,
                body_.domainRank);
  }
  reductionFields();
  out_.close(";");
  if (strided)
    out_.line("WF_CHECK_OFFSET({}, extents, {});", name, body_.extentsOffset);
  for (const Slot& slot : body_.slots) {
    if (slot.shared)
      continue;
    out_.line("WF_CHECK_OFFSET({}, {}, {});", name, slot.field, slot.offset);
    if (slot.kind == SlotKind::ElementTensor && strided)
      out_.line("WF_CHECK_OFFSET({}, {}_strides, {});", name, slot.field, slot.stridesOffset);
  }
  if (body_.reducesRows) {
    out_.line("WF_CHECK_OFFSET({}, row_tickets, {});", name, body_.rowTicketsOffset);
    out_.line("WF_CHECK_OFFSET({}, row_segments, {});", name, body_.rowSegmentsOffset);
  }
  for (const ReductionSlot& slot : body_.reductions) {
    out_.line("WF_CHECK_OFFSET({}, {}_partials, {});", name, slot.name, slot.partialsOffset);
    out_.line("WF_CHECK_OFFSET({}, {}_out, {});", name, slot.name, slot.outOffset);
    out_.line("WF_CHECK_OFFSET({}, {}_results, {});", name, slot.name, slot.resultsOffset);
    out_.line("WF_CHECK_OFFSET({}, {}_ticket, {});", name, slot.name, slot.ticketOffset);
    out_.line("WF_CHECK_OFFSET({}, {}_operand, {});", name, slot.name, slot.operandOffset);
    out_.line("WF_CHECK_OFFSET({}, {}_operands, {});", name, slot.name, slot.operandsOffset);
  }
  out_.line("static_assert(sizeof({}) == {}, \"member table layout\");", name, body_.entryBytes);
  out_.line();
}

void BodyEmitter::uniformStruct() {
  out_.line("/// Values of {} computed once per run of chunks: scalars, 0-d tensors, lifted "
            "constants.",
            body_.name);
  out_.open("struct {}_uniform", body_.name);
  for (const ElementInstance& value : body_.uniformValues)
    out_.line("{} {};", cppType(value.value->dtype()), value.name);
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::LiftedConstant)
      out_.line("{} {};", cppType(slot.dtype), slot.name);
  out_.close(";");
  out_.line();
}

void BodyEmitter::prologue() {
  openFunction(fmt::format("WF_DEVICE {0}_uniform {0}_prologue", body_.name), tableParameters());
  out_.line("{}_uniform u;", body_.name);
  for (const Slot& slot : body_.slots) {
    bool uniformInput = slot.kind == SlotKind::Scalar || slot.kind == SlotKind::UniformTensor;
    if (uniformInput && slot.source.kind == SlotSource::Kind::Input && slot.read)
      out_.line("u.{} = {};", slot.name,
                slot.kind == SlotKind::UniformTensor ? "*" + pointerOf(slot) : slotAccess(slot));
    if (slot.kind == SlotKind::LiftedConstant)
      out_.line("u.{} = {};", slot.name, slotAccess(slot));
  }
  const Component& component = values_.component();
  for (const Expr* expr : component.exprs) {
    if (!isUniformValue(*expr->result(), component))
      continue;
    llvm::SmallVector<OperandText, 3> operands;
    for (unsigned i = 0; i < expr->operands().size(); ++i)
      operands.push_back(values_.operandText(*expr, i, nullptr));
    out_.line("u.{} = {};", values_.uniformName(expr->result()), expressionText(*expr, operands));
  }
  out_.line("return u;");
  out_.close();
  out_.line();
}

void BodyEmitter::elementStatement(const ElementInstance& instance, bool shared) {
  const Expr& expr = *instance.value->definition();
  // The loops know the domain's index; a value broadcast into the domain has its own.
  bool domainShaped =
      instance.view.empty() || (int64_t(instance.view.size()) == int64_t(body_.domainRank) &&
                                llvm::all_of(llvm::enumerate(instance.view), [](const auto& entry) {
                                  return entry.value() == int64_t(entry.index());
                                }));
  if (expr.op() == OpKind::ElementIndex && expr.result()->rank() > 0 && !domainShaped)
    throw Error("element_index of a value broadcast into a larger domain is not supported by "
                "kernels yet (the reference evaluator runs it)");
  llvm::SmallVector<OperandText, 3> operands;
  for (unsigned i = 0; i < expr.operands().size(); ++i)
    operands.push_back(values_.operandText(expr, i, &instance.view));
  // What the leaves computed is handed over (the statements that only led to it are then
  // dead code, which the compilers drop).
  std::string text = shared ? "shared." + instance.name : expressionText(expr, operands);
  out_.line("const {} {} = {};", cppType(instance.value->dtype()), instance.name, text);
}

void BodyEmitter::elementFunction() {
  out_.line("/// One element's reads.");
  out_.open("struct {}_in", body_.name);
  forEachRead([&](const Slot& slot) { out_.line("{} {};", cppType(slot.dtype), slot.name); });
  out_.close(";");
  out_.line("/// One element's writes.");
  out_.open("struct {}_out", body_.name);
  forEachElementTensor(
      false, true, [&](const Slot& slot) { out_.line("{} {};", cppType(slot.dtype), slot.name); });
  reductionLeafFields();
  lateLeafFields();
  out_.close(";");
  out_.line();
  if (body_.byBlocks)
    blockFunctions();
  out_.line("/// One element of {}: a statement per IR expression.", body_.name);
  std::vector<std::string> parameters = {fmt::format("const {}_uniform& u", body_.name),
                                         fmt::format("const {}_in& in", body_.name)};
  if (!body_.blocks.empty())
    parameters.push_back(fmt::format("const {}_blocks& blk", body_.name));
  if (!shared_.empty())
    parameters.push_back(fmt::format("const {}_shared& shared", body_.name));
  if (readsElementIndex_)
    parameters.push_back("i64 element_index");
  openFunction(fmt::format("WF_DEVICE {0}_out {0}_element", body_.name), parameters);
  for (const ElementInstance& instance : body_.elementInstances) {
    // Block results are the element's `blk` (computed by the block's threads together).
    if (!isKernelInput(*instance.value) && !isBlockReductionResult(*instance.value))
      elementStatement(instance, llvm::is_contained(shared_, &instance));
  }
  out_.line("{}_out out;", body_.name);
  forEachElementTensor(false, true, [&](const Slot& slot) {
    out_.line("out.{} = {};", slot.name, values_.writtenValueText(slot));
  });
  reductionLeafValues();
  lateLeafValues();
  out_.line("return out;");
  out_.close();
  out_.line();
}

// ---- the skeleton ----

void BodyEmitter::zeroDimensionalOutputs(llvm::StringRef condition) {
  bool any = false;
  for (const Slot& slot : body_.slots) {
    if (slot.kind != SlotKind::UniformTensor || !slot.written || slot.deferred)
      continue;
    if (!any)
      out_.openCommented(fmt::format("if ({})", condition.str()), "0-d outputs, once per member");
    any = true;
    out_.line("*{} = {};", pointerOf(slot), values_.writtenValueText(slot));
  }
  if (any)
    out_.close();
}

void BodyEmitter::elementsFunction(const ElementsVariant& variant) {
  for (const std::string& line : variant.comment)
    out_.line(line);
  std::vector<std::string> parameters = tableParameters();
  parameters.insert(parameters.end(), {fmt::format("const {}_uniform& u", body_.name),
                                       fmt::format("const {} begin", indexType_),
                                       fmt::format("const {} end", indexType_)});
  openFunction(variant.signature, parameters);
  if (variant.locals)
    variant.locals();
  if (body_.indexing == Indexing::Flat)
    variant.flat();
  else
    variant.strided();
  zeroDimensionalOutputs(variant.firstElement);
  out_.close();
  out_.line();
}

void BodyEmitter::elementRange() {
  if (body_.reducesRows) { // the rows loop takes chunks: rows by a segment of their columns
    out_.line("const {0} begin = {0}(first - entry.header.first_chunk);", indexType_);
    out_.line("const {0} stop = {0}(end - entry.header.first_chunk);", indexType_);
    return;
  }
  out_.line("const {0} begin = {0}(first - entry.header.first_chunk) * {1};", indexType_,
            body_.chunkElements);
  out_.line("const {0} limit = {0}(end - entry.header.first_chunk) * {1};", indexType_,
            body_.chunkElements);
  out_.line("const {0} stop = limit < entry.header.numel ? limit : {0}(entry.header.numel);",
            indexType_);
}

void BodyEmitter::afterLastChunk(const RunVariant& variant) {
  if (!body_.needsFinisher()) {
    out_.line("(void)member;");
    return;
  }
  if (variant.device && combinesOnDevice()) {
    out_.line("{}_finish(params, entry, u, member, end - first);", body_.name);
    return;
  }
  variant.oneThread(
      [&] { out_.line("{}_deferred(params, entry, u, member, end - first);", body_.name); });
}

void BodyEmitter::runFunction(const RunVariant& variant) {
  for (const std::string& line : variant.comment)
    out_.line(line);
  std::vector<std::string> parameters = tableParameters();
  parameters.insert(parameters.end(), {"i32 member", "i32 first", "i32 end"});
  openFunction(variant.signature, parameters);
  variant.elements();
  afterLastChunk(variant);
  out_.close();
  out_.line();
}

// ---- device functions ----

void BodyEmitter::scalarLoop(llvm::StringRef from, llvm::StringRef to, llvm::StringRef comment) {
  out_.line("// {}", comment.str());
  elementLoop({fmt::format("for ({0} i = {1} + {0}(threadIdx.x); i < {2}; i += {3})", indexType_,
                           from.str(), to.str(), plan_.threadsPerBlock),
               {},
               flatAccess()});
}

void BodyEmitter::flatLoops() {
  unsigned vector = body_.vectorElements;
  if (vector == 1) {
    scalarLoop("begin", "end", "one element per access");
    return;
  }
  auto accessBytes = [&](const Slot& slot) {
    return std::min(16u, vector * unsigned(byteSize(slot.dtype)));
  };
  // The vector path starts after `head` leading elements, where every tensor of the member
  // reaches its access alignment at once (0 for the usual aligned allocations; a view that
  // starts mid-vector peels a few elements instead of going scalar).
  const Slot* first = nullptr;
  llvm::SmallVector<std::string, 8> checks = {"head >= 0"};
  forEachElementTensor(true, true, [&](const Slot& slot) {
    if (!first)
      first = &slot;
    else
      checks.push_back(
          fmt::format("wf_is_aligned(entry.{} + head, {})", slot.field, accessBytes(slot)));
  });
  out_.line("const int head = wf_head<{}, {}>(entry.{});", accessBytes(*first),
            byteSize(first->dtype), first->field);
  out_.line("{} body_begin = end, tail_begin = end; // no vector path", indexType_);
  checks.push_back("begin + head < end");
  out_.openWrapped("if (", {checks.begin(), checks.end()}, " && ");
  out_.line("body_begin = begin + head;");
  out_.line("tail_begin = body_begin + (end - body_begin) / {0} * {0};", vector);
  vectorLoop();
  out_.close();
  scalarLoop("begin", "body_begin", "elements before the vector path (or all of them)");
  scalarLoop("tail_begin", "end", "elements after the vector path");
}

/// One vector of every read tensor into `<prefix>_<field>`, from element i + `past`.
void BodyEmitter::vectorLoads(llvm::StringRef prefix, llvm::StringRef past) {
  forEachElementTensor(true, false, [&](const Slot& slot) {
    out_.line("wf_load({}_{}, {} + i{});", prefix.str(), slot.field, pointerOf(slot),
              past.empty() ? "" : " + " + past.str());
  });
}

void BodyEmitter::vectorLoop() {
  unsigned vector = body_.vectorElements;
  std::string stride = fmt::format("{} * {}", plan_.threadsPerBlock, vector);
  auto reads = [&](const std::function<void(const Slot&)>& each) {
    forEachElementTensor(true, false, each);
  };
  auto writes = [&](const std::function<void(const Slot&)>& each) {
    forEachElementTensor(false, true, each);
  };
  auto declare = [&](llvm::StringRef prefix) {
    return [&, prefix](const Slot& slot) {
      out_.line("alignas(16) {} {}_{}[{}];", cppType(slot.dtype), prefix.str(), slot.field, vector);
    };
  };
  out_.line("// vector path: {} elements per access{}", vector,
            body_.prefetch ? "; the next vector is loaded before this one is computed, so "
                             "loads stay in flight"
                           : "");
  out_.line("{0} i = body_begin + {0}(threadIdx.x) * {1};", indexType_, vector);
  reads(declare("load"));
  if (body_.prefetch) {
    out_.open("if (i < tail_begin)");
    vectorLoads("load", "");
    out_.close();
  }
  out_.open("for (; i < tail_begin; i += {})", stride);
  if (body_.prefetch) {
    reads(declare("next"));
    out_.open("if (i + {} < tail_begin)", stride);
    vectorLoads("next", stride);
    out_.close();
  } else {
    vectorLoads("load", "");
  }
  writes(declare("store"));
  out_.directive("#pragma unroll");
  elementLoop({fmt::format("for (int k = 0; k < {}; ++k)", vector),
               {},
               {[](const Slot& slot) { return "load_" + slot.field + "[k]"; },
                [](const Slot& slot) { return fmt::format("store_{0}[k] = out.{0};", slot.field); },
                "i + k"}});
  writes([&](const Slot& slot) {
    out_.line("wf_store({} + i, store_{});", pointerOf(slot), slot.field);
  });
  if (body_.prefetch) {
    // next_ holds a vector only when there is a next iteration; copying it otherwise would
    // read uninitialised registers.
    out_.open("if (i + {} < tail_begin)", stride);
    out_.directive("#pragma unroll");
    out_.open("for (int k = 0; k < {}; ++k)", vector);
    reads([&](const Slot& slot) { out_.line("load_{0}[k] = next_{0}[k];", slot.field); });
    out_.close();
    out_.close();
  }
  out_.close();
}

void BodyEmitter::stridedLoop() {
  elementLoop({fmt::format("for ({0} i = begin + {0}(threadIdx.x); i < end; i += {1})", indexType_,
                           plan_.threadsPerBlock),
               [&] { stridedLocate(); }, stridedAccess()});
}

void BodyEmitter::deferredFunction() {
  out_.line("/// Thread 0 of a block that finished `done` chunks of `member`, after the block's "
            "barrier:");
  out_.line("/// the last block done with the member writes the 0-d inputs every element reads");
  out_.line("/// (deferred writes), so no block reads a value already replaced, in any block "
            "order.");
  std::vector<std::string> parameters = tableParameters();
  parameters.insert(parameters.end(),
                    {fmt::format("const {}_uniform& u", body_.name), "i32 member", "i32 done"});
  openFunction(fmt::format("WF_DEVICE void {}_deferred", body_.name), parameters);
  out_.line("__threadfence();");
  memberChunks();
  out_.open("if (atomicAdd(params.tickets + member, u32(done)) == u32(chunks - done))");
  if (!body_.reductions.empty() && !body_.reducesRows)
    out_.line("__threadfence(); // every block's partials are visible");
  reductionFinish();
  deferredWritesAndTicketReset();
  out_.close();
  out_.close();
  out_.line();
}

void BodyEmitter::memberChunks() {
  out_.line("const i32 chunks = (entry.header.numel > 0 ? i32((entry.header.numel + {}) / {}) : "
            "1){};",
            body_.chunkElements - 1, body_.chunkElements,
            body_.reducesRows ? " * entry.row_segments" : "");
}

void BodyEmitter::deferredWritesAndTicketReset() {
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::UniformTensor && slot.deferred)
      out_.line("*{} = {}; // deferred copy_ into {}", pointerOf(slot),
                values_.writtenValueText(slot), slot.name);
  out_.line("params.tickets[member] = 0u; // ready for the next launch");
}

void BodyEmitter::finishFunction() {
  out_.line("/// Every thread of a block that finished `done` chunks of `member`: the last block "
            "done");
  out_.line("/// with the member combines its partials, all threads together, and thread 0 "
            "writes the");
  out_.line("/// results and the deferred values (no block reads a value already replaced).");
  std::vector<std::string> parameters = tableParameters();
  parameters.insert(parameters.end(),
                    {fmt::format("const {}_uniform& u", body_.name), "i32 member", "i32 done"});
  openFunction(fmt::format("WF_DEVICE void {}_finish", body_.name), parameters);
  out_.line("__shared__ bool last; // whether this block is the last done with the member");
  out_.line("__syncthreads(); // every thread has read the 0-d inputs and stored its partials");
  memberChunks();
  out_.open("if (threadIdx.x == 0)");
  out_.line("__threadfence();");
  out_.line("last = atomicAdd(params.tickets + member, u32(done)) == u32(chunks - done);");
  out_.close();
  out_.line("__syncthreads();");
  out_.line("if (!last)");
  out_.line("  return;");
  out_.line("__threadfence(); // every block's partials are visible");
  deviceReductionFinish();
  out_.open("if (threadIdx.x == 0)");
  deferredWritesAndTicketReset();
  out_.close();
  out_.close();
  out_.line();
}

ElementsVariant BodyEmitter::deviceElements() {
  return {fmt::format("WF_DEVICE void {}_elements", body_.name),
          {fmt::format("/// Elements [begin, end) of one member of {}:", body_.name),
           "/// the threads of the block stride through them."},
          {},
          [&] {
            if (body_.byBlocks)
              deviceBlockLoop();
            else
              body_.reductions.empty() ? flatLoops() : deviceReductionLoop();
          },
          [&] {
            if (body_.byBlocks)
              deviceBlockLoop();
            else if (body_.reducesRows)
              deviceRowsReductionLoop();
            else
              body_.reductions.empty() ? stridedLoop() : deviceReductionLoop();
          },
          "begin == 0 && threadIdx.x == 0"};
}

RunVariant BodyEmitter::deviceRun() {
  RunVariant run;
  run.signature = fmt::format("WF_DEVICE void {}_run", body_.name);
  run.comment = {
      fmt::format("/// Chunks [first, end) of member `member` of {}, one block's share of it, on",
                  body_.name),
      "/// the device: the values every element shares are computed once for the whole run."};
  run.elements = [&] {
    out_.line("const {0}_uniform u = {0}_prologue(params, entry);", body_.name);
    elementRange();
    out_.line("{}_elements(params, entry, u, begin, stop);", body_.name);
  };
  run.device = true;
  run.oneThread = [&](llvm::function_ref<void()> work) {
    out_.line("__syncthreads(); // every thread of the block has read the 0-d inputs");
    out_.line("if (threadIdx.x == 0)");
    out_.indent();
    work();
    out_.dedent();
  };
  return run;
}

void BodyEmitter::functions() {
  uniformStruct();
  prologue();
  elementFunction();
  elementsFunction(deviceElements());
  if (body_.needsFinisher() && combinesOnDevice())
    finishFunction();
  else if (body_.needsFinisher())
    deferredFunction();
  runFunction(deviceRun());
  out_.directive("#ifndef __CUDACC__");
  if (body_.needsFinisher() && combinesOnDevice())
    deferredFunction(); // the fast path's one thread combines alone
  elementsFunction(hostFastElements());
  runFunction(hostFastRun());
  out_.directive("#endif");
}

void emitBodyEntry(const KernelPlan& plan, const BodyPlan& body, CodeWriter& out) {
  BodyEmitter(plan, body, out).entry();
}

void emitBodyFunctions(const KernelPlan& plan, const BodyPlan& body, CodeWriter& out) {
  BodyEmitter(plan, body, out).functions();
}

} // namespace widefuse
