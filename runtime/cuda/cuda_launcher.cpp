#include "runtime/cuda/cuda_launcher.h"

#include "ir/error.h"

#include <algorithm>

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
}

void CudaKernels::launch(const CompiledFusion& compiled, std::vector<LaunchBinding>& bindings,
                         bool rebound, void* stream, bool synchronizeEach) {
  for (size_t i = 0; i < compiled.scheduled.launches.size(); ++i) {
    const KernelLaunch& launch = compiled.scheduled.launches[i];
    const KernelPlan& plan = compiled.scheduled.plans[launch.plan];
    LaunchBinding& binding = bindings[i];
    if (rebound) {
      setTableAddresses(binding, tables_[i].size() ? tables_[i].pointer() : nullptr,
                        tickets_[i].pointer());
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
      ticketsZeroed_[i] = true;
    }
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
