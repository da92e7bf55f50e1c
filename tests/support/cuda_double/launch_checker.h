#pragma once
// How the CUDA driver double checks and runs a launch: every pointer the kernel's own
// `<kernel>_launch_abi` names must lie in a live allocation of the launching device, written
// in order; then the launch runs through the kernel's host build, blocks and threads shuffled.

#include "tests/support/cuda_double/stream_model.h"

#include "codegen/launch_abi.h"
#include "runtime/host/host_compiler.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace widefuse::cuda_double {

/// A loaded image: the host build of its one kernel and what it says about its launches.
struct Module {
  std::string name;
  std::shared_ptr<const HostKernel> kernel;
  const wf_launch_abi* abi = nullptr;
  /// Generic kernels (no `_host_block` of their own): the block size the wrapper runs.
  unsigned* blockThreads = nullptr;
  /// The size of the kernel's single parameter.
  size_t parameterBytes = 0;
  int device = 0;
};

/// The wrapper the double appends to a kernel that has no host entry of its own (a plain
/// CUDA kernel taking one struct by value): each thread of the block in turn. No barriers.
std::string genericHostEntry(const std::string& name, const std::string& type);

/// Every pointer of a widefuse launch, found with the kernel's own description; a violation
/// is reported to `model`.
void checkLaunchPointers(StreamModel& model, const Operation& launch, const Module& module,
                         const std::vector<std::byte>& parameters);

/// Runs a launch on the host: blocks in a shuffled order, each block's threads shuffled.
void runLaunch(const Module& module, const std::vector<std::byte>& parameters, unsigned grid,
               unsigned threads, uint64_t seed);

} // namespace widefuse::cuda_double
