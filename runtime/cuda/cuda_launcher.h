#pragma once
/// The CUDA backend's state for one compiled signature: the loaded modules, member tables in
/// device memory (uploaded only when the bindings change) and the ticket workspaces (zeroed
/// once, on the stream of the first launch; the kernels leave them zeroed). Every transfer of
/// a launch is queued on the launch's stream, so it is ordered with the kernels whatever kind
/// of stream the caller uses (non-blocking ones included).

#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_compiler.h"
#include "runtime/launch_binding.h"

#include <llvm/ADT/ArrayRef.h>

#include <vector>

namespace widefuse {

/// Launches a compiled fusion's kernels on one device.
class CudaKernels {
public:
  /// Loads every kernel's cubin. Throws Error when a parameter block exceeds what the driver
  /// accepts (CUDA older than 12.1: 4 KB).
  CudaKernels(const CudaDevice& device, const CompiledFusion& compiled);

  /// Points each binding at its device table and tickets, uploads the tables when `rebound`,
  /// and launches every kernel on `stream` without synchronising (unless `synchronizeEach`:
  /// then it waits after each kernel and names the one that failed).
  void launch(const CompiledFusion& compiled, std::vector<LaunchBinding>& bindings, bool rebound,
              void* stream, bool synchronizeEach);

private:
  const CudaDevice& device_;
  std::vector<CudaModule> modules_;
  /// Per plan: the persistent grid's size, resident blocks x multiprocessors.
  std::vector<unsigned> gridLimits_;
  std::vector<DeviceBuffer> tables_;
  std::vector<DeviceBuffer> tickets_;
  std::vector<bool> ticketsZeroed_;
};

} // namespace widefuse
