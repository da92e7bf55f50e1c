#pragma once
/// FusionExecutorCache: the one place that strings check -> shapes -> specialize -> lower ->
/// build -> keep -> bind -> launch together, for whichever Backend the options select and
/// whatever phases the fusion has. Keyed by specialization; the steady state (the same tensors
/// as the last run) skips the checks, the lookup and the rebinding: no recompilation, no table
/// rebuild; a PreparedRun does not even compare the arguments.

#include "ir/runtime_shapes.h"
#include "runtime/argument_fingerprint.h"
#include "runtime/backend.h"
#include "runtime/executor_options.h"
#include "runtime/fusion_compiler.h"
#include "runtime/prepared_run.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace widefuse {

/// One specialization of an executor: what lowering produced for it (null for a backend that
/// lowers nothing) and the backend's build of it.
struct CompiledSpecialization {
  /// The backend's device it runs on (Backend::deviceOf).
  int device = 0;
  std::shared_ptr<const CompiledFusion> compiled;
  std::unique_ptr<LoadedFusion> loaded;
};

/// Caller-supplied outputs: one dense tensor per plain output, of its dtype and run-time
/// shape. Throws Error naming the output.
void checkCallerOutputs(const Fusion& fusion, llvm::ArrayRef<TensorRef> outputs,
                        const RuntimeShapes& shapes);

/// Compiles a fusion once per specialization (what the arguments decide about the kernels:
/// dense inputs, index widths) and runs it, every phase of it; thread-safe.
class FusionExecutorCache {
public:
  /// `fusion` must outlive the cache. Throws Error for an unknown backend name, or one that
  /// cannot run here (cuda without a driver or a device).
  explicit FusionExecutorCache(const Fusion& fusion, ExecutorOptions options = {});
  ~FusionExecutorCache();
  FusionExecutorCache(const FusionExecutorCache&) = delete;
  FusionExecutorCache& operator=(const FusionExecutorCache&) = delete;

  /// Runs one step. Every argument is checked (types, shapes, symbolic extents, overlaps of
  /// written inputs) and every kernel compiled before the first write: a failure leaves the
  /// caller's buffers untouched. copy_ destinations are updated in place. `outputs`, when
  /// given, are where the plain outputs go (one dense tensor per output, of its dtype and run
  /// time shape; on the CUDA backend device memory avoids any copy); otherwise widefuse
  /// allocates them in host memory and returns them. `stream`: the CUstream this run queues
  /// its work on (CheckedRun::stream); nullopt: the backend's default.
  RunResult run(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<TensorRef> outputs = {},
                std::optional<void*> stream = std::nullopt);

  /// Checks, compiles and binds `arguments` once for repeated launches (see PreparedRun).
  /// The caller keeps every tensor at its address, shape and strides while the handle is
  /// used; the checks of run() are not repeated. `stream`: where the first launch will go
  /// (loading a specialization is refused while it captures); each launch names its own.
  /// `outputs`: where every launch puts the plain outputs (checked as run() checks them);
  /// empty: each launch allocates them in host memory and returns them.
  std::unique_ptr<PreparedRun> prepare(llvm::ArrayRef<Argument> arguments,
                                       std::optional<void*> stream = std::nullopt,
                                       llvm::ArrayRef<TensorRef> outputs = {});

  /// The backend runs use; for `auto`, null until the first run or prepare decides it.
  const Backend* backend() const;
  /// The backend's name: `auto` until it is decided.
  llvm::StringRef backendName() const;
  /// The compiled kernels of the last run's specialization, every phase's (null before the
  /// first run, and for a backend that compiles none).
  std::shared_ptr<const CompiledFusion> lastCompiled() const;
  /// Number of specializations compiled so far.
  size_t numSpecializations() const;

private:
  friend class PreparedRun;
  /// The specialization of checked arguments and their shapes: found, or made (specialize,
  /// lower, build) on first use. Decides `auto` on the first call.
  std::shared_ptr<CompiledSpecialization> specializationFor(llvm::ArrayRef<Argument> arguments,
                                                            const RuntimeShapes& shapes,
                                                            std::optional<void*> stream);
  /// Selects `backend` (called with mutex_ held, once).
  void select(const Backend& backend);
  /// What the arguments decide about the kernels: dense inputs, 64-bit index flags.
  Specialization specialize(llvm::ArrayRef<Argument> arguments, const RuntimeShapes& shapes);
  /// Memory for the kept results of a step of `specialization` with `shapes` (none for a
  /// backend that lowers nothing): the executor's on that device, reallocated where a shape
  /// changed, and shared with the prepared runs that use it. `stream`: the step's.
  std::shared_ptr<const std::vector<KeptTensor>> keep(const CompiledSpecialization& specialization,
                                                      const RuntimeShapes& shapes,
                                                      std::optional<void*> stream);
  /// compileFusion for the backend's device `device`, and the backend's compile() of its
  /// kernels.
  std::shared_ptr<const CompiledFusion> lower(const Specialization& specialization, int device);

  const Fusion& fusion_;
  ExecutorOptions options_;
  mutable std::mutex mutex_;
  /// Null while `auto` is undecided.
  const Backend* backend_ = nullptr;
  /// What kernels are compiled for, per device of the backend (Backend::targetDevice).
  std::map<int, DeviceDescription> devices_;
  /// The fusion's segmentation, computed once: it depends on the mode only, and every
  /// specialization's plans point into it.
  std::shared_ptr<const SegmentedFusion> segmented_;
  /// Keyed by device, then the specialization's flags.
  std::map<std::pair<int, std::vector<bool>>, std::shared_ptr<CompiledSpecialization>>
      specializations_;
  std::shared_ptr<const CompiledFusion> last_;
  /// The last accepted arguments without plain outputs, their specialization and shapes: the
  /// steady state skips every check for them.
  Fingerprint lastFingerprint_;
  std::shared_ptr<CompiledSpecialization> lastSpecialization_;
  std::shared_ptr<const RuntimeShapes> lastShapes_;
  /// The kept results' memory per device (keep()), replaced as a whole when a shape changes
  /// (a captured graph may hold the old); steps that use it take turns (stepMutex_).
  std::map<int, std::shared_ptr<const std::vector<KeptTensor>>> kept_;
  std::mutex stepMutex_;
};

} // namespace widefuse
