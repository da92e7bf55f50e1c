#include "codegen/body_emitter.h"

#include "codegen/constant_literal.h"
#include "codegen/expression_text.h"
#include "ir/error.h"
#include "scheduler/element_views.h"

#include <fmt/format.h>

#include <llvm/ADT/DenseMap.h>

#include <map>

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
  return slot.kind == SlotKind::ElementTensor || slot.kind == SlotKind::UniformTensor;
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
  }
  std::string origin = slot.source.kind == SlotSource::Kind::Output ? "output" : "input";
  std::string access = slot.read && slot.written ? "read and written"
                       : slot.written            ? "written"
                                                 : "read";
  if (slot.deferred)
    access += " once, after the member's last chunk";
  return fmt::format("{} {}, {}", what, origin, access);
}

class BodyEmitter {
public:
  BodyEmitter(const KernelPlan& plan, const BodyPlan& body)
      : plan_(plan), body_(body), component_(plan.segmented->components[body.representative]),
        signature_(plan.segmented->signatureClasses[body.signatureClass]) {
    indexType_ = plan.indexBits == 64 ? "i64" : "i32";
    mapLiftedUses();
    for (const ElementInstance& instance : body.elementInstances)
      instanceName_[{instance.value, viewKey(instance.view)}] = instance.name;
    for (const ElementInstance& instance : body.uniformValues)
      uniformName_[instance.value] = instance.name;
  }

  std::string entry() const;
  std::string functions() const;

private:
  static std::string viewKey(const ElementView& view) {
    return fmt::format("{}", fmt::join(view, ","));
  }
  void mapLiftedUses();
  OperandText operandText(const Expr& expr, unsigned index, const ElementView* view) const;
  OperandText valueText(const Value* value, const ElementView* view) const;
  std::string writtenValueText(const Slot& slot) const;
  const Value* writtenValue(const Slot& slot, bool& isConstant) const;
  std::string slotAccess(const Slot& slot) const {
    return (slot.shared ? "params." : "entry.") + slot.field;
  }
  /// A tensor slot's pointer, marked as global memory.
  std::string pointerOf(const Slot& slot) const { return "wf_global(" + slotAccess(slot) + ")"; }
  std::string uniformStruct() const;
  std::string prologue() const;
  std::string elementFunction() const;
  std::string zeroDimensionalOutputs() const;
  std::string deferredFunction() const;
  std::string elementsFunction() const;
  std::string elementRange() const;
  std::string runFunction() const;
  std::string hostRunFunction() const;
  std::string flatLoops() const;
  std::string vectorLoop() const;
  std::string stridedLoop() const;
  std::string elementCall(const std::string& readOf) const;

  const KernelPlan& plan_;
  const BodyPlan& body_;
  const Component& component_;
  const SignatureClass& signature_;
  std::string indexType_;
  /// Lifted constant uses: (expression, operand) or alias index -> the lifted slot's name.
  std::map<std::pair<const Expr*, unsigned>, std::string> liftedOperand_;
  llvm::DenseMap<unsigned, std::string> liftedAliasSource_;
  std::map<std::pair<const Value*, std::string>, std::string> instanceName_;
  llvm::DenseMap<const Value*, std::string> uniformName_;
};

void BodyEmitter::mapLiftedUses() {
  // Positions count constant uses in the order of segmenter's constantsOf().
  llvm::DenseMap<unsigned, std::string> slotOfPosition;
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::LiftedConstant)
      slotOfPosition[signature_.lifted[slot.source.index].position] = slot.name;
  unsigned position = 0;
  for (const Expr* expr : component_.exprs)
    for (unsigned i = 0; i < expr->operands().size(); ++i)
      if (expr->operand(i)->isConstant()) {
        auto found = slotOfPosition.find(position++);
        if (found != slotOfPosition.end())
          liftedOperand_[{expr, i}] = found->second;
      }
  for (unsigned i = 0; i < component_.aliases.size(); ++i)
    if (component_.aliases[i].source->isConstant()) {
      auto found = slotOfPosition.find(position++);
      if (found != slotOfPosition.end())
        liftedAliasSource_[i] = found->second;
    }
}

OperandText BodyEmitter::valueText(const Value* value, const ElementView* view) const {
  if (value->isConstant())
    return {"", value};
  if (isUniformValue(*value, component_)) {
    auto found = uniformName_.find(value);
    WF_ASSERT(found != uniformName_.end(), "no uniform value for '{}'", value->name());
    return {"u." + found->second};
  }
  WF_ASSERT(view, "element value '{}' read outside the element function", value->name());
  auto found = instanceName_.find({value, viewKey(*view)});
  WF_ASSERT(found != instanceName_.end(), "no instance of '{}'", value->name());
  return {(value->isInput() ? "in." : "") + found->second};
}

OperandText BodyEmitter::operandText(const Expr& expr, unsigned index,
                                     const ElementView* view) const {
  auto lifted = liftedOperand_.find({&expr, index});
  if (lifted != liftedOperand_.end())
    return {"u." + lifted->second};
  if (!view || expr.op() != OpKind::BroadcastInDim || view->empty())
    return valueText(expr.operand(index), view);
  ElementView operandView;
  for (int64_t resultDim : expr.attributes().broadcastDims)
    operandView.push_back((*view)[size_t(resultDim)]);
  return valueText(expr.operand(index), &operandView);
}

std::string BodyEmitter::entry() const {
  std::string name = memberTypeName(body_);
  std::string text = fmt::format("/// Member-table entry of {}: one member's tensors and values.\n"
                                 "struct {} {{\n  wf_entry_header header;\n",
                                 body_.name, name);
  if (body_.indexing == Indexing::Strided)
    text += fmt::format("  i64 extents[{}]; // the member's domain\n", body_.domainRank);
  for (const Slot& slot : body_.slots) {
    if (slot.shared)
      continue;
    text += fmt::format("  {}; // {}\n", fieldDeclaration(slot), slotComment(slot));
    if (slot.kind == SlotKind::ElementTensor && body_.indexing == Indexing::Strided)
      text += fmt::format("  i64 {}_strides[{}]; // in elements, 0 where broadcast\n", slot.field,
                          body_.domainRank);
  }
  text += "};\n";
  auto pin = [&](const std::string& field, unsigned offset) {
    text += fmt::format("WF_CHECK_OFFSET({}, {}, {});\n", name, field, offset);
  };
  if (body_.indexing == Indexing::Strided)
    pin("extents", body_.extentsOffset);
  for (const Slot& slot : body_.slots) {
    if (slot.shared)
      continue;
    pin(slot.field, slot.offset);
    if (slot.kind == SlotKind::ElementTensor && body_.indexing == Indexing::Strided)
      pin(slot.field + "_strides", slot.stridesOffset);
  }
  text += fmt::format("static_assert(sizeof({}) == {}, \"member table layout\");\n\n", name,
                      body_.entryBytes);
  return text;
}

std::string BodyEmitter::uniformStruct() const {
  std::string text = fmt::format("/// Values of {} computed once per run of chunks: scalars, 0-d tensors, "
                                 "lifted constants.\nstruct {}_uniform {{\n",
                                 body_.name, body_.name);
  for (const ElementInstance& value : body_.uniformValues)
    text += fmt::format("  {} {};\n", cppType(value.value->dtype()), value.name);
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::LiftedConstant)
      text += fmt::format("  {} {};\n", cppType(slot.dtype), slot.name);
  return text + "};\n\n";
}

std::string BodyEmitter::prologue() const {
  std::string text =
      fmt::format("WF_DEVICE {0}_uniform {0}_prologue(const {1}& params, const {2}& entry) {{\n"
                  "  {0}_uniform u;\n",
                  body_.name, parameterTypeName(plan_), memberTypeName(body_));
  for (const Slot& slot : body_.slots) {
    bool uniformInput = slot.kind == SlotKind::Scalar || slot.kind == SlotKind::UniformTensor;
    if (uniformInput && slot.source.kind == SlotSource::Kind::Input && slot.read)
      text += fmt::format("  u.{} = {};\n", slot.name,
                          slot.kind == SlotKind::UniformTensor ? "*" + pointerOf(slot)
                                                               : slotAccess(slot));
    if (slot.kind == SlotKind::LiftedConstant)
      text += fmt::format("  u.{} = {};\n", slot.name, slotAccess(slot));
  }
  for (const Expr* expr : component_.exprs) {
    if (!isUniformValue(*expr->result(), component_))
      continue;
    llvm::SmallVector<OperandText, 3> operands;
    for (unsigned i = 0; i < expr->operands().size(); ++i)
      operands.push_back(operandText(*expr, i, nullptr));
    text += fmt::format("  u.{} = {};\n", uniformName_.lookup(expr->result()),
                        expressionText(*expr, operands));
  }
  return text + "  return u;\n}\n\n";
}

const Value* BodyEmitter::writtenValue(const Slot& slot, bool& liftedSource) const {
  liftedSource = false;
  if (slot.source.kind == SlotSource::Kind::Output)
    return component_.outputs[slot.source.index];
  const Value* destination = component_.inputs[slot.source.index];
  for (unsigned i = 0; i < component_.aliases.size(); ++i)
    if (component_.aliases[i].destination == destination) {
      liftedSource = liftedAliasSource_.count(i) != 0;
      return component_.aliases[i].source;
    }
  WF_UNREACHABLE("written slot '{}' has no copy_", slot.name);
}

std::string BodyEmitter::writtenValueText(const Slot& slot) const {
  bool liftedSource = false;
  const Value* source = writtenValue(slot, liftedSource);
  if (liftedSource) {
    for (unsigned i = 0; i < component_.aliases.size(); ++i)
      if (component_.aliases[i].source == source && liftedAliasSource_.count(i))
        return convertedText("u." + liftedAliasSource_.lookup(i), source->dtype(), slot.dtype);
  }
  if (source->isConstant())
    return constantLiteral(*source, slot.dtype);
  const ElementView* view = slot.kind == SlotKind::ElementTensor ? &slot.view : nullptr;
  return convertedText(valueText(source, view).text, source->dtype(), slot.dtype);
}

std::string BodyEmitter::elementFunction() const {
  std::string in = fmt::format("/// One element's reads.\nstruct {}_in {{\n", body_.name);
  std::string out = fmt::format("/// One element's writes.\nstruct {}_out {{\n", body_.name);
  for (const Slot& slot : body_.slots) {
    if (slot.kind != SlotKind::ElementTensor)
      continue;
    if (slot.read)
      in += fmt::format("  {} {};\n", cppType(slot.dtype), slot.name);
    if (slot.written)
      out += fmt::format("  {} {};\n", cppType(slot.dtype), slot.name);
  }
  std::string text = in + "};\n" + out + "};\n\n";
  text += fmt::format("/// One element of {0}: a statement per IR expression.\n"
                      "WF_DEVICE {0}_out {0}_element(const {0}_uniform& u, const {0}_in& in) {{\n",
                      body_.name);
  for (const ElementInstance& instance : body_.elementInstances) {
    if (instance.value->isInput())
      continue;
    const Expr& expr = *instance.value->definition();
    llvm::SmallVector<OperandText, 3> operands;
    for (unsigned i = 0; i < expr.operands().size(); ++i)
      operands.push_back(operandText(expr, i, &instance.view));
    text += fmt::format("  const {} {} = {};\n", cppType(instance.value->dtype()), instance.name,
                        expressionText(expr, operands));
  }
  text += fmt::format("  {}_out out;\n", body_.name);
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor && slot.written)
      text += fmt::format("  out.{} = {};\n", slot.name, writtenValueText(slot));
  return text + "  return out;\n}\n\n";
}

std::string BodyEmitter::elementCall(const std::string& readOf) const {
  llvm::SmallVector<std::string, 8> reads;
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor && slot.read)
      reads.push_back(fmt::format(fmt::runtime(readOf), slot.field));
  return fmt::format("const {}_out out = {}_element(u, {{{}}});\n", body_.name, body_.name,
                     fmt::join(reads, ", "));
}

std::string BodyEmitter::flatLoops() const {
  unsigned vector = body_.vectorElements;
  unsigned threads = plan_.threadsPerBlock;
  std::string scalarLoop =
      fmt::format("  for ({0} i = {{}} + {0}(threadIdx.x); i < {{}}; i += {1}) {{{{ "
                  "// {{}}\n    ",
                  indexType_, threads);
  std::string scalarBody = elementCall("wf_global(entry.{})[i]");
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor && slot.written)
      scalarBody += fmt::format("    {}[i] = out.{};\n", pointerOf(slot), slot.field);
  scalarBody += "  }\n";
  if (vector == 1)
    return fmt::format(fmt::runtime(scalarLoop), "begin", "end", "one element per access") +
           scalarBody;
  std::vector<const Slot*> tensors;
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor)
      tensors.push_back(&slot);
  auto accessBytes = [&](const Slot& slot) {
    return std::min(16u, vector * unsigned(byteSize(slot.dtype)));
  };
  // The vector path starts after `head` leading elements, where every tensor of the member
  // reaches its access alignment at once (0 for the usual aligned allocations; a view that
  // starts mid-vector peels a few elements instead of going scalar).
  const Slot& first = *tensors.front();
  std::string text = fmt::format("  const int head = wf_head<{}, {}>(entry.{});\n",
                                 accessBytes(first), byteSize(first.dtype), first.field);
  llvm::SmallVector<std::string, 8> checks = {"head >= 0"};
  for (const Slot* slot : tensors)
    if (slot != &first)
      checks.push_back(
          fmt::format("wf_is_aligned(entry.{} + head, {})", slot->field, accessBytes(*slot)));
  text += fmt::format("  {} body_begin = end, tail_begin = end; // no vector path\n", indexType_);
  text += fmt::format("  if ({} && begin + head < end) {{\n", fmt::join(checks, " && "));
  text += fmt::format("    body_begin = begin + head;\n"
                      "    tail_begin = body_begin + (end - body_begin) / {0} * {0};\n",
                      vector);
  text += vectorLoop();
  text += "  }\n";
  text += fmt::format(fmt::runtime(scalarLoop), "begin", "body_begin",
                      "elements before the vector path (or all of them)") +
          scalarBody;
  text +=
      fmt::format(fmt::runtime(scalarLoop), "tail_begin", "end", "elements after the vector path") +
      scalarBody;
  return text;
}

std::string BodyEmitter::vectorLoop() const {
  unsigned vector = body_.vectorElements;
  unsigned threads = plan_.threadsPerBlock;
  auto forEach = [&](bool read, bool written, const std::string& pattern) {
    std::string text;
    for (const Slot& slot : body_.slots)
      if (slot.kind == SlotKind::ElementTensor &&
          ((read && slot.read) || (written && slot.written)))
        text += fmt::format(fmt::runtime(pattern), cppType(slot.dtype), slot.field, vector,
                            pointerOf(slot));
    return text;
  };
  std::string text = fmt::format("    // vector path: {0} elements per access{1}\n"
                                 "    {2} i = body_begin + {2}(threadIdx.x) * {0};\n",
                                 vector,
                                 body_.prefetch ? "; the next vector is loaded before this one "
                                                  "is computed, so loads stay in flight"
                                                : "",
                                 indexType_);
  text += forEach(true, false, "    alignas(16) {0} load_{1}[{2}];\n");
  if (body_.prefetch) {
    text += "    if (i < tail_begin) {\n";
    text += forEach(true, false, "      wf_load(load_{1}, {3} + i);\n");
    text += "    }\n";
  }
  text += fmt::format("    for (; i < tail_begin; i += {} * {}) {{\n", threads, vector);
  if (body_.prefetch) {
    text += forEach(true, false, "      alignas(16) {0} next_{1}[{2}];\n");
    text += fmt::format("      if (i + {} * {} < tail_begin) {{\n", threads, vector);
    text += forEach(
        true, false,
        fmt::format("        wf_load(next_{{1}}, {{3}} + i + {} * {});\n", threads, vector));
    text += "      }\n";
  } else {
    text += forEach(true, false, "      wf_load(load_{1}, {3} + i);\n");
  }
  text += forEach(false, true, "      alignas(16) {0} store_{1}[{2}];\n");
  text += fmt::format("#pragma unroll\n      for (int k = 0; k < {}; ++k) {{\n        ", vector);
  text += elementCall("load_{}[k]");
  text += forEach(false, true, "        store_{1}[k] = out.{1};\n");
  text += "      }\n";
  text += forEach(false, true, "      wf_store({3} + i, store_{1});\n");
  if (body_.prefetch) {
    text += fmt::format("#pragma unroll\n      for (int k = 0; k < {}; ++k) {{\n", vector);
    text += forEach(true, false, "        load_{1}[k] = next_{1}[k];\n");
    text += "      }\n";
  }
  return text + "    }\n";
}

std::string BodyEmitter::stridedLoop() const {
  std::string text = fmt::format("  for ({0} i = begin + {0}(threadIdx.x); i < end; i += {1}) {{\n",
                                 indexType_, plan_.threadsPerBlock);
  unsigned rank = body_.domainRank;
  if (rank > 0)
    text += fmt::format("    {} rest = i; // coordinates of element i in the domain\n", indexType_);
  for (unsigned d = rank; d-- > 1;)
    text += fmt::format("    const {0} c{1} = rest % {0}(entry.extents[{1}]);\n    rest /= "
                        "{0}(entry.extents[{1}]);\n",
                        indexType_, d);
  if (rank > 0)
    text += fmt::format("    const {} c0 = rest;\n", indexType_);
  auto offset = [&](const Slot& slot) {
    llvm::SmallVector<std::string, 4> terms;
    for (unsigned d = 0; d < rank; ++d)
      terms.push_back(fmt::format("c{} * {}(entry.{}_strides[{}])", d, indexType_, slot.field, d));
    return terms.empty() ? std::string("0") : fmt::format("{}", fmt::join(terms, " + "));
  };
  llvm::SmallVector<std::string, 8> reads;
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor && slot.read)
      reads.push_back(fmt::format("{}[{}]", pointerOf(slot), offset(slot)));
  text += fmt::format("    const {}_out out = {}_element(u, {{{}}});\n", body_.name, body_.name,
                      fmt::join(reads, ", "));
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor && slot.written)
      text += fmt::format("    {}[{}] = out.{};\n", pointerOf(slot), offset(slot), slot.field);
  return text + "  }\n";
}

std::string BodyEmitter::zeroDimensionalOutputs() const {
  std::string outputs;
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::UniformTensor && slot.written && !slot.deferred)
      outputs += fmt::format("    *{} = {};\n", pointerOf(slot), writtenValueText(slot));
  if (outputs.empty())
    return {};
  return "  if (begin == 0 && threadIdx.x == 0) { // 0-d outputs, once per member\n" + outputs +
         "  }\n";
}

std::string BodyEmitter::deferredFunction() const {
  std::string writes;
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::UniformTensor && slot.deferred)
      writes += fmt::format("    *{} = {}; // deferred copy_ into {}\n", pointerOf(slot),
                            writtenValueText(slot), slot.name);
  return fmt::format(
      "/// Thread 0 of a block that finished `done` chunks of `member`, after the block's "
      "barrier:\n"
      "/// the last block done with the member writes the 0-d inputs every element reads\n"
      "/// (deferred writes), so no block reads a value already replaced, in any block order.\n"
      "WF_DEVICE void {0}_deferred(const {1}& params, const {2}& entry, const {0}_uniform& u, "
      "i32 member, i32 done) {{\n"
      "  __threadfence();\n"
      "  const i32 chunks = entry.header.numel > 0 ? i32((entry.header.numel + {3}) / {4}) : 1;\n"
      "  if (atomicAdd(params.tickets + member, u32(done)) == u32(chunks - done)) {{\n"
      "{5}"
      "    params.tickets[member] = 0u; // ready for the next launch\n"
      "  }}\n}}\n\n",
      body_.name, parameterTypeName(plan_), memberTypeName(body_), body_.chunkElements - 1,
      body_.chunkElements, writes);
}

std::string BodyEmitter::elementsFunction() const {
  std::string text = fmt::format(
      "/// Elements [begin, end) of one member of {0}: the threads of the block stride through "
      "them.\n"
      "WF_DEVICE void {0}_elements(const {1}& params, const {2}& entry, const {0}_uniform& u, "
      "const {3} begin, const {3} end) {{\n",
      body_.name, parameterTypeName(plan_), memberTypeName(body_), indexType_);
  text += body_.indexing == Indexing::Flat ? flatLoops() : stridedLoop();
  text += zeroDimensionalOutputs();
  return text + "}\n\n";
}

std::string BodyEmitter::elementRange() const {
  return fmt::format(
      "  const {0} begin = {0}(first - entry.header.first_chunk) * {1};\n"
      "  const {0} limit = {0}(end - entry.header.first_chunk) * {1};\n"
      "  const {0} stop = limit < entry.header.numel ? limit : {0}(entry.header.numel);\n",
      indexType_, body_.chunkElements);
}

std::string BodyEmitter::runFunction() const {
  std::string text = fmt::format(
      "/// Chunks [first, end) of member `member` of {0}, one block's share of it, on the device:\n"
      "/// the values every element shares are computed once for the whole run.\n"
      "WF_DEVICE void {0}_run(const {1}& params, const {2}& entry, i32 member, i32 first, "
      "i32 end) {{\n"
      "  const {0}_uniform u = {0}_prologue(params, entry);\n",
      body_.name, parameterTypeName(plan_), memberTypeName(body_));
  text += elementRange();
  text += fmt::format("  {}_elements(params, entry, u, begin, stop);\n", body_.name);
  if (body_.hasDeferredWrites)
    text += fmt::format("  __syncthreads(); // every thread of the block has read the 0-d inputs\n"
                        "  if (threadIdx.x == 0)\n"
                        "    {}_deferred(params, entry, u, member, end - first);\n",
                        body_.name);
  else
    text += "  (void)member;\n";
  return text + "}\n\n";
}

std::string BodyEmitter::hostRunFunction() const {
  std::string text = fmt::format(
      "#ifndef __CUDACC__\n"
      "/// Chunks [first, end) of member `member` of {0} on the host backend: the block's threads\n"
      "/// run one after another in `thread_order`, up to the barrier; then thread 0 goes on.\n"
      "inline void {0}_host_run(const {1}& params, const {2}& entry, i32 member, i32 first,\n"
      "                         i32 end, u32 block, u32 grid, const u32* thread_order) {{\n",
      body_.name, parameterTypeName(plan_), memberTypeName(body_));
  text += elementRange();
  text += fmt::format("  for (u32 t = 0; t < {1}; ++t) {{\n"
                      "    wf_host_enter_thread(thread_order[t], block, {1}, grid);\n"
                      "    const {0}_uniform u = {0}_prologue(params, entry);\n"
                      "    {0}_elements(params, entry, u, begin, stop);\n"
                      "  }}\n",
                      body_.name, plan_.threadsPerBlock);
  if (body_.hasDeferredWrites)
    text += fmt::format("  wf_host_enter_thread(0, block, {1}, grid);\n"
                        "  const {0}_uniform u = {0}_prologue(params, entry);\n"
                        "  {0}_deferred(params, entry, u, member, end - first);\n",
                        body_.name, plan_.threadsPerBlock);
  else
    text += "  (void)member;\n";
  return text + "}\n#endif\n\n";
}

std::string BodyEmitter::functions() const {
  return uniformStruct() + prologue() + elementFunction() + elementsFunction() +
         (body_.hasDeferredWrites ? deferredFunction() : std::string()) + runFunction() +
         hostRunFunction();
}

} // namespace

std::string emitBodyEntry(const KernelPlan& plan, const BodyPlan& body) {
  return BodyEmitter(plan, body).entry();
}

std::string emitBodyFunctions(const KernelPlan& plan, const BodyPlan& body) {
  return BodyEmitter(plan, body).functions();
}

} // namespace widefuse
