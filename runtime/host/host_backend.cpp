#include "runtime/host/host_backend.h"

#include "runtime/binding_cache.h"
#include "runtime/host/host_compiler.h"
#include "runtime/host/host_launcher.h"

namespace widefuse {
namespace {

/// A specialization's kernels loaded from shared objects, one per plan.
class HostFusion final : public LoadedFusion {
public:
  HostFusion(const Fusion& fusion, std::shared_ptr<const CompiledFusion> compiled,
             const HostOptions& options, PhaseBoundary boundary)
      : fusion_(fusion), options_(options), boundary_(std::move(boundary)),
        cache_(fusion, compiled) {
    for (const FusionKernel& kernel : compiled->kernels)
      kernels_.push_back(HostKernelCache::global().compile(kernel.source, kernel.plan->name));
  }

  RunResult run(const CheckedRun& step) override {
    RunResult result;
    std::vector<TensorRef> outputs = hostOutputs(fusion_, step, result);
    // Host runs proceed in parallel, binding privately when the cache is busy.
    auto launch = [this](BoundStep& bound, bool) { runGrids(bound); };
    cache_.bindAndRun(step, outputs, false, BoundRunner(launch));
    return result;
  }

  bool runChanged(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<uint8_t> changed,
                  const Fingerprint& before, const std::shared_ptr<std::vector<int64_t>>& after,
                  std::optional<void*>) override {
    auto launch = [this](BoundStep& bound, bool) { runGrids(bound); };
    return cache_.runChanged(arguments, changed, before, after, launch);
  }

private:
  /// Runs every bound launch's grid on CPU threads, and the phase boundary between phases.
  void runGrids(const BoundStep& bound) const {
    const CompiledFusion& compiled = cache_.compiled();
    const std::vector<KernelLaunch>& launches = compiled.scheduled.launches;
    unsigned threads = hostThreadCount(options_.threads);
    for (size_t i = 0; i < launches.size(); ++i) {
      if (i > 0 && launches[i].phase != launches[i - 1].phase)
        endPhase(boundary_, *compiled.segmented, bound, launches[i - 1].phase, nullptr);
      unsigned planIndex = launches[i].plan;
      const KernelPlan& plan = compiled.scheduled.plans[planIndex];
      const HostKernel& kernel = *kernels_[planIndex];
      const LaunchBinding& binding = bound.launches[i];
      if (options_.execution == HostExecution::Fast) {
        FastLaunchShape shape = fastLaunchShape(binding.numChunks, binding.numElements, threads,
                                                options_.elementsPerWorker);
        runHostGridFast(kernel, binding.parameters, shape.grid, options_.blockOrder, shape.workers);
      } else {
        runHostGrid(kernel, binding.parameters, gridBlocks(binding, plan.maxGridBlocks),
                    plan.threadsPerBlock, options_.blockOrder, threads);
      }
    }
  }

  const Fusion& fusion_;
  HostOptions options_;
  PhaseBoundary boundary_;
  std::vector<std::shared_ptr<const HostKernel>> kernels_;
  BindingCache cache_;
};

class HostBackend final : public Backend {
public:
  llvm::StringRef name() const override { return "host"; }
  // The host compiler builds the sources itself: NVRTC is not needed.
  Lowering lowering() const override { return Lowering::Kernels; }
  void warmUp() const override { HostKernelCache::global().preparePrelude(); }
  std::unique_ptr<LoadedFusion> load(const Fusion& fusion,
                                     std::shared_ptr<const CompiledFusion> compiled,
                                     const ExecutorOptions& options,
                                     std::optional<void*>) const override {
    return std::make_unique<HostFusion>(fusion, std::move(compiled), options.host,
                                        options.phaseBoundary);
  }
};

} // namespace

const Backend& hostBackend() {
  static const HostBackend backend;
  return backend;
}

} // namespace widefuse
