#pragma once
/// What a FusionExecutorCache is asked to do (ExecutorOptions) and what one run returns
/// (RunResult): the words every backend shares, with each backend's own options beside.

#include "ir/host_tensor.h"
#include "runtime/cuda/cuda_options.h"
#include "runtime/dump_options.h"
#include "runtime/host/host_options.h"
#include "scheduler/schedule.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace widefuse {

struct Component;

/// How a FusionExecutorCache compiles and runs.
struct ExecutorOptions {
  SegmentationMode mode = SegmentationMode::Auto;
  /// The backend's name (backendNames() lists them); `auto` follows the arguments: cuda when
  /// a tensor argument is in device memory, host otherwise (see resolveBackend).
  std::string backend = "auto";
  /// Let NVRTC contract a*b+c into fma (device only; the host never contracts).
  bool fmad = true;
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
  /// pass over every value and expression. Null: found at the first run.
  std::shared_ptr<const std::vector<Component>> components;
};

/// What one run returns.
struct RunResult {
  /// The fusion's plain outputs, in declaration order, when widefuse allocated them (empty
  /// for backend none, and when the caller supplied the outputs).
  std::vector<HostTensor> outputs;
};

} // namespace widefuse
