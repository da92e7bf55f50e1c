#pragma once
/// The host backend's command-line options, which `widefuse run` and `widefuse adam` share:
/// --host-execution, --block-order, --interleavings and --threads.

#include "runtime/host/host_options.h"

#include <string>

namespace CLI {
class App;
}

namespace widefuse {

/// What --host-execution, --block-order, --interleavings and --threads say.
struct HostBackendArguments {
  std::string execution = "fast";
  std::string blockOrder = "forward";
  unsigned interleavings = HostOptions().interleavings;
  /// 0: one per core.
  unsigned threads = 0;
};

/// Registers --host-execution, --block-order, --interleavings and --threads on `command`.
void addHostBackendOptions(CLI::App& command, HostBackendArguments& arguments);

/// The host backend's options these arguments say; throws Error for a bad --block-order or
/// --host-execution (checked before anything runs, whatever the backend).
HostOptions hostOptionsOf(const HostBackendArguments& arguments);

} // namespace widefuse
