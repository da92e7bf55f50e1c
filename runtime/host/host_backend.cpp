#include "runtime/host/host_backend.h"

#include "codegen/body_emitter.h"
#include "ir/arguments.h"
#include "runtime/binding_cache.h"
#include "runtime/host/device_emulator.h"
#include "runtime/host/host_compiler.h"
#include "runtime/host/host_launcher.h"

#include <fmt/format.h>

#include <memory>

namespace widefuse {
namespace {

/// The memory a tensor's elements lie in, as an emulated launch's buffer.
void addTensor(const TensorRef& tensor, std::string name, std::vector<EmulationBuffer>& buffers) {
  if (tensor.data && tensor.numel() > 0)
    buffers.push_back({tensor.data, size_t(tensor.span()) * byteSize(tensor.dtype), name});
}

/// Every buffer of a step: its tensors, kept results, tables, tickets and workspaces (what a
/// kernel of it may touch; the emulator reports an access outside them).
std::vector<EmulationBuffer> stepBuffers(llvm::ArrayRef<Argument> arguments,
                                         llvm::ArrayRef<TensorRef> outputs,
                                         const BoundStep& bound) {
  std::vector<EmulationBuffer> buffers;
  for (size_t i = 0; i < arguments.size(); ++i)
    if (const auto* tensor = std::get_if<TensorRef>(&arguments[i]))
      addTensor(*tensor, fmt::format("input {}", i), buffers);
  for (size_t i = 0; i < outputs.size(); ++i)
    addTensor(outputs[i], fmt::format("output {}", i), buffers);
  for (size_t i = 0; i < bound.kept.size(); ++i)
    addTensor(bound.kept[i], fmt::format("kept result {}", i), buffers);
  for (size_t l = 0; l < bound.launches.size(); ++l) {
    const std::vector<std::byte>& table = bound.launches[l].table;
    buffers.push_back({table.data(), table.size(), fmt::format("launch {}'s member table", l)});
    const std::vector<uint32_t>& tickets = bound.tickets[l];
    buffers.push_back(
        {tickets.data(), tickets.size() * sizeof(uint32_t), fmt::format("launch {}'s tickets", l)});
    // The workspace the kernel was given: from its 16-byte aligned base (the binding's).
    void* base = const_cast<std::byte*>(bound.workspaces[l].data());
    size_t room = bound.workspaces[l].size();
    if (std::align(16, 1, base, room))
      buffers.push_back({base, size_t(bound.launches[l].workspaceBytes),
                         fmt::format("launch {}'s workspace", l)});
  }
  return buffers;
}

/// A specialization's kernels loaded from shared objects, one per plan.
class HostFusion final : public LoadedFusion {
public:
  HostFusion(const Fusion& fusion, std::shared_ptr<const CompiledFusion> compiled,
             const HostOptions& options, PhaseBoundary boundary)
      : fusion_(fusion), options_(options), boundary_(std::move(boundary)),
        cache_(fusion, compiled) {
    for (const FusionKernel& kernel : compiled->kernels) {
      if (options.execution == HostExecution::Fast)
        kernels_.push_back(HostKernelCache::global().compile(kernel.source, kernel.plan->name));
      else
        emulated_.push_back(EmulatedKernel::compile(kernel.source, kernel.plan->name,
                                                    parameterTypeName(*kernel.plan)));
    }
  }

  RunResult run(const CheckedRun& step) override {
    RunResult result;
    std::vector<TensorRef> outputs = hostOutputs(fusion_, step, result);
    // Host runs proceed in parallel, binding privately when the cache is busy.
    auto launch = [&](BoundStep& bound, bool) { runGrids(bound, step.arguments, outputs); };
    cache_.bindAndRun(step, outputs, false, BoundRunner(launch));
    return result;
  }

  bool runChanged(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<uint8_t> changed,
                  const Fingerprint& before, const std::shared_ptr<std::vector<int64_t>>& after,
                  std::optional<void*>) override {
    auto launch = [&](BoundStep& bound, bool) { runGrids(bound, arguments, {}); };
    return cache_.runChanged(arguments, changed, before, after, launch);
  }

private:
  /// Runs every bound launch's grid on CPU threads, and the phase boundary between phases.
  void runGrids(const BoundStep& bound, llvm::ArrayRef<Argument> arguments,
                llvm::ArrayRef<TensorRef> outputs) const {
    const CompiledFusion& compiled = cache_.compiled();
    const std::vector<KernelLaunch>& launches = compiled.scheduled.launches;
    unsigned threads = hostThreadCount(options_.threads);
    TicketLedger tickets; // verify: every ticket is 0 again after the step
    for (size_t i = 0; i < launches.size(); ++i) {
      if (i > 0 && launches[i].phase != launches[i - 1].phase)
        endPhase(boundary_, *compiled.segmented, bound, launches[i - 1].phase, nullptr);
      unsigned planIndex = launches[i].plan;
      const KernelPlan& plan = compiled.scheduled.plans[planIndex];
      const LaunchBinding& binding = bound.launches[i];
      if (options_.execution == HostExecution::Fast) {
        FastLaunchShape shape = fastLaunchShape(binding.numChunks, binding.numElements, threads,
                                                options_.elementsPerWorker);
        runHostGridFast(*kernels_[planIndex], binding.parameters, shape.grid, options_.blockOrder,
                        shape.workers);
      } else {
        EmulationOptions emulation;
        emulation.order = options_.blockOrder;
        emulation.workers = threads;
        emulation.interleavings = options_.interleavings;
        emulation.tickets = &tickets;
        emulateLaunch(*emulated_[planIndex], binding.parameters,
                      gridBlocks(binding, plan.maxGridBlocks), plan.threadsPerBlock,
                      stepBuffers(arguments, outputs, bound), emulation);
      }
    }
    tickets.check();
  }

  const Fusion& fusion_;
  HostOptions options_;
  PhaseBoundary boundary_;
  std::vector<std::shared_ptr<const HostKernel>> kernels_;      // fast execution
  std::vector<std::shared_ptr<const EmulatedKernel>> emulated_; // verify execution
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
                                     const Placement&) const override {
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
