#include "runtime/cuda/cuda_backend.h"

#include "ir/error.h"
#include "ir/fusion.h"
#include "runtime/binding_cache.h"
#include "runtime/cuda/cuda_launcher.h"
#include "runtime/cuda/device_staging.h"
#include "runtime/cuda/fusion_cubins.h"

#include <algorithm>
#include <mutex>

namespace widefuse {
namespace {

/// Device `ordinal`, after checking that `stream` does not capture: loading a specialization
/// allocates device memory and loads modules, which a capture forbids.
const CudaDevice& deviceOutsideCapture(const Fusion& fusion, int ordinal, void* stream) {
  const CudaDevice& device = CudaDevice::get(ordinal);
  if (device.isCapturing(stream))
    fail("fusion '{}' runs for the first time with these arguments' specialization under CUDA "
         "graph capture: loading its kernels allocates device memory, which a capture forbids; "
         "run one step before capturing (torch's recipe warms up on a side stream)",
         fusion.name());
  return device;
}

/// A specialization's modules loaded on the device, with their tables and tickets.
class CudaFusion final : public LoadedFusion {
public:
  /// `stream`: that of the step that loads it (refused while it captures).
  CudaFusion(const Fusion& fusion, std::shared_ptr<const CompiledFusion> compiled,
             const CudaOptions& options, PhaseBoundary boundary, int ordinal, void* stream)
      : fusion_(fusion), device_(deviceOutsideCapture(fusion, ordinal, stream)),
        defaultStream_(options.stream), synchronizeEach_(options.synchronizeEachLaunch),
        boundary_(std::move(boundary)), kernels_(device_, *compiled), cache_(fusion, compiled) {}

  RunResult run(const CheckedRun& step) override {
    // Everything below goes to the step's stream: staging, uploads, tickets, kernels.
    void* stream = step.stream.value_or(defaultStream_);
    DeviceStaging staging(device_, fusion_, stream);
    // Tensors known to be in device memory (the same arguments as a run that found them
    // there) are not asked about again.
    bool knownResident = false;
    if (step.checked) {
      std::lock_guard<std::mutex> lock(residentMutex_);
      knownResident = resident_ == step.checked;
    }
    std::vector<Argument> inputs =
        knownResident ? std::vector<Argument>(step.arguments.begin(), step.arguments.end())
                      : staging.stageInputs(step.arguments);
    // Outputs: the caller's device tensors as they are; anything in host memory (the
    // caller's or ones widefuse allocates) is written on the device and copied back after.
    RunResult result;
    std::vector<TensorRef> hostOutputTensors = hostOutputs(fusion_, step, result);
    std::vector<TensorRef> outputs = staging.stageOutputs(hostOutputTensors);
    bool resident = !staging.stagedInputs();
    if (resident && step.checked) {
      std::lock_guard<std::mutex> lock(residentMutex_);
      resident_ = step.checked;
    }
    // Staged inputs have this run's addresses: their bindings are never reused.
    const Fingerprint unknown;
    CheckedRun onDevice{inputs,  step.shapes, resident ? step.checked : unknown,
                        outputs, step.kept,   stream};
    auto launch = [&](BoundStep& bound, bool rebound) {
      // A prepared step that patches these bindings later reads the same kept memory.
      lastKept_ = step.keptOwner;
      launchAll(bound, rebound, stream, step.keptOwner);
    };
    try {
      // Runs share the device tables and tickets, so they take turns.
      cache_.bindAndRun(onDevice, outputs, true, BoundRunner(launch));
    } catch (...) {
      std::lock_guard<std::mutex> lock(residentMutex_);
      resident_ = nullptr;
      throw;
    }
    staging.copyBack(step.arguments, hostOutputTensors);
    return result;
  }

  bool runChanged(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<uint8_t> changed,
                  const Fingerprint& before, const std::shared_ptr<std::vector<int64_t>>& after,
                  std::optional<void*> stepStream) override {
    void* stream = stepStream.value_or(defaultStream_);
    {
      std::lock_guard<std::mutex> lock(residentMutex_);
      if (!before || resident_ != before)
        return false; // not all known to be in device memory: run() stages what must be
    }
    if (!changedTensorsResident(arguments, changed))
      return false;
    // The bindings were patched: device tables must be uploaded again.
    auto launch = [&](BoundStep& bound, bool) {
      launchAll(bound, /*rebound=*/true, stream, lastKept_);
    };
    bool ran = false;
    try {
      ran = cache_.runChanged(arguments, changed, before, after, BoundRunner(launch));
    } catch (...) {
      std::lock_guard<std::mutex> lock(residentMutex_);
      resident_ = nullptr;
      throw;
    }
    if (ran) {
      std::lock_guard<std::mutex> lock(residentMutex_);
      resident_ = after;
    }
    return ran;
  }

private:
  /// Launches every kernel of `bound` on `stream`, with the phase boundary between phases;
  /// `kept` owns the kept results the bindings point at.
  void launchAll(BoundStep& bound, bool rebound, void* stream,
                 const std::shared_ptr<const void>& kept) {
    const CompiledFusion& compiled = cache_.compiled();
    auto endPhaseOf = [&](unsigned phase) {
      endPhase(boundary_, *compiled.segmented, bound, phase, stream);
    };
    kernels_.launch(compiled, bound.launches, rebound, stream, synchronizeEach_, endPhaseOf, kept);
  }

  /// True when every tensor flagged in `changed` (by value id) is in this device's memory:
  /// only they are asked about (one pointer query each), the others were found there before.
  bool changedTensorsResident(llvm::ArrayRef<Argument> arguments,
                              llvm::ArrayRef<uint8_t> changed) const {
    for (size_t i = 0; i < arguments.size(); ++i) {
      const auto* tensor = std::get_if<TensorRef>(&arguments[i]);
      if (tensor && changed[fusion_.inputs()[i]->id()] && tensor->data && tensor->numel() > 0 &&
          device_.deviceOrdinalOf(tensor->data) != device_.ordinal())
        return false;
    }
    return true;
  }

  const Fusion& fusion_;
  /// Where every launch, table, ticket and workspace of this specialization is.
  const CudaDevice& device_;
  /// CudaOptions::stream: where a step that names no stream goes (CheckedRun::stream).
  void* defaultStream_;
  /// CudaOptions::synchronizeEachLaunch.
  bool synchronizeEach_;
  PhaseBoundary boundary_;
  CudaKernels kernels_;
  BindingCache cache_;
  /// The fingerprint whose tensors were all found in device memory, so that the steady state
  /// asks the driver about no pointer.
  std::mutex residentMutex_;
  Fingerprint resident_;
  /// The kept memory of the last bound step (what patched bindings point at); launches take
  /// turns under the binding cache's lock.
  std::shared_ptr<const void> lastKept_;
};

class CudaBackend final : public Backend {
public:
  llvm::StringRef name() const override { return "cuda"; }
  Lowering lowering() const override { return Lowering::Kernels; }
  void compile(CompiledFusion& compiled, const ExecutorOptions& options) const override {
    compileCubins(compiled, CubinCache::global(), {options.cuda.fmad, *options.dumps});
  }
  void checkAvailable() const override { CudaDevice::get(); }
  bool available() const override { return CudaDevice::available(); }
  bool holdsArguments(llvm::ArrayRef<Argument> arguments) const override {
    if (!CudaDevice::available())
      return false;
    const CudaDevice& device = CudaDevice::get();
    for (const Argument& argument : arguments)
      if (const auto* tensor = std::get_if<TensorRef>(&argument))
        if (tensor->data && device.deviceOrdinalOf(tensor->data))
          return true;
    return false;
  }
  int deviceOf(const Fusion& fusion, llvm::ArrayRef<Argument> arguments,
               const ExecutorOptions& options) const override {
    // Any device answers for any pointer: the driver knows every allocation of the process.
    const CudaDevice& asked = CudaDevice::get();
    std::optional<std::pair<size_t, int>> first; // (input, ordinal)
    for (size_t i = 0; i < arguments.size(); ++i) {
      const auto* tensor = std::get_if<TensorRef>(&arguments[i]);
      if (!tensor || !tensor->data || tensor->numel() == 0)
        continue;
      std::optional<int> ordinal = asked.deviceOrdinalOf(tensor->data);
      if (!ordinal)
        continue;
      if (!first)
        first.emplace(i, *ordinal);
      else if (*ordinal != first->second)
        fail("fusion '{}': input '{}' is in the memory of CUDA device {} but input '{}' is in "
             "that of device {}; a run uses one device: move them to one device first",
             fusion.name(), fusion.inputs()[i]->name(), *ordinal,
             fusion.inputs()[first->first]->name(), first->second);
    }
    if (first)
      return first->second;
    CudaDevice::get(options.cuda.device); // names the ordinal when it is out of range
    return options.cuda.device;
  }
  DeviceDescription targetDevice(const std::optional<std::string>& arch,
                                 int ordinal) const override {
    const CudaDevice& device = CudaDevice::get(ordinal);
    DeviceDescription target = arch ? deviceForArch(*arch) : device.description();
    // Tables move to device memory on drivers before 12.1.
    target.maxParameterBytes = device.maxParameterBytes();
    return target;
  }
  KeptTensor allocate(DataType dtype, llvm::ArrayRef<int64_t> shape, const Placement& where,
                      const ExecutorOptions& options) const override {
    const CudaDevice& device = CudaDevice::get(where.device);
    if (device.isCapturing(where.stream.value_or(options.cuda.stream)))
      fail("a run needs new device memory ({} of shape {}, for a result its phases share) "
           "under CUDA graph capture, which forbids allocating; run one step with these "
           "shapes before capturing",
           shortName(dtype).str(), formatExtents(shape));
    size_t bytes = size_t(numElements(shape)) * byteSize(dtype);
    auto buffer = std::make_shared<DeviceBuffer>(device, std::max<size_t>(bytes, 1));
    TensorRef ref;
    ref.dtype = dtype;
    ref.shape.assign(shape.begin(), shape.end());
    ref.strides = contiguousStrides(shape);
    ref.data = buffer->pointer();
    return {std::move(ref), std::move(buffer)};
  }
  std::unique_ptr<LoadedFusion> load(const Fusion& fusion,
                                     std::shared_ptr<const CompiledFusion> compiled,
                                     const ExecutorOptions& options,
                                     const Placement& where) const override {
    return std::make_unique<CudaFusion>(fusion, std::move(compiled), options.cuda,
                                        options.phaseBoundary, where.device,
                                        where.stream.value_or(options.cuda.stream));
  }
};

} // namespace

const Backend& cudaBackend() {
  static const CudaBackend backend;
  return backend;
}

} // namespace widefuse
