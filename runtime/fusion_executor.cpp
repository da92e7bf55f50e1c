#include "runtime/fusion_executor.h"

#include "ir/error.h"
#include "ir/runtime_shapes.h"
#include "runtime/cuda_launcher.h"
#include "runtime/launch_binding.h"

#include "segmenter/segment.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

namespace widefuse {

llvm::StringRef backendName(Backend backend) {
  switch (backend) {
  case Backend::Auto:
    return "auto";
  case Backend::Cuda:
    return "cuda";
  case Backend::Host:
    return "host";
  case Backend::Reference:
    return "reference";
  case Backend::None:
    return "none";
  }
  WF_UNREACHABLE("unknown backend");
}

bool synchronizeEachLaunchFromEnvironment() {
  const char* value = std::getenv("WIDEFUSE_CUDA_SYNC");
  return value && *value && std::strcmp(value, "0") != 0;
}

Backend parseBackend(llvm::StringRef name) {
  for (Backend backend :
       {Backend::Auto, Backend::Cuda, Backend::Host, Backend::Reference, Backend::None})
    if (backendName(backend) == name)
      return backend;
  fail("unknown backend '{}': use auto, cuda, host, reference or none", name.str());
}

/// One compiled input signature and the bindings of its last run.
struct FusionExecutorCache::Entry {
  std::shared_ptr<const CompiledFusion> compiled;
  /// Host backend: one loaded kernel per plan.
  std::vector<std::shared_ptr<const HostKernel>> hostKernels;
  /// CUDA backend: modules, device tables and tickets.
  std::unique_ptr<CudaLaunches> cuda;
  /// CUDA backend: the fingerprint whose tensors were all found in device memory, so that
  /// the steady state asks the driver about no pointer (guarded by bindingMutex).
  std::shared_ptr<const std::vector<int64_t>> deviceResident;
  /// Guards the cached bindings below; a run that finds it taken binds privately.
  std::mutex bindingMutex;
  /// What the cached bindings were built from: pointers, shapes, strides, scalar bits.
  std::shared_ptr<const std::vector<int64_t>> fingerprint;
  std::vector<LaunchBinding> bindings;
  std::vector<std::vector<uint32_t>> tickets;
};

namespace {

/// auto: the GPU when a driver and a device are there, else the host backend. cuda without
/// them is an Error naming the host backend (from CudaDevice::get).
Backend resolveBackend(Backend requested) {
  if (requested == Backend::Auto)
    return CudaDevice::available() ? Backend::Cuda : Backend::Host;
  if (requested == Backend::Cuda)
    CudaDevice::get();
  return requested;
}

/// Elements from the first to one past the last addressed element.
int64_t spanOf(const TensorRef& tensor) {
  if (tensor.numel() == 0)
    return 0;
  int64_t span = 1;
  for (size_t d = 0; d < tensor.shape.size(); ++d)
    span += (tensor.shape[d] - 1) * tensor.strides[d];
  return span;
}

/// Copies the elements of `tensor` (and nothing between them) from `source`, a buffer laid
/// out like the tensor's span.
void copyElements(const TensorRef& tensor, const std::byte* source) {
  size_t element = byteSize(tensor.dtype);
  llvm::SmallVector<int64_t, 4> index(tensor.shape.size(), 0);
  auto* target = static_cast<std::byte*>(tensor.data);
  for (int64_t i = 0, count = tensor.numel(); i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * tensor.strides[d];
    std::memcpy(target + offset * int64_t(element), source + offset * int64_t(element), element);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < tensor.shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// True when `data` is in `device`'s memory, false in host memory; Error when it is in
/// another device's memory (a kernel of this device cannot use it).
bool inDeviceMemory(const CudaDevice& device, const void* data, llvm::StringRef role,
                    const Value& value) {
  std::optional<int> ordinal = device.deviceOrdinalOf(data);
  if (ordinal && *ordinal != device.ordinal())
    fail("{} '{}' is in the memory of CUDA device {}, but widefuse runs on device {}: move it "
         "there first",
         role.str(), value.name(), *ordinal, device.ordinal());
  return ordinal.has_value();
}

/// The signature key: one dense flag per input, then one 64-bit-index flag per component.
std::vector<bool> signatureKey(const InputSignature& signature) {
  std::vector<bool> key(signature.denseInputs.begin(), signature.denseInputs.end());
  key.insert(key.end(), signature.needsInt64Index.begin(), signature.needsInt64Index.end());
  return key;
}

/// Everything checkArguments, inferRuntimeShapes and the bindings depend on: per tensor its
/// dtype, rank, pointer, shape and strides; per scalar its kind and bits. Equal fingerprints
/// give equal checks, shapes, signature and bindings. `visit` sees the words in order.
template <typename Visit>
bool forEachFingerprintWord(llvm::ArrayRef<Argument> arguments, Visit visit) {
  for (const Argument& argument : arguments) {
    if (const TensorRef* tensor = std::get_if<TensorRef>(&argument)) {
      if (!visit(int64_t(tensor->dtype) << 8 | int64_t(tensor->shape.size())) ||
          !visit(int64_t(reinterpret_cast<intptr_t>(tensor->data))))
        return false;
      for (int64_t extent : tensor->shape)
        if (!visit(extent))
          return false;
      for (int64_t stride : tensor->strides)
        if (!visit(stride))
          return false;
      continue;
    }
    const ScalarArgument& scalar = std::get<ScalarArgument>(argument);
    int64_t bits = 0;
    std::visit([&](auto value) { std::memcpy(&bits, &value, sizeof value); }, scalar);
    if (!visit(-1 - int64_t(scalar.index())) || !visit(bits))
      return false;
  }
  return true;
}

std::vector<int64_t> fingerprintOf(llvm::ArrayRef<Argument> arguments, size_t expectedSize) {
  std::vector<int64_t> fingerprint;
  fingerprint.reserve(expectedSize);
  forEachFingerprintWord(arguments, [&](int64_t word) {
    fingerprint.push_back(word);
    return true;
  });
  return fingerprint;
}

/// Compares without building the fingerprint: the steady state allocates nothing.
bool hasFingerprint(llvm::ArrayRef<Argument> arguments, const std::vector<int64_t>& fingerprint) {
  size_t position = 0;
  bool same = forEachFingerprintWord(arguments, [&](int64_t word) {
    return position < fingerprint.size() && fingerprint[position++] == word;
  });
  return same && position == fingerprint.size();
}

} // namespace

FusionExecutorCache::FusionExecutorCache(const Fusion& fusion, ExecutorOptions options)
    : fusion_(fusion), options_(std::move(options)) {
  backend_ = resolveBackend(options_.backend);
  if (options_.arch)
    device_ = deviceForArch(*options_.arch);
  else
    device_ = backend_ == Backend::Cuda ? CudaDevice::get().description() : defaultDevice();
  if (backend_ == Backend::Cuda) // tables move to device memory on drivers before 12.1
    device_.maxParameterBytes = CudaDevice::get().maxParameterBytes();
  if (!options_.dumps)
    options_.dumps = dumpOptionsFromEnvironment();
}

FusionExecutorCache::~FusionExecutorCache() = default;

std::shared_ptr<const CompiledFusion> FusionExecutorCache::lastCompiled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

size_t FusionExecutorCache::numSignatures() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

std::shared_ptr<FusionExecutorCache::Entry>
FusionExecutorCache::entryFor(llvm::ArrayRef<Argument> arguments, const RuntimeShapes& shapes) {
  // The signature: which inputs are dense, which components need 64-bit indices.
  InputSignature signature;
  for (const Argument& argument : arguments) {
    const TensorRef* tensor = std::get_if<TensorRef>(&argument);
    signature.denseInputs.push_back(!tensor || tensor->isContiguous());
  }
  std::vector<const TensorRef*> tensorOfInput(fusion_.numValues(), nullptr);
  for (size_t i = 0; i < arguments.size(); ++i)
    tensorOfInput[fusion_.inputs()[i]->id()] = std::get_if<TensorRef>(&arguments[i]);
  std::lock_guard<std::mutex> lock(mutex_);
  // The components are those of the fusion, whatever the mode: compute them once.
  if (!components_)
    components_ = std::make_unique<SegmentedFusion>(segment(fusion_, {options_.mode}));
  for (const Component& component : components_->components) {
    int64_t largest = component.domainValue ? numElements(shapes.of(component.domainValue)) : 1;
    for (const Value* input : component.inputs)
      if (const TensorRef* tensor = tensorOfInput[input->id()])
        largest = std::max(largest, spanOf(*tensor));
    signature.needsInt64Index.push_back(largest >= kMaxInt32IndexElements);
  }
  std::vector<bool> key = signatureKey(signature);
  auto found = entries_.find(key);
  if (found != entries_.end()) {
    last_ = found->second->compiled;
    return found->second;
  }
  auto entry = std::make_shared<Entry>();
  FusionCompileOptions options;
  options.mode = options_.mode;
  options.device = device_;
  options.fmad = options_.fmad;
  options.schedule = options_.schedule;
  options.dumps = *options_.dumps;
  // The host backend needs only the sources; NVRTC runs for the device and for `none`.
  options.emitOnly = backend_ == Backend::Host;
  auto compiled = std::make_shared<CompiledFusion>(
      compileFusion(fusion_, options, KernelCache::global(), &signature));
  if (backend_ == Backend::Host)
    for (const FusionKernel& kernel : compiled->kernels)
      entry->hostKernels.push_back(
          HostKernelCache::global().compile(kernel.source, kernel.plan->name));
  if (backend_ == Backend::Cuda)
    entry->cuda = std::make_unique<CudaLaunches>(CudaDevice::get(), *compiled);
  entry->compiled = compiled;
  last_ = compiled;
  entries_.emplace(std::move(key), entry);
  return entry;
}

void FusionExecutorCache::bindAndLaunch(
    Entry& entry, llvm::ArrayRef<Argument> arguments, const RuntimeShapes& shapes,
    llvm::ArrayRef<TensorRef> outputs, bool launch,
    const std::shared_ptr<const std::vector<int64_t>>& checked) {
  const CompiledFusion& compiled = *entry.compiled;
  // Host runs proceed in parallel, binding privately when the cache is busy; device runs
  // share the device tables and tickets, so they take turns.
  std::unique_lock<std::mutex> cached(entry.bindingMutex, std::defer_lock);
  if (entry.cuda)
    cached.lock();
  else
    cached.try_lock();
  std::vector<LaunchBinding> privateBindings;
  std::vector<std::vector<uint32_t>> privateTickets;
  auto& bindings = cached.owns_lock() ? entry.bindings : privateBindings;
  auto& tickets = cached.owns_lock() ? entry.tickets : privateTickets;
  // Fresh outputs have fresh addresses: only fusions without plain outputs reuse bindings.
  bool reuse = cached.owns_lock() && outputs.empty() && !bindings.empty() && entry.fingerprint &&
               (entry.fingerprint == checked || hasFingerprint(arguments, *entry.fingerprint));
  // Equal contents: adopt the caller's fingerprint, so that its next call (a PreparedRun's, say)
  // matches by pointer instead of comparing every argument again.
  if (reuse && checked)
    entry.fingerprint = checked;
  if (!reuse) {
    std::vector<int> inputIndex(fusion_.numValues(), -1);
    for (size_t i = 0; i < fusion_.inputs().size(); ++i)
      inputIndex[fusion_.inputs()[i]->id()] = int(i);
    std::vector<int> outputIndex(fusion_.numValues(), -1);
    for (size_t i = 0; i < fusion_.outputs().size(); ++i)
      outputIndex[fusion_.outputs()[i]->id()] = int(i);
    auto tensorOf = [&](const Value* value, bool asOutput) -> const TensorRef& {
      if (asOutput)
        return outputs[size_t(outputIndex[value->id()])];
      return std::get<TensorRef>(arguments[size_t(inputIndex[value->id()])]);
    };
    auto scalarOf = [&](const Value* value) {
      return std::get<ScalarArgument>(arguments[size_t(inputIndex[value->id()])]);
    };
    bindings.clear();
    tickets.clear();
    for (const KernelLaunch& launch : compiled.scheduled.launches) {
      const KernelPlan& plan = compiled.scheduled.plans[launch.plan];
      bindings.push_back(bindLaunch(plan, launch, shapes, tensorOf, scalarOf));
      tickets.emplace_back(launch.members.size(), 0u);
      LaunchBinding& binding = bindings.back();
      setTableAddresses(binding, binding.table.empty() ? nullptr : binding.table.data(),
                        tickets.back().data());
    }
    // Not reusable until a launch with them has succeeded: a failure half way (an upload, a
    // launch) must not leave bindings that a retry or a PreparedRun would trust.
    if (cached.owns_lock())
      entry.fingerprint = nullptr;
  }
  // What the bindings were built from, recorded once they have launched (fusions with plain
  // outputs bind their fresh outputs every time and are never reused).
  auto recordFingerprint = [&] {
    if (reuse || !cached.owns_lock() || !outputs.empty())
      return;
    entry.fingerprint =
        checked ? checked
                : std::make_shared<const std::vector<int64_t>>(fingerprintOf(arguments, 0));
  };
  if (!launch) {
    recordFingerprint();
    return;
  }
  try {
    if (entry.cuda) {
      entry.cuda->launch(compiled, bindings, !reuse, options_.stream,
                         options_.synchronizeEachLaunch);
    } else {
      for (size_t i = 0; i < compiled.scheduled.launches.size(); ++i) {
        const KernelPlan& plan = compiled.scheduled.plans[compiled.scheduled.launches[i].plan];
        runHostGrid(*entry.hostKernels[compiled.scheduled.launches[i].plan], bindings[i].parameters,
                    gridBlocks(bindings[i], plan.maxGridBlocks), plan.threadsPerBlock,
                    options_.blockOrder, options_.hostThreads);
      }
    }
  } catch (...) {
    if (cached.owns_lock()) {
      entry.fingerprint = nullptr;
      entry.bindings.clear();
      entry.deviceResident = nullptr;
    }
    throw;
  }
  recordFingerprint();
}

namespace {

/// Caller-supplied outputs: one dense tensor per plain output, of its dtype and shape.
void checkCallerOutputs(const Fusion& fusion, llvm::ArrayRef<TensorRef> outputs,
                        const RuntimeShapes& shapes) {
  if (outputs.size() != fusion.outputs().size())
    fail("fusion '{}' has {} output(s), got {} output tensor(s)", fusion.name(),
         fusion.outputs().size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Value* output = fusion.outputs()[i];
    const TensorRef& tensor = outputs[i];
    const auto& shape = shapes.of(output);
    if (tensor.dtype != output->dtype() || tensor.shape != shape)
      fail("output '{}' is {} of shape {} at run time but the tensor given for it is {} of "
           "shape {}",
           output->name(), shortName(output->dtype()).str(), formatExtents(shape),
           shortName(tensor.dtype).str(), formatExtents(tensor.shape));
    if (tensor.strides.size() != tensor.shape.size() || !tensor.isContiguous())
      fail("output '{}': the tensor given for it must be dense row-major", output->name());
    if (!tensor.data && tensor.numel() > 0)
      fail("output '{}': null data pointer", output->name());
  }
}

} // namespace

RunResult FusionExecutorCache::run(llvm::ArrayRef<Argument> arguments,
                                   llvm::ArrayRef<TensorRef> outputs) {
  RunResult result;
  if (backend_ == Backend::Reference) {
    checkArguments(fusion_, arguments);
    if (!outputs.empty())
      checkCallerOutputs(fusion_, outputs, inferRuntimeShapes(fusion_, arguments));
    result.outputs = evaluate(fusion_, arguments).outputs;
    if (outputs.empty())
      return result;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (result.outputs[i].byteSize() != 0) // empty tensors may have no data pointer
        std::memcpy(outputs[i].data, result.outputs[i].data(), result.outputs[i].byteSize());
    return RunResult{};
  }
  // The steady state: the same arguments as the last accepted run (same pointers, shapes,
  // strides, dtypes and scalars) passed every check then, so they pass now, with the same
  // shapes and signature. Fusions with plain outputs allocate them and always bind anew.
  std::shared_ptr<Entry> entry;
  std::shared_ptr<const RuntimeShapes> shapes;
  std::shared_ptr<const std::vector<int64_t>> fingerprint;
  if (fusion_.outputs().empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lastEntry_ && hasFingerprint(arguments, *lastFingerprint_)) {
      entry = lastEntry_;
      shapes = lastShapes_;
      fingerprint = lastFingerprint_;
    }
  }
  if (!entry) {
    checkArguments(fusion_, arguments);
    shapes = std::make_shared<RuntimeShapes>(inferRuntimeShapes(fusion_, arguments));
    if (!outputs.empty())
      checkCallerOutputs(fusion_, outputs, *shapes);
    entry = entryFor(arguments, *shapes);
    if (fusion_.outputs().empty()) {
      fingerprint = std::make_shared<const std::vector<int64_t>>(fingerprintOf(arguments, 0));
      std::lock_guard<std::mutex> lock(mutex_);
      lastFingerprint_ = fingerprint;
      lastEntry_ = entry;
      lastShapes_ = shapes;
    }
  }
  return launchEntry(*entry, arguments, *shapes, fingerprint, outputs);
}

std::unique_ptr<PreparedRun> FusionExecutorCache::prepare(llvm::ArrayRef<Argument> arguments) {
  checkArguments(fusion_, arguments);
  auto shapes = std::make_shared<RuntimeShapes>(inferRuntimeShapes(fusion_, arguments));
  std::unique_ptr<PreparedRun> prepared(new PreparedRun());
  prepared->executor_ = this;
  prepared->arguments_.assign(arguments.begin(), arguments.end());
  if (backend_ == Backend::Reference)
    return prepared; // the evaluator has nothing to prepare
  prepared->entry_ = entryFor(arguments, *shapes);
  prepared->shapes_ = shapes;
  auto fingerprint = std::make_shared<const std::vector<int64_t>>(fingerprintOf(arguments, 0));
  // One fingerprint object for equal arguments: what the cache keys on it (reusable bindings,
  // tensors known to be in device memory) then holds for run() and the PreparedRun alike,
  // instead of being re-established, argument by argument, whenever they alternate.
  if (fusion_.outputs().empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lastFingerprint_ && *lastFingerprint_ == *fingerprint) {
      fingerprint = lastFingerprint_;
    } else {
      lastFingerprint_ = fingerprint;
      lastEntry_ = std::static_pointer_cast<Entry>(prepared->entry_);
      lastShapes_ = shapes;
    }
  }
  prepared->fingerprint_ = fingerprint;
  return prepared;
}

RunResult PreparedRun::launch() {
  if (!entry_)
    return executor_->run(arguments_);
  auto& entry = *std::static_pointer_cast<FusionExecutorCache::Entry>(entry_);
  return executor_->launchEntry(entry, arguments_, *shapes_, fingerprint_, {});
}

RunResult
FusionExecutorCache::launchEntry(Entry& entry, llvm::ArrayRef<Argument> arguments,
                                 const RuntimeShapes& shapes,
                                 const std::shared_ptr<const std::vector<int64_t>>& checked,
                                 llvm::ArrayRef<TensorRef> callerOutputs) {
  RunResult result;
  if (backend_ == Backend::Cuda)
    return launchOnDevice(entry, arguments, shapes, checked, callerOutputs);
  std::vector<TensorRef> outputs(callerOutputs.begin(), callerOutputs.end());
  if (callerOutputs.empty()) { // backend none binds them too, for a faithful dispatch
    for (const Value* output : fusion_.outputs())
      result.outputs.emplace_back(output->dtype(), shapes.of(output));
    // Only now: growing the vector may have moved the tensors.
    for (HostTensor& output : result.outputs)
      outputs.push_back(output.ref());
  }
  bindAndLaunch(entry, arguments, shapes, outputs, backend_ != Backend::None, checked);
  if (backend_ == Backend::None)
    result.outputs.clear(); // nothing ran: no values to return
  return result;
}

RunResult
FusionExecutorCache::launchOnDevice(Entry& entry, llvm::ArrayRef<Argument> arguments,
                                    const RuntimeShapes& shapes,
                                    const std::shared_ptr<const std::vector<int64_t>>& checked,
                                    llvm::ArrayRef<TensorRef> callerOutputs) {
  const CudaDevice& device = CudaDevice::get();
  // Tensors in host memory are staged through device buffers (and the run synchronises);
  // device tensors are used in place with no host synchronisation.
  std::vector<Argument> staged(arguments.begin(), arguments.end());
  std::vector<std::pair<size_t, DeviceBuffer>> copies;
  bool knownResident = false;
  if (checked) {
    std::lock_guard<std::mutex> lock(entry.bindingMutex);
    knownResident = entry.deviceResident == checked;
  }
  for (size_t i = 0; i < staged.size() && !knownResident; ++i) {
    TensorRef* tensor = std::get_if<TensorRef>(&staged[i]);
    // An empty tensor is never dereferenced: nothing to stage.
    if (!tensor || !tensor->data || tensor->numel() == 0 ||
        inDeviceMemory(device, tensor->data, "input", *fusion_.inputs()[i]))
      continue;
    size_t bytes = size_t(spanOf(*tensor)) * byteSize(tensor->dtype);
    DeviceBuffer buffer(device, bytes);
    // On the launch stream: a synchronous copy from pageable memory returns before the data
    // has arrived, and a non-blocking stream would not wait for it.
    buffer.uploadAsync({static_cast<const std::byte*>(tensor->data), bytes}, options_.stream);
    tensor->data = buffer.pointer();
    copies.emplace_back(i, std::move(buffer));
  }
  // Outputs: the caller's device tensors as they are; anything in host memory (the caller's
  // or ones widefuse allocates) is written on the device and copied back after the run.
  RunResult result;
  std::vector<TensorRef> hostOutputs(callerOutputs.begin(), callerOutputs.end());
  if (callerOutputs.empty()) {
    for (const Value* output : fusion_.outputs())
      result.outputs.emplace_back(output->dtype(), shapes.of(output));
    for (HostTensor& output : result.outputs)
      hostOutputs.push_back(output.ref());
  }
  std::vector<TensorRef> outputs = hostOutputs;
  std::vector<std::pair<size_t, DeviceBuffer>> outputCopies;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].numel() == 0 ||
        inDeviceMemory(device, outputs[i].data, "output", *fusion_.outputs()[i]))
      continue; // an empty output has nothing to write or copy back
    size_t bytes = size_t(outputs[i].numel()) * byteSize(outputs[i].dtype);
    DeviceBuffer buffer(device, bytes);
    outputs[i].data = buffer.pointer();
    outputCopies.emplace_back(i, std::move(buffer));
  }
  if (copies.empty() && checked) {
    std::lock_guard<std::mutex> lock(entry.bindingMutex);
    entry.deviceResident = checked;
  }
  bindAndLaunch(entry, staged, shapes, outputs, true, copies.empty() ? checked : nullptr);
  if (copies.empty() && outputCopies.empty())
    return result;
  device.synchronize(options_.stream);
  for (auto& [index, buffer] : copies) {
    const TensorRef& original = std::get<TensorRef>(arguments[index]);
    if (!fusion_.aliasOf(fusion_.inputs()[index]))
      continue; // only copy_ destinations change
    // Only the tensor's own elements: a strided destination may interleave with another.
    std::vector<std::byte> span(size_t(spanOf(original)) * byteSize(original.dtype));
    buffer.download(span);
    copyElements(original, span.data());
  }
  for (auto& [index, buffer] : outputCopies)
    buffer.download({static_cast<std::byte*>(hostOutputs[index].data),
                     size_t(hostOutputs[index].numel()) * byteSize(hostOutputs[index].dtype)});
  return result;
}

} // namespace widefuse
