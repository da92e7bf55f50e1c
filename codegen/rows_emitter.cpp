// Reductions over rows in kernels (docs/reductions.md §9). A chunk is a group of rows by one
// segment of their columns (BodyPlan::rowSegmentColumns). A warp takes a row's segment 32 columns
// at a time (rows across memory: tiles of 32 x 32); a row of one segment is written by its warp, a
// longer one leaves a partial per segment, and the last block done with the group's segments
// combines them. Segments start at multiples of a power of two, so each is a subtree of its row's
// tree and the result has the reference evaluator's bits in any block order.
#include "codegen/emitter_internal.h"

#include <fmt/format.h>

namespace widefuse {

void BodyEmitter::rowChunkBounds() {
  // A run of chunks of one-segment rows is one range of rows; otherwise one chunk at a time.
  out_.line("const {0} group = chunk / segments; // the chunk's rows", indexType_);
  out_.line("const {} segment = chunk - group * segments; // and their columns", indexType_);
  out_.line("const {} next = segments == 1 ? end : chunk + 1;", indexType_);
  out_.line("const {0} row_begin = group * {1};", indexType_, body_.chunkElements);
  out_.line("const {0} row_limit = (segments == 1 ? end : group + 1) * {1};", indexType_,
            body_.chunkElements);
  out_.line("const {} row_end = row_limit < rows ? row_limit : rows;", indexType_);
  out_.line("const {0} column_begin = segment * {1};", indexType_, body_.rowSegmentColumns);
  out_.line("const {0} column_end = columns - column_begin < {1} ? columns : column_begin + {1};",
            indexType_, body_.rowSegmentColumns);
}

void BodyEmitter::rowLocals() {
  unsigned inner = body_.domainRank - 1 - body_.rowTrailing; // the reduced dimension
  out_.line("// Chunks [begin, end) of the member: chunk k is rows [g {0}, g {0} + {0}) with g = k "
            "/ segments,",
            body_.chunkElements);
  out_.line("// by columns [s {0}, s {0} + {0}) with s = k % segments.", body_.rowSegmentColumns);
  out_.line("const {0} columns = {0}(entry.extents[{1}]);", indexType_, inner);
  out_.line("const {0} rows = {0}(entry.header.numel);", indexType_);
  out_.line("const {} segments = entry.row_segments;", indexType_);
}

void BodyEmitter::rowPartialOrResult(llvm::StringRef row, llvm::StringRef guard) {
  for (const ReductionSlot& slot : body_.reductions) {
    std::string a = treeText(slot).accumulatorType();
    out_.line("bool {}_here = false;", slot.name);
    out_.line("const {0} {1}_value = {1}_tree.finish(&{1}_here);", a, slot.name);
    out_.open("if ({})", guard.str());
    out_.line("if (segments == 1) // an empty row: the identity");
    out_.line("  wf_global(entry.{0}_out)[{1}] = {2};", slot.name, row.str(),
              treeText(slot).finished(
                  fmt::format("{0}_here ? {0}_value : {1}", slot.name, treeText(slot).identity())));
    out_.line("else");
    out_.line("  wf_store_device(entry.{0}_partials + {1} * segments + segment, {0}_value);",
              slot.name, row.str());
    out_.close();
  }
}

void BodyEmitter::hostRowsReductionLoop() {
  rowLocals();
  out_.open("for ({} chunk = begin; chunk < end;)", indexType_);
  rowChunkBounds();
  out_.open("for ({0} row = row_begin; row < row_end; ++row)", indexType_);
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("wf_tree_counter<{}, {}> {}_tree;", treeText(slot).accumulatorType(),
              treeText(slot).combine(), slot.name);
  out_.open("for ({0} column = column_begin; column < column_end; ++column)", indexType_);
  rowLocate("row", "column");
  perElement(rowsAccess());
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_tree.push(out.{0});", slot.name);
  out_.close();
  rowPartialOrResult("row", "true");
  out_.close();
  out_.open("if (segments > 1)");
  out_.line("__threadfence(); // the segment's partials are stored before its ticket");
  out_.open("if (atomicAdd(entry.row_tickets + group, 1u) == u32(segments - 1))");
  out_.line("__threadfence(); // every segment's partials are visible");
  out_.open("for ({0} row = row_begin; row < row_end; ++row)", indexType_);
  for (const ReductionSlot& slot : body_.reductions) {
    std::string a = treeText(slot).accumulatorType();
    out_.line("wf_tree_counter<{}, {}> {}_tree;", a, treeText(slot).combine(), slot.name);
    out_.line("for ({} s = 0; s < segments; ++s)", indexType_);
    out_.line("  {0}_tree.push(wf_load_device(entry.{0}_partials + row * segments + s));",
              slot.name);
    out_.line("bool {}_here = false;", slot.name);
    out_.line(
        "wf_global(entry.{0}_out)[row] = {1};", slot.name,
        treeText(slot).finished(fmt::format("{}_tree.finish(&{}_here)", slot.name, slot.name)));
  }
  out_.close();
  out_.line("entry.row_tickets[group] = 0u; // ready for the next launch");
  out_.close();
  out_.close();
  out_.line("chunk = next;");
  out_.close();
}

void BodyEmitter::rowLocate(llvm::StringRef row, llvm::StringRef column) {
  // Coordinates from the row and the column: the divisions depend on the row alone, so they
  // leave the column loop. The dimensions after the reduced one are static 1s.
  unsigned rank = body_.domainRank, inner = rank - 1 - body_.rowTrailing;
  if (inner > 0)
    out_.line("{} rest = {};", indexType_, row.str());
  for (unsigned d = inner; d-- > 1;) {
    out_.line("const {0} c{1} = rest % {0}(entry.extents[{1}]);", indexType_, d);
    out_.line("rest /= {}(entry.extents[{}]);", indexType_, d);
  }
  if (inner > 0)
    out_.line("const {} c0 = rest;", indexType_);
  out_.line("const {} c{} = {};", indexType_, inner, column.str());
  for (unsigned d = inner + 1; d < rank; ++d)
    out_.line("const {} c{} = 0;", indexType_, d);
  forEachElementTensor(true, true, [&](const Slot& slot) {
    offsetLocal(slot, [](unsigned d) { return fmt::format("c{}", d); });
  });
}

void BodyEmitter::rowLeaf(llvm::StringRef row, llvm::StringRef column, llvm::StringRef inRange) {
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{} {}_leaf = {};", treeText(slot).accumulatorType(), slot.name,
              treeText(slot).identity());
  out_.open("if ({})", inRange.str());
  rowLocate(row, column);
  perElement(rowsAccess());
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_leaf = out.{0};", slot.name);
  out_.close();
}

void BodyEmitter::rowsByWarps() {
  unsigned warps = plan_.threadsPerBlock / 32;
  out_.line("// A warp per row ({} apart): lane l takes the segment's columns l, l + 32, ...; "
            "each 32",
            warps);
  out_.line("// columns' tree by shuffles, the segment's tree by a counter spread over the lanes");
  out_.open("for ({0} row = row_begin + {0}(threadIdx.x / 32u); row < row_end; row += {1})",
            indexType_, warps);
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("wf_warp_counter<{}, {}> {}_tree;", treeText(slot).accumulatorType(),
              treeText(slot).combine(), slot.name);
  out_.open("for ({0} column = column_begin + lane; column - lane < column_end; column += 32)",
            indexType_);
  rowLeaf("row", "column", "column < column_end");
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_tree.push(wf_warp_tree<{1}>({0}_leaf));", slot.name, treeText(slot).combine());
  out_.close();
  rowPartialOrResult("row", "lane == 0");
  out_.close();
}

void BodyEmitter::rowsByTiles() {
  unsigned warps = plan_.threadsPerBlock / 32, perWarp = 32 / std::min(warps, 32u);
  out_.line("// Tiles of 32 rows x 32 columns: thread (w, l) computes the leaves of row row0 + l "
            "(consecutive");
  out_.line("// rows are adjacent in memory: coalesced) in columns w, w + {0}, ...; after a "
            "barrier warp w",
            warps);
  out_.line("// takes rows w, w + {0}, ... of the tile, one column per lane: each row's 32 "
            "columns' tree by",
            warps);
  out_.line("// shuffles, pushed to the row's counter.");
  out_.open("for ({0} row0 = row_begin; row0 < row_end; row0 += 32)", indexType_);
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("wf_warp_counter<{}, {}> {}_trees[{}];", treeText(slot).accumulatorType(),
              treeText(slot).combine(), slot.name, perWarp);
  out_.open("for ({0} column0 = column_begin; column0 < column_end; column0 += 32)", indexType_);
  out_.directive("#pragma unroll");
  out_.open("for (int k = 0; k < {}; ++k)", perWarp);
  out_.line("const {0} column = column0 + {0}(threadIdx.x / 32u) + {1} * k;", indexType_, warps);
  out_.line("const {} row = row0 + lane;", indexType_);
  rowLeaf("row", "column", "row < row_end && column < column_end");
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_tile[column - column0][lane] = {0}_leaf;", slot.name);
  out_.close();
  out_.line("__syncthreads(); // the tile's leaves are written");
  out_.directive("#pragma unroll");
  out_.open("for (int k = 0; k < {}; ++k)", perWarp);
  out_.line("const int r = int(threadIdx.x / 32u) + {} * k; // the tile's row", warps);
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("{0}_trees[k].push(wf_warp_tree<{1}>({0}_tile[lane][r]));", slot.name,
              treeText(slot).combine());
  out_.close();
  out_.line("__syncthreads(); // the tile is read before the next one is written");
  out_.close();
  out_.directive("#pragma unroll");
  out_.open("for (int k = 0; k < {}; ++k)", perWarp);
  out_.line("const {0} row = row0 + {0}(threadIdx.x / 32u) + {1} * k;", indexType_, warps);
  for (const ReductionSlot& slot : body_.reductions)
    out_.line("const wf_warp_counter<{0}, {1}>& {2}_tree = {2}_trees[k];",
              treeText(slot).accumulatorType(), treeText(slot).combine(), slot.name);
  rowPartialOrResult("row", "lane == 0 && row < row_end");
  out_.close();
  out_.close();
}

void BodyEmitter::deviceRowsCombine() {
  unsigned warps = plan_.threadsPerBlock / 32;
  out_.open("if (segments > 1)");
  out_.line("__syncthreads(); // the chunk's partials are stored");
  out_.open("if (threadIdx.x == 0)");
  out_.line("__threadfence();");
  out_.line("rows_last = atomicAdd(entry.row_tickets + group, 1u) == u32(segments - 1);");
  out_.close();
  out_.line("__syncthreads();");
  out_.open("if (rows_last)");
  out_.line("__threadfence(); // every segment's partials are visible");
  out_.line("// A warp per row: lane l takes its partials l, l + 32, ..., as a row's columns");
  out_.open("for ({0} row = row_begin + {0}(threadIdx.x / 32u); row < row_end; row += {1})",
            indexType_, warps);
  for (const ReductionSlot& slot : body_.reductions) {
    std::string a = treeText(slot).accumulatorType(), op = treeText(slot).combine();
    out_.line("wf_warp_counter<{}, {}> {}_tree;", a, op, slot.name);
    out_.line("for ({} s = lane; s - lane < segments; s += 32)", indexType_);
    out_.line("  {0}_tree.push(wf_warp_tree<{1}>(s < segments ? wf_load_device(entry.{0}_partials "
              "+ row * segments + s) : {2}));",
              slot.name, op, treeText(slot).identity());
    out_.line("bool {}_here = false;", slot.name);
    out_.line("const {0} {1}_value = {1}_tree.finish(&{1}_here);", a, slot.name);
    out_.line("if (lane == 0)");
    out_.line("  wf_global(entry.{}_out)[row] = {};", slot.name,
              treeText(slot).finished(fmt::format("{}_value", slot.name)));
  }
  out_.close();
  out_.line("if (threadIdx.x == 0)");
  out_.line("  entry.row_tickets[group] = 0u; // ready for the next launch");
  out_.close();
  out_.close();
}

void BodyEmitter::deviceRowsReductionLoop() {
  unsigned inner = body_.domainRank - 1 - body_.rowTrailing; // the reduced dimension
  rowLocals();
  out_.line("const {} lane = threadIdx.x & 31u;", indexType_);
  out_.line("__shared__ bool rows_last; // the last block done with the chunk's rows");
  const Slot* first = nullptr;
  forEachElementTensor(true, false, [&](const Slot& slot) { first = first ? first : &slot; });
  if (first)
    for (const ReductionSlot& slot : body_.reductions)
      out_.line("__shared__ {} {}_tile[32][33]; // a tile's leaves, by column (padded: no bank "
                "conflicts)",
                treeText(slot).accumulatorType(), slot.name);
  out_.open("for ({} chunk = begin; chunk < end;)", indexType_);
  rowChunkBounds();
  if (!first) {
    rowsByWarps();
  } else {
    out_.openCommented(fmt::format("if (entry.{}_strides[{}] <= 1)", first->field, inner),
                       "rows along memory (or broadcast): a warp reads a row's columns together");
    rowsByWarps();
    out_.openElse("rows across memory (a transposed view): tiles");
    rowsByTiles();
    out_.close();
  }
  deviceRowsCombine();
  out_.line("chunk = next;");
  out_.close();
}

} // namespace widefuse
