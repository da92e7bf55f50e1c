#pragma once
/// The host backend's command-line options, which `widefuse run` and `widefuse adam` share:
/// --block-order and --threads.

#include "runtime/host_launcher.h"

#include <string>

namespace CLI {
class App;
}

namespace widefuse {

/// What --block-order and --threads say.
struct HostBackendArguments {
  std::string blockOrder = "forward";
  unsigned threads = 1;
};

/// Registers --block-order and --threads on `command`.
void addHostBackendOptions(CLI::App& command, HostBackendArguments& arguments);

/// The parsed block order; throws Error for a bad order or a thread count below 1 (checked
/// before anything runs).
BlockOrder checkHostBackendArguments(const HostBackendArguments& arguments);

} // namespace widefuse
