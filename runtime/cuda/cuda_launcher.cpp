#include "runtime/cuda/cuda_launcher.h"

#include "ir/error.h"

#include <algorithm>
#include <optional>

namespace widefuse {
namespace {

/// Per launch: its device table's size in bytes (0 when the table is in the parameters).
std::vector<size_t> deviceTableBytes(const CompiledFusion& compiled) {
  std::vector<size_t> bytes;
  for (const KernelLaunch& launch : compiled.scheduled.launches) {
    const KernelPlan& plan = compiled.scheduled.plans[launch.plan];
    bytes.push_back(plan.tableLocation == TableLocation::DeviceMemory
                        ? std::max<size_t>(1, launch.members.size()) * plan.entryBytes
                        : 0);
  }
  return bytes;
}

const KernelPlan& planOf(const CompiledFusion& compiled, size_t launch) {
  return compiled.scheduled.plans[compiled.scheduled.launches[launch].plan];
}

std::shared_ptr<const std::vector<CudaModule>> loadModules(const CudaDevice& device,
                                                           const CompiledFusion& compiled) {
  auto modules = std::make_shared<std::vector<CudaModule>>();
  for (const FusionKernel& kernel : compiled.kernels) {
    if (kernel.plan->parameterBytes > device.maxParameterBytes())
      fail("kernel '{}' takes a {}-byte parameter block but this driver accepts {} bytes "
           "(CUDA 12.1 or newer accepts 32764): update the driver or use backend=host",
           kernel.plan->name, kernel.plan->parameterBytes, device.maxParameterBytes());
    modules->emplace_back(device, *kernel.compiled);
  }
  return modules;
}

} // namespace

CudaKernels::CudaKernels(const CudaDevice& device, const CompiledFusion& compiled)
    : device_(device), modules_(loadModules(device, compiled)),
      tables_(device, deviceTableBytes(compiled)), lastStepDone_(device) {
  for (size_t k = 0; k < compiled.kernels.size(); ++k) {
    // As many blocks as the compiled kernel keeps resident: its registers decide, not the
    // plan's register cap alone.
    unsigned threads = compiled.kernels[k].plan->threadsPerBlock;
    gridLimits_.push_back((*modules_)[k].residentBlocks(threads) *
                          device.description().multiprocessorCount);
  }
  for (const KernelLaunch& launch : compiled.scheduled.launches) {
    // Zeroed on the first launch's stream, not here: a synchronous memset on the legacy
    // stream is not ordered before a kernel on a non-blocking stream.
    tickets_.push_back(std::make_shared<DeviceBuffer>(
        device, std::max<size_t>(1, launch.members.size()) * sizeof(uint32_t)));
  }
  ticketsZeroed_.assign(tickets_.size(), false);
  workspaces_.resize(tickets_.size());
  workspaceBases_.assign(tickets_.size(), nullptr);
  workspacesZeroed_.assign(tickets_.size(), false);
}

void CudaKernels::followLastStream(void* stream, llvm::function_ref<bool()> capturing) {
  if (lastStream_ == stream)
    return; // the steady state: one stream, in stream order
  // A captured launch runs at replay, which its caller orders; and it may not wait for work
  // outside the capture.
  if (capturing())
    return;
  // The event outlives the last stream (CuPy destroys its streams), and waits on the device.
  if (lastStream_)
    lastStepDone_.orderBefore(stream);
  lastStream_ = stream;
}

bool CudaKernels::growWorkspaces(const CompiledFusion& compiled,
                                 llvm::ArrayRef<LaunchBinding> bindings,
                                 llvm::function_ref<bool()> capturing) {
  // Every launch's workspace first: a global reduction's later contributors point into an
  // earlier launch's.
  bool relocated = false;
  for (size_t i = 0; i < compiled.scheduled.launches.size(); ++i) {
    size_t held = workspaces_[i] ? workspaces_[i]->size() : 0;
    if (bindings[i].workspaceBytes <= held)
      continue;
    if (capturing())
      fail("kernel '{}' needs a larger reduction workspace ({} bytes) than its last launch: a "
           "launch under CUDA graph capture cannot allocate; launch once with these arguments "
           "before capturing",
           planOf(compiled, i).name, bindings[i].workspaceBytes);
    // A graph that captured the old one holds it.
    workspaces_[i] = std::make_shared<DeviceBuffer>(device_, bindings[i].workspaceBytes);
    workspaceBases_[i] = workspaces_[i]->pointer();
    workspacesZeroed_[i] = false;
    relocated = true;
  }
  return relocated;
}

void CudaKernels::zeroOnFirstLaunch(size_t i, const KernelPlan& plan, const LaunchBinding& binding,
                                    void* stream, bool capturing) {
  if (plan.needsTickets && !ticketsZeroed_[i]) {
    tickets_[i]->zeroAsync(stream); // every later launch finds them zeroed by the kernel
    // A captured memset runs at each replay, not now: a launch outside the graph zeroes
    // them again.
    ticketsZeroed_[i] = !capturing;
  }
  if (binding.workspaceBytes && !workspacesZeroed_[i]) {
    workspaces_[i]->zeroAsync(stream);
    workspacesZeroed_[i] = !capturing;
  }
}

void CudaKernels::waitFor(const KernelPlan& plan, void* stream) const {
  try {
    device_.synchronize(stream);
  } catch (const Error& error) {
    fail("kernel '{}' failed (found by synchronizing after each launch, WIDEFUSE_CUDA_SYNC=1): "
         "{}",
         plan.name, error.what());
  }
}

GraphHold CudaKernels::holdOfStep(const std::shared_ptr<const void>& kept) const {
  GraphHold hold = {modules_};
  for (size_t i = 0; i < tickets_.size(); ++i) {
    hold.push_back(tickets_[i]);
    if (workspaces_[i])
      hold.push_back(workspaces_[i]);
    tables_.addTo(i, hold);
  }
  if (kept)
    hold.push_back(kept);
  return hold;
}

void CudaKernels::launch(const CompiledFusion& compiled, std::vector<LaunchBinding>& bindings,
                         bool rebound, void* stream, bool synchronizeEach,
                         llvm::function_ref<void(unsigned)> endPhase,
                         const std::shared_ptr<const void>& kept) {
  // Asked once per step: a captured step's memory must be held by its graph.
  bool capturing = device_.isCapturing(stream);
  auto underCapture = [&] { return capturing; };
  // Refused before anything is queued, so that a capture never holds half a step.
  if (synchronizeEach && capturing)
    fail("fusion kernels were launched under CUDA graph capture with WIDEFUSE_CUDA_SYNC=1 (or "
         "CudaOptions::synchronizeEachLaunch): waiting for each kernel is not possible while "
         "its stream captures; unset it for the capture");
  if (!capturing) {
    releaseFinishedGraphHolds();
    tables_.prepareForCapture();
  }
  followLastStream(stream, underCapture);
  bool relocated = growWorkspaces(compiled, bindings, underCapture);
  auto uploads = [&](size_t i) {
    return !bindings[i].table.empty() && (rebound || relocated || tables_.stale(i));
  };
  for (size_t i = 0; capturing && i < bindings.size(); ++i)
    if (uploads(i))
      tables_.checkCapturable(i, planOf(compiled, i).name);
  for (size_t i = 0; i < compiled.scheduled.launches.size(); ++i) {
    const KernelLaunch& launch = compiled.scheduled.launches[i];
    const KernelPlan& plan = compiled.scheduled.plans[launch.plan];
    LaunchBinding& binding = bindings[i];
    if (i > 0 && launch.phase != compiled.scheduled.launches[i - 1].phase)
      endPhase(compiled.scheduled.launches[i - 1].phase);
    bool upload = uploads(i);
    if (rebound || relocated)
      setWorkspaceAddresses(binding, workspaceBases_);
    // In stream order, after earlier kernels read the old table.
    if (upload)
      tables_.upload(i, binding.table, stream, capturing, plan.name);
    if (rebound || relocated || upload)
      setTableAddresses(binding, tables_.address(i), tickets_[i]->pointer());
    zeroOnFirstLaunch(i, plan, binding, stream, capturing);
    if (capturing && !binding.table.empty())
      tables_.markCaptured(i);
    device_.launch((*modules_)[launch.plan], plan.name, binding.parameters,
                   gridBlocks(binding, gridLimits_[launch.plan]), plan.threadsPerBlock, stream);
    if (synchronizeEach)
      waitFor(plan, stream);
  }
  if (capturing)
    holdWhileGraphLives(device_, stream, holdOfStep(kept));
  else
    lastStepDone_.record(stream);
}

} // namespace widefuse
