#include "runtime/cuda/fusion_cubins.h"

#include <chrono>

namespace widefuse {
namespace {

/// Compiles `kernel` with `plan`'s register cap, replacing the plan while the kernel spills.
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

void compileCubins(CompiledFusion& compiled, CubinCache& cache, const CubinOptions& options) {
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < compiled.scheduled.plans.size(); ++i) {
    FusionKernel& kernel = compiled.kernels[i];
    KernelPlan& plan = compiled.scheduled.plans[i];
    unsigned blocks = plan.minBlocksPerMultiprocessor;
    compileWithoutSpills(plan, kernel, cache, CompileOptions{plan.device.arch, options.fmad});
    // A spilling kernel was compiled again with fewer blocks: the plan changed.
    if (options.dumps.plan && plan.minBlocksPerMultiprocessor != blocks)
      writeDump(options.dumps, plan.name + ".plan.txt", formatKernelPlan(plan));
    if (options.dumps.ptx)
      writeDump(options.dumps, plan.name + ".ptx", kernel.compiled->ptx);
  }
  compiled.milliseconds +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

CompiledFusion compileFusionToCubins(const Fusion& fusion, const FusionCompileOptions& options,
                                     CubinCache& cache, bool fmad,
                                     const Specialization* specialization) {
  CompiledFusion compiled = compileFusion(fusion, options, specialization);
  compileCubins(compiled, cache, {fmad, options.dumps});
  return compiled;
}

} // namespace widefuse
