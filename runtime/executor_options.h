#pragma once
/// What a FusionExecutorCache is asked to do (ExecutorOptions) and what one run returns
/// (RunResult): the words every backend shares, with each backend's own options beside.

#include "ir/host_tensor.h"
#include "runtime/cuda/cuda_options.h"
#include "runtime/dump_options.h"
#include "runtime/host/host_options.h"
#include "scheduler/schedule.h"

#include <llvm/ADT/ArrayRef.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace widefuse {

struct FusionComponents;
class Value;

/// What a phase boundary receives: the kept results phase `phase` computed
/// (SegmentedFusion::kept order), each its reduction's value and its memory, in the backend's
/// memory (the GPU's on cuda).
struct PhaseResults {
  unsigned phase = 0;
  /// The reduction results (Expr::op says which reduction, Value::name its name).
  llvm::ArrayRef<const Value*> values;
  /// Their memory, by position in `values`.
  llvm::ArrayRef<TensorRef> memory;
  /// The step's stream (CheckedRun::stream; null on the host): device work goes there, host
  /// work is done before returning.
  void* stream = nullptr;
};

/// An operation the caller runs between two phases of a step (docs/runtime.md, phases): it
/// may rewrite the kept results in place, as an all-reduce across processes does.
using PhaseBoundary = std::function<void(const PhaseResults& results)>;

/// How a FusionExecutorCache compiles and runs.
struct ExecutorOptions {
  SegmentationMode mode = SegmentationMode::Auto;
  /// The backend's name (backendNames() lists them); `auto` follows the arguments: cuda when
  /// a tensor argument is in device memory, host otherwise (backendForArguments).
  std::string backend = "auto";
  /// The scheduler's tuning knobs (benchmarks compare settings; the defaults are measured).
  ScheduleOptions schedule;
  /// The target when there is no device to ask (default sm_90).
  std::optional<std::string> arch;
  /// Dumps after each stage (default: from WIDEFUSE_DUMP / WIDEFUSE_DUMP_DIR).
  std::optional<DumpOptions> dumps;
  /// The host backend's options.
  HostOptions host;
  /// The CUDA backend's options.
  CudaOptions cuda;
  /// findComponents() of the very fusion the executor runs, when its caller already has them
  /// (the Python FusionDefinition finds them when its definition ends, to refuse what no
  /// kernel can run): segmentation then starts from them instead of finding them again, a
  /// walk over every value and expression. Null: found at the first run.
  std::shared_ptr<const FusionComponents> components;
  /// Run between the phases of every step, when set. The reference backend, which evaluates
  /// a fusion whole, refuses it.
  PhaseBoundary phaseBoundary;
};

/// What one run returns.
struct RunResult {
  /// The fusion's plain outputs, in declaration order, when widefuse allocated them (empty
  /// for backend none, and when the caller supplied the outputs).
  std::vector<HostTensor> outputs;
};

} // namespace widefuse
