#pragma once
/// The compile half of the pipeline: fusion -> segments -> kernel plans -> CUDA text ->
/// cubins, with a dump after each stage. The FusionExecutorCache runs it once per input
/// signature; `widefuse compile` runs it once.

#include "codegen/cuda_emitter.h"
#include "runtime/cubin_cache.h"
#include "runtime/dump_options.h"
#include "scheduler/schedule.h"

#include <memory>
#include <string>
#include <vector>

namespace widefuse {

/// How compileFusion segments, schedules and compiles.
struct FusionCompileOptions {
  SegmentationMode mode = SegmentationMode::Auto;
  /// The target device (arch and multiprocessor count).
  DeviceDescription device = defaultDevice();
  /// Let NVRTC contract a*b+c into fma.
  bool fmad = true;
  /// The scheduler's tuning knobs.
  ScheduleOptions schedule;
  /// Stop after codegen: plans and sources, no NVRTC.
  bool emitOnly = false;
  /// What to dump after each stage.
  DumpOptions dumps;
};

/// One distinct kernel of a compiled fusion.
struct FusionKernel {
  /// Its plan (in CompiledFusion::scheduled.plans).
  const KernelPlan* plan = nullptr;
  /// The generated CUDA C++ source.
  std::string source;
  /// The NVRTC result; null when only emitted.
  std::shared_ptr<const CudaBinary> compiled;
  CacheOutcome cache = CacheOutcome::Miss;
  /// Time to get the cubin: NVRTC on a miss, a lookup or file read on a hit.
  double milliseconds = 0;
  /// How many launches per run use this kernel (per-component mode: one per member).
  unsigned launches = 0;
};

/// Everything compileFusion produced; owns the segmentation the plans point into.
struct CompiledFusion {
  std::shared_ptr<const SegmentedFusion> segmented;
  ScheduledFusion scheduled;
  /// One per plan, in plan order.
  std::vector<FusionKernel> kernels;
  /// Wall time of the whole pipeline.
  double milliseconds = 0;
  /// Number of kernel launches per run.
  size_t numLaunches() const { return scheduled.launches.size(); }
};

/// Runs the pipeline for `fusion` (which must outlive the result) with the declared input
/// signature, or with `specialization` when given. `segmented`: the fusion's segmentation in
/// `options.mode` when the caller has it already (an executor segments once for all its
/// specializations). Throws Error for an unsupported fusion, arch, a missing NVRTC or a failed
/// compilation.
CompiledFusion compileFusion(const Fusion& fusion, const FusionCompileOptions& options,
                             CubinCache& cache, const Specialization* specialization = nullptr,
                             std::shared_ptr<const SegmentedFusion> segmented = nullptr);

} // namespace widefuse
