// The kernel side of reductions over blocks (docs/reductions.md §7): a body whose elements
// read a block's result take a chunk of whole blocks at a time. Every thread loads its
// elements of the chunk and computes their leaves; each block's tree comes from shuffles (and,
// for blocks wider than a warp, the warps' trees in shared memory after one barrier); then
// every element runs with its block's results, from the values it loaded (an in-place block
// tensor is read before its block writes it). Every order of blocks and threads gives the
// reference evaluator's bits.
#include "codegen/constant_literal.h"
#include "codegen/emitter_internal.h"
#include "ir/error.h"
#include "ir/reduction.h"
#include "segmenter/components.h"

#include <fmt/format.h>

#include <llvm/ADT/DenseSet.h>

namespace widefuse {
namespace {

/// log2 of a power of two.
unsigned shiftOf(int64_t block) {
  unsigned shift = 0;
  while ((int64_t(1) << shift) < block)
    ++shift;
  return shift;
}

/// The largest block of the body (1 when it only reads block tensors).
int64_t largestBlock(const BodyPlan& body) {
  int64_t largest = 1;
  for (const BlockSlot& slot : body.blocks)
    largest = std::max(largest, slot.block);
  return largest;
}

} // namespace

void BodyEmitter::forEachRead(const std::function<void(const Slot&)>& each) const {
  forEachElementTensor(true, false, each);
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::BlockTensor && slot.read)
      each(slot);
}

/// The values in `cone` that the element function's statements outside it read (flat bodies:
/// one instance per value).
std::vector<const ElementInstance*> sharedInstances(const BodyPlan& body,
                                                    const llvm::DenseSet<const Value*>& cone) {
  std::vector<const ElementInstance*> shared;
  if (body.indexing == Indexing::Strided)
    return shared;
  llvm::DenseSet<const Value*> used;
  for (const ElementInstance& instance : body.elementInstances) {
    const Value* value = instance.value;
    if (cone.count(value) || isKernelInput(*value) || !value->definition() ||
        isBlockReductionResult(*value)) // a block's result is the element's `blk`
      continue;
    for (const Value* operand : value->definition()->operands())
      used.insert(operand);
  }
  for (const ElementInstance& instance : body.elementInstances)
    if (cone.count(instance.value) && !isKernelInput(*instance.value) && used.count(instance.value))
      shared.push_back(&instance);
  return shared;
}

void BodyEmitter::blockFunctions() {
  if (body_.blocks.empty())
    return;
  // Only the values the leaves need: none of them reads a block's result.
  const Component& component = values_.component();
  llvm::DenseSet<const Value*> cone;
  std::vector<const Value*> stack;
  size_t block = 0; // body_.blocks follows the component's block reductions in order
  for (const Expr* expr : component.exprs)
    if (expr->attributes().reduction == ReductionScope::Block && !body_.blocks[block++].late)
      stack.push_back(expr->operand(0));
  while (!stack.empty()) {
    const Value* value = stack.back();
    stack.pop_back();
    if (!cone.insert(value).second || !value->definition() || isKernelInput(*value))
      continue;
    for (const Value* operand : value->definition()->operands())
      stack.push_back(operand);
  }
  shared_ = sharedInstances(body_, cone);
  out_.line("/// The results of the blocks an element belongs to.");
  out_.open("struct {}_blocks", body_.name);
  for (const BlockSlot& slot : body_.blocks)
    out_.line("{} {}; // {} over blocks of {}", cppType(slot.result), slot.name,
              opName(slot.op).str(), slot.block);
  out_.close(";");
  if (!shared_.empty()) {
    out_.line("/// What the leaves compute that the element uses again (it does not compute it "
              "twice).");
    out_.open("struct {}_shared", body_.name);
    for (const ElementInstance* instance : shared_)
      out_.line("{} {};", cppType(instance->value->dtype()), instance->name);
    out_.close(";");
  }
  out_.line("/// One element's leaves of the first level's reductions over blocks.");
  out_.open("struct {}_leaves", body_.name);
  for (const BlockSlot& slot : body_.blocks)
    if (!slot.late)
      out_.line("{} {};", treeText(slot).accumulatorType(), slot.name);
  if (!shared_.empty())
    out_.line("{}_shared shared;", body_.name);
  out_.close(";");
  out_.line();
  out_.line("/// One element's leaves of {}'s reductions over blocks, from its reads alone.",
            body_.name);
  std::vector<std::string> parameters = {fmt::format("const {}_uniform& u", body_.name),
                                         fmt::format("const {}_in& in", body_.name)};
  if (readsElementIndex_)
    parameters.push_back("i64 element_index");
  openFunction(fmt::format("WF_DEVICE {0}_leaves {0}_block_leaves", body_.name), parameters);
  out_.line("(void)u;");
  for (const ElementInstance& instance : body_.elementInstances) {
    if (!isKernelInput(*instance.value) && cone.count(instance.value))
      elementStatement(instance);
  }
  out_.line("{}_leaves leaves;", body_.name);
  for (const BlockSlot& slot : body_.blocks) {
    if (!slot.late)
      out_.line("leaves.{} = {};", slot.name,
                treeText(slot).leaf(values_.blockOperandText(slot), slot.operandType));
  }
  for (const ElementInstance* instance : shared_)
    out_.line("leaves.shared.{0} = {0};", instance->name);
  out_.line("return leaves;");
  out_.close();
  out_.line();
}

void BodyEmitter::blockLoads(llvm::StringRef target) {
  bool strided = body_.indexing == Indexing::Strided;
  if (strided)
    stridedLocate();
  llvm::SmallVector<std::string, 8> reads;
  forEachRead([&](const Slot& slot) {
    if (slot.kind == SlotKind::BlockTensor && groupBlockReads_ && slot.block < groupBlockReads_)
      reads.push_back(fmt::format("read_{}[k]", slot.field)); // expanded: see hostGroupBlockReads
    else if (slot.kind == SlotKind::BlockTensor && groupBlockReads_)
      reads.push_back(fmt::format("read_{}[k >> {}]", slot.field, shiftOf(slot.block)));
    else if (slot.kind == SlotKind::BlockTensor)
      reads.push_back(fmt::format("{}[i >> {}]", pointerOf(slot), shiftOf(slot.block)));
    else {
      std::string element = strided ? fmt::format("{}[at_{}]", pointerOf(slot), slot.field)
                                    : fmt::format("{}[i]", pointerOf(slot));
      reads.push_back(isBitsStruct(slot.dtype)
                          ? fmt::format("{}{{{}.bits}}", cppType(slot.dtype), element)
                          : element);
    }
  });
  out_.wrapped(fmt::format("{} = {}_in{{", target.str(), body_.name), reads, ", ", "};");
}

void BodyEmitter::blockStores(llvm::StringRef in, llvm::StringRef blk, bool blockResults,
                              bool locate, llvm::StringRef shared) {
  bool strided = body_.indexing == Indexing::Strided;
  if (strided && locate)
    stridedLocate();
  std::string arguments = fmt::format("{}, {}", pointersInLocals_ ? "uniform" : "u", in.str());
  if (!body_.blocks.empty())
    arguments += ", " + blk.str();
  if (!shared_.empty())
    arguments += ", " + shared.str();
  out_.line("const {0}_out out = {0}_element({1}{2});", body_.name, arguments, indexArgument("i"));
  forEachElementTensor(false, true, [&](const Slot& slot) {
    const char* bits = isBitsStruct(slot.dtype) ? ".bits" : "";
    out_.line("{0}[{1}]{3} = out.{2}{3};", pointerOf(slot), strided ? "at_" + slot.field : "i",
              slot.field, bits);
  });
  for (const Slot& slot : body_.slots) {
    if (slot.kind != SlotKind::BlockTensor || !slot.written || !blockResults ||
        body_.blocks[slot.blockSource].late)
      continue;
    out_.line("if ((i & {}) == 0) // the block's first element writes its result", slot.block - 1);
    out_.line("  {}[i >> {}] = {};", pointerOf(slot), shiftOf(slot.block),
              values_.blockWrittenText(slot, blk));
  }
}

void BodyEmitter::deviceBlockLoop() {
  unsigned threads = plan_.threadsPerBlock, warps = threads / 32;
  int64_t rows = body_.chunkElements / threads;
  bool wide = llvm::any_of(body_.blocks, [](const BlockSlot& slot) { return slot.block > 32; });
  out_.line("// A chunk of whole blocks at a time: each thread loads its {} elements (one per row "
            "of {}),",
            rows, threads);
  out_.line("// each block's tree from their leaves (shuffles; warps' trees after one barrier), "
            "then each");
  out_.line("// element with its blocks' results, from what it loaded");
  for (const BlockSlot& slot : body_.blocks)
    if (slot.block > 32)
      out_.line("__shared__ {} {}_warps[2][{}]; // chunks alternate halves",
                treeText(slot).accumulatorType(), slot.name, rows * warps);
  if (wide)
    out_.line("int half = 0;");
  out_.open("for ({0} c0 = begin; c0 < end; c0 += {1}{2})", indexType_, body_.chunkElements,
            wide ? ", half ^= 1" : "");
  out_.line("{}_in in[{}];", body_.name, rows);
  if (!shared_.empty())
    out_.line("{}_shared shared[{}];", body_.name, rows);
  for (const BlockSlot& slot : body_.blocks)
    if (!slot.late)
      out_.line("{} {}_leaves[{}];", treeText(slot).accumulatorType(), slot.name, rows);
  blockRows([&] {
    for (const BlockSlot& slot : body_.blocks)
      if (!slot.late)
        out_.line("{}_leaves[row] = {};", slot.name, treeText(slot).identity());
    out_.open("if (i < end)");
    blockLoads("in[row]");
    if (!body_.blocks.empty()) {
      out_.line("const {0}_leaves leaves = {0}_block_leaves(u, in[row]{1});", body_.name,
                indexArgument("i"));
      for (const BlockSlot& slot : body_.blocks)
        if (!slot.late)
          out_.line("{0}_leaves[row] = leaves.{0};", slot.name);
      if (!shared_.empty())
        out_.line("shared[row] = leaves.shared;");
    }
    out_.close();
  });
  blockTrees();
  blockRows([&] {
    for (const BlockSlot& slot : body_.blocks)
      if (slot.late)
        out_.line("{} {}_leaf = {};", treeText(slot).accumulatorType(), slot.name,
                  treeText(slot).identity());
    out_.open("if (i < end)");
    blockStores("in[row]", "blk[row]", true, true, "shared[row]");
    for (const BlockSlot& slot : body_.blocks)
      if (slot.late)
        out_.line("{0}_leaf = out.{0};", slot.name);
    out_.close();
    lateBlockTrees();
  });
  out_.close();
  if (wide)
    out_.line("__syncthreads(); // the last chunk's trees are read before the next run writes");
}

/// The device's second level: each block's tree by shuffles over its lanes (every lane takes
/// part, past the member's end too), then its first element writes it.
void BodyEmitter::lateBlockTrees() {
  for (const BlockSlot& slot : body_.blocks)
    if (slot.late)
      out_.line(
          "blk[row].{} = {};", slot.name,
          treeText(slot).finished(fmt::format("wf_lanes_tree<{}, {}>({}_leaf)",
                                              treeText(slot).combine(), slot.block, slot.name)));
  for (const Slot& slot : body_.slots) {
    if (slot.kind != SlotKind::BlockTensor || !slot.written || !body_.blocks[slot.blockSource].late)
      continue;
    out_.line("if (i < end && (i & {}) == 0) // the block's first element writes its result",
              slot.block - 1);
    out_.line("  {}[i >> {}] = {};", pointerOf(slot), shiftOf(slot.block),
              values_.blockWrittenText(slot, "blk[row]"));
  }
}

void BodyEmitter::blockRows(const std::function<void()>& body) {
  out_.directive("#pragma unroll");
  out_.open("for (int row = 0; row < {}; ++row)", body_.chunkElements / plan_.threadsPerBlock);
  out_.line("const {0} i = c0 + {0}(row) * {1} + {0}(threadIdx.x);", indexType_,
            plan_.threadsPerBlock);
  body();
  out_.close();
}

void BodyEmitter::blockTrees() {
  if (body_.blocks.empty())
    return;
  unsigned warps = plan_.threadsPerBlock / 32;
  int64_t rows = body_.chunkElements / plan_.threadsPerBlock;
  bool wide = llvm::any_of(body_.blocks, [](const BlockSlot& slot) { return slot.block > 32; });
  // (A second level is at most 32 wide: it never makes the trees wide.)
  out_.line("{}_blocks blk[{}];", body_.name, rows);
  blockRows([&] {
    for (const BlockSlot& slot : body_.blocks) {
      if (slot.late)
        continue;
      if (slot.block <= 32) {
        out_.line(
            "blk[row].{} = {};", slot.name,
            treeText(slot).finished(fmt::format("wf_lanes_tree<{}, {}>({}_leaves[row])",
                                                treeText(slot).combine(), slot.block, slot.name)));
        continue;
      }
      out_.line("const {0} {1}_warp = wf_warp_tree<{2}>({1}_leaves[row]);",
                treeText(slot).accumulatorType(), slot.name, treeText(slot).combine());
      out_.line("if ((threadIdx.x & 31u) == 0)");
      out_.line("  {0}_warps[half][row * {1} + int(threadIdx.x / 32u)] = {0}_warp;", slot.name,
                warps);
    }
  });
  // One barrier: the warps' trees are written, and every thread has loaded its elements
  // before any block tensor of the chunk is written.
  out_.line("__syncthreads();");
  if (wide)
    blockRows([&] {
      for (const BlockSlot& slot : body_.blocks)
        if (slot.block > 32)
          out_.line("blk[row].{0} = {1};", slot.name,
                    treeText(slot).finished(fmt::format("wf_span_tree<{0}, {1}>({2}_warps[half] + "
                                                        "((row * {3} + int(threadIdx.x / 32u)) & "
                                                        "~{4}))",
                                                        treeText(slot).combine(), slot.block / 32,
                                                        slot.name, warps, slot.block / 32 - 1)));
    });
}

void BodyEmitter::lateLeafFields() {
  for (const BlockSlot& slot : body_.blocks)
    if (slot.late)
      out_.line("{} {}; // a leaf of {} over blocks of {}, a second level",
                treeText(slot).accumulatorType(), slot.name, opName(slot.op).str(), slot.block);
}

void BodyEmitter::lateLeafValues() {
  for (const BlockSlot& slot : body_.blocks)
    if (slot.late)
      out_.line("out.{} = {};", slot.name,
                treeText(slot).leaf(values_.blockOperandText(slot), slot.operandType));
}

void BodyEmitter::hostBlockLoop() {
  int64_t group = largestBlock(body_);
  out_.line("// Groups of {} elements (the largest block): each element's leaves from its reads, "
            "each",
            group);
  out_.line("// block's tree over its leaves, then each element, read again, with its blocks' "
            "results");
  // Locals: a byte store could alias the entry or `u`, which would keep the loops scalar.
  out_.line("const {0}_uniform uniform = u;", body_.name);
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::ElementTensor || slot.kind == SlotKind::BlockTensor)
      out_.line("auto* const ptr_{} = {};", slot.field, pointerOf(slot));
  pointersInLocals_ = true;
  out_.open("for ({0} g0 = begin; g0 < end; g0 += {1})", indexType_, group);
  out_.line("const {0} n = end - g0 < {1} ? end - g0 : {1};", indexType_, group);
  hostGroupBlockReads(group);
  for (const BlockSlot& slot : body_.blocks) {
    out_.line("{} {}_leaves[{}];", treeText(slot).accumulatorType(), slot.name, group);
    out_.line("for ({0} k = n; k < {1}; ++k)", indexType_, group);
    out_.line("  {}_leaves[k] = {};", slot.name, treeText(slot).identity());
  }
  for (const ElementInstance* instance : shared_) // one array per field: they vectorize
    out_.line("{} shared_{}[{}];", cppType(instance->value->dtype()), instance->name, group);
  // No array of the elements' reads: an element reads its own index again after the trees
  // (its writes come later), and a store through an array of mixed types keeps loops scalar.
  out_.open("for ({0} k = 0; k < n; ++k)", indexType_);
  out_.line("const {} i = g0 + k;", indexType_);
  blockLoads(fmt::format("const {}_in in", body_.name));
  if (!body_.blocks.empty()) {
    out_.line("const {0}_leaves leaves = {0}_block_leaves(uniform, in{1});", body_.name,
              indexArgument("i"));
    for (const BlockSlot& slot : body_.blocks)
      if (!slot.late)
        out_.line("{0}_leaves[k] = leaves.{0};", slot.name);
    for (const ElementInstance* instance : shared_)
      out_.line("shared_{0}[k] = leaves.shared.{0};", instance->name);
  }
  out_.close();
  // Each block's tree over its leaves in order: the first level's before the elements, the
  // second level's after them (the elements make its leaves).
  auto trees = [&](bool late) {
    for (const BlockSlot& slot : body_.blocks) {
      if (slot.late != late)
        continue;
      int64_t count = group / slot.block;
      out_.line("{} {}_results[{}];", cppType(slot.result), slot.name, count);
      out_.line("for ({0} b = 0; b < {1}; ++b)", indexType_, count);
      out_.line("  {}_results[b] = {};", slot.name,
                treeText(slot).finished(fmt::format("wf_tree_levels<{}, {}>({}_leaves + b * {})",
                                                    treeText(slot).combine(), slot.block, slot.name,
                                                    slot.block)));
    }
  };
  trees(false);
  out_.open("for ({0} k = 0; k < n; ++k)", indexType_);
  out_.line("const {} i = g0 + k;", indexType_);
  if (!body_.blocks.empty()) {
    out_.line("{}_blocks blk;", body_.name);
    for (const BlockSlot& slot : body_.blocks)
      if (!slot.late)
        out_.line("blk.{0} = {0}_results[k >> {1}];", slot.name, shiftOf(slot.block));
  }
  blockLoads(fmt::format("const {}_in in", body_.name));
  if (!shared_.empty()) {
    llvm::SmallVector<std::string, 4> fields;
    for (const ElementInstance* instance : shared_)
      fields.push_back(fmt::format("shared_{}[k]", instance->name));
    out_.wrapped(fmt::format("const {}_shared shared{{", body_.name), fields, ", ", "};");
  }
  blockStores("in", "blk", /*blockResults=*/false, /*locate=*/false, "shared");
  for (const BlockSlot& slot : body_.blocks)
    if (slot.late)
      out_.line("{0}_leaves[k] = out.{0};", slot.name);
  out_.close();
  trees(true);
  hostBlockResults(group);
  out_.close();
  pointersInLocals_ = false;
  groupBlockReads_ = 0;
}

/// The group's reads of block tensors, one per block before any element: a read of another
/// array's element beside the element loop's stores would keep the host compiler from
/// vectorizing it (the group starts on a block boundary, or lies inside one block).
void BodyEmitter::hostGroupBlockReads(int64_t group) {
  for (const Slot& slot : body_.slots) {
    if (slot.kind != SlotKind::BlockTensor || !slot.read)
      continue;
    if (slot.block < group) {
      // Several blocks in the group (a pair's byte): one entry per element, so the element
      // loop reads at k, which the host compiler vectorizes (k >> shift it cannot).
      out_.line("{} read_{}[{}];", cppType(slot.dtype), slot.field, group);
      out_.line("for ({0} k = 0; k < n; ++k)", indexType_);
      out_.line("  read_{0}[k] = {2}[(g0 + k) >> {1}];", slot.field, shiftOf(slot.block),
                pointerOf(slot));
      continue;
    }
    out_.line("{} read_{}[1];", cppType(slot.dtype), slot.field);
    out_.line("for ({0} k = 0; k < n; k += {1})", indexType_, slot.block);
    out_.line("  read_{0}[k >> {1}] = {2}[(g0 + k) >> {1}];", slot.field, shiftOf(slot.block),
              pointerOf(slot));
  }
  groupBlockReads_ = group;
}

/// The host's block tensor writes, one per block of the group after its elements: a branch
/// in the element loop would keep the host compiler from vectorizing it.
void BodyEmitter::hostBlockResults(int64_t group) {
  for (const Slot& slot : body_.slots) {
    if (slot.kind != SlotKind::BlockTensor || !slot.written)
      continue;
    // By block b, so that the tensor's index and its own results' are affine in b (the host
    // compiler vectorizes that; not k >> shift): the group starts on a block boundary.
    int shift = shiftOf(slot.block);
    out_.open("for ({0} b = 0; b < (n + {1}) >> {2}; ++b)", indexType_, slot.block - 1, shift);
    out_.line("const {} k = b << {};", indexType_, shift);
    out_.line("{}_blocks blk;", body_.name);
    for (const BlockSlot& block : body_.blocks) {
      if (block.block == slot.block)
        out_.line("blk.{0} = {0}_results[b];", block.name);
      else
        out_.line("blk.{0} = {0}_results[k >> {1}];", block.name, shiftOf(block.block));
    }
    out_.line("(void)k;");
    out_.line("{}[(g0 >> {}) + b] = {};", pointerOf(slot), shift,
              values_.blockWrittenText(slot, "blk"));
    out_.close();
  }
  (void)group;
}

} // namespace widefuse
