#pragma once
/// BindingCache: the launch bindings of one specialization's last step, kept while the
/// arguments stay the same, so that the steady state binds nothing. Shared by the backends
/// that run kernels (host, cuda, none); each supplies how bound launches run.

#include "runtime/backend.h"
#include "runtime/fusion_compiler.h"
#include "runtime/launch_binding.h"

#include <llvm/ADT/STLFunctionalExtras.h>

#include <memory>
#include <mutex>
#include <vector>

namespace widefuse {

/// One step's bound launches, in ScheduledFusion::launches order, with their host-side
/// tickets and workspaces (a device backend keeps its own) and where each kept result is.
struct BoundStep {
  std::vector<LaunchBinding> launches;
  std::vector<std::vector<uint32_t>> tickets;
  /// Host memory for each launch's workspace (reductions); a device backend replaces it.
  std::vector<std::vector<std::byte>> workspaces;
  /// Per SegmentedFusion::kept entry: its memory (the output's, when the fusion returns it).
  std::vector<TensorRef> kept;
};

/// How a backend runs bound launches; `rebound`: the bindings are not those of its last call.
using BoundRunner = llvm::function_ref<void(BoundStep& bound, bool rebound)>;

/// Calls `boundary` after phase `phase` of a step, with the kept results that phase computed
/// (the launch loops of every kernel backend call it between phases).
void endPhase(const PhaseBoundary& boundary, const SegmentedFusion& segmented,
              const BoundStep& bound, unsigned phase, void* stream);

/// The cached bindings of one compiled specialization. Thread-safe.
class BindingCache {
public:
  BindingCache(const Fusion& fusion, std::shared_ptr<const CompiledFusion> compiled);

  const CompiledFusion& compiled() const { return *compiled_; }

  /// Binds every launch of `step` with `outputs` and its kept results (reusing the cached
  /// bindings when nothing changed) and runs them with `runner` (none: everything up to the
  /// launch, backend none).
  /// `exclusive`: the runs share state beyond the bindings (device tables and tickets), so a
  /// step waits for the cache instead of binding privately while another holds it.
  void bindAndRun(const CheckedRun& step, llvm::ArrayRef<TensorRef> outputs, bool exclusive,
                  std::optional<BoundRunner> runner);
  /// LoadedFusion::runChanged on these bindings, run with `runner`.
  bool runChanged(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<uint8_t> changed,
                  const Fingerprint& before, const std::shared_ptr<std::vector<int64_t>>& after,
                  BoundRunner runner);

private:
  /// The bindings of every launch for these arguments, outputs and kept results.
  void bind(const CheckedRun& step, llvm::ArrayRef<TensorRef> outputs, BoundStep& bound) const;

  const Fusion& fusion_;
  std::shared_ptr<const CompiledFusion> compiled_;
  /// By value id: the position in fusion_.inputs() / outputs() / the kept results (-1 for
  /// other values).
  std::vector<int> inputIndex_, outputIndex_, keptIndex_;
  /// Guards the cached bindings below; a run that finds it taken binds privately.
  std::mutex mutex_;
  /// What the cached bindings were built from: pointers, shapes, strides, scalar bits. Null
  /// while they are not reusable (none yet, or their launch failed).
  Fingerprint fingerprint_;
  /// Where the outputs and kept results of the cached bindings are.
  std::vector<const void*> outputAddresses_;
  BoundStep bound_;
};

/// The plain outputs of `fusion` allocated in host memory (into `result`), and their refs:
/// `callerOutputs` when the caller gave them.
std::vector<TensorRef> hostOutputs(const Fusion& fusion, const CheckedRun& step, RunResult& result);

} // namespace widefuse
