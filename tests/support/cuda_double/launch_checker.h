#pragma once
// How the CUDA driver double checks and runs a launch: every pointer the kernel's own
// `<kernel>_launch_abi` names must lie in a live allocation of the launching device, written
// in order; then the device emulator runs the kernel's device code, blocks and threads
// shuffled, every access within the device's live allocations.

#include "tests/support/cuda_double/stream_model.h"

#include "codegen/launch_abi.h"
#include "runtime/host/device_emulator.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace widefuse::cuda_double {

/// A loaded image: the emulated build of its one kernel and what it says about its launches
/// (a plain CUDA kernel, not widefuse's, has no launch description).
struct Module {
  std::string name;
  std::shared_ptr<const EmulatedKernel> kernel;
  const wf_launch_abi* abi = nullptr;
  int device = 0;
  /// cuModuleUnload'ed: a launch of it is a violation.
  bool unloaded = false;
};

/// Every pointer of a widefuse launch, found with the kernel's own description; a violation
/// is reported to `model`.
void checkLaunchPointers(StreamModel& model, const Operation& launch, const Module& module,
                         const std::vector<std::byte>& parameters);

/// Runs a launch in the device emulator, blocks and threads shuffled by `seed`; a fault it
/// reports is a violation of `model`.
void runLaunch(StreamModel& model, const Operation& launch, const Module& module,
               const std::vector<std::byte>& parameters, unsigned grid, unsigned threads,
               uint64_t seed);

} // namespace widefuse::cuda_double
