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

/// How a backend runs bound launches; `rebound`: the bindings are not those of its last call.
using BoundRunner = llvm::function_ref<void(std::vector<LaunchBinding>& bindings, bool rebound)>;

/// The cached bindings of one compiled specialization. Thread-safe.
class BindingCache {
public:
  BindingCache(const Fusion& fusion, std::shared_ptr<const CompiledFusion> compiled);

  const CompiledFusion& compiled() const { return *compiled_; }

  /// Binds every launch of `step` with `outputs` (reusing the cached bindings when nothing
  /// changed) and runs them with `runner` (none: everything up to the launch, backend none).
  /// `exclusive`: the runs share state beyond the bindings (device tables and tickets), so a
  /// step waits for the cache instead of binding privately while another holds it.
  void bindAndRun(const Step& step, llvm::ArrayRef<TensorRef> outputs, bool exclusive,
                  std::optional<BoundRunner> runner);
  /// LoadedFusion::runChanged on these bindings, run with `runner`.
  bool runChanged(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<uint8_t> changed,
                  const Fingerprint& before, const std::shared_ptr<std::vector<int64_t>>& after,
                  BoundRunner runner);

private:
  /// The bindings of every launch for these arguments and outputs.
  void bind(llvm::ArrayRef<Argument> arguments, const RuntimeShapes& shapes,
            llvm::ArrayRef<TensorRef> outputs, std::vector<LaunchBinding>& bindings,
            std::vector<std::vector<uint32_t>>& tickets,
            std::vector<std::vector<std::byte>>& workspaces) const;

  const Fusion& fusion_;
  std::shared_ptr<const CompiledFusion> compiled_;
  /// By value id: the position in fusion_.inputs() / outputs() (-1 for other values).
  std::vector<int> inputIndex_, outputIndex_;
  /// Guards the cached bindings below; a run that finds it taken binds privately.
  std::mutex mutex_;
  /// What the cached bindings were built from: pointers, shapes, strides, scalar bits. Null
  /// while they are not reusable (none yet, or their launch failed).
  Fingerprint fingerprint_;
  /// Where the outputs of the cached bindings are.
  std::vector<const void*> outputAddresses_;
  std::vector<LaunchBinding> bindings_;
  std::vector<std::vector<uint32_t>> tickets_;
  /// Host memory for each launch's workspace (reductions); a device backend replaces it.
  std::vector<std::vector<std::byte>> workspaces_;
};

/// The plain outputs of `fusion` allocated in host memory (into `result`), and their refs:
/// `callerOutputs` when the caller gave them.
std::vector<TensorRef> hostOutputs(const Fusion& fusion, const Step& step, RunResult& result);

} // namespace widefuse
