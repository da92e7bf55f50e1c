#pragma once
/// The CUDA backend's state for one compiled signature: the loaded modules, member tables in
/// device memory (uploaded only when the bindings change) and the ticket workspaces (zeroed
/// once, on the stream of the first launch; the kernels leave them zeroed). Every transfer of
/// a launch is queued on the launch's stream, so it is ordered with the kernels whatever kind
/// of stream the caller uses (non-blocking ones included).
///
/// CUDA graph capture (torch.cuda.graph): a launch whose bindings did not change since the
/// last one, and whose tickets were zeroed before, queues kernels and nothing else, so it can
/// be captured and replayed. A launch under capture that would have to upload a device member
/// table, or to wait for its kernels (synchronizeEach), throws an Error naming what instead of
/// baking a graph that reads host memory later steps rewrite. A device table a graph has
/// captured belongs to that graph: a later upload goes to a fresh one.
///
/// Streams are per launch. The tables and tickets are one set per specialization, so a launch
/// on another stream than the last one first waits for the context (outside capture), lest
/// its upload or kernels meet the last stream's still running; a launch under capture cannot
/// wait, and the capture is ordered by its caller (torch.cuda.graph synchronizes first).

#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_compiler.h"
#include "runtime/launch_binding.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/STLFunctionalExtras.h>

#include <optional>

#include <vector>

namespace widefuse {

/// Launches a compiled fusion's kernels on one device.
class CudaKernels {
public:
  /// Loads every kernel's cubin. Throws Error when a parameter block exceeds what the driver
  /// accepts (CUDA older than 12.1: 4 KB).
  CudaKernels(const CudaDevice& device, const CompiledFusion& compiled);

  /// Points each binding at its device table and tickets, uploads the tables when `rebound`,
  /// and launches every kernel on `stream` without synchronising (unless `synchronizeEach`:
  /// then it waits after each kernel and names the one that failed); calls `endPhase(p)`
  /// between the last launch of phase p and the first of the next. Asks the driver whether
  /// `stream` captures only when it matters: first launches, uploads, device tables,
  /// synchronizeEach.
  void launch(const CompiledFusion& compiled, std::vector<LaunchBinding>& bindings, bool rebound,
              void* stream, bool synchronizeEach, llvm::function_ref<void(unsigned)> endPhase);

private:
  /// Makes tables_[i] ready for a new upload of `bytes` bytes: refused under capture; a table a
  /// graph captured is left to the graph and replaced.
  void prepareTableUpload(size_t i, const KernelPlan& plan, size_t bytes, bool capturing);
  /// Orders a launch on `stream` after the work of the last launch on another stream (a
  /// context wait; none under capture). `capturing` asks the driver, lazily.
  void followLastStream(void* stream, llvm::function_ref<bool()> capturing);

  const CudaDevice& device_;
  std::vector<CudaModule> modules_;
  /// Per plan: the persistent grid's size, resident blocks x multiprocessors.
  std::vector<unsigned> gridLimits_;
  std::vector<DeviceBuffer> tables_;
  std::vector<DeviceBuffer> tickets_;
  std::vector<bool> ticketsZeroed_;
  /// Each launch's workspace (reduction partials, results, tickets), grown to what its
  /// binding needs, zeroed on its first launch (the kernels leave the tickets zeroed).
  std::vector<DeviceBuffer> workspaces_;
  std::vector<void*> workspaceBases_;
  std::vector<bool> workspacesZeroed_;
  /// Per launch: a captured graph reads tables_[i] at each replay.
  std::vector<bool> tableCaptured_;
  /// Tables captured graphs still read; kept as long as the kernels are.
  std::vector<DeviceBuffer> retiredTables_;
  /// The stream of the last launch outside capture (nullopt before the first); callers hold
  /// the binding cache's lock, so launches of one specialization take turns.
  std::optional<void*> lastStream_;
};

} // namespace widefuse
