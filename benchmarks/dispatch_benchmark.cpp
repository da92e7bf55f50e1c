// The runtime's steady state for the seed's Adam over N parameters, up to the launch call
// (backend none, nothing launched): one run() with the same tensors as the step before (the
// arguments are compared with the last accepted ones; the entry and its launch bindings are
// reused), and one PreparedRun::launch() (not even the comparison). Then the host backend's
// throughput running the generated kernels on CPU threads. Results go to docs/performance.md.

#include "runtime/fusion_executor.h"
#include "tools/workloads/seed_adam.h"

#include <benchmark/benchmark.h>

#include <thread>

namespace {

using namespace widefuse;

/// GPT-2-like shapes without the embedding, small enough that 1000 parameters fit in memory
/// (dispatch does not depend on tensor sizes).
std::vector<optim::Shape> mixedShapes(int64_t count) {
  const optim::Shape pattern[] = {{768, 768}, {768}, {3072, 768}, {1}, {64, 768}};
  std::vector<optim::Shape> shapes;
  for (int64_t i = 0; i < count; ++i)
    shapes.push_back(count > 100 ? optim::Shape{16, 16} : pattern[i % 5]);
  return shapes;
}

/// The seed Adam's tensors (zeros; steps at 0) and scalars.
struct AdamTensors {
  std::vector<HostTensor> tensors;
  std::vector<Argument> arguments;
  int64_t elements = 0;
  explicit AdamTensors(const Fusion& fusion) {
    for (const Value* input : fusion.inputs())
      if (input->isTensor()) {
        tensors.emplace_back(input->dtype(), input->extents());
        elements += input->extents().empty() ? 0 : tensors.back().numel();
      }
    for (HostTensor& tensor : tensors)
      arguments.push_back(tensor.ref());
    for (double scalar : {1e-3, 0.9, 0.999, 1e-8})
      arguments.push_back(ScalarArgument(scalar));
  }
};

/// Batched Adam up to the launch call (backend none).
ExecutorOptions dispatchOnly() {
  ExecutorOptions options;
  options.backend = "none";
  options.mode = SegmentationMode::Batched;
  return options;
}

void dispatch(benchmark::State& state) {
  auto fusion = optim::buildSeedAdam(mixedShapes(state.range(0)));
  AdamTensors adam(*fusion);
  FusionExecutorCache executor(*fusion, dispatchOnly());
  executor.run(adam.arguments); // compiles and binds once
  for (auto _ : state)
    benchmark::DoNotOptimize(executor.run(adam.arguments));
}
BENCHMARK(dispatch)->Arg(1)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

/// The same through a PreparedRun: the caller keeps the tensors in place, so no argument is
/// compared and dispatch does not grow with N.
void preparedDispatch(benchmark::State& state) {
  auto fusion = optim::buildSeedAdam(mixedShapes(state.range(0)));
  AdamTensors adam(*fusion);
  FusionExecutorCache executor(*fusion, dispatchOnly());
  std::unique_ptr<PreparedRun> prepared = executor.prepare(adam.arguments);
  prepared->launch();
  for (auto _ : state)
    benchmark::DoNotOptimize(prepared->launch());
}
BENCHMARK(preparedDispatch)->Arg(1)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

void hostThroughput(benchmark::State& state) {
  // 20 parameters of up to 3072x768: about 13M elements per step.
  auto fusion = optim::buildSeedAdam(mixedShapes(20));
  AdamTensors adam(*fusion);
  ExecutorOptions options;
  options.backend = "host";
  options.mode = SegmentationMode::Batched;
  options.host.threads = unsigned(state.range(0));
  FusionExecutorCache executor(*fusion, options);
  executor.run(adam.arguments);
  for (auto _ : state)
    executor.run(adam.arguments);
  state.counters["elements_per_second"] = benchmark::Counter(
      double(adam.elements / 4) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(hostThroughput)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
