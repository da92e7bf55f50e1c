#pragma once
/// The shared half of lowering: fusion -> segments -> kernel plans -> CUDA text, with a dump
/// after each stage. What a backend builds from the text (NVRTC's cubins, the host compiler's
/// shared objects) is the backend's (Backend::compile, Backend::load). The FusionExecutorCache
/// runs it once per input signature; `widefuse compile` runs it once.

#include "codegen/cuda_emitter.h"
#include "runtime/dump_options.h"
#include "runtime/kernel_store.h"
#include "scheduler/schedule.h"

#include <memory>
#include <string>
#include <vector>

namespace widefuse {

/// How compileFusion segments and schedules.
struct FusionCompileOptions {
  SegmentationMode mode = SegmentationMode::Auto;
  /// The target device (arch and multiprocessor count).
  DeviceDescription device = defaultDevice();
  /// The scheduler's tuning knobs.
  ScheduleOptions schedule;
  /// What to dump after each stage.
  DumpOptions dumps;
};

/// One distinct kernel of a compiled fusion.
struct FusionKernel {
  /// Its plan (in CompiledFusion::scheduled.plans).
  const KernelPlan* plan = nullptr;
  /// The generated CUDA C++ source.
  std::string source;
  /// The image a backend compiled before loading (NVRTC's cubin); null when none did.
  std::shared_ptr<const KernelImage> compiled;
  CacheOutcome cache = CacheOutcome::Miss;
  /// Time to get the image: the compiler on a miss, a lookup or file read on a hit.
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
  /// Wall time of the whole pipeline (and of a backend's compile step, which adds its own).
  double milliseconds = 0;
  /// Number of kernel launches per run.
  size_t numLaunches() const { return scheduled.launches.size(); }
};

/// Runs the pipeline for `fusion` (which must outlive the result) with the declared input
/// signature, or with `specialization` when given. `segmented`: the fusion's segmentation in
/// `options.mode` when the caller has it already (an executor segments once for all its
/// specializations). Throws Error for an unsupported fusion.
CompiledFusion compileFusion(const Fusion& fusion, const FusionCompileOptions& options,
                             const Specialization* specialization = nullptr,
                             std::shared_ptr<const SegmentedFusion> segmented = nullptr);

} // namespace widefuse
