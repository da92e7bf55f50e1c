#include "runtime/host/host_launcher.h"

#include "ir/error.h"
#include "runtime/host/host_thread_pool.h"
#include "runtime/launch_binding.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace widefuse {

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

namespace {

/// Blocks per worker: with dynamic assignment the last block a worker takes is at most this
/// fraction of its share, so the tail of a launch leaves no worker idle for long.
constexpr unsigned kBlocksPerWorker = 16;

} // namespace

FastLaunchShape fastLaunchShape(unsigned numChunks, int64_t numElements, unsigned threads,
                                int64_t elementsPerWorker) {
  FastLaunchShape shape;
  shape.workers = unsigned(std::clamp<int64_t>(
      numElements / std::max<int64_t>(1, elementsPerWorker), 1, std::max(1u, threads)));
  shape.grid = std::max(
      1u, std::min({numChunks, shape.workers * kBlocksPerWorker, unsigned(kMaxGridBlocks)}));
  return shape;
}

void runHostGridFast(const HostKernel& kernel, llvm::ArrayRef<std::byte> parameters, unsigned grid,
                     const BlockOrder& order, unsigned workers) {
  WF_ASSERT(kernel.hasFastEntry(), "host kernel '{}' has no fast entry", kernel.name());
  const void* data = parameters.data();
  std::vector<unsigned> shuffled;
  if (order.kind == BlockOrder::Kind::Shuffle)
    shuffled = permutation(grid, order, 0);
  bool reverse = order.kind == BlockOrder::Kind::Reverse;
  HostThreadPool::global().run(grid, workers, [&](unsigned task) {
    unsigned block = !shuffled.empty() ? shuffled[task] : reverse ? grid - 1 - task : task;
    kernel.runBlockFast(data, block, grid);
  });
}

} // namespace widefuse
