#include "runtime/fusion_executor.h"

#include "ir/error.h"
#include "ir/reduction.h"
#include "ir/runtime_shapes.h"
#include "runtime/backend_registry.h"

#include "segmenter/segment.h"

#include <fmt/format.h>

namespace widefuse {
namespace {

/// The specialization key: one dense flag per input, then one 64-bit-index flag per component
/// of each phase.
std::vector<bool> specializationKey(const Specialization& specialization) {
  std::vector<bool> key(specialization.denseInputs.begin(), specialization.denseInputs.end());
  for (const std::vector<bool>& phase : specialization.needsInt64Index)
    key.insert(key.end(), phase.begin(), phase.end());
  return key;
}

/// Every tensor a kernel writes spans its component's iteration domain. Ops check their
/// operands' shapes, but a subgraph joined only through 0-d values (a step counter read by two
/// parameters) may bind different symbolic extents: refused before anything runs. (Values
/// computed before a broadcast legitimately have other shapes: only written ones count.)
void checkIterationDomains(const Fusion& fusion, const SegmentedPhase& segmented,
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
    // A block reduction's result is written over its operand's elements, one per block.
    auto checkWrite = [&](const Value* written, const Value* destination) {
      check(isBlockReductionResult(*written) ? written->definition()->operand(0) : destination);
    };
    for (const Alias& alias : component.aliases)
      checkWrite(alias.source, alias.destination);
    for (const Value* output : component.outputs)
      checkWrite(output, output);
  }
}

} // namespace

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

FusionExecutorCache::FusionExecutorCache(const Fusion& fusion, ExecutorOptions options)
    : fusion_(fusion), options_(std::move(options)) {
  if (!options_.dumps)
    options_.dumps = dumpOptionsFromEnvironment();
  // A named backend is checked now; `auto` waits for the arguments.
  if (const Backend* backend = findBackend(options_.backend))
    select(*backend);
}

FusionExecutorCache::~FusionExecutorCache() = default;

void FusionExecutorCache::select(const Backend& backend) {
  backend.checkAvailable();
  if (options_.phaseBoundary && backend.lowering() == Lowering::None)
    fail("fusion '{}': the {} backend evaluates a fusion whole and cannot run an operation "
         "between its phases (ExecutorOptions::phaseBoundary); use a backend that runs kernels",
         fusion_.name(), backend.name().str());
  backend_ = &backend;
}

const Backend* FusionExecutorCache::backend() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return backend_;
}

llvm::StringRef FusionExecutorCache::backendName() const {
  const Backend* selected = backend();
  return selected ? selected->name() : "auto";
}

std::shared_ptr<const CompiledFusion> FusionExecutorCache::lastCompiled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

size_t FusionExecutorCache::numSpecializations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return specializations_.size();
}

Specialization FusionExecutorCache::specialize(llvm::ArrayRef<Argument> arguments,
                                               const RuntimeShapes& shapes) {
  Specialization specialization;
  for (const Argument& argument : arguments) {
    const TensorRef* tensor = std::get_if<TensorRef>(&argument);
    specialization.denseInputs.push_back(!tensor || tensor->isContiguous());
  }
  if (backend_->lowering() == Lowering::None) // no kernels: nothing else to decide
    return specialization;
  std::vector<const TensorRef*> tensorOfInput(fusion_.numValues(), nullptr);
  for (size_t i = 0; i < arguments.size(); ++i)
    tensorOfInput[fusion_.inputs()[i]->id()] = std::get_if<TensorRef>(&arguments[i]);
  if (!segmented_) {
    segmented_ = std::make_shared<const SegmentedFusion>(
        segment(fusion_, {options_.mode, options_.components.get()}));
  }
  for (const SegmentedPhase& phase : segmented_->phases) {
    checkIterationDomains(fusion_, phase, shapes);
    std::vector<bool>& needs = specialization.needsInt64Index.emplace_back();
    for (const Component& component : phase.components) {
      int64_t largest = component.domainValue ? numElements(shapes.of(component.domainValue)) : 1;
      for (const Value* input : component.inputs)
        if (const TensorRef* tensor = tensorOfInput[input->id()])
          largest = std::max(largest, tensor->span());
      needs.push_back(largest >= kMaxInt32IndexElements);
    }
  }
  return specialization;
}

std::shared_ptr<const CompiledFusion>
FusionExecutorCache::lower(const Specialization& specialization, int device) {
  if (backend_->lowering() == Lowering::None)
    return nullptr;
  auto target = devices_.find(device);
  if (target == devices_.end())
    target = devices_.emplace(device, backend_->targetDevice(options_.arch, device)).first;
  FusionCompileOptions options;
  options.mode = options_.mode;
  options.device = target->second;
  options.schedule = options_.schedule;
  options.dumps = *options_.dumps;
  CompiledFusion compiled = compileFusion(fusion_, options, &specialization, segmented_);
  backend_->compile(compiled, options_);
  return std::make_shared<const CompiledFusion>(std::move(compiled));
}

std::shared_ptr<CompiledSpecialization>
FusionExecutorCache::specializationFor(llvm::ArrayRef<Argument> arguments,
                                       const RuntimeShapes& shapes, std::optional<void*> stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  // auto: the backend where the arguments live, decided by the first of them.
  if (!backend_)
    select(backendForArguments(arguments));
  // specialize: what the arguments decide about the kernels, the key of what follows.
  Specialization specialization = specialize(arguments, shapes);
  // place: the device the arguments live on (two devices are refused here).
  int device = backend_->deviceOf(fusion_, arguments, options_);
  auto key = std::make_pair(device, specializationKey(specialization));
  auto found = specializations_.find(key);
  if (found != specializations_.end()) {
    last_ = found->second->compiled;
    return found->second;
  }
  auto entry = std::make_shared<CompiledSpecialization>();
  entry->device = device;
  // lower: segments, plans, sources, cubins, as far as the backend needs.
  entry->compiled = lower(specialization, device);
  // build: the backend makes the lowered kernels runnable (loads modules, host objects).
  entry->loaded = backend_->load(fusion_, entry->compiled, options_, Placement{device, stream});
  last_ = entry->compiled;
  specializations_.emplace(std::move(key), entry);
  return entry;
}

std::shared_ptr<const std::vector<KeptTensor>>
FusionExecutorCache::keep(const CompiledSpecialization& specialization, const RuntimeShapes& shapes,
                          std::optional<void*> stream) {
  if (!specialization.compiled || specialization.compiled->segmented->kept.empty())
    return nullptr;
  const std::vector<KeptResult>& kept = specialization.compiled->segmented->kept;
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<const std::vector<KeptTensor>>& memory = kept_[specialization.device];
  auto fits = [&](size_t k) {
    const Value& value = *kept[k].value;
    return k < memory->size() && (*memory)[k].holds(value.dtype(), shapes.of(&value));
  };
  bool allFit = memory && memory->size() == kept.size();
  for (size_t k = 0; allFit && k < kept.size(); ++k)
    allFit = fits(k);
  if (allFit)
    return memory;
  auto fresh = std::make_shared<std::vector<KeptTensor>>(kept.size());
  for (size_t k = 0; k < kept.size(); ++k) {
    const Value& value = *kept[k].value;
    (*fresh)[k] = memory && fits(k)
                      ? (*memory)[k]
                      : backend_->allocate(value.dtype(), shapes.of(&value),
                                           Placement{specialization.device, stream}, options_);
  }
  memory = std::move(fresh);
  return memory;
}

namespace {

/// The tensors of kept memory (none for null).
std::vector<TensorRef> refsOf(const std::shared_ptr<const std::vector<KeptTensor>>& kept) {
  std::vector<TensorRef> refs;
  if (kept)
    for (const KeptTensor& tensor : *kept)
      refs.push_back(tensor.ref);
  return refs;
}

} // namespace

RunResult FusionExecutorCache::run(llvm::ArrayRef<Argument> arguments,
                                   llvm::ArrayRef<TensorRef> outputs, std::optional<void*> stream) {
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
    // check: every argument, before anything is compiled or written.
    checkArguments(fusion_, arguments);
    // shapes: the symbolic extents bound, which the caller's outputs must match.
    shapes = std::make_shared<RuntimeShapes>(inferRuntimeShapes(fusion_, arguments));
    if (!outputs.empty())
      checkCallerOutputs(fusion_, outputs, *shapes);
    // specialize, lower, build: once per specialization.
    specialization = specializationFor(arguments, *shapes, stream);
    if (fusion_.outputs().empty()) {
      fingerprint = fingerprintOf(arguments);
      std::lock_guard<std::mutex> lock(mutex_);
      lastFingerprint_ = fingerprint;
      lastSpecialization_ = specialization;
      lastShapes_ = shapes;
    }
  }
  // keep: memory for the results a phase leaves for the next; steps that share it take turns.
  std::unique_lock<std::mutex> keeping(stepMutex_, std::defer_lock);
  std::shared_ptr<const std::vector<KeptTensor>> kept = keep(*specialization, *shapes, stream);
  if (kept)
    keeping.lock();
  std::vector<TensorRef> keptRefs = refsOf(kept);
  // bind, launch: the backend's, reusing the last bindings when nothing changed.
  return specialization->loaded->run(
      CheckedRun{arguments, *shapes, fingerprint, outputs, keptRefs, stream, kept});
}

std::unique_ptr<PreparedRun> FusionExecutorCache::prepare(llvm::ArrayRef<Argument> arguments,
                                                          std::optional<void*> stream,
                                                          llvm::ArrayRef<TensorRef> outputs) {
  checkArguments(fusion_, arguments);
  std::vector<Argument> copied(arguments.begin(), arguments.end());
  auto shapes = std::make_shared<RuntimeShapes>(inferRuntimeShapes(fusion_, arguments));
  if (!outputs.empty())
    checkCallerOutputs(fusion_, outputs, *shapes);
  std::shared_ptr<CompiledSpecialization> specialization =
      specializationFor(arguments, *shapes, stream);
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
  std::shared_ptr<const std::vector<KeptTensor>> kept = keep(*specialization, *shapes, stream);
  // The run holds the specialization through its loaded fusion.
  std::shared_ptr<LoadedFusion> loaded(specialization, specialization->loaded.get());
  return std::unique_ptr<PreparedRun>(new PreparedRun(
      fusion_, stepMutex_, std::move(copied), std::move(loaded), std::move(shapes), fingerprint,
      std::vector<TensorRef>(outputs.begin(), outputs.end()), std::move(kept)));
}

} // namespace widefuse
