#pragma once
/// The CUDA backend's state for one compiled signature: the loaded modules, member tables in
/// device memory (uploaded only when the bindings change) and the ticket workspaces (zeroed
/// once; the kernels leave them zeroed).

#include "runtime/cuda_device.h"
#include "runtime/fusion_compiler.h"
#include "runtime/launch_binding.h"

#include <llvm/ADT/ArrayRef.h>

#include <vector>

namespace widefuse {

/// Launches a compiled fusion's kernels on one device.
class CudaLaunches {
public:
  /// Loads every kernel's cubin. Throws Error when a parameter block exceeds what the driver
  /// accepts (CUDA older than 12.1: 4 KB).
  CudaLaunches(const CudaDevice& device, const CompiledFusion& compiled);

  /// Points each binding at its device table and tickets (allocating them the first time),
  /// uploads the tables when `rebound`, and launches every kernel on `stream` without
  /// synchronising.
  void launch(const CompiledFusion& compiled, std::vector<LaunchBinding>& bindings, bool rebound,
              void* stream);

private:
  const CudaDevice& device_;
  std::vector<CudaModule> modules_;
  std::vector<DeviceBuffer> tables_;
  std::vector<DeviceBuffer> tickets_;
};

} // namespace widefuse
