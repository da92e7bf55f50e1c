#include "runtime/host/host_options.h"

#include "ir/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace widefuse {

llvm::StringRef hostExecutionName(HostExecution execution) {
  return execution == HostExecution::Fast ? "fast" : "verify";
}

llvm::ArrayRef<llvm::StringRef> hostExecutionNames() {
  static const llvm::StringRef names[] = {hostExecutionName(HostExecution::Fast),
                                          hostExecutionName(HostExecution::Verify)};
  return names;
}

HostExecution parseHostExecution(llvm::StringRef text) {
  for (HostExecution execution : {HostExecution::Fast, HostExecution::Verify})
    if (text == hostExecutionName(execution))
      return execution;
  fail("unknown host execution '{}': use fast (the default) or verify (emulated CUDA threads, "
       "for checking block-order independence)",
       text.str());
}

unsigned hostThreadCount(unsigned threads) {
  if (threads > 0)
    return threads;
  static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return cores;
}

BlockOrder parseBlockOrder(llvm::StringRef text) {
  if (text == "forward")
    return {BlockOrder::Kind::Forward, 0};
  if (text == "reverse")
    return {BlockOrder::Kind::Reverse, 0};
  llvm::StringRef seed = text;
  uint64_t value = 0;
  if (seed.consume_front("shuffle:") && !seed.empty() && !seed.getAsInteger(10, value))
    return {BlockOrder::Kind::Shuffle, value};
  fail("unknown block order '{}': use forward, reverse or shuffle:SEED (e.g. shuffle:7)",
       text.str());
}

std::string formatBlockOrder(const BlockOrder& order) {
  switch (order.kind) {
  case BlockOrder::Kind::Forward:
    return "forward";
  case BlockOrder::Kind::Reverse:
    return "reverse";
  case BlockOrder::Kind::Shuffle:
    return fmt::format("shuffle:{}", order.seed);
  }
  WF_UNREACHABLE("unknown block order");
}

} // namespace widefuse
