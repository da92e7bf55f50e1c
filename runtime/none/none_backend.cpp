#include "runtime/none/none_backend.h"

#include "runtime/binding_cache.h"
#include "runtime/cuda/fusion_cubins.h"

namespace widefuse {
namespace {

/// Bindings without a device: a step binds (or reuses) them and stops before the launch.
class BoundFusion final : public LoadedFusion {
public:
  BoundFusion(const Fusion& fusion, std::shared_ptr<const CompiledFusion> compiled)
      : fusion_(fusion), cache_(fusion, std::move(compiled)) {}

  RunResult run(const CheckedRun& step) override {
    RunResult result;
    // Outputs are bound too, for a faithful dispatch, but hold no values to return.
    std::vector<TensorRef> outputs = hostOutputs(fusion_, step, result);
    cache_.bindAndRun(step, outputs, false, std::nullopt);
    return RunResult{};
  }

private:
  const Fusion& fusion_;
  BindingCache cache_;
};

class NoneBackend final : public Backend {
public:
  llvm::StringRef name() const override { return "none"; }
  Lowering lowering() const override { return Lowering::Kernels; }
  // The CUDA backend's cubins, without a device: what a step costs up to the launch.
  void compile(CompiledFusion& compiled, const ExecutorOptions& options) const override {
    compileCubins(compiled, CubinCache::global(), {options.cuda.fmad, *options.dumps});
  }
  std::unique_ptr<LoadedFusion> load(const Fusion& fusion,
                                     std::shared_ptr<const CompiledFusion> compiled,
                                     const ExecutorOptions&, const Placement&) const override {
    return std::make_unique<BoundFusion>(fusion, std::move(compiled));
  }
};

} // namespace

const Backend& noneBackend() {
  static const NoneBackend backend;
  return backend;
}

} // namespace widefuse
