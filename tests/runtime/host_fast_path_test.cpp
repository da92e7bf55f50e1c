// The host backend's fast path under concurrency: the chunks of one member run on several
// workers at once and its deferred 0-d write (Adam's step counter, read by every element) still
// happens once, after every chunk has read the entry value; the work is split into several
// blocks per worker; and a step that only wakes workers creates no thread.

#include "runtime/fusion_executor.h"
#include "runtime/host/host_launcher.h"
#include "runtime/host/host_thread_pool.h"
#include "tests/support/same_element.h"

#include "ir/evaluator.h"
#include "tools/workloads/seed_adam.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace widefuse;

namespace {

/// Buffers and arguments of the seed Adam: p, g, m, v, step per parameter, then the scalars.
struct SeedAdamState {
  std::vector<HostTensor> tensors;
  std::vector<Argument> arguments() {
    std::vector<Argument> list;
    for (HostTensor& tensor : tensors)
      list.push_back(tensor.ref());
    for (double scalar : {1e-3, 0.9, 0.999, 1e-8})
      list.push_back(ScalarArgument(scalar));
    return list;
  }
};

SeedAdamState randomState(const Fusion& fusion) {
  SeedAdamState state;
  std::mt19937 random(3);
  std::normal_distribution<float> normal;
  for (const Value* input : fusion.inputs()) {
    if (!input->isTensor())
      break;
    HostTensor tensor(input->dtype(), llvm::SmallVector<int64_t, 4>(input->extents().begin(),
                                                                    input->extents().end()));
    size_t role = state.tensors.size() % 5; // p, g, m, v, step
    for (int64_t k = 0; k < tensor.numel(); ++k)
      tensor.as<float>()[k] = role == 4   ? 7.0f
                              : role == 3 ? std::fabs(normal(random)) * 0.01f
                                          : normal(random);
    state.tensors.push_back(std::move(tensor));
  }
  return state;
}

int64_t differences(const SeedAdamState& actual, const SeedAdamState& expected) {
  int64_t count = 0;
  for (size_t t = 0; t < actual.tensors.size(); ++t) {
    const HostTensor& a = actual.tensors[t];
    for (int64_t k = 0; k < a.numel(); ++k)
      count += !widefuse::testing::sameElement(
          static_cast<const std::byte*>(a.data()) + 4 * k,
          static_cast<const std::byte*>(expected.tensors[t].data()) + 4 * k, DataType::Float);
  }
  return count;
}

} // namespace

TEST(HostFastPath, DeferredWritesStayCorrectWhenOneMembersChunksRunOnSeveralWorkers) {
  // One large member (245 chunks) between small ones: its chunks are shared out in 64 blocks
  // (16 per worker) that 4 workers take at once, each reading the step counter the last of
  // them writes. A write before every block has read it would change the bias corrections
  // of the blocks after it.
  auto fusion = optim::buildSeedAdam({{5}, {1000003}, {1}, {4096}});
  SeedAdamState state = randomState(*fusion);
  SeedAdamState expected = state; // HostTensor copies its bytes
  ExecutorOptions options;
  options.backend = "host";
  options.host.execution = HostExecution::Fast;
  options.host.threads = 4;
  for (const char* order : {"forward", "reverse", "shuffle:9"}) {
    options.host.blockOrder = parseBlockOrder(order);
    FusionExecutorCache executor(*fusion, options);
    for (int step = 0; step < 5; ++step) {
      executor.run(state.arguments());
      evaluate(*fusion, expected.arguments());
    }
    EXPECT_EQ(differences(state, expected), 0) << order;
  }
  EXPECT_EQ(expected.tensors[9].as<float>()[0], 7.0f + 15);
  EXPECT_EQ(state.tensors[9].as<float>()[0], 7.0f + 15);
  EXPECT_GE(HostThreadPool::global().numWorkers(), 3u) << "the launch did not use its workers";
}

TEST(HostFastPath, SharesALaunchInSeveralBlocksPerWorker) {
  FastLaunchShape large = fastLaunchShape(30000, int64_t(124) << 20, 2);
  EXPECT_EQ(large.workers, 2u);
  EXPECT_EQ(large.grid, 32u);
  // Fewer chunks than blocks: one block per chunk.
  FastLaunchShape few = fastLaunchShape(5, int64_t(1) << 24, 4);
  EXPECT_EQ(few.grid, 5u);
  // Too little work to wake a second thread.
  FastLaunchShape tiny = fastLaunchShape(1000, 64000, 8);
  EXPECT_EQ(tiny.workers, 1u);
  EXPECT_EQ(fastLaunchShape(1000, 64000, 8, 1).workers, 8u);
  EXPECT_EQ(fastLaunchShape(1, 0, 8).grid, 1u); // an empty launch still runs its 0-d writes
}
