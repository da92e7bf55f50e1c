#pragma once
/// KernelPlan: every choice needed to emit and launch one kernel — which bodies it runs,
/// how elements are indexed and vectorized, how the member table and the parameter block are
/// laid out — so that codegen is a pure function of the plan and the runtime can fill the
/// tables from the plan alone.

#include "scheduler/device_description.h"
#include "scheduler/kernel_abi.h"
#include "segmenter/segmented_fusion.h"

#include <llvm/ADT/SmallVector.h>

#include <string>
#include <vector>

namespace widefuse {

/// How a body turns an element number into memory offsets.
enum class Indexing {
  /// Every tensor of a member is dense with the same strides: one linear index, 16-byte
  /// vector accesses where pointers allow.
  Flat,
  /// N-D coordinates and per-tensor strides from the member table: broadcasts and
  /// non-contiguous tensors. One element per access.
  Strided,
};

/// Where the member table lives.
enum class TableLocation {
  KernelParameters, ///< inside the kernel's parameter block (no upload, no device memory)
  DeviceMemory,     ///< a device buffer the parameter block points to (large tables)
};

/// What a member-table or parameter-block slot holds.
enum class SlotKind {
  ElementTensor,  ///< a tensor read or written at every element of the domain
  UniformTensor,  ///< a 0-d tensor read once per chunk (written once, deferred, if at all)
  Scalar,         ///< a runtime scalar input
  LiftedConstant, ///< a constant whose value differs between the members of the class
  BlockTensor,    ///< a rank-1 tensor of one element per block of `Slot::block` elements of
                  ///< the domain: read through expand_blocks, written with a block reduction
};

/// Where the value of a slot comes from, for each member.
struct SlotSource {
  enum class Kind { Input, Output, Constant };
  Kind kind = Kind::Input;
  /// Index into Component::inputs, Component::outputs, or SignatureClass::lifted.
  unsigned index = 0;

  bool operator==(const SlotSource&) const = default;
};

/// How the element values of a tensor are indexed in a strided body: for each dimension of
/// the tensor, the domain dimension it follows (broadcast_in_dim reads differ from the
/// identity). Empty in flat bodies.
using ElementView = llvm::SmallVector<int64_t, 4>;

/// One field of a member-table entry (or of the parameter block, when shared).
struct Slot {
  SlotKind kind = SlotKind::ElementTensor;
  SlotSource source;
  /// The name the body's code uses for the value (from the representative's IR names).
  std::string name;
  /// The C++ field in its struct: the entry field (= name), or the parameter-block field of
  /// a shared slot (prefixed by the body in packed kernels).
  std::string field;
  DataType dtype = DataType::Float;
  bool read = false;
  bool written = false;
  /// Written once, by the last block done with the member (a 0-d destination every element
  /// reads), so that no block reads a value another block already replaced.
  bool deferred = false;
  /// The same value for every member: kept once in the parameter block.
  bool shared = false;
  /// Strided element tensors: how the tensor is indexed from domain coordinates; block
  /// tensors: blockView(block).
  ElementView view;
  /// Block tensors: the domain elements of one of its elements (B).
  int64_t block = 0;
  /// Block tensors written: the body's block reduction (BodyPlan::blocks) it is written with.
  unsigned blockSource = 0;
  /// Byte offset of the field in the entry, or in the parameter block when shared.
  unsigned offset = 0;
  /// Strided element tensors: byte offset of the `i64[domainRank]` effective strides (0
  /// along broadcast dimensions), filled by the runtime from the tensor's strides and view.
  unsigned stridesOffset = 0;

  bool operator==(const Slot&) const = default;
};

/// One element value of a body computed under one view (strided bodies may compute a
/// value before broadcast_in_dim under several views).
struct ElementInstance {
  const Value* value = nullptr;
  ElementView view;
  /// C++ name of this instance.
  std::string name;

  bool operator==(const ElementInstance&) const = default;
};

/// A reduction a body computes a part of (docs/reductions.md §7): the partial of each
/// chunk, then, by the member's last finisher, the member's tree; for a global reduction the
/// last contributing member combines every member's tree.
struct ReductionSlot {
  /// Position in the representative's Component::contributions.
  unsigned contribution = 0;
  OpKind op = OpKind::Sum;
  /// Several members contribute (the global scope); else the member's tree is the result.
  bool global = false;
  /// The type the tree combines in (reductionAccumulatorType) and the result's dtype.
  DataType accumulator = DataType::Float;
  DataType result = DataType::Float;
  /// The element value reduced (its instance name) and its dtype.
  std::string operand;
  DataType operandType = DataType::Float;
  /// C++ prefix of its fields: `r0`.
  std::string name;
  /// Entry byte offsets of its fields: `<name>_partials` (this member's chunk partials, in
  /// the workspace), `<name>_out` (the result tensor), and for a global reduction
  /// `<name>_results` (every contributor's tree, in the workspace), `<name>_ticket`,
  /// `<name>_operand` (this member's position) and `<name>_operands` (how many contribute).
  unsigned partialsOffset = 0, outOffset = 0, resultsOffset = 0, ticketOffset = 0;
  unsigned operandOffset = 0, operandsOffset = 0;

  bool operator==(const ReductionSlot&) const = default;
};

/// A reduction over blocks that the body computes and reads itself (docs/reductions.md §2):
/// each block of `block` elements' tree, after a block barrier, read by the block's elements.
struct BlockSlot {
  OpKind op = OpKind::Sum;
  int64_t block = 0;
  /// The type the tree combines in (reductionAccumulatorType) and the result's dtype.
  DataType accumulator = DataType::Float;
  DataType result = DataType::Float;
  /// The element value reduced (its instance name) and its dtype.
  std::string operand;
  DataType operandType = DataType::Float;
  /// C++ name of its field in `<body>_blocks` and of its leaf: `b0`.
  std::string name;
  /// A second level: it reduces values computed from the body's other block results, so its
  /// leaves come out of the element function and its tree follows the elements; nothing in
  /// the body reads it (it is only written). Its blocks lie inside the first level's.
  bool late = false;

  bool operator==(const BlockSlot&) const = default;
};

/// The body of one signature class inside a kernel.
struct BodyPlan {
  /// Position in KernelPlan::bodies; packed kernels select the body by it.
  unsigned index = 0;
  unsigned signatureClass = 0;
  /// The component whose names the body is written with.
  unsigned representative = 0;
  /// C++ prefix of the body's structs and functions.
  std::string name;
  Indexing indexing = Indexing::Flat;
  /// Rank of the iteration domain (1 for flat bodies, 0 for a 0-d program).
  unsigned domainRank = 1;
  /// Elements per thread per access; 1 in strided bodies.
  unsigned vectorElements = 1;
  /// Elements per chunk, the unit blocks share the members' elements in.
  int64_t chunkElements = 0;
  /// Flat vector loops load each thread's next vector before computing the current one.
  bool prefetch = false;
  std::vector<Slot> slots;
  /// Element values in emission order, with their views.
  std::vector<ElementInstance> elementInstances;
  /// Values computed once per chunk (scalars, 0-d tensors), in emission order: uniform
  /// inputs first, then expression results.
  std::vector<ElementInstance> uniformValues;
  /// Size of this body's member-table entry.
  unsigned entryBytes = 0;
  /// Byte offset of `i64 extents[domainRank]` in the entry (strided bodies).
  unsigned extentsOffset = 0;
  /// True when some slot is written deferred (the kernel needs a ticket workspace).
  bool hasDeferredWrites = false;
  /// The reductions it computes a part of; members then have a last finisher (a ticket),
  /// unless they are over rows.
  std::vector<ReductionSlot> reductions;
  /// Every reduction is over rows (docs/reductions.md §9): the body's elements are the rows of
  /// its domain (the header's numel counts rows). A chunk is `chunkElements` rows by one
  /// segment of their columns; a warp computes a segment's tree. A row of one segment is
  /// written by its warp; longer rows leave a partial per segment, which the last block done
  /// with the chunk's rows combines (a ticket per chunk's rows, no member finisher).
  bool reducesRows = false;
  /// The dimensions after the reduced one (static 1s: docs/reductions.md §2), so that the
  /// row length is extent `domainRank - 1 - rowTrailing`.
  unsigned rowTrailing = 0;
  /// Rows bodies: columns of a row segment, a chunk's share of its rows (docs/reductions.md
  /// §9); entry offsets of `i32 row_segments` (segments per row, 1 for rows no longer than a
  /// segment) and `u32* row_tickets` (one per chunk's rows, in the workspace, when there are
  /// several segments).
  int64_t rowSegmentColumns = 0;
  unsigned rowSegmentsOffset = 0, rowTicketsOffset = 0;
  /// The reductions over blocks it computes and reads (docs/reductions.md §2).
  std::vector<BlockSlot> blocks;
  /// Reads or writes by blocks (block reductions, block tensors): its elements are taken a
  /// chunk at a time, every thread holding its elements until the chunk's blocks are done.
  bool byBlocks = false;

  /// True when the last block done with a member writes something (a ticket per member).
  bool needsFinisher() const { return hasDeferredWrites || (!reductions.empty() && !reducesRows); }

  bool operator==(const BodyPlan&) const = default;
};

/// Every choice for one compiled kernel.
struct KernelPlan {
  /// The kernel's entry-point name: `<fusion>_class<c>` or `<fusion>_pack<g>`.
  std::string name;
  /// The phase whose group it runs.
  const SegmentedPhase* phase = nullptr;
  DeviceDescription device;
  llvm::SmallVector<BodyPlan, 1> bodies;
  unsigned threadsPerBlock = 256;
  /// Blocks per multiprocessor the kernel is compiled for: its registers are capped at
  /// registerCap(plan) (NVRTC's --maxrregcount, so the source does not change with it).
  unsigned minBlocksPerMultiprocessor = 4;
  /// Upper bound of the persistent grid: multiprocessors x resident blocks.
  unsigned maxGridBlocks = 0;
  /// 32 or 64: the width of element indices and offsets.
  unsigned indexBits = 32;
  TableLocation tableLocation = TableLocation::KernelParameters;
  /// Members the parameter-block table holds (the group's member count); 0 for a
  /// device-memory table, whose kernel serves any member count.
  unsigned tableCapacity = 0;
  /// Size of one member-table entry (the union of the bodies' entries).
  unsigned entryBytes = 0;
  /// Offset of the member table in the parameter block (KernelParameters only).
  unsigned tableOffset = 0;
  /// Total size of the parameter block (the kernel's single argument).
  unsigned parameterBytes = 0;
  /// True when some body writes deferred: the runtime passes a zeroed `u32[members]`
  /// workspace once; the kernel leaves it zeroed again.
  bool needsTickets = false;
  /// Why each choice was made, in words (`WIDEFUSE_DUMP=plan`).
  std::vector<std::string> notes;
};

/// True when `a` and `b` compile to the same kernel and launch alike: every field but the notes
/// (words about the choices, which must not decide anything).
bool samePlan(const KernelPlan& a, const KernelPlan& b);

/// One launch of a compiled kernel over some members.
struct KernelLaunch {
  /// Index into ScheduledFusion::plans.
  unsigned plan = 0;
  /// The phase it belongs to, and the segmenter's group of that phase it runs.
  unsigned phase = 0;
  unsigned group = 0;
  /// Component ids in member-table order.
  std::vector<unsigned> members;
};

/// The scheduler's result for a whole fusion: distinct kernels and the launches that run
/// them (per-component mode launches one kernel per member of a class), every phase's
/// launches after the phase before.
struct ScheduledFusion {
  const SegmentedFusion* segmented = nullptr;
  std::vector<KernelPlan> plans;
  std::vector<KernelLaunch> launches;
};

/// Largest parameter block a kernel may take with CUDA 12.1 and newer on Volta and newer (the
/// default of DeviceDescription::maxParameterBytes; older drivers take 4096).
inline constexpr unsigned kMaxParameterBytes = 32764;

/// Registers per thread that let minBlocksPerMultiprocessor blocks of threadsPerBlock threads
/// share a multiprocessor's 65536 (allocated in units of 8, at most 255): 64 for 4 blocks of
/// 256, 80 for 3, 128 for 2.
unsigned registerCap(const KernelPlan& plan);

/// The longest dependent chain of the combine over `values` partials in a block of `threads`
/// (wf_block_combine, docs/reductions.md §10), in steps: a round of one thread's independent
/// loads (at most 8), a level of combines, a level of the block tree. At most
/// ceil(values / 256) + 8 for blocks of 256 (tests/scheduler/schedule_test.cpp).
int64_t combineSteps(int64_t values, unsigned threads);

/// Columns of a row segment by default (ScheduleOptions::rowSegmentColumns).
inline constexpr int64_t kRowSegmentColumns = 512;

/// The longest row a rows reduction takes: its warp's counter has 32 levels of 32-element
/// subtrees (wf_warp_counter). A row this long holds 512 GiB of f32 values.
inline constexpr int64_t kMaxRowElements = ((int64_t(1) << 32) - 1) * 32;

/// The name of an indexing mode: flat, strided.
llvm::StringRef indexingName(Indexing indexing);
/// The name of a table location: parameters, device-memory.
llvm::StringRef tableLocationName(TableLocation location);

/// The widest single memory access of the plan's kernels in bytes: 16 where flat bodies
/// vectorize, the element size otherwise.
unsigned widestAccessBytes(const KernelPlan& plan);

/// The note on the block size, register cap and grid, made from the plan's fields (first in
/// formatKernelPlan's notes).
std::string describeGrid(const KernelPlan& plan);

/// Human-readable plan: bodies, slots with offsets, and the notes (`WIDEFUSE_DUMP=plan`).
std::string formatKernelPlan(const KernelPlan& plan);

} // namespace widefuse
