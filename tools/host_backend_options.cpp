#include "tools/host_backend_options.h"

#include "ir/error.h"

#include <CLI/CLI.hpp>

namespace widefuse {

void addHostBackendOptions(CLI::App& command, HostBackendArguments& arguments) {
  command
      .add_option("--block-order", arguments.blockOrder,
                  "Host backend: forward, reverse or shuffle:SEED")
      ->capture_default_str();
  command
      .add_option("--threads", arguments.threads,
                  "Host backend: CPU threads running blocks (1 keeps the block order exact)")
      ->capture_default_str();
}

BlockOrder checkHostBackendArguments(const HostBackendArguments& arguments) {
  BlockOrder order = parseBlockOrder(arguments.blockOrder);
  if (arguments.threads < 1)
    fail("--threads must be 1 or more, got {}", arguments.threads);
  return order;
}

} // namespace widefuse
