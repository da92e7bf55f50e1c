#include "tools/host_backend_options.h"

#include "ir/error.h"

#include <CLI/CLI.hpp>

namespace widefuse {

void addHostBackendOptions(CLI::App& command, HostBackendArguments& arguments) {
  command
      .add_option("--host-execution", arguments.execution,
                  "Host backend: fast (vectorized loops) or verify (every CUDA thread emulated, "
                  "blocks and threads in --block-order)")
      ->capture_default_str();
  command
      .add_option("--block-order", arguments.blockOrder,
                  "Host backend: forward, reverse or shuffle:SEED")
      ->capture_default_str();
  command
      .add_option("--interleavings", arguments.interleavings,
                  "Host backend, verify: runs of each launch from the same inputs (the block "
                  "order, then shuffles), which must leave the same bytes")
      ->capture_default_str();
  command
      .add_option("--threads", arguments.threads,
                  "Host backend: CPU threads running blocks (0: one per core; 1 keeps the block "
                  "order exact)")
      ->capture_default_str();
}

HostOptions hostOptionsOf(const HostBackendArguments& arguments) {
  HostOptions options;
  options.execution = parseHostExecution(arguments.execution);
  options.blockOrder = parseBlockOrder(arguments.blockOrder);
  if (arguments.interleavings == 0)
    throw Error("--interleavings 0: a launch runs in at least 1 interleaving");
  options.interleavings = arguments.interleavings;
  options.threads = arguments.threads;
  return options;
}

} // namespace widefuse
