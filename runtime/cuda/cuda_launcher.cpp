#include "runtime/cuda/cuda_launcher.h"

#include "ir/error.h"

#include <algorithm>
#include <optional>

namespace widefuse {

CudaKernels::CudaKernels(const CudaDevice& device, const CompiledFusion& compiled)
    : device_(device) {
  for (const FusionKernel& kernel : compiled.kernels) {
    if (kernel.plan->parameterBytes > device.maxParameterBytes())
      fail("kernel '{}' takes a {}-byte parameter block but this driver accepts {} bytes "
           "(CUDA 12.1 or newer accepts 32764): update the driver or use backend=host",
           kernel.plan->name, kernel.plan->parameterBytes, device.maxParameterBytes());
    modules_.emplace_back(device, *kernel.compiled);
    // As many blocks as the compiled kernel keeps resident: its registers decide, not the
    // plan's register cap alone.
    gridLimits_.push_back(modules_.back().residentBlocks(kernel.plan->threadsPerBlock) *
                          device.description().multiprocessorCount);
  }
  for (const KernelLaunch& launch : compiled.scheduled.launches) {
    const KernelPlan& plan = compiled.scheduled.plans[launch.plan];
    tables_.emplace_back();
    if (plan.tableLocation == TableLocation::DeviceMemory)
      tables_.back() =
          DeviceBuffer(device, std::max<size_t>(1, launch.members.size()) * plan.entryBytes);
    // Zeroed on the first launch's stream, not here: a synchronous memset on the legacy
    // stream is not ordered before a kernel on a non-blocking stream.
    tickets_.emplace_back(device, std::max<size_t>(1, launch.members.size()) * sizeof(uint32_t));
  }
  ticketsZeroed_.assign(tickets_.size(), false);
  workspaces_.resize(tickets_.size());
  workspaceBases_.assign(tickets_.size(), nullptr);
  workspacesZeroed_.assign(tickets_.size(), false);
  tableCaptured_.assign(tables_.size(), false);
}

void CudaKernels::prepareTableUpload(size_t i, const KernelPlan& plan, size_t bytes,
                                     bool capturing) {
  if (capturing)
    fail("kernel '{}' keeps its member table in device memory ({} bytes) and its arguments "
         "changed since its last launch: a launch under CUDA graph capture cannot upload the "
         "table (the graph would copy host memory that later steps rewrite); launch once with "
         "these arguments before capturing",
         plan.name, bytes);
  if (!tableCaptured_[i])
    return;
  // The graph replays its launches with the pointers it captured, as it does for tables in
  // the kernel parameters: the new table goes elsewhere. Outside capture, so it may allocate.
  retiredTables_.push_back(std::move(tables_[i]));
  tables_[i] = DeviceBuffer(device_, retiredTables_.back().size());
  tableCaptured_[i] = false;
}

void CudaKernels::followLastStream(void* stream, llvm::function_ref<bool()> capturing) {
  if (lastStream_ == stream)
    return; // the steady state: one stream, in stream order, asks nothing
  // A captured launch runs at replay, which its caller orders; and it may not wait.
  if (capturing())
    return;
  // Without events, the one wait that needs no handle of the last stream (which may be gone
  // by now: CuPy destroys its streams): the context's.
  if (lastStream_)
    device_.synchronizeContext();
  lastStream_ = stream;
}

void CudaKernels::launch(const CompiledFusion& compiled, std::vector<LaunchBinding>& bindings,
                         bool rebound, void* stream, bool synchronizeEach,
                         llvm::function_ref<void(unsigned)> endPhase) {
  // Asked once per call at most, and only where a capture changes what may be done: the steady
  // state of kernels with their tables in the parameters asks the driver nothing.
  std::optional<bool> capturing;
  auto underCapture = [&] {
    if (!capturing)
      capturing = device_.isCapturing(stream);
    return *capturing;
  };
  // Refused before anything is queued, so that a capture never holds half a step.
  if (synchronizeEach && underCapture())
    fail("fusion kernels were launched under CUDA graph capture with WIDEFUSE_CUDA_SYNC=1 (or "
         "CudaOptions::synchronizeEachLaunch): waiting for each kernel is not possible while "
         "its stream captures; unset it for the capture");
  followLastStream(stream, underCapture);
  if (rebound)
    for (size_t i = 0; i < bindings.size(); ++i)
      if (!bindings[i].table.empty())
        prepareTableUpload(i, compiled.scheduled.plans[compiled.scheduled.launches[i].plan],
                           bindings[i].table.size(), underCapture());
  // Every launch's workspace first: a global reduction's later contributors point into an
  // earlier launch's.
  bool relocated = false;
  for (size_t i = 0; i < compiled.scheduled.launches.size(); ++i) {
    if (bindings[i].workspaceBytes <= workspaces_[i].size())
      continue;
    if (underCapture())
      fail("kernel '{}' needs a larger reduction workspace ({} bytes) than its last launch: a "
           "launch under CUDA graph capture cannot allocate; launch once with these arguments "
           "before capturing",
           compiled.scheduled.plans[compiled.scheduled.launches[i].plan].name,
           bindings[i].workspaceBytes);
    workspaces_[i] = DeviceBuffer(device_, bindings[i].workspaceBytes);
    workspaceBases_[i] = workspaces_[i].pointer();
    workspacesZeroed_[i] = false;
    relocated = true;
  }
  for (size_t i = 0; i < compiled.scheduled.launches.size(); ++i) {
    const KernelLaunch& launch = compiled.scheduled.launches[i];
    const KernelPlan& plan = compiled.scheduled.plans[launch.plan];
    LaunchBinding& binding = bindings[i];
    if (i > 0 && launch.phase != compiled.scheduled.launches[i - 1].phase)
      endPhase(compiled.scheduled.launches[i - 1].phase);
    if (rebound || relocated) {
      setTableAddresses(binding, tables_[i].size() ? tables_[i].pointer() : nullptr,
                        tickets_[i].pointer());
      setWorkspaceAddresses(binding, workspaceBases_);
      // The copy runs in stream order, after earlier kernels read the old table. The binding
      // is pageable host memory, which the driver stages into pinned memory before the call
      // returns (the driver API's "API synchronization behavior": such a copy "might be
      // synchronous with respect to host" and may be staged), so the binding may change
      // afterwards. The documentation describes this staging but does not promise it; a
      // pinned, event-guarded table would not depend on it (docs/runtime.md, limitations).
      if (!binding.table.empty())
        tables_[i].uploadAsync(binding.table, stream);
    }
    if (plan.needsTickets && !ticketsZeroed_[i]) {
      tickets_[i].zeroAsync(stream); // every later launch finds them zeroed by the kernel
      // A captured memset runs at each replay, not now: a launch outside the graph zeroes
      // them again.
      ticketsZeroed_[i] = !underCapture();
    }
    if (binding.workspaceBytes && !workspacesZeroed_[i]) {
      workspaces_[i].zeroAsync(stream);
      workspacesZeroed_[i] = !underCapture();
    }
    if (tables_[i].size() && underCapture())
      tableCaptured_[i] = true;
    device_.launch(modules_[launch.plan], plan.name, binding.parameters,
                   gridBlocks(binding, gridLimits_[launch.plan]), plan.threadsPerBlock, stream);
    if (synchronizeEach) {
      try {
        device_.synchronize(stream);
      } catch (const Error& error) {
        fail("kernel '{}' failed (found by synchronizing after each launch, "
             "WIDEFUSE_CUDA_SYNC=1): {}",
             plan.name, error.what());
      }
    }
  }
}

} // namespace widefuse
