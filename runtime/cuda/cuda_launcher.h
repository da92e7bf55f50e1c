#pragma once
/// The CUDA backend's state for one compiled signature on one device: the loaded modules,
/// member tables in device memory (runtime/cuda/member_tables.h), the ticket workspaces
/// (zeroed once, on the stream of the first launch; the kernels leave them zeroed) and the
/// reduction workspaces. Every transfer of a launch is queued on the launch's stream, so it is
/// ordered with the kernels whatever kind of stream the caller uses (non-blocking ones
/// included).
///
/// CUDA graph capture (torch.cuda.graph): a step under capture queues kernels, and, where its
/// bindings changed, the copies of its member tables from page-locked memory the graph keeps.
/// Everything the captured step uses (modules, tables, tickets, workspaces, kept results) is
/// held by the graph (runtime/cuda/graph_hold.h), so it stays alive while the graph can be
/// replayed, after this object and its executor are gone, and a later step that needs a larger
/// workspace allocates a new one instead of freeing the graph's. A step under capture that
/// would allocate (a larger workspace), or wait (synchronizeEach), throws an Error naming what
/// before anything is queued.
///
/// Streams are per launch. The tables and tickets are one set per specialization, so a launch
/// on another stream than the last one first waits, by an event, for the last one's work
/// (outside capture); a launch under capture cannot wait for work outside it, and the capture
/// is ordered by its caller (torch.cuda.graph synchronizes first).

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_event.h"
#include "runtime/cuda/member_tables.h"
#include "runtime/fusion_compiler.h"
#include "runtime/launch_binding.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/STLFunctionalExtras.h>

#include <memory>
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
  /// between the last launch of phase p and the first of the next. `kept`: what owns the kept
  /// results the bindings point at (a captured graph holds it). Asks the driver whether
  /// `stream` captures only when it matters: first launches, uploads, device tables,
  /// synchronizeEach, and once per step where the kernels use memory a graph must hold.
  void launch(const CompiledFusion& compiled, std::vector<LaunchBinding>& bindings, bool rebound,
              void* stream, bool synchronizeEach, llvm::function_ref<void(unsigned)> endPhase,
              const std::shared_ptr<const void>& kept);

private:
  /// Orders a launch on `stream` after the work of the last launch on another stream (an
  /// event; none under capture). `capturing` asks the driver, lazily.
  void followLastStream(void* stream, llvm::function_ref<bool()> capturing);
  /// Grows the workspaces `bindings` need (refused under capture); true when one moved.
  bool growWorkspaces(const CompiledFusion& compiled, llvm::ArrayRef<LaunchBinding> bindings,
                      llvm::function_ref<bool()> capturing);
  /// Zeroes launch i's tickets and workspace on their first launch (under capture the memset
  /// is recorded, and the next launch outside the graph zeroes them again).
  void zeroOnFirstLaunch(size_t i, const KernelPlan& plan, const LaunchBinding& binding,
                         void* stream, bool capturing);
  /// Waits for `plan`'s kernel on `stream` (synchronizeEach), naming it when it failed.
  void waitFor(const KernelPlan& plan, void* stream) const;
  /// What a graph capturing this step must hold.
  GraphHold holdOfStep(const std::shared_ptr<const void>& kept) const;

  const CudaDevice& device_;
  std::shared_ptr<const std::vector<CudaModule>> modules_;
  /// Per plan: the persistent grid's size, resident blocks x multiprocessors.
  std::vector<unsigned> gridLimits_;
  MemberTables tables_;
  std::vector<std::shared_ptr<DeviceBuffer>> tickets_;
  std::vector<bool> ticketsZeroed_;
  /// Each launch's workspace (reduction partials, results, tickets), grown to what its
  /// binding needs, zeroed on its first launch (the kernels leave the tickets zeroed).
  std::vector<std::shared_ptr<DeviceBuffer>> workspaces_;
  std::vector<void*> workspaceBases_;
  std::vector<bool> workspacesZeroed_;
  /// The stream of the last launch outside capture (nullopt before the first), and the event
  /// recorded after its work; callers hold the binding cache's lock, so launches of one
  /// specialization take turns.
  std::optional<void*> lastStream_;
  CudaEvent lastStepDone_;
};

} // namespace widefuse
