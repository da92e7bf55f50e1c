// The seed's Adam on the GPU through FusionExecutorCache: GPT-2-like parameter shapes with
// the optimizer state in device memory, per-component (one kernel per parameter) against
// batched (one kernel for all), time per step and effective bandwidth (28 bytes moved per
// element). Skips without a CUDA device. Run by benchmarks/gpu/run.sh; results go to
// docs/performance.md.

#include "optim/seed_adam.h"
#include "runtime/cuda_device.h"
#include "runtime/fusion_executor.h"

#include <benchmark/benchmark.h>

namespace {

using namespace widefuse;

/// GPT-2 (124M) parameter shapes: embeddings, then 12 blocks of 12 tensors, final norm.
std::vector<optim::Shape> gpt2Shapes() {
  std::vector<optim::Shape> shapes = {{50257, 768}, {1024, 768}};
  for (int block = 0; block < 12; ++block)
    for (optim::Shape shape :
         {optim::Shape{768}, optim::Shape{768}, optim::Shape{768, 2304}, optim::Shape{2304},
          optim::Shape{768, 768}, optim::Shape{768}, optim::Shape{768}, optim::Shape{768},
          optim::Shape{768, 3072}, optim::Shape{3072}, optim::Shape{3072, 768}, optim::Shape{768}})
      shapes.push_back(shape);
  shapes.push_back({768});
  shapes.push_back({768});
  return shapes;
}

void adamOnDevice(benchmark::State& state) {
  if (!CudaDevice::available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const CudaDevice& device = CudaDevice::get();
  auto fusion = optim::buildSeedAdam(gpt2Shapes());
  std::vector<DeviceBuffer> buffers;
  std::vector<Argument> arguments;
  int64_t elements = 0;
  for (const Value* input : fusion->inputs()) {
    if (!input->isTensor())
      continue;
    int64_t count = numElements(input->extents());
    buffers.emplace_back(device, std::max<int64_t>(1, count) * 4);
    buffers.back().zero();
    TensorRef tensor{
        DataType::Float,
        llvm::SmallVector<int64_t, 4>(input->extents().begin(), input->extents().end()),
        contiguousStrides(input->extents()), buffers.back().pointer()};
    arguments.push_back(tensor);
    if (input->rank() > 0 && input->name()[0] == 'p')
      elements += count;
  }
  for (double scalar : {1e-3, 0.9, 0.999, 1e-8})
    arguments.push_back(ScalarArgument(scalar));
  ExecutorOptions options;
  options.backend = Backend::Cuda;
  options.mode = state.range(0) ? SegmentationMode::Batched : SegmentationMode::PerComponent;
  FusionExecutorCache executor(*fusion, options);
  executor.run(arguments);
  device.synchronizeContext();
  for (auto _ : state) {
    executor.run(arguments);
    device.synchronizeContext();
  }
  state.counters["kernels"] = double(executor.lastCompiled()->numLaunches());
  state.counters["bytes_per_second"] = benchmark::Counter(
      double(elements) * 28 * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(adamOnDevice)
    ->ArgName("batched")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

} // namespace

BENCHMARK_MAIN();
