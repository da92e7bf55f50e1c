#pragma once
/// FusionExecutorCache: the one place that strings define -> segment -> schedule -> codegen ->
/// compile -> launch together. Keyed by specialization; the steady state (the same tensors
/// as the last run) skips the checks, the lookup and the rebinding: no recompilation, no table
/// rebuild; a PreparedRun does not even compare the arguments.

#include "ir/runtime_shapes.h"
#include "runtime/argument_fingerprint.h"
#include "runtime/fusion_compiler.h"
#include "runtime/host_launcher.h"
#include "runtime/launch_binding.h"
#include "runtime/prepared_run.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace widefuse {

/// Where a fusion runs.
enum class Backend {
  Auto,      ///< cuda when a device is present, else host
  Cuda,      ///< the GPU, through the CUDA driver
  Host,      ///< the generated kernels compiled by the host compiler, on CPU threads
  Reference, ///< the reference evaluator (no kernels)
  None,      ///< compile the kernels, run nothing
};

/// Every backend, in the order messages list them.
inline constexpr Backend kAllBackends[] = {Backend::Auto, Backend::Cuda, Backend::Host,
                                           Backend::Reference, Backend::None};

/// The command-line name of a backend: auto, cuda, host, reference, none.
llvm::StringRef backendName(Backend backend);
/// Parses a backend name; throws Error listing the valid ones.
Backend parseBackend(llvm::StringRef name);

/// True when WIDEFUSE_CUDA_SYNC is set (and not "0"): the default of
/// ExecutorOptions::synchronizeEachLaunch.
bool synchronizeEachLaunchFromEnvironment();

/// How a FusionExecutorCache compiles and runs.
struct ExecutorOptions {
  SegmentationMode mode = SegmentationMode::Auto;
  Backend backend = Backend::Auto;
  /// Host backend: one vectorized loop per block's member run (fast, the default), or every
  /// CUDA thread emulated (verify). Both give the reference evaluator's values bit for bit.
  HostExecution hostExecution = HostExecution::Fast;
  /// Host backend: the order of blocks (and, verifying, of each block's threads).
  BlockOrder blockOrder;
  /// Host backend: CPU threads running blocks; 0 (the default) is one per core, 1 runs the
  /// blocks one after another in the block order.
  unsigned hostThreads = 0;
  /// Host backend, fast path: the fewest elements that keep one more worker thread busy
  /// (tests lower it to run small fusions on several workers).
  int64_t hostElementsPerWorker = kElementsPerHostWorker;
  /// Let NVRTC contract a*b+c into fma (device only; the host never contracts).
  bool fmad = true;
  /// The scheduler's tuning knobs (benchmarks compare settings; the defaults are measured).
  ScheduleOptions schedule;
  /// The target when there is no device to ask (default sm_90).
  std::optional<std::string> arch;
  /// Dumps after each stage (default: from WIDEFUSE_DUMP / WIDEFUSE_DUMP_DIR).
  std::optional<DumpOptions> dumps;
  /// CUDA backend: the stream (a CUstream) launches go to; null is the default stream.
  void* stream = nullptr;
  /// CUDA backend: wait for each kernel and name the one whose asynchronous fault surfaced
  /// (debugging; slow). Default: the environment variable WIDEFUSE_CUDA_SYNC (set, not "0").
  bool synchronizeEachLaunch = synchronizeEachLaunchFromEnvironment();
};

/// What one run returns.
struct RunResult {
  /// The fusion's plain outputs, in declaration order, when widefuse allocated them (empty
  /// for backend none, and when the caller supplied the outputs).
  std::vector<HostTensor> outputs;
};

/// One compiled specialization of an executor: its kernels and the bindings of its last run.
struct CompiledSpecialization;

/// Compiles a fusion once per specialization (what the arguments decide about the kernels:
/// dense inputs, index widths) and runs it; thread-safe.
class FusionExecutorCache {
public:
  /// `fusion` must outlive the cache.
  explicit FusionExecutorCache(const Fusion& fusion, ExecutorOptions options = {});
  ~FusionExecutorCache();
  FusionExecutorCache(const FusionExecutorCache&) = delete;
  FusionExecutorCache& operator=(const FusionExecutorCache&) = delete;

  /// Runs one step. Every argument is checked (types, shapes, symbolic extents, overlaps of
  /// written inputs) and every kernel compiled before the first write: a failure leaves the
  /// caller's buffers untouched. copy_ destinations are updated in place. `outputs`, when
  /// given, are where the plain outputs go (one dense tensor per output, of its dtype and run
  /// time shape; on the CUDA backend device memory avoids any copy); otherwise widefuse
  /// allocates them in host memory and returns them.
  RunResult run(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<TensorRef> outputs = {});

  /// Checks, compiles and binds `arguments` once for repeated launches (see PreparedRun).
  /// The caller keeps every tensor at its address, shape and strides while the handle is
  /// used; the checks of run() are not repeated.
  std::unique_ptr<PreparedRun> prepare(llvm::ArrayRef<Argument> arguments);

  /// The backend runs use (auto resolved).
  Backend backend() const { return backend_; }
  /// The compiled kernels of the last run's specialization (null before the first run).
  std::shared_ptr<const CompiledFusion> lastCompiled() const;
  /// Number of specializations compiled so far.
  size_t numSpecializations() const;

private:
  friend class PreparedRun;
  std::shared_ptr<CompiledSpecialization> specializationFor(llvm::ArrayRef<Argument> arguments,
                                                            const RuntimeShapes& shapes);
  /// One step of `specialization`. `checked`: the fingerprint the arguments were found equal
  /// to (null when unknown).
  RunResult launch(CompiledSpecialization& specialization, llvm::ArrayRef<Argument> arguments,
                   const RuntimeShapes& shapes, const Fingerprint& checked,
                   llvm::ArrayRef<TensorRef> callerOutputs);
  /// The CUDA backend's step: host tensors staged through device buffers.
  RunResult launchOnDevice(CompiledSpecialization& specialization,
                           llvm::ArrayRef<Argument> arguments, const RuntimeShapes& shapes,
                           const Fingerprint& checked, llvm::ArrayRef<TensorRef> callerOutputs);
  /// Binds every launch (reusing the last bindings when nothing changed) and, unless `launch`
  /// is false (backend none: everything up to the launch call), runs them.
  void bindAndLaunch(CompiledSpecialization& specialization, llvm::ArrayRef<Argument> arguments,
                     const RuntimeShapes& shapes, llvm::ArrayRef<TensorRef> outputs, bool launch,
                     const Fingerprint& checked);
  /// The bindings of every launch of `compiled` for these arguments and outputs.
  void bind(const CompiledFusion& compiled, llvm::ArrayRef<Argument> arguments,
            const RuntimeShapes& shapes, llvm::ArrayRef<TensorRef> outputs,
            std::vector<LaunchBinding>& bindings, std::vector<std::vector<uint32_t>>& tickets);
  /// A PreparedRun's step after some of its arguments moved or changed (`changed`: by value
  /// id): when the host backend's cached bindings are still those of its arguments before the
  /// change (`before`), rewrites just the changed pointers and scalars in them, makes
  /// `after` (the new arguments' fingerprint, written into by this call) theirs, runs them and
  /// returns true. Otherwise (another run bound them since, or the CUDA backend, whose tables
  /// may live on the device) does nothing and returns false.
  bool launchPatched(CompiledSpecialization& specialization, llvm::ArrayRef<Argument> arguments,
                     llvm::ArrayRef<uint8_t> changed, const Fingerprint& before,
                     const std::shared_ptr<std::vector<int64_t>>& after);
  /// Runs the bound launches on the backend.
  void runBound(CompiledSpecialization& specialization, std::vector<LaunchBinding>& bindings,
                bool rebound);

  const Fusion& fusion_;
  ExecutorOptions options_;
  Backend backend_ = Backend::Host;
  DeviceDescription device_;
  mutable std::mutex mutex_;
  /// The position in fusion_.inputs() of each input's value id (-1 for other values).
  std::vector<int> inputIndex_;
  /// The fusion's components (for the 64-bit index flags of a specialization).
  std::unique_ptr<SegmentedFusion> components_;
  std::map<std::vector<bool>, std::shared_ptr<CompiledSpecialization>> specializations_;
  std::shared_ptr<const CompiledFusion> last_;
  /// The last accepted arguments without plain outputs, their specialization and shapes: the
  /// steady state skips every check for them.
  Fingerprint lastFingerprint_;
  std::shared_ptr<CompiledSpecialization> lastSpecialization_;
  std::shared_ptr<const RuntimeShapes> lastShapes_;
};

} // namespace widefuse
