#pragma once
/// Binding: the bytes a kernel launch takes — its parameter block and member table — filled
/// from a plan and the run's tensors and scalars, exactly at the plan's offsets.

#include "ir/runtime_shapes.h"
#include "scheduler/kernel_plan.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLFunctionalExtras.h>

#include <cstddef>
#include <vector>

namespace widefuse {

/// Where a launch's bytes hold an input's value: a tensor's data pointer or a runtime
/// scalar, in the parameter block or the member table. A tensor moved to memory of the same
/// layout, or a new scalar value, changes only these bytes.
struct ArgumentSite {
  /// The input's value id.
  unsigned value = 0;
  bool inTable = false;
  bool isScalar = false;
  /// The scalar's dtype in the kernel.
  DataType dtype = DataType::Float;
  uint32_t offset = 0;
};

/// Where a launch's bytes hold an address in its workspace (reduction partials, results and
/// tickets): the backend adds the workspace's base (setWorkspaceAddress).
struct WorkspaceSite {
  bool inTable = false;
  uint32_t offset = 0;
  uint64_t workspaceOffset = 0;
  /// The launch (of the step) whose workspace it is: a global reduction's contributors in
  /// several launches share the first one's operand trees and ticket.
  unsigned launch = 0;
};

/// The global reductions of one step's launches: where each one's operand trees and ticket
/// are, and how many contributors the launches bound so far have.
struct GlobalReductions {
  struct Entry {
    unsigned launch = 0;
    uint64_t results = 0, ticket = 0;
    unsigned contributors = 0;
  };
  llvm::DenseMap<const Expr*, Entry> entries;
  /// Throws Error unless every operand of every global reduction has its contributor.
  void checkComplete() const;
};

/// One launch's bytes.
struct LaunchBinding {
  /// The kernel's single argument (KernelPlan::parameterBytes, 8-byte aligned size).
  std::vector<std::byte> parameters;
  /// The member table when it lives in device memory (empty otherwise).
  std::vector<std::byte> table;
  /// Total chunks of all members: the useful grid size.
  unsigned numChunks = 0;
  /// Total elements of all members' domains.
  int64_t numElements = 0;
  /// Total work: every member's chunks times its chunk_work, the positions blocks share
  /// (codegen/chunk_shares.h).
  int64_t work = 0;
  /// Every input's pointer and scalar in `parameters` and `table`.
  std::vector<ArgumentSite> sites;
  /// Bytes of workspace the launch needs: zeroed before its first launch, which leaves its
  /// tickets zeroed again (partials and results are written before they are read).
  uint64_t workspaceBytes = 0;
  std::vector<WorkspaceSite> workspaceSites;
};

/// The tensor a fusion value is bound to in this run, as an input (read, or written by
/// copy_) or as a plain output (a value may be both: `return x` of an input x).
using TensorLookup = llvm::function_ref<const TensorRef&(const Value*, bool asOutput)>;
/// The scalar a runtime scalar input is bound to in this run.
using ScalarLookup = llvm::function_ref<ScalarArgument(const Value*)>;

/// The most blocks a launch's grid has; with kMaxChunks it keeps the kernels' i32 share
/// arithmetic (`num_chunks + grid - 1`) from overflowing.
inline constexpr unsigned kMaxGridBlocks = 1u << 16;
/// The most chunks one launch may have.
inline constexpr int64_t kMaxChunks = (int64_t(1) << 31) - kMaxGridBlocks;

/// Fills the parameter block and table of `launch`. Member m gets max(1, ceil(numel /
/// chunkElements)) chunks (a 0-element member still runs its 0-d writes); strided slots get
/// effective strides (0 along broadcast dimensions). The table and ticket pointers of the
/// header stay null; see setTableAddresses.
/// `globals` carries the step's global reductions from launch to launch (`index` is this
/// launch's position in the step); call checkComplete after the last.
LaunchBinding bindLaunch(const KernelPlan& plan, const KernelLaunch& launch,
                         const RuntimeShapes& shapes, TensorLookup tensorOf, ScalarLookup scalarOf,
                         GlobalReductions& globals, unsigned index);

/// Rewrites the sites of the inputs whose value id is set in `changed` with their arguments'
/// new pointers and scalars (`argumentOf`: the argument of an input value id), leaving every
/// other byte as it was: a tensor must keep its dtype, shape and strides.
void patchArguments(LaunchBinding& binding, llvm::ArrayRef<uint8_t> changed,
                    llvm::function_ref<const Argument&(unsigned value)> argumentOf);

/// The grid of a launch: one block per chunk up to `maxBlocks` and kMaxGridBlocks (then blocks
/// take several chunks each), at least one block.
unsigned gridBlocks(const LaunchBinding& binding, unsigned maxBlocks);

/// Writes the ticket workspace and (device-memory tables) the table addresses into the header.
void setTableAddresses(LaunchBinding& binding, const void* table, const void* tickets);

/// Writes the workspace addresses into the bytes: `bases[l]` is launch l's workspace.
void setWorkspaceAddresses(LaunchBinding& binding, llvm::ArrayRef<void*> bases);

/// The bytes of a scalar of `dtype` holding `value` as the reference evaluator stores it.
void encodeScalar(DataType dtype, const ScalarArgument& value, std::byte* out);

} // namespace widefuse
