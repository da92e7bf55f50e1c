#include "runtime/fusion_compiler.h"

#include "ir/printer.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"

#include <chrono>

namespace widefuse {
namespace {

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

CompiledFusion compileFusion(const Fusion& fusion, const FusionCompileOptions& options,
                             KernelCache& cache, const InputSignature* signature) {
  auto start = std::chrono::steady_clock::now();
  const DumpOptions& dumps = options.dumps;
  if (dumps.fusion)
    writeDump(dumps, fusion.name() + ".wf", printFusion(fusion));

  CompiledFusion result;
  result.segmented = std::make_unique<SegmentedFusion>(segment(fusion, {options.mode}));
  if (dumps.segments)
    writeDump(dumps, fusion.name() + ".segments.txt", formatSegmentedFusion(*result.segmented));

  InputSignature declared = declaredSignature(*result.segmented);
  result.scheduled = schedule(*result.segmented, signature ? *signature : declared, options.device);
  for (const KernelPlan& plan : result.scheduled.plans)
    if (dumps.launch)
      writeDump(dumps, plan.name + ".plan.txt", formatKernelPlan(plan));

  result.kernels.resize(result.scheduled.plans.size());
  for (const KernelLaunch& launch : result.scheduled.launches)
    ++result.kernels[launch.plan].launches;
  CompileOptions compileOptions{options.device.arch, options.fmad};
  for (size_t i = 0; i < result.scheduled.plans.size(); ++i) {
    FusionKernel& kernel = result.kernels[i];
    kernel.plan = &result.scheduled.plans[i];
    kernel.source = emitCuda(*kernel.plan);
    if (dumps.cuda)
      writeDump(dumps, kernel.plan->name + ".cu", kernel.source);
    if (options.emitOnly)
      continue;
    CacheResult compiled = cache.compile(kernel.source, kernel.plan->name, compileOptions);
    kernel.compiled = compiled.kernel;
    kernel.cache = compiled.outcome;
    kernel.milliseconds = compiled.milliseconds;
    if (dumps.ptx)
      writeDump(dumps, kernel.plan->name + ".ptx", kernel.compiled->ptx);
  }
  result.milliseconds = millisecondsSince(start);
  return result;
}

} // namespace widefuse
