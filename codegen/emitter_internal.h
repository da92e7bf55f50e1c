#pragma once
/// Internal to codegen: the body emitter and the chunk walk, shared by the device half
/// (body_emitter.cpp, cuda_emitter.cpp) and the host half (host_entries.cpp) of the emitted
/// text. Every element loop of a kernel comes from one skeleton here: a loop head, where the
/// element is (`ElementLoop::locate`) and how its tensors are reached (`ElementAccess`), with
/// the per-element action written once in `BodyEmitter::perElement`.

#include "codegen/body_values.h"
#include "codegen/code_writer.h"
#include "scheduler/kernel_plan.h"

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <functional>
#include <string>
#include <vector>

namespace widefuse {

/// f16, bf16 and fp8: the prelude's structs of one `bits` field. The host's loops move them
/// through their bits: GCC does not vectorize a copy of the whole struct.
inline bool isBitsStruct(DataType dtype) {
  return isNarrowFloat(dtype);
}

/// The reduction tree's texts for one reduction (docs/reductions.md §3): a body's reductions
/// and its block reductions alike (reduction_emitter.cpp).
struct TreeText {
  OpKind op = OpKind::Sum;
  DataType accumulator = DataType::Float;
  DataType result = DataType::Float;

  /// The prelude's combine of the op (ir/reduction_tree.h): `wf_tree_sum`.
  std::string combine() const;
  /// The C++ type the tree combines in (f32, f64, i64, b8).
  std::string accumulatorType() const;
  /// The leaf a missing element stands for.
  std::string identity() const;
  /// The result from a finished tree `value`, in the result's dtype.
  std::string finished(const std::string& value) const;
  /// An element's leaf from `text` of `operandType`: max/min compare the elements in their
  /// result type; sums convert once, to the accumulator; any/all read truth values.
  std::string leaf(const std::string& text, DataType operandType) const;
};

inline TreeText treeText(const ReductionSlot& slot) {
  return {slot.op, slot.accumulator, slot.result};
}
inline TreeText treeText(const BlockSlot& slot) {
  return {slot.op, slot.accumulator, slot.result};
}

/// How one element loop reaches the tensors of its element.
struct ElementAccess {
  /// The expression of a read tensor's element.
  std::function<std::string(const Slot&)> read;
  /// The statement that stores `out.<field>` into a written tensor's element.
  std::function<std::string(const Slot&)> store;
  /// The element's row-major index in the domain (what element_index reads); empty where
  /// the loop has none (rows), which a body that reads it refuses.
  std::string index;
};

/// One loop over elements: its `for (...)` head, the statements an iteration needs before
/// its element (coordinates, offsets; may be empty), and how it reaches the tensors.
struct ElementLoop {
  std::string head;
  std::function<void()> locate;
  ElementAccess access;
};

/// One of a body's `<body>_elements`-like functions: elements [begin, end) of one member,
/// by the device's threads or by one host loop. The loops differ; the signature and the 0-d
/// outputs written once per member do not.
struct ElementsVariant {
  /// `WF_DEVICE void <body>_elements`.
  std::string signature;
  llvm::SmallVector<std::string, 2> comment;
  /// Statements before the loops (may be empty).
  std::function<void()> locals;
  std::function<void()> flat;
  std::function<void()> strided;
  /// When the one thread that writes the 0-d outputs is running.
  std::string firstElement;
};

/// One of a body's `<body>_run`-like functions: a block's share of a member's chunks, on the
/// device (which the device emulator runs too) or on the host's fast path as one loop. They
/// differ in how every thread runs its elements and how one thread then goes on; what that
/// thread does after the member's last chunk is written once (`BodyEmitter::afterLastChunk`).
struct RunVariant {
  /// `WF_DEVICE void <body>_run`.
  std::string signature;
  llvm::SmallVector<std::string, 3> comment;
  /// The range, the prologue and every thread's elements.
  std::function<void()> elements;
  /// Runs its argument on one thread of the block after every thread's elements.
  std::function<void(llvm::function_ref<void()>)> oneThread;
  /// The device's: the block's threads are separate (they combine partials together).
  bool device = false;
};

/// The statements of one body, written into a CodeWriter. The device functions are in
/// body_emitter.cpp, the host backend's in host_entries.cpp.
class BodyEmitter {
public:
  BodyEmitter(const KernelPlan& plan, const BodyPlan& body, CodeWriter& out);

  /// The member-table entry struct, with its offsets pinned.
  void entry();
  /// Every function of the body, device and host, in the order the kernel needs them.
  void functions();

private:
  std::string slotAccess(const Slot& slot) const {
    return (slot.shared ? "params." : "entry.") + slot.field;
  }
  /// A tensor slot's pointer, marked as global memory; inside the host's block loop the local
  /// copy made before it (a byte store could alias the entry, which keeps the loop scalar).
  std::string pointerOf(const Slot& slot) const {
    return pointersInLocals_ ? "ptr_" + slot.field : "wf_global(" + slotAccess(slot) + ")";
  }
  /// The parameters every body function starts with: `const <params>& params, const
  /// <member>& entry`.
  std::vector<std::string> tableParameters() const;
  /// `head(parameters...) {` wrapped at the writer's width, then the body's depth.
  void openFunction(const std::string& head, const std::vector<std::string>& parameters) {
    out_.openWrapped(head + "(", parameters, ", ");
  }
  /// Calls `each` for the element tensors read (`reads`) and/or written (`writes`).
  void forEachElementTensor(bool reads, bool writes,
                            const std::function<void(const Slot&)>& each) const;

  // The skeleton every body function is written with.
  /// What one element does: `<body>_element(u, {reads...})`, then its stores.
  void perElement(const ElementAccess& access);
  /// `, i64(<index>)` where the body reads element_index, else nothing. Throws Error where
  /// the loop has no element index (`index` empty).
  std::string indexArgument(llvm::StringRef index) const;
  void elementLoop(const ElementLoop& loop);
  void elementsFunction(const ElementsVariant& variant);
  void runFunction(const RunVariant& variant);
  /// What one thread does after a block's last chunk of the member: the ticket's deferred
  /// writes, or nothing.
  void afterLastChunk(const RunVariant& variant);
  /// `begin`, `limit` and `stop` of a run of chunks [first, end).
  void elementRange();
  /// `const <index> at_<field> = c0 * stride0 + ...;` with `coordinate(d)` for dimension d.
  void offsetLocal(const Slot& slot, llvm::function_ref<std::string(unsigned)> coordinate);
  /// The 0-d outputs, written once per member where `condition` holds.
  void zeroDimensionalOutputs(llvm::StringRef condition);

  // Device functions (body_emitter.cpp).
  void uniformStruct();
  void prologue();
  void elementFunction();
  /// `const T <name> = <expression>;` of one element value under its view.
  /// `shared`: a value the leaves also compute (shared_), taken from the element's `shared`.
  void elementStatement(const ElementInstance& instance, bool shared = false);
  void deferredFunction();
  /// Whether the device's last block combines partials (all its threads: `<body>_finish`).
  bool combinesOnDevice() const { return !body_.reductions.empty() && !body_.reducesRows; }
  void finishFunction();
  /// `const i32 chunks`: the member's chunks (1 for an empty member).
  void memberChunks();
  /// The last block's deferred `copy_` writes, then the member's ticket reset.
  void deferredWritesAndTicketReset();
  ElementsVariant deviceElements();
  RunVariant deviceRun();
  void scalarLoop(llvm::StringRef from, llvm::StringRef to, llvm::StringRef comment);
  void flatLoops();
  void vectorLoop();
  void vectorLoads(llvm::StringRef prefix, llvm::StringRef past);
  void stridedLoop();
  /// The element's reads and stores by its flat index `i` (flat bodies, one per access).
  ElementAccess flatAccess() const;
  /// Coordinates and tensor offsets of element `i` (strided bodies), and their access.
  void stridedLocate();
  ElementAccess stridedAccess() const;
  /// stridedAccess in a loop over rows and columns, which has no element index.
  ElementAccess rowsAccess() const;
  // Reductions (reduction_emitter.cpp, docs/reductions.md §7-§11).
  /// The entry fields of the body's reductions.
  void reductionFields();
  /// `A <name>;` leaves in the element's out struct, and their values.
  void reductionLeafFields();
  void reductionLeafValues();
  /// Each reduction's leaf of element `i`: the identity past `end`, else the element's (its
  /// stores done); with `end` empty, the element's (a whole chunk).
  void reductionLeaves(llvm::StringRef end);
  /// The host fast path's: when a chunk's rows are done (or the run ends at `end`), its
  /// partials.
  void chunkPartials(llvm::StringRef end);
  /// The device's elements of a reducing body: a chunk at a time, each row of the block's
  /// threads by warp shuffles and one barrier, each chunk's partial by warp 0.
  void deviceReductionLoop();
  /// `const bool vectorized`: every element tensor of the member at its access alignment.
  void vectorizedCheck();
  /// Row `row`'s leaf of each reduction, from the thread's `vectorElements` consecutive
  /// elements from `i` (vector loads where `vectorized`, and the tree of their leaves); with
  /// `whole` false, elements past `end` are the identity and are neither read nor written.
  void vectorReductionLeaves(bool whole);
  /// The host fast path's: the same rows, each row's threads one after another.
  void hostReductionRows();
  // Rows (rows_emitter.cpp, docs/reductions.md §9).
  /// `columns`, `rows` and `segments` of the member.
  void rowLocals();
  /// The rows and columns of chunk `chunk` (`row_begin`, `row_end`, `column_begin`,
  /// `column_end`), and `next`: one chunk, or the run's rest where rows have one segment.
  void rowChunkBounds();
  /// The host fast path's elements of a body reducing over rows: each chunk's rows by one loop
  /// over their segment's columns in order (wf_tree_counter), then the segments' combine.
  void hostRowsReductionLoop();
  /// Coordinates `c<d>` of element (`row`, `column`) and each tensor's offset `at_<field>`:
  /// the divisions depend on the row alone.
  void rowLocate(llvm::StringRef row, llvm::StringRef column);
  /// The device's: each 32 columns' tree of a row by shuffles (wf_warp_tree), pushed to a
  /// counter kept in the lanes' registers (wf_warp_counter). Rows along memory take a warp per
  /// row (rowsByWarps); rows across it (a transposed view) tiles of 32 x 32 (rowsByTiles).
  void deviceRowsReductionLoop();
  void rowsByWarps();
  void rowsByTiles();
  /// The last block done with a chunk's rows combines their segments' partials, a warp per row.
  void deviceRowsCombine();
  /// `<r>_leaf` of element (`row`, `column`) where `inRange` holds, the identity elsewhere.
  void rowLeaf(llvm::StringRef row, llvm::StringRef column, llvm::StringRef inRange);
  /// Where `guard` holds, each reduction's tree of `row`'s segment (`<r>_tree`): the row's
  /// result when the row has one segment, else its partial.
  void rowPartialOrResult(llvm::StringRef row, llvm::StringRef guard);
  /// The member's last finisher: its tree of the chunk partials, its result or its part of a
  /// global one (and the last contributor's combine), by one thread (the host's fast path).
  void reductionFinish();
  /// The same by every thread of the device's last block: block-wide passes
  /// (wf_block_combine), the results written by thread 0.
  void deviceReductionFinish();
  // Blocks (block_emitter.cpp, docs/reductions.md §7).
  /// Calls `each` for every tensor an element reads, in `<body>_in`'s order: element tensors,
  /// then block tensors.
  void forEachRead(const std::function<void(const Slot&)>& each) const;
  /// `<body>_blocks` (the block results an element reads) and `<body>_block_leaves` (the block
  /// reductions' leaves, from the element's reads alone).
  void blockFunctions();
  /// The device's elements of a body that reads by blocks: a chunk at a time, every thread
  /// loading its elements, the chunk's block trees (shuffles, one barrier), then each element.
  void deviceBlockLoop();
  /// `for (row ...) { const i = ...; body }` over a chunk's rows, unrolled.
  void blockRows(const std::function<void()>& body);
  /// `blk[row]`: each block's tree, by shuffles and, past a warp, one barrier.
  void blockTrees();
  /// The host fast path's: groups of the largest block, each block's leaves in order.
  void hostBlockLoop();
  /// A second level's leaves in `<body>_out` (fields, then values): the element makes them.
  void lateLeafFields();
  void lateLeafValues();
  /// `blk[row]`'s second level by shuffles, and its block tensor writes.
  void lateBlockTrees();
  /// `<target> = {reads}` of element `i` (offsets located first in strided bodies).
  void blockLoads(llvm::StringRef target);
  /// The element's stores and, at a block's first element, its block tensors' writes
  /// (`locate`: offsets located first, unless the loads in the same scope did).
  /// `shared`: the element's `<body>_shared` (empty when the body has none).
  void blockStores(llvm::StringRef in, llvm::StringRef blk, bool blockResults = true,
                   bool locate = true, llvm::StringRef shared = {});
  /// The host's group of elements reads each block tensor once per block (`read_<field>`).
  void hostGroupBlockReads(int64_t group);
  /// The host's block tensor writes, after the group's elements.
  void hostBlockResults(int64_t group);

  // Host backend functions (host_entries.cpp).
  ElementsVariant hostFastElements();
  RunVariant hostFastRun();
  void hostFastFlatLoop();
  void hostFastStridedLoop();
  /// Local copies of the element tensors' pointers (`m0_`), so that the host compiler sees
  /// that stores through one do not change the table entry the others come from.
  void hostPointerLocals();
  /// The fast path's access to element `index(slot)` of each tensor.
  ElementAccess hostAccess(std::function<std::string(const Slot&)> index,
                           std::string element) const;

  const KernelPlan& plan_;
  const BodyPlan& body_;
  BodyValues values_;
  CodeWriter& out_;
  std::string indexType_;
  bool pointersInLocals_ = false;
  /// Some element of the body reads its index (element_index).
  bool readsElementIndex_ = false;
  /// Block tensors are read from the group's `read_<field>` arrays (the host's block loop):
  /// the group's size, or 0.
  int64_t groupBlockReads_ = 0;
  /// The values the leaves function computes that the element function uses again (flat
  /// bodies that read by blocks): the leaves hand them over in `<body>_shared`, so that an
  /// element does not dequantize, say, a second time.
  std::vector<const ElementInstance*> shared_;
};

/// The walk every entry point shares: block `block` of `grid` takes its contiguous share of
/// the chunks and hands each member's run of them to its body's `<body><runFunction>(params,
/// entry, member, first, end)`.
void chunkWalk(const KernelPlan& plan, llvm::StringRef block, llvm::StringRef grid,
               llvm::StringRef runFunction, CodeWriter& out);

/// The host backend's entry points and the launch description for host-side checkers.
void emitHostEntries(const KernelPlan& plan, CodeWriter& out);

} // namespace widefuse
