#include "runtime/fusion_compiler.h"

#include "ir/printer.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"

#include <fmt/format.h>

#include <chrono>

namespace widefuse {
namespace {

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Compiles `kernel` with its plan's register cap. A spilling kernel is bound by local memory
/// traffic, so while ptxas reports spills the scheduler gives a plan with fewer resident blocks
/// (more registers, the same source), which replaces `plan`. The runtime sizes the grid from
/// the occupancy the final kernel has.
void compileWithoutSpills(KernelPlan& plan, FusionKernel& kernel, CubinCache& cache,
                          CompileOptions options) {
  options.maxRegisters = registerCap(plan);
  CacheResult compiled = cache.compile(kernel.source, plan.name, options);
  kernel.milliseconds = compiled.milliseconds;
  while (compiled.kernel->stats.spillBytes() > 0) {
    std::optional<KernelPlan> next =
        planAfterSpill(plan, unsigned(compiled.kernel->stats.spillBytes()));
    if (!next)
      break;
    plan = std::move(*next);
    options.maxRegisters = registerCap(plan);
    compiled = cache.compile(kernel.source, plan.name, options);
    kernel.milliseconds += compiled.milliseconds;
  }
  kernel.compiled = compiled.kernel;
  kernel.cache = compiled.outcome;
}

} // namespace

CompiledFusion compileFusion(const Fusion& fusion, const FusionCompileOptions& options,
                             CubinCache& cache, const Specialization* specialization,
                             std::shared_ptr<const SegmentedFusion> segmented) {
  auto start = std::chrono::steady_clock::now();
  const DumpOptions& dumps = options.dumps;
  if (dumps.fusion)
    writeDump(dumps, fusion.name() + ".wf", printFusion(fusion));

  CompiledFusion result;
  result.segmented = segmented
                         ? std::move(segmented)
                         : std::make_shared<const SegmentedFusion>(segment(fusion, {options.mode}));
  if (dumps.segments)
    writeDump(dumps, fusion.name() + ".segments.txt", formatSegmentedFusion(*result.segmented));

  Specialization declared = declaredSpecialization(*result.segmented);
  result.scheduled = schedule(*result.segmented, specialization ? *specialization : declared,
                              options.device, options.schedule);
  result.kernels.resize(result.scheduled.plans.size());
  for (const KernelLaunch& launch : result.scheduled.launches)
    ++result.kernels[launch.plan].launches;
  CompileOptions compileOptions{options.device.arch, options.fmad};
  for (size_t i = 0; i < result.scheduled.plans.size(); ++i) {
    FusionKernel& kernel = result.kernels[i];
    KernelPlan& plan = result.scheduled.plans[i];
    kernel.plan = &plan;
    kernel.source = emitCuda(plan);
    // Written before compiling, so a kernel NVRTC rejects can still be read.
    if (dumps.cuda)
      writeDump(dumps, plan.name + ".cu", kernel.source);
    if (dumps.plan)
      writeDump(dumps, plan.name + ".plan.txt", formatKernelPlan(plan));
    if (options.emitOnly)
      continue;
    unsigned blocks = plan.minBlocksPerMultiprocessor;
    compileWithoutSpills(plan, kernel, cache, compileOptions);
    // A spilling kernel was compiled again with fewer blocks: the plan changed.
    if (dumps.plan && plan.minBlocksPerMultiprocessor != blocks)
      writeDump(dumps, plan.name + ".plan.txt", formatKernelPlan(plan));
    if (dumps.ptx)
      writeDump(dumps, plan.name + ".ptx", kernel.compiled->ptx);
  }
  result.milliseconds = millisecondsSince(start);
  return result;
}

} // namespace widefuse
