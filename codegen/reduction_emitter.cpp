// The kernel side of reductions (docs/reductions.md §7-§11): each member's chunks give one
// partial each, by the reduction tree over rows of the block's threads; the member's last
// finisher combines them, and for a global reduction the last contributor combines the
// members' trees. Every order of blocks and threads gives the reference evaluator's bits.
#include "codegen/constant_literal.h"
#include "codegen/emitter_internal.h"
#include "ir/error.h"

#include <fmt/format.h>

namespace widefuse {
std::string TreeText::combine() const {
  switch (op) {
  case OpKind::Sum:
    return "wf_tree_sum";
  case OpKind::Max:
    return "wf_tree_max";
  case OpKind::Min:
    return "wf_tree_min";
  case OpKind::Any:
    return "wf_tree_any";
  case OpKind::All:
    return "wf_tree_all";
  default:
    WF_UNREACHABLE("{} is not a reduction", opName(op).str());
  }
}

std::string TreeText::accumulatorType() const {
  return cppType(computeType(accumulator));
}

std::string TreeText::identity() const {
  return fmt::format("wf_tree_identity<{}, {}>()", combine(), accumulatorType());
}

std::string TreeText::finished(const std::string& value) const {
  return convertedText(fmt::format("wf_tree_finish<{}>({})", combine(), value),
                       computeType(accumulator), result);
}

std::string TreeText::leaf(const std::string& text, DataType operandType) const {
  DataType type = computeType(accumulator);
  if (op == OpKind::Max || op == OpKind::Min)
    return convertedText(convertedText(text, operandType, result), result, type);
  return convertedText(text, operandType, type);
}

void BodyEmitter::reductionFields() {
  if (body_.reducesRows) {
    out_.line("u32* row_tickets; // segments done, per chunk's rows (workspace; several segments)");
    out_.line("i32 row_segments; // segments per row");
  }
  for (const ReductionSlot& slot : body_.reductions) {
    std::string a = treeText(slot).accumulatorType();
    out_.line("{}* {}_partials; // this member's chunk partials (workspace)", a, slot.name);
    out_.line("{}* {}_out; // the {} result", cppType(slot.result), slot.name,
              opName(slot.op).str());
    out_.line("{}* {}_results; // global: every contributor's tree (workspace)", a, slot.name);
    out_.line("u32* {}_ticket; // global: contributors done (workspace)", slot.name);
    out_.line("i32 {}_operand; // global: this member's operand", slot.name);
    out_.line("i32 {}_operands; // global: the operands", slot.name);
  }
}

void BodyEmitter::reductionLeafFields() {
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{} {}; // a leaf of {}", treeText(slot).accumulatorType(), slot.name,
              opName(slot.op).str());
}

void BodyEmitter::reductionLeafValues() {
  for (const ReductionSlot& slot : body_.reductions) {
    out_.line("out.{} = {};", slot.name,
              treeText(slot).leaf(values_.reducedValueText(slot), slot.operandType));
  }
}

void BodyEmitter::reductionLeaves(llvm::StringRef end) {
  bool strided = body_.indexing == Indexing::Strided;
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{} {}_leaf = {};", treeText(slot).accumulatorType(), slot.name,
              treeText(slot).identity());
  out_.open(end.empty() ? std::string() : fmt::format("if (i < {})", end.str()));
  if (strided)
    stridedLocate();
  perElement(strided ? stridedAccess() : flatAccess());
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_leaf = out.{0};", slot.name);
  out_.close();
}

void BodyEmitter::chunkPartials(llvm::StringRef end) {
  unsigned threads = plan_.threadsPerBlock;
  int64_t rows = body_.chunkElements / threads;
  out_.open("if (++row == {} || i0 + {} >= {})", rows, threads, end.str());
  for (const ReductionSlot& slot : body_.reductions) {
    // Indices known once unrolled keep the rows in registers, not local memory.
    out_.directive("#pragma unroll");
    out_.line("for (int k = 0; k < {}; ++k)", rows);
    out_.line("  if (k >= row) {}_rows[k] = {};", slot.name, treeText(slot).identity());
    out_.line("wf_global(entry.{0}_partials)[chunk] = wf_tree_array<{1}>({0}_rows, {2});",
              slot.name, treeText(slot).combine(), rows);
  }
  out_.line("row = 0;");
  out_.line("++chunk;");
  out_.close();
}

void BodyEmitter::vectorReductionLeaves(bool whole) {
  unsigned vector = body_.vectorElements;
  forEachElementTensor(true, false, [&](const Slot& slot) {
    out_.line("alignas(16) {} load_{}[{}] = {{}};", cppType(slot.dtype), slot.field, vector);
    if (whole) {
      out_.line("if (vectorized) wf_load(load_{}, {} + i);", slot.field, pointerOf(slot));
      out_.line("else for (int k = 0; k < {0}; ++k) load_{1}[k] = {2}[i + k];", vector, slot.field,
                pointerOf(slot));
    } else {
      out_.line("for (int k = 0; k < {0}; ++k)", vector);
      out_.line("  if (i + k < end) load_{0}[k] = {1}[i + k];", slot.field, pointerOf(slot));
    }
  });
  forEachElementTensor(false, true, [&](const Slot& slot) {
    out_.line("alignas(16) {} store_{}[{}];", cppType(slot.dtype), slot.field, vector);
  });
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{} {}_thread[{}];", treeText(slot).accumulatorType(), slot.name, vector);
  out_.directive("#pragma unroll");
  out_.open("for (int k = 0; k < {}; ++k)", vector);
  if (!whole) {
    for (const ReductionSlot& slot : body_.reductions)
      out_.line("{}_thread[k] = {};", slot.name, treeText(slot).identity());
    out_.open("if (i + k < end)");
  }
  perElement({[](const Slot& slot) { return "load_" + slot.field + "[k]"; },
              [](const Slot& slot) { return fmt::format("store_{0}[k] = out.{0};", slot.field); },
              "i + k"});
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_thread[k] = out.{0};", slot.name);
  if (!whole)
    out_.close();
  out_.close();
  forEachElementTensor(false, true, [&](const Slot& slot) {
    if (whole) {
      out_.line("if (vectorized) wf_store({} + i, store_{});", pointerOf(slot), slot.field);
      out_.line("else for (int k = 0; k < {0}; ++k) {1}[i + k] = store_{2}[k];", vector,
                pointerOf(slot), slot.field);
    } else {
      out_.line("for (int k = 0; k < {0}; ++k)", vector);
      out_.line("  if (i + k < end) {0}[i + k] = store_{1}[k];", pointerOf(slot), slot.field);
    }
  });
  // The thread's elements are consecutive: their tree is a subtree of the row's.
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_leaves[row] = wf_span_tree<{1}, {2}>({0}_thread);", slot.name,
              treeText(slot).combine(), vector);
}

void BodyEmitter::vectorizedCheck() {
  unsigned vector = body_.vectorElements;
  llvm::SmallVector<std::string, 8> checks;
  forEachElementTensor(true, true, [&](const Slot& slot) {
    checks.push_back(fmt::format("wf_is_aligned(entry.{}, {})", slot.field,
                                 std::min(16u, vector * unsigned(byteSize(slot.dtype)))));
  });
  if (checks.empty())
    checks.push_back("true");
  out_.line("// Every tensor of the member at its access alignment: vector loads and stores");
  out_.wrapped("const bool vectorized = ", checks, " && ", ";");
}

void BodyEmitter::deviceReductionLoop() {
  unsigned threads = plan_.threadsPerBlock, warps = threads / 32, vector = body_.vectorElements;
  int64_t rows = body_.chunkElements / threads / vector;
  if (vector > 1) {
    out_.line("// A chunk at a time: in each of its {} rows of {}, each thread's {} consecutive",
              rows, threads * vector, vector);
    out_.line("// elements (their tree a subtree of the row's; their loads in flight together);");
    vectorizedCheck();
  } else {
    out_.line("// A chunk at a time: each thread's {} elements, one per row of {} (their loads "
              "in flight together);",
              rows, threads);
  }
  out_.line("// each row's tree by each warp's shuffles, one barrier for the chunk's rows and "
            "every reduction,");
  out_.line("// then warp 0's over the warps' trees; thread 0 stores the chunk's partial");
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("__shared__ {} {}_warps[2][{}][{}]; // chunks alternate halves",
              treeText(slot).accumulatorType(), slot.name, rows, warps);
  out_.line("{0} chunk = begin / {1}; // the member's chunk of element `begin`", indexType_,
            body_.chunkElements);
  out_.line("int half = 0;");
  out_.open("for ({0} c0 = begin; c0 < end; c0 += {1}, ++chunk, half ^= 1)", indexType_,
            body_.chunkElements);
  // Every leaf first, then the shuffles: no warp-wide exchange waits between the loads. A
  // whole chunk has no element past the end, so its loads carry no condition.
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{} {}_leaves[{}];", treeText(slot).accumulatorType(), slot.name, rows);
  out_.open("if (c0 + {} <= end)", body_.chunkElements);
  for (bool whole : {true, false}) {
    if (!whole)
      out_.openElse("the member's last chunk, or the run's");
    out_.directive("#pragma unroll");
    out_.open("for (int row = 0; row < {}; ++row)", rows);
    out_.line("const {0} i = c0 + {0}(row) * {1} + {0}(threadIdx.x){2};", indexType_,
              threads * vector, vector > 1 ? fmt::format(" * {}", vector) : "");
    if (vector > 1) {
      vectorReductionLeaves(whole);
    } else {
      reductionLeaves(whole ? "" : "end");
      for (const ReductionSlot& slot : body_.reductions)
        out_.line("{0}_leaves[row] = {0}_leaf;", slot.name);
    }
    out_.close();
  }
  out_.close();
  out_.directive("#pragma unroll");
  out_.open("for (int row = 0; row < {}; ++row)", rows);
  for (const ReductionSlot& slot : body_.reductions) {
    out_.line("const {0} {1}_warp = wf_warp_tree<{2}>({1}_leaves[row]);",
              treeText(slot).accumulatorType(), slot.name, treeText(slot).combine());
    out_.line("if ((threadIdx.x & 31u) == 0)");
    out_.line("  {0}_warps[half][row][threadIdx.x / 32u] = {0}_warp;", slot.name);
  }
  out_.close();
  // Warp 0 reads this chunk's half after the barrier; the next chunk writes the other half, and
  // the one after passes the next chunk's barrier first, which warp 0 reaches after it read.
  out_.line("__syncthreads(); // every warp's trees of the chunk are written");
  out_.open("if (threadIdx.x < 32u)");
  for (const ReductionSlot& slot : body_.reductions) {
    out_.line("{} {}_rows[{}];", treeText(slot).accumulatorType(), slot.name, rows);
    out_.directive("#pragma unroll");
    out_.line("for (int row = 0; row < {}; ++row)", rows);
    out_.line("  {0}_rows[row] = wf_warps_tree<{1}, {2}>({0}_warps[half][row]);", slot.name,
              treeText(slot).combine(), threads);
    out_.line("if (threadIdx.x == 0)");
    out_.line("  wf_global(entry.{0}_partials)[chunk] = wf_tree_array<{1}>({0}_rows, {2});",
              slot.name, treeText(slot).combine(), rows);
  }
  out_.close();
  out_.close();
  out_.line("__syncthreads(); // warp 0 read the last chunk before the next run writes");
  out_.openCommented("if (begin >= end && threadIdx.x == 0)", "an empty member's one chunk");
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("wf_global(entry.{}_partials)[chunk] = {};", slot.name, treeText(slot).identity());
  out_.close();
}

void BodyEmitter::hostReductionRows() {
  unsigned threads = plan_.threadsPerBlock;
  int64_t rows = body_.chunkElements / threads;
  elementRange();
  out_.line("const {0}_uniform u = {0}_prologue(params, entry);", body_.name);
  for (const ReductionSlot& slot : body_.reductions) {
    out_.line("{} {}_row[{}];", treeText(slot).accumulatorType(), slot.name, threads);
    out_.line("{} {}_rows[{}];", treeText(slot).accumulatorType(), slot.name, rows);
  }
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{} {}_chunk[{}];", treeText(slot).accumulatorType(), slot.name, body_.chunkElements);
  out_.line("{0} chunk = begin / {1};", indexType_, body_.chunkElements);
  out_.line("int row = 0;");
  out_.line("{} i0 = begin;", indexType_);
  // Four leaves an iteration, their subtree at once: the tree's two lowest levels without
  // a pass over memory each.
  constexpr int kLeavesPerIteration = 4;
  int64_t subtrees = body_.chunkElements / kLeavesPerIteration;
  out_.line("// Whole chunks: each 4 leaves' subtree, then the chunk's tree over them level by "
            "level (both vectorized)");
  out_.open("for (; i0 + {0} <= stop; i0 += {0}, ++chunk)", body_.chunkElements);
  out_.open("for (int k = 0; k < {}; ++k)", subtrees);
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{} {}_four[{}];", treeText(slot).accumulatorType(), slot.name, kLeavesPerIteration);
  out_.open("for (int j = 0; j < {}; ++j)", kLeavesPerIteration);
  out_.line("const {0} i = i0 + {0}(k) * {1} + {0}(j);", indexType_, kLeavesPerIteration);
  reductionLeaves("");
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_four[j] = {0}_leaf;", slot.name);
  out_.close();
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_chunk[k] = {1}::combine({1}::combine({0}_four[0], {0}_four[1]), "
              "{1}::combine({0}_four[2], {0}_four[3]));",
              slot.name, treeText(slot).combine());
  out_.close();
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("entry.{0}_partials[chunk] = wf_tree_levels<{1}, {2}>({0}_chunk);", slot.name,
              treeText(slot).combine(), subtrees);
  out_.close();
  out_.line("// The last chunk, row by row: the identity past `stop`");
  out_.open("for (; i0 < stop; i0 += {})", threads);
  out_.open("for (u32 thread = 0; thread < {}; ++thread)", threads);
  out_.line("const {0} i = i0 + {0}(thread);", indexType_);
  reductionLeaves("stop");
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_row[thread] = {0}_leaf;", slot.name);
  out_.close();
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_rows[row] = wf_tree_array<{1}>({0}_row, {2});", slot.name,
              treeText(slot).combine(), threads);
  chunkPartials("stop");
  out_.close();
  out_.openCommented("if (begin >= stop)", "an empty member's one chunk");
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("entry.{}_partials[chunk] = {};", slot.name, treeText(slot).identity());
  out_.close();
  // The elements function writes them on the device; these rows replace it on the host.
  zeroDimensionalOutputs("begin == 0");
}

void BodyEmitter::deviceReductionFinish() {
  unsigned threads = plan_.threadsPerBlock;
  out_.line("__shared__ wf_u64 combine_row[{}]; // each reduction's warp trees in turn",
            threads / 32);
  for (const ReductionSlot& slot : body_.reductions) {
    std::string a = treeText(slot).accumulatorType(), op = treeText(slot).combine();
    if (&slot != &body_.reductions.front())
      out_.line("__syncthreads(); // warp 0 has read the last reduction's warp trees");
    out_.line("{{ // {}: the member's tree of its chunk partials, by the whole block", slot.name);
    out_.indent();
    out_.line("{0}* row = reinterpret_cast<{0}*>(combine_row);", a);
    out_.line("const {} value = wf_block_combine<{}, {}>(entry.{}_partials, chunks, row);", a, op,
              threads, slot.name);
    if (!slot.global) {
      out_.line("if (threadIdx.x == 0)");
      out_.line("  *entry.{}_out = {};", slot.name, treeText(slot).finished("value"));
      out_.close();
      continue;
    }
    out_.line("__shared__ bool contributor_last; // the global's last contributor");
    out_.open("if (threadIdx.x == 0)");
    out_.line("entry.{0}_results[entry.{0}_operand] = value;", slot.name);
    out_.line("__threadfence();");
    out_.line("contributor_last = atomicAdd(entry.{0}_ticket, 1u) == u32(entry.{0}_operands - 1);",
              slot.name);
    out_.close();
    out_.line("__syncthreads();");
    out_.open("if (contributor_last)");
    out_.line("__threadfence(); // every contributor's tree is visible");
    out_.line("const {} all = wf_block_combine<{}, {}>(entry.{}_results, entry.{}_operands, row);",
              a, op, threads, slot.name, slot.name);
    out_.open("if (threadIdx.x == 0)");
    out_.line("*entry.{}_out = {};", slot.name, treeText(slot).finished("all"));
    out_.line("*entry.{}_ticket = 0u; // ready for the next launch", slot.name);
    out_.close();
    out_.close();
    out_.close();
  }
}

void BodyEmitter::reductionFinish() {
  if (body_.reducesRows)
    return; // each row's thread wrote its result
  for (const ReductionSlot& slot : body_.reductions) {
    std::string a = treeText(slot).accumulatorType(), op = treeText(slot).combine();
    out_.line("{{ // {}: the member's tree of its chunk partials", slot.name);
    out_.indent();
    out_.line("wf_tree_counter<{}, {}> tree;", a, op);
    out_.line("for (i32 k = 0; k < chunks; ++k)");
    out_.line("  tree.push(*(volatile {}*)(entry.{}_partials + k));", a, slot.name);
    out_.line("bool here = false;");
    out_.line("const {} value = tree.finish(&here);", a);
    if (!slot.global) {
      out_.line("*entry.{}_out = {};", slot.name, treeText(slot).finished("value"));
      out_.close();
      continue;
    }
    out_.line("entry.{0}_results[entry.{0}_operand] = value;", slot.name);
    out_.line("__threadfence();");
    out_.open("if (atomicAdd(entry.{0}_ticket, 1u) == u32(entry.{0}_operands - 1))", slot.name);
    out_.line("__threadfence(); // every contributor's tree is visible");
    out_.line("wf_tree_counter<{}, {}> all;", a, op);
    out_.line("for (i32 k = 0; k < entry.{}_operands; ++k)", slot.name);
    out_.line("  all.push(*(volatile {}*)(entry.{}_results + k));", a, slot.name);
    out_.line("*entry.{}_out = {};", slot.name, treeText(slot).finished("all.finish(&here)"));
    out_.line("*entry.{}_ticket = 0u; // ready for the next launch", slot.name);
    out_.close();
    out_.close();
  }
}

} // namespace widefuse
