// A prepared optimizer step allocates nothing on the host backend's fast path: the launch
// tables are bound once, the worker threads are started once, and a step only wakes them; a
// step with new grad tensors or a scheduled learning rate rewrites those entries in place.
// Counted with a replacement of the global allocation functions (this executable only).

#include "runtime/fusion_executor.h"

#include "tools/workloads/seed_adam.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void* allocate(std::size_t size) {
  if (counting.load(std::memory_order_relaxed))
    allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* memory = std::malloc(size ? size : 1))
    return memory;
  throw std::bad_alloc();
}

} // namespace

void* operator new(std::size_t size) {
  return allocate(size);
}
void* operator new[](std::size_t size) {
  return allocate(size);
}
// The nothrow forms too (std::stable_sort's buffer): every form frees with std::free.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete(void* memory) noexcept {
  std::free(memory);
}
void operator delete[](void* memory) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::size_t) noexcept {
  std::free(memory);
}

using namespace widefuse;

namespace {

/// Allocations made by `steps` calls of `step`.
template <typename Step> long allocationsOf(int steps, Step&& step) {
  allocations = 0;
  counting = true;
  for (int i = 0; i < steps; ++i)
    step();
  counting = false;
  return allocations.load();
}

} // namespace

TEST(SteadyState, APreparedStepAllocatesNothing) {
  std::vector<optim::Shape> shapes;
  for (int i = 0; i < 50; ++i)
    shapes.push_back({i % 5 == 0 ? 300000 : 1 + 37 * i});
  auto fusion = optim::buildSeedAdam(shapes);
  std::vector<HostTensor> tensors;
  std::vector<Argument> arguments;
  for (const Value* input : fusion->inputs()) {
    if (!input->isTensor())
      break;
    tensors.emplace_back(input->dtype(), llvm::SmallVector<int64_t, 4>(input->extents().begin(),
                                                                       input->extents().end()));
  }
  for (HostTensor& tensor : tensors)
    arguments.push_back(tensor.ref());
  for (double scalar : {1e-3, 0.9, 0.999, 1e-8})
    arguments.push_back(ScalarArgument(scalar));
  for (unsigned threads : {1u, 2u}) {
    ExecutorOptions options;
    options.backend = "host";
    options.host.threads = threads;
    FusionExecutorCache executor(*fusion, options);
    std::unique_ptr<PreparedRun> prepared = executor.prepare(arguments);
    prepared->launch(); // the first launch may start the workers
    EXPECT_EQ(allocationsOf(20, [&] { prepared->launch(); }), 0) << threads << " threads";
    // Every step new grads (two sets in turn, as torch's zero_grad(set_to_none=True) gives)
    // and a new learning rate.
    std::vector<HostTensor> grads[2];
    for (auto& set : grads)
      for (size_t p = 0; p < shapes.size(); ++p)
        set.push_back(tensors[5 * p + 1]);
    size_t lr = fusion->inputs().size() - 4;
    auto newGrads = [&, step = 0]() mutable {
      for (size_t p = 0; p < shapes.size(); ++p)
        prepared->rebindTensor(5 * p + 1, grads[step % 2][p].data());
      prepared->setScalar(lr, ScalarArgument(1e-3 / (1 + step)));
      prepared->launch();
      ++step;
    };
    newGrads(); // the first change makes the run's own fingerprint
    EXPECT_EQ(allocationsOf(20, newGrads), 0) << threads << " threads";
  }
}
