// Adam on the GPU through FusionExecutorCache: torch's Adam step (tools/workloads/adam.h) for real
// parameter lists, the parameters, gradients and state in device memory, stepped through a
// PreparedRun as a training loop would. Per case (model x dtype) and segmentation mode it
// reports the time per step and the achieved bandwidth: 7 tensor accesses per element (read
// param, grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq), so 28 bytes per element
// in f32 and 14 in bf16.
//
// `cuda_benchmark --list-cases` prints the cases as JSON (name, dtype, shapes), so that
// benchmarks/gpu/torch_adam.py steps torch's optimizers over exactly the same tensors in the
// same run; benchmarks/gpu/report.py puts both side by side. Skips without a CUDA device.
// `--small-cases` swaps the cases for the `tiny` preset, for run.sh on the CUDA driver double.

#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_executor.h"
#include "tools/workloads/adam.h"
#include "tools/workloads/model_presets.h"

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <iostream>

namespace {

using namespace widefuse;

struct Case {
  std::string name;
  DataType dtype;
  std::vector<optim::Shape> shapes;
};

/// LLaMA-7B's embedding, its first `layers` decoder layers and the head: the same shapes as
/// the whole model at a size that leaves room for torch's copy in the same run.
std::vector<optim::Shape> llamaLayers(size_t layers) {
  const auto& all = optim::modelPreset("llama-7b").shapes; // embed, 32 x 9, norm, head
  std::vector<optim::Shape> shapes(all.begin(), all.begin() + 1 + 9 * layers);
  shapes.push_back(all.back());
  return shapes;
}

/// Many small tensors, where launches and per-tensor work dominate: 2000 parameters of
/// 64..262144 elements (layer norms, biases, small projections), 0.2 M elements on average.
std::vector<optim::Shape> manySmall() {
  const optim::Shape pattern[] = {{512, 512}, {512}, {2048}, {64, 64},
                                  {1000},     {3},   {768},  {128, 96}};
  std::vector<optim::Shape> shapes;
  for (size_t i = 0; i < 2000; ++i)
    shapes.push_back(pattern[i % 8]);
  return shapes;
}

/// Set by `--small-cases`: the driver double's emulator runs every kernel on the CPU, where the
/// real cases (up to 1.9 G elements) would take hours; the tiny preset (6 parameters, one empty)
/// takes milliseconds.
bool smallCases = false;

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    std::vector<Case> list;
    for (DataType dtype : {DataType::Float, DataType::BFloat16}) {
      std::string suffix = dtype == DataType::Float ? "f32" : "bf16";
      if (smallCases) {
        list.push_back({"tiny-" + suffix, dtype, optim::modelPreset("tiny").shapes});
        continue;
      }
      list.push_back({"gpt2-" + suffix, dtype, optim::modelPreset("gpt2").shapes});
      list.push_back({"llama7b-8layers-" + suffix, dtype, llamaLayers(8)});
      list.push_back({"small2000-" + suffix, dtype, manySmall()});
    }
    return list;
  }();
  return all;
}

/// Bytes one Adam step moves per parameter element.
size_t bytesPerElement(DataType dtype) {
  return 7 * byteSize(dtype);
}

void printCases() {
  nlohmann::json list = nlohmann::json::array();
  for (const Case& c : cases()) {
    nlohmann::json shapes = nlohmann::json::array();
    for (const optim::Shape& shape : c.shapes)
      shapes.push_back(std::vector<int64_t>(shape.begin(), shape.end()));
    list.push_back({{"name", c.name},
                    {"dtype", shortName(c.dtype).str()},
                    {"elements", optim::totalElements(c.shapes)},
                    {"bytes_per_step", optim::totalElements(c.shapes) * bytesPerElement(c.dtype)},
                    {"shapes", shapes}});
  }
  std::cout << list.dump() << "\n";
}

/// Every tensor input in device memory, filled with the byte 0x3c (f32 0.0115, bf16 0.0115:
/// finite, positive, no denormals), and the runtime scalars (their config's values).
struct DeviceArguments {
  std::vector<DeviceBuffer> buffers;
  std::vector<Argument> arguments;

  DeviceArguments(const CudaDevice& device, const optim::AdamFusion& adam) {
    for (size_t i = 0; i < adam.fusion->inputs().size(); ++i) {
      const Value* input = adam.fusion->inputs()[i];
      if (!input->isTensor()) {
        arguments.push_back(ScalarArgument(adam.inputs[i].value)); // a group's lr, betas, ...
        continue;
      }
      int64_t count = numElements(input->extents());
      buffers.emplace_back(device, size_t(count) * byteSize(input->dtype()));
      buffers.back().fill(0x3c);
      arguments.push_back(
          TensorRef{input->dtype(),
                    llvm::SmallVector<int64_t, 4>(input->extents().begin(), input->extents().end()),
                    contiguousStrides(input->extents()), buffers.back().pointer()});
    }
  }
};

/// Steps per timed iteration: enough that the final synchronisation costs little.
constexpr int kStepsPerIteration = 10;

/// A schedule to compare with the default (benchmarks/gpu/report.py's second table).
struct Variant {
  const char* name;
  ScheduleOptions schedule;
};

const Variant kVariants[] = {
    {"prefetch", {4, true}},
    {"prefetch-128-registers", {2, true}},
};

void adamStep(benchmark::State& state, const Case& c, SegmentationMode mode,
              const ScheduleOptions& schedule) {
  if (!CudaDevice::available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const CudaDevice& device = CudaDevice::get();
  optim::AdamConfig config;
  config.dtype = c.dtype;
  config.groups.push_back({c.shapes, {}});
  optim::AdamFusion adam = optim::buildAdam(config);
  DeviceArguments tensors(device, adam);
  ExecutorOptions options;
  options.backend = "cuda";
  options.mode = mode;
  options.schedule = schedule;
  FusionExecutorCache executor(*adam.fusion, options);
  std::unique_ptr<PreparedRun> prepared = executor.prepare(tensors.arguments);
  prepared->launch(); // loads the modules, uploads tables
  device.synchronizeContext();
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    for (int step = 0; step < kStepsPerIteration; ++step)
      prepared->launch();
    device.synchronizeContext();
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(elapsed.count() / kStepsPerIteration);
  }
  const CompiledFusion& compiled = *executor.lastCompiled();
  int64_t elements = optim::totalElements(c.shapes);
  state.counters["params"] = double(c.shapes.size());
  state.counters["launches"] = double(compiled.numLaunches());
  state.counters["registers"] = double(compiled.kernels.front().compiled->stats.registers);
  state.counters["blocks_per_sm"] =
      double(compiled.kernels.front().plan->minBlocksPerMultiprocessor);
  state.counters["bytes_per_second"] =
      benchmark::Counter(double(elements) * double(bytesPerElement(c.dtype)),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void registerAll() {
  for (const Case& c : cases())
    for (SegmentationMode mode : {SegmentationMode::Batched, SegmentationMode::PerComponent})
      benchmark::RegisterBenchmark(
          fmt::format("adam/{}/{}", c.name, modeName(mode).str()).c_str(),
          [&c, mode](benchmark::State& state) { adamStep(state, c, mode, {}); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
  // Other schedules, batched: what the defaults were chosen against.
  for (const Case& c : cases())
    for (const Variant& variant : kVariants)
      benchmark::RegisterBenchmark(fmt::format("schedule/{}/{}", c.name, variant.name).c_str(),
                                   [&c, &variant](benchmark::State& state) {
                                     adamStep(state, c, SegmentationMode::Batched,
                                              variant.schedule);
                                   })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
}

} // namespace

int main(int argc, char** argv) {
  bool listCases = false;
  int kept = 1; // our own flags are taken out; Google Benchmark parses the rest
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--list-cases") == 0)
      listCases = true;
    else if (std::strcmp(argv[i], "--small-cases") == 0)
      smallCases = true;
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  if (listCases) {
    printCases();
    return 0;
  }
  registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
