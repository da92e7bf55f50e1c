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

} // namespace

CompiledFusion compileFusion(const Fusion& fusion, const FusionCompileOptions& options,
                             const Specialization* specialization,
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
  for (size_t i = 0; i < result.scheduled.plans.size(); ++i) {
    FusionKernel& kernel = result.kernels[i];
    const KernelPlan& plan = result.scheduled.plans[i];
    kernel.plan = &plan;
    kernel.source = emitCuda(plan);
    if (dumps.cuda)
      writeDump(dumps, plan.name + ".cu", kernel.source);
    if (dumps.plan)
      writeDump(dumps, plan.name + ".plan.txt", formatKernelPlan(plan));
  }
  result.milliseconds = millisecondsSince(start);
  return result;
}

} // namespace widefuse
