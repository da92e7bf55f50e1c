#pragma once
/// Backend: where a fusion runs, as an object. A backend says what it needs from lowering,
/// which device the kernels target, and builds each compiled specialization into a
/// LoadedFusion that runs its steps. FusionExecutorCache does everything before (checks,
/// shapes, specialization, lowering) the same way for every backend; backend_registry.cpp
/// lists them.

#include "ir/arguments.h"
#include "ir/host_tensor.h"
#include "ir/runtime_shapes.h"
#include "runtime/argument_fingerprint.h"
#include "runtime/executor_options.h"
#include "scheduler/device_description.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace widefuse {

struct CompiledFusion;

/// How far a fusion is lowered for a backend.
enum class Lowering {
  None,    ///< not at all: the backend interprets the fusion (the reference evaluator)
  Kernels, ///< plans and CUDA sources (compileFusion), then the backend's own compile()
};

/// One run of a specialization: arguments that passed every check, their shapes, where its
/// outputs and kept results go, and the stream its device work goes to.
struct CheckedRun {
  llvm::ArrayRef<Argument> arguments;
  const RuntimeShapes& shapes;
  /// The fingerprint the arguments were found equal to (null when unknown): what cached
  /// bindings are matched against first.
  const Fingerprint& checked;
  /// Where the plain outputs go (checked: dense, of their dtype and shape); empty: the
  /// backend allocates them in host memory and returns them.
  llvm::ArrayRef<TensorRef> outputs;
  /// Memory for each kept result (SegmentedFusion::kept), in the backend's memory; one that is
  /// also an output is written in that output instead.
  llvm::ArrayRef<TensorRef> kept;
  /// The stream everything this step queues goes to (a CUstream: uploads, tickets, kernels):
  /// the one given to run() or launch(); nullopt: the backend's default (CudaOptions::stream).
  /// Per step, not per executor, so that a step warmed up on one stream can be captured on
  /// another (torch.cuda.graph captures on its own). Backends without a device ignore it.
  std::optional<void*> stream;
  /// What owns the memory of `kept` (null when nothing is kept): a CUDA graph that captures
  /// the step holds it, so the memory outlives the executor while the graph can replay.
  std::shared_ptr<const void> keptOwner = nullptr;
};

/// Where a specialization's steps run: one of the backend's devices, and the stream a step
/// queues its device work on.
struct Placement {
  /// The device's ordinal among the backend's (0 for a backend with one device).
  int device = 0;
  /// As CheckedRun::stream: nullopt is the backend's default (CudaOptions::stream).
  std::optional<void*> stream;
};

/// One compiled specialization, built for its backend: what runs the steps. Thread-safe.
class LoadedFusion {
public:
  virtual ~LoadedFusion();
  /// Runs one step (nothing is left half written on failure before the first kernel runs).
  virtual RunResult run(const CheckedRun& step) = 0;
  /// A PreparedRun's step after the inputs flagged in `changed` (by value id) moved or took
  /// new scalars: when the backend's cached bindings are still those of `before`, rewrites
  /// just those sites, makes `after` (filled here from `arguments`) theirs, runs and returns
  /// true. Otherwise does nothing and returns false (the caller then runs a plain step).
  /// `stream`: as CheckedRun::stream.
  virtual bool runChanged(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<uint8_t> changed,
                          const Fingerprint& before,
                          const std::shared_ptr<std::vector<int64_t>>& after,
                          std::optional<void*> stream);
};

/// A dense row-major tensor in a backend's own memory (host memory, the GPU's on cuda) that
/// the runtime keeps between launches: the results one phase leaves for the next. Its
/// contents are undefined until a kernel writes them.
struct KeptTensor {
  TensorRef ref;
  /// Frees the memory when the last copy goes.
  std::shared_ptr<void> owner;

  /// True when the memory is of `dtype` and `shape` (a default KeptTensor holds none).
  bool holds(DataType dtype, llvm::ArrayRef<int64_t> shape) const;
};

/// Where fusions run. Stateless (one object per backend, for the process's lifetime);
/// everything specific to a fusion lives in the LoadedFusion it builds.
class Backend {
public:
  virtual ~Backend();
  /// The name options and the command line select it by (`host`, `cuda`, ...).
  virtual llvm::StringRef name() const = 0;
  /// What compileFusion must produce for load().
  virtual Lowering lowering() const = 0;
  /// Throws Error naming the fix when the backend cannot run in this process (no driver, no
  /// device); called once, when an executor selects it.
  virtual void checkAvailable() const {}
  /// Whether the backend can run in this process (checkAvailable() would not throw). Never
  /// throws.
  virtual bool available() const { return true; }
  /// Starts, in the background, what the first load will need (the host backend's
  /// precompiled prelude), so that a caller about to trace a fusion overlaps it; returns at
  /// once.
  virtual void warmUp() const {}
  /// Whether the arguments live in this backend's memory, so that `auto` picks it (cuda:
  /// a tensor in device memory). Never throws.
  virtual bool holdsArguments(llvm::ArrayRef<Argument> arguments) const;
  /// The device a run of checked `arguments` of `fusion` uses: the one whose memory holds
  /// them (cuda), or `options`' default when none is in device memory; 0 for a backend with
  /// one device. Throws Error naming two inputs in the memory of different devices.
  virtual int deviceOf(const Fusion& fusion, llvm::ArrayRef<Argument> arguments,
                       const ExecutorOptions& options) const;
  /// The device kernels are scheduled and compiled for: `arch`'s when given, else that of
  /// the backend's device `device` (the GPU's, for cuda; sm_90 otherwise).
  virtual DeviceDescription targetDevice(const std::optional<std::string>& arch, int device) const;
  /// Memory for a tensor the runtime keeps between launches, where this backend's kernels
  /// read and write it without staging (host memory by default; memory of `where.device` on
  /// cuda, so that a step of phases on device tensors copies nothing and never waits).
  /// Allocates: throws Error, before allocating, while `where`'s stream captures.
  virtual KeptTensor allocate(DataType dtype, llvm::ArrayRef<int64_t> shape, const Placement& where,
                              const ExecutorOptions& options) const;
  /// Completes the lowering of `compiled` (compileFusion's plans and sources) with what this
  /// backend builds before load(): NVRTC's cubins on cuda (which may replace a spilling
  /// kernel's plan); nothing by default.
  virtual void compile(CompiledFusion& compiled, const ExecutorOptions& options) const;
  /// Builds `compiled` (null when lowering() is None) of `fusion` into what runs its steps
  /// on `where.device`. `where.stream`: that of the step that needs it (cuda refuses to load
  /// while it captures: loading allocates).
  virtual std::unique_ptr<LoadedFusion> load(const Fusion& fusion,
                                             std::shared_ptr<const CompiledFusion> compiled,
                                             const ExecutorOptions& options,
                                             const Placement& where) const = 0;
};

} // namespace widefuse
