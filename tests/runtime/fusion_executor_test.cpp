// The executor's contract whatever the backend: one cache shared by threads, backend names and
// the auto rule, prepared runs, outputs written where the caller says, the iteration-domain
// check before anything runs, and 64-bit indices for a view spanning 2^31 elements.

#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_executor.h"
#include "runtime/host/host_options.h"
#include "tests/support/host_comparison.h"
#include "tests/support/seed_adam_state.h"

#include "ir/error.h"
#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "tools/workloads/seed_adam.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

constexpr HostExecution kExecutions[] = {HostExecution::Fast, HostExecution::Verify};

} // namespace

TEST(HostBackendConcurrency, EightThreadsShareOneCacheWithTheirOwnInputs) {
  auto fusion = optim::buildSeedAdam({{300}, {4097}, {1}, {17, 3}});
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  std::vector<AdamState> states, expected;
  for (int t = 0; t < 8; ++t) {
    AdamState state = initialAdamState(*fusion, -1);
    for (HostTensor& buffer : state.buffers) // different inputs per thread
      for (int64_t k = 0; k < buffer.numel(); ++k)
        buffer.as<float>()[k] += float(t) * 0.25f;
    expected.push_back(state.clone());
    states.push_back(state.clone());
  }
  for (AdamState& state : expected)
    for (int step = 0; step < 3; ++step)
      evaluate(*fusion, state.arguments());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int step = 0; step < 3; ++step)
          executor.run(states[t].arguments());
      } catch (const std::exception& error) {
        ADD_FAILURE() << "thread " << t << ": " << error.what();
      }
    });
  for (std::thread& thread : threads)
    thread.join();
  for (int t = 0; t < 8; ++t)
    EXPECT_EQ(stateDifferences(states[t], expected[t]), 0) << "thread " << t;
  EXPECT_EQ(executor.numSpecializations(), 1u);
}

TEST(Backends, CudaWithoutADeviceNamesTheHostBackendAndAutoFallsBackToIt) {
  if (CudaDevice::available())
    GTEST_SKIP() << "a CUDA device is present";
  auto fusion = optim::buildSeedAdam({{8}});
  ExecutorOptions cuda;
  cuda.backend = "cuda";
  try {
    FusionExecutorCache executor(*fusion, cuda);
    ADD_FAILURE() << "backend cuda without a device did not fail";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("use backend=host"), std::string::npos)
        << error.what();
  }
  // auto follows the arguments: decided by the first run, host for host memory.
  FusionExecutorCache automatic(*fusion);
  EXPECT_EQ(automatic.backendName(), "auto");
  AdamState state = initialAdamState(*fusion, -1);
  automatic.run(state.arguments());
  EXPECT_EQ(automatic.backendName(), "host");
  EXPECT_EQ(findBackend("auto"), nullptr);
  EXPECT_EQ(&backendForArguments(state.arguments()), findBackend("host"));
  ExecutorOptions unknown;
  unknown.backend = "gpu";
  try {
    FusionExecutorCache executor(*fusion, unknown);
    ADD_FAILURE() << "no error for an unknown backend";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("auto, cuda, host, reference or none"),
              std::string::npos);
  }
}

TEST(PreparedRun, LaunchesTheSameStepsAsRunWithoutCheckingAgain) {
  auto fusion = optim::buildSeedAdam({{300}, {4097}, {1}, {17, 3}});
  for (HostExecution execution : kExecutions) {
    SCOPED_TRACE(hostExecutionName(execution).str());
    AdamState state = initialAdamState(*fusion, -1);
    AdamState expected = state.clone();
    ExecutorOptions options;
    options.backend = "host";
    options.host.execution = execution;
    options.host.blockOrder = parseBlockOrder("reverse");
    FusionExecutorCache executor(*fusion, options);
    std::unique_ptr<PreparedRun> prepared = executor.prepare(state.arguments());
    for (int step = 0; step < 4; ++step) {
      prepared->launch();
      evaluate(*fusion, expected.arguments());
    }
    EXPECT_EQ(stateDifferences(state, expected), 0);
    EXPECT_EQ(state.buffers[4].as<float>()[0], expected.buffers[4].as<float>()[0]);
    // A bad argument is refused at prepare() time, before anything runs.
    std::vector<Argument> wrong = state.arguments();
    wrong.pop_back();
    EXPECT_THROW(executor.prepare(wrong), Error);
  }
}

TEST(CallerOutputs, PlainOutputsGoWhereTheCallerSaysAndAreChecked) {
  FusionDefinition fd("outputs");
  Val x = fd.defineTensor({-1}, DataType::Float, "x");
  Val y = fd.defineTensor({-1}, DataType::Float, "y");
  fd.addOutput(x * 2.0 + y);
  fd.addOutput(cast(x, DataType::BFloat16));
  auto fusion = fd.finalize();
  HostTensor a(DataType::Float, {1000}), b(DataType::Float, {1000});
  std::mt19937_64 random(5);
  fillRandom(a, random);
  fillRandom(b, random);
  std::vector<Argument> arguments = {a.ref(), b.ref()};
  EvaluationResult expected = evaluate(*fusion, arguments);
  for (std::string backend : {"host", "reference"}) {
    ExecutorOptions options;
    options.backend = backend;
    FusionExecutorCache executor(*fusion, options);
    HostTensor first(DataType::Float, {1000}), second(DataType::BFloat16, {1000});
    RunResult result = executor.run(arguments, {first.ref(), second.ref()});
    EXPECT_TRUE(result.outputs.empty());
    EXPECT_EQ(countDifferences(first, expected.outputs[0], "first"), 0);
    EXPECT_EQ(countDifferences(second, expected.outputs[1], "second"), 0);
    HostTensor wrongShape(DataType::Float, {999});
    try {
      executor.run(arguments, {wrongShape.ref(), second.ref()});
      ADD_FAILURE() << "no error for a wrongly shaped output";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("output 't1'"), std::string::npos) << error.what();
    }
    EXPECT_THROW(executor.run(arguments, {first.ref()}), Error);
  }
}

TEST(HostBackend, WrittenTensorsJoinedThroughAZeroDimValueMustShareTheirExtents) {
  // x and y are joined by the step counter both read (its write must follow every read, so
  // one kernel computes both) but their symbolic extents are bound separately.
  FusionDefinition fd("joined");
  Val a = fd.defineTensor({-1}, DataType::Float, "a");
  Val b = fd.defineTensor({-1}, DataType::Float, "b");
  Val step = fd.defineTensor({}, DataType::Float, "step");
  fd.copy_(step + 1.0, step);
  fd.addOutput(a * step);
  fd.addOutput(b * step);
  auto fusion = fd.finalize();
  HostTensor x(DataType::Float, {3}), y(DataType::Float, {13}), counter(DataType::Float, {});
  counter.as<float>()[0] = 2.0f;
  for (std::string backend : {"host", "reference"}) {
    ExecutorOptions options;
    options.backend = backend;
    FusionExecutorCache executor(*fusion, options);
    std::vector<Argument> arguments = {x.ref(), y.ref(), counter.ref()};
    if (backend == "reference") { // the evaluator has no iteration domain
      EXPECT_EQ(executor.run(arguments).outputs[1].numel(), 13);
      continue;
    }
    try {
      executor.run(arguments);
      ADD_FAILURE() << "no error for written tensors of shapes [3] and [13]";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("has shape [13] but"), std::string::npos)
          << error.what();
    }
    EXPECT_THROW(executor.prepare(arguments), Error);
    EXPECT_EQ(counter.as<float>()[0], 2.0f); // nothing ran
  }
}

TEST(HostBackend, AViewSpanning2To31ElementsIsIndexedWith64Bits) {
  // Two elements 2^31 elements apart (a strided view, as a column of a huge matrix is): the
  // span asks for 64-bit indices, and with 32-bit ones the second element's offset would
  // wrap. The 8 GiB of address space is reserved, not touched: only two pages are written.
  const int64_t stride = int64_t(1) << 31;
  size_t bytes = size_t(stride + 1) * sizeof(float);
  void* reserved = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED)
    GTEST_SKIP() << "cannot reserve " << bytes << " bytes of address space";
  auto* x = static_cast<float*>(reserved);
  x[0] = 1.5f;
  x[stride] = -3.25f;
  FusionDefinition fd("wide");
  Val view = fd.defineTensor({2}, DataType::Float, "x");
  fd.copy_(view * 2.0f + 1.0f, view); // in place, through the same 64-bit offsets
  auto fusion = fd.finalize();
  TensorRef argument{DataType::Float, {2}, {stride}, x};
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  executor.run({argument});
  EXPECT_EQ(x[0], 1.5f * 2.0f + 1.0f);
  EXPECT_EQ(x[stride], -3.25f * 2.0f + 1.0f);
  EXPECT_EQ(x[stride - 1], 0.0f); // the element a wrapped offset would be nearer
  ASSERT_NE(executor.lastCompiled(), nullptr);
  for (const KernelPlan& plan : executor.lastCompiled()->scheduled.plans)
    EXPECT_EQ(plan.indexBits, 64u) << plan.name;
  munmap(reserved, bytes);
}
