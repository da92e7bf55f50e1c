#pragma once
/// PassRunner: a fusion with reductions run on a kernel backend, as its passes
/// (segmenter/passes.h) one after another, each with an executor of its own. The results a
/// later pass reads stay in memory the runner keeps between steps, the backend's own (device
/// memory on cuda: a step on device tensors stages nothing and never waits).

#include "ir/arguments.h"
#include "ir/host_tensor.h"
#include "runtime/backend.h"
#include "runtime/executor_options.h"
#include "segmenter/passes.h"

#include <llvm/ADT/ArrayRef.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace widefuse {

class FusionExecutorCache;
class PreparedRun;
struct CompiledFusion;

/// Runs the passes of one fusion. Thread-safe (steps run one at a time).
class PassRunner {
public:
  /// `fusion` must outlive the runner; every pass runs on `backend` (named in `options`),
  /// which also holds the results between passes.
  PassRunner(const Fusion& fusion, const Backend& backend, ExecutorOptions options);
  ~PassRunner();

  /// One step: every argument and caller output is checked against the whole fusion first,
  /// then each pass runs with its inputs (the step's arguments, earlier passes' results).
  RunResult run(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<TensorRef> outputs,
                std::optional<void*> stream);
  /// A prepared run of the passes (FusionExecutorCache::prepare): each pass prepared once,
  /// with its own memory for the results, so that a launch checks nothing. `outputs`: where
  /// every launch puts the fusion's outputs (empty: memory of its own, returned by launch).
  std::unique_ptr<PreparedRun> prepare(FusionExecutorCache& executor,
                                       llvm::ArrayRef<Argument> arguments,
                                       std::optional<void*> stream,
                                       llvm::ArrayRef<TensorRef> outputs);
  /// Each pass's compiled kernels of its last run (null for a pass not run yet).
  std::vector<std::shared_ptr<const CompiledFusion>> lastCompiled() const;
  /// The plan the runner follows.
  const PassPlan& plan() const { return plan_; }

private:
  /// Checks the step against the whole fusion and points each result and output at memory:
  /// `held` (the kept results, reallocated where a shape changed), `fresh` (outputs the
  /// caller did not give, in host memory) or the caller's outputs.
  struct Bound {
    std::vector<TensorRef> results, outputs;
  };
  Bound bind(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<TensorRef> outputs,
             std::vector<KeptTensor>& held, std::vector<HostTensor>& fresh);
  /// Pass p's arguments and outputs under `bound`.
  std::vector<Argument> passArguments(size_t p, llvm::ArrayRef<Argument> arguments,
                                      const Bound& bound) const;
  std::vector<TensorRef> passOutputs(size_t p, const Bound& bound) const;

  const Fusion& fusion_;
  const Backend& backend_;
  PassPlan plan_;
  std::vector<std::unique_ptr<FusionExecutorCache>> executors_;
  std::mutex mutex_;
  /// Each PassPlan::results entry's memory, kept while its shape does not change.
  std::vector<KeptTensor> results_;
};

} // namespace widefuse
