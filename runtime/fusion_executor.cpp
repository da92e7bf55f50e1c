#include "runtime/fusion_executor.h"

#include "ir/error.h"
#include "ir/runtime_shapes.h"
#include "runtime/cuda_launcher.h"
#include "runtime/device_staging.h"

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
  for (Backend backend : kAllBackends)
    if (backendName(backend) == name)
      return backend;
  fail("unknown backend '{}': use auto, cuda, host, reference or none", name.str());
}

/// One compiled specialization and the bindings of its last run.
struct CompiledSpecialization {
  std::shared_ptr<const CompiledFusion> compiled;
  /// Host backend: one loaded kernel per plan.
  std::vector<std::shared_ptr<const HostKernel>> hostKernels;
  /// CUDA backend: modules, device tables and tickets.
  std::unique_ptr<CudaLaunches> cuda;
  /// CUDA backend: the fingerprint whose tensors were all found in device memory, so that
  /// the steady state asks the driver about no pointer (guarded by bindingMutex).
  Fingerprint deviceResident;
  /// Guards the cached bindings below; a run that finds it taken binds privately.
  std::mutex bindingMutex;
  /// What the cached bindings were built from: pointers, shapes, strides, scalar bits. Null
  /// while they are not reusable (none yet, or their launch failed).
  Fingerprint fingerprint;
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

/// The specialization key: one dense flag per input, then one 64-bit-index flag per component.
std::vector<bool> specializationKey(const Specialization& specialization) {
  std::vector<bool> key(specialization.denseInputs.begin(), specialization.denseInputs.end());
  key.insert(key.end(), specialization.needsInt64Index.begin(),
             specialization.needsInt64Index.end());
  return key;
}

/// Every tensor a kernel writes spans its component's iteration domain. Ops check their
/// operands' shapes, but a subgraph joined only through 0-d values (a step counter read by two
/// parameters) may bind different symbolic extents: refused before anything runs. (Values
/// computed before a broadcast legitimately have other shapes: only written ones count.)
void checkIterationDomains(const Fusion& fusion, const SegmentedFusion& segmented,
                           const RuntimeShapes& shapes) {
  for (const Component& component : segmented.components) {
    const Value* domain = component.domainValue;
    if (!domain || !domain->isTensor() || domain->rank() == 0)
      continue;
    auto check = [&](const Value* value) {
      if (!value->isTensor() || value->rank() == 0 || shapes.of(value) == shapes.of(domain))
        return;
      fail("fusion '{}': at run time '{}' has shape {} but '{}', written by the same kernel, "
           "has shape {}; they are joined through 0-d values, and a kernel has one iteration "
           "domain (give them one extent, or split the fusion)",
           fusion.name(), value->name(), formatExtents(shapes.of(value)), domain->name(),
           formatExtents(shapes.of(domain)));
    };
    for (const Alias& alias : component.aliases)
      check(alias.destination);
    for (const Value* output : component.outputs)
      check(output);
  }
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
  inputIndex_.assign(fusion_.numValues(), -1);
  for (size_t i = 0; i < fusion_.inputs().size(); ++i)
    inputIndex_[fusion_.inputs()[i]->id()] = int(i);
}

FusionExecutorCache::~FusionExecutorCache() = default;

std::shared_ptr<const CompiledFusion> FusionExecutorCache::lastCompiled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

size_t FusionExecutorCache::numSpecializations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return specializations_.size();
}

std::shared_ptr<CompiledSpecialization>
FusionExecutorCache::specializationFor(llvm::ArrayRef<Argument> arguments,
                                       const RuntimeShapes& shapes) {
  // The specialization: which inputs are dense, which components need 64-bit indices.
  Specialization specialization;
  for (const Argument& argument : arguments) {
    const TensorRef* tensor = std::get_if<TensorRef>(&argument);
    specialization.denseInputs.push_back(!tensor || tensor->isContiguous());
  }
  std::vector<const TensorRef*> tensorOfInput(fusion_.numValues(), nullptr);
  for (size_t i = 0; i < arguments.size(); ++i)
    tensorOfInput[fusion_.inputs()[i]->id()] = std::get_if<TensorRef>(&arguments[i]);
  std::lock_guard<std::mutex> lock(mutex_);
  // The components are those of the fusion, whatever the mode: compute them once.
  if (!components_)
    components_ = std::make_unique<SegmentedFusion>(segment(fusion_, {options_.mode}));
  checkIterationDomains(fusion_, *components_, shapes);
  for (const Component& component : components_->components) {
    int64_t largest = component.domainValue ? numElements(shapes.of(component.domainValue)) : 1;
    for (const Value* input : component.inputs)
      if (const TensorRef* tensor = tensorOfInput[input->id()])
        largest = std::max(largest, tensor->span());
    specialization.needsInt64Index.push_back(largest >= kMaxInt32IndexElements);
  }
  std::vector<bool> key = specializationKey(specialization);
  auto found = specializations_.find(key);
  if (found != specializations_.end()) {
    last_ = found->second->compiled;
    return found->second;
  }
  auto entry = std::make_shared<CompiledSpecialization>();
  FusionCompileOptions options;
  options.mode = options_.mode;
  options.device = device_;
  options.fmad = options_.fmad;
  options.schedule = options_.schedule;
  options.dumps = *options_.dumps;
  // The host backend needs only the sources; NVRTC runs for the device and for `none`.
  options.emitOnly = backend_ == Backend::Host;
  auto compiled = std::make_shared<CompiledFusion>(
      compileFusion(fusion_, options, KernelCache::global(), &specialization));
  if (backend_ == Backend::Host)
    for (const FusionKernel& kernel : compiled->kernels)
      entry->hostKernels.push_back(
          HostKernelCache::global().compile(kernel.source, kernel.plan->name));
  if (backend_ == Backend::Cuda)
    entry->cuda = std::make_unique<CudaLaunches>(CudaDevice::get(), *compiled);
  entry->compiled = compiled;
  last_ = compiled;
  specializations_.emplace(std::move(key), entry);
  return entry;
}

void FusionExecutorCache::bind(const CompiledFusion& compiled, llvm::ArrayRef<Argument> arguments,
                               const RuntimeShapes& shapes, llvm::ArrayRef<TensorRef> outputs,
                               std::vector<LaunchBinding>& bindings,
                               std::vector<std::vector<uint32_t>>& tickets) {
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
    if (isExtentValue(*value))
      return ScalarArgument(shapes.extentOf(value));
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
}

void FusionExecutorCache::runBound(CompiledSpecialization& specialization,
                                   std::vector<LaunchBinding>& bindings, bool rebound) {
  const CompiledFusion& compiled = *specialization.compiled;
  if (specialization.cuda) {
    specialization.cuda->launch(compiled, bindings, rebound, options_.stream,
                                options_.synchronizeEachLaunch);
    return;
  }
  for (size_t i = 0; i < compiled.scheduled.launches.size(); ++i) {
    unsigned planIndex = compiled.scheduled.launches[i].plan;
    const KernelPlan& plan = compiled.scheduled.plans[planIndex];
    const HostKernel& kernel = *specialization.hostKernels[planIndex];
    unsigned threads = hostThreadCount(options_.hostThreads);
    if (options_.hostExecution == HostExecution::Fast) {
      FastLaunchShape shape = fastLaunchShape(bindings[i].numChunks, bindings[i].numElements,
                                              threads, options_.hostElementsPerWorker);
      runHostGridFast(kernel, bindings[i].parameters, shape.grid, options_.blockOrder,
                      shape.workers);
    } else {
      runHostGrid(kernel, bindings[i].parameters, gridBlocks(bindings[i], plan.maxGridBlocks),
                  plan.threadsPerBlock, options_.blockOrder, threads);
    }
  }
}

void FusionExecutorCache::bindAndLaunch(CompiledSpecialization& specialization,
                                        llvm::ArrayRef<Argument> arguments,
                                        const RuntimeShapes& shapes,
                                        llvm::ArrayRef<TensorRef> outputs, bool launch,
                                        const Fingerprint& checked) {
  // Host runs proceed in parallel, binding privately when the cache is busy; device runs
  // share the device tables and tickets, so they take turns.
  std::unique_lock<std::mutex> cached(specialization.bindingMutex, std::defer_lock);
  if (specialization.cuda)
    cached.lock();
  else
    cached.try_lock();
  std::vector<LaunchBinding> privateBindings;
  std::vector<std::vector<uint32_t>> privateTickets;
  auto& bindings = cached.owns_lock() ? specialization.bindings : privateBindings;
  auto& tickets = cached.owns_lock() ? specialization.tickets : privateTickets;
  Fingerprint& reusable = specialization.fingerprint;
  // Fresh outputs have fresh addresses: only fusions without plain outputs reuse bindings.
  bool reuse = cached.owns_lock() && outputs.empty() && !bindings.empty() && reusable &&
               (reusable == checked || hasFingerprint(arguments, *reusable));
  // Equal contents: adopt the caller's fingerprint, so that its next call (a PreparedRun's, say)
  // matches by pointer instead of comparing every argument again.
  if (reuse && checked)
    reusable = checked;
  if (!reuse) {
    bind(*specialization.compiled, arguments, shapes, outputs, bindings, tickets);
    // Not reusable until a launch with them has succeeded: a failure half way (an upload, a
    // launch) must not leave bindings that a retry or a PreparedRun would trust.
    if (cached.owns_lock())
      reusable = nullptr;
  }
  try {
    if (launch)
      runBound(specialization, bindings, !reuse);
  } catch (...) {
    if (cached.owns_lock()) {
      reusable = nullptr;
      specialization.bindings.clear();
      specialization.deviceResident = nullptr;
    }
    throw;
  }
  // What the bindings were built from, recorded once they have launched (fusions with plain
  // outputs bind their fresh outputs every time and are never reused).
  if (!reuse && cached.owns_lock() && outputs.empty())
    reusable = checked ? checked : fingerprintOf(arguments);
}

bool FusionExecutorCache::launchPatched(CompiledSpecialization& specialization,
                                        llvm::ArrayRef<Argument> arguments,
                                        llvm::ArrayRef<uint8_t> changed, const Fingerprint& before,
                                        const std::shared_ptr<std::vector<int64_t>>& after) {
  if (backend_ != Backend::Host || !before)
    return false;
  std::unique_lock<std::mutex> cached(specialization.bindingMutex, std::try_to_lock);
  if (!cached.owns_lock() || specialization.fingerprint != before ||
      specialization.bindings.empty())
    return false;
  auto argumentOf = [&](unsigned value) -> const Argument& {
    return arguments[size_t(inputIndex_[value])];
  };
  for (LaunchBinding& binding : specialization.bindings)
    patchArguments(binding, changed, argumentOf);
  // `after` may be `before` (the run's own fingerprint since its last change): both the words
  // and the bindings change here, under the lock that every reader of them holds.
  fingerprintInto(arguments, *after);
  specialization.fingerprint = after;
  try {
    runBound(specialization, specialization.bindings, false);
  } catch (...) {
    specialization.fingerprint = nullptr;
    specialization.bindings.clear();
    throw;
  }
  return true;
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
  // shapes and specialization. Fusions with plain outputs allocate them and always bind anew.
  std::shared_ptr<CompiledSpecialization> specialization;
  std::shared_ptr<const RuntimeShapes> shapes;
  Fingerprint fingerprint;
  if (fusion_.outputs().empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lastSpecialization_ && hasFingerprint(arguments, *lastFingerprint_)) {
      specialization = lastSpecialization_;
      shapes = lastShapes_;
      fingerprint = lastFingerprint_;
    }
  }
  if (!specialization) {
    checkArguments(fusion_, arguments);
    shapes = std::make_shared<RuntimeShapes>(inferRuntimeShapes(fusion_, arguments));
    if (!outputs.empty())
      checkCallerOutputs(fusion_, outputs, *shapes);
    specialization = specializationFor(arguments, *shapes);
    if (fusion_.outputs().empty()) {
      fingerprint = fingerprintOf(arguments);
      std::lock_guard<std::mutex> lock(mutex_);
      lastFingerprint_ = fingerprint;
      lastSpecialization_ = specialization;
      lastShapes_ = shapes;
    }
  }
  return launch(*specialization, arguments, *shapes, fingerprint, outputs);
}

std::unique_ptr<PreparedRun> FusionExecutorCache::prepare(llvm::ArrayRef<Argument> arguments) {
  checkArguments(fusion_, arguments);
  std::vector<Argument> copied(arguments.begin(), arguments.end());
  if (backend_ == Backend::Reference) // the evaluator has nothing to prepare
    return std::unique_ptr<PreparedRun>(
        new PreparedRun(*this, std::move(copied), nullptr, nullptr, nullptr));
  auto shapes = std::make_shared<RuntimeShapes>(inferRuntimeShapes(fusion_, arguments));
  std::shared_ptr<CompiledSpecialization> specialization = specializationFor(arguments, *shapes);
  Fingerprint fingerprint = fingerprintOf(arguments);
  // One fingerprint object for equal arguments: what the cache keys on it (reusable bindings,
  // tensors known to be in device memory) then holds for run() and the PreparedRun alike,
  // instead of being re-established, argument by argument, whenever they alternate.
  if (fusion_.outputs().empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lastFingerprint_ && *lastFingerprint_ == *fingerprint) {
      fingerprint = lastFingerprint_;
    } else {
      lastFingerprint_ = fingerprint;
      lastSpecialization_ = specialization;
      lastShapes_ = shapes;
    }
  }
  return std::unique_ptr<PreparedRun>(new PreparedRun(
      *this, std::move(copied), std::move(specialization), std::move(shapes), fingerprint));
}

RunResult FusionExecutorCache::launch(CompiledSpecialization& specialization,
                                      llvm::ArrayRef<Argument> arguments,
                                      const RuntimeShapes& shapes, const Fingerprint& checked,
                                      llvm::ArrayRef<TensorRef> callerOutputs) {
  RunResult result;
  if (backend_ == Backend::Cuda)
    return launchOnDevice(specialization, arguments, shapes, checked, callerOutputs);
  std::vector<TensorRef> outputs(callerOutputs.begin(), callerOutputs.end());
  if (callerOutputs.empty()) { // backend none binds them too, for a faithful dispatch
    for (const Value* output : fusion_.outputs())
      result.outputs.emplace_back(output->dtype(), shapes.of(output));
    // Only now: growing the vector may have moved the tensors.
    for (HostTensor& output : result.outputs)
      outputs.push_back(output.ref());
  }
  bindAndLaunch(specialization, arguments, shapes, outputs, backend_ != Backend::None, checked);
  if (backend_ == Backend::None)
    result.outputs.clear(); // nothing ran: no values to return
  return result;
}

RunResult FusionExecutorCache::launchOnDevice(CompiledSpecialization& specialization,
                                              llvm::ArrayRef<Argument> arguments,
                                              const RuntimeShapes& shapes,
                                              const Fingerprint& checked,
                                              llvm::ArrayRef<TensorRef> callerOutputs) {
  DeviceStaging staging(CudaDevice::get(), fusion_, options_.stream);
  // Tensors known to be in device memory (the same arguments as a run that found them there)
  // are not asked about again.
  bool knownResident = false;
  if (checked) {
    std::lock_guard<std::mutex> lock(specialization.bindingMutex);
    knownResident = specialization.deviceResident == checked;
  }
  std::vector<Argument> inputs = knownResident
                                     ? std::vector<Argument>(arguments.begin(), arguments.end())
                                     : staging.stageInputs(arguments);
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
  std::vector<TensorRef> outputs = staging.stageOutputs(hostOutputs);
  bool resident = !staging.stagedInputs();
  if (resident && checked) {
    std::lock_guard<std::mutex> lock(specialization.bindingMutex);
    specialization.deviceResident = checked;
  }
  bindAndLaunch(specialization, inputs, shapes, outputs, true, resident ? checked : nullptr);
  staging.copyBack(arguments, hostOutputs);
  return result;
}

} // namespace widefuse
