#include "runtime/host_launcher.h"

#include "ir/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace widefuse {

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

namespace {

std::vector<unsigned> permutation(unsigned count, const BlockOrder& order, uint64_t salt) {
  std::vector<unsigned> items(count);
  std::iota(items.begin(), items.end(), 0u);
  if (order.kind == BlockOrder::Kind::Reverse)
    std::reverse(items.begin(), items.end());
  if (order.kind == BlockOrder::Kind::Shuffle)
    std::shuffle(items.begin(), items.end(),
                 std::mt19937_64(order.seed * 0x9e3779b97f4a7c15ull + salt));
  return items;
}

} // namespace

void runHostGrid(const HostKernel& kernel, llvm::ArrayRef<std::byte> parameters, unsigned grid,
                 unsigned threadsPerBlock, const BlockOrder& order, unsigned workers) {
  std::vector<unsigned> blocks = permutation(grid, order, 0);
  std::vector<unsigned> threads = permutation(threadsPerBlock, order, 1);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < blocks.size(); i = next++)
      kernel.runBlock(parameters.data(), blocks[i], grid, threads.data());
  };
  workers = std::max(1u, std::min(workers, grid));
  if (workers == 1) {
    work();
    return;
  }
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back(work);
  for (std::thread& thread : pool)
    thread.join();
}

} // namespace widefuse
