// Segmenting the seed Adam over N parameters of mixed shapes (the fusion is built once,
// outside the timed loop). Results go to docs/performance.md.

#include "segmenter/segment.h"
#include "tools/workloads/seed_adam.h"

#include <benchmark/benchmark.h>

namespace {

std::vector<widefuse::optim::Shape> mixedShapes(int64_t count) {
  const widefuse::optim::Shape pattern[] = {{768, 768}, {768}, {3072, 768}, {1}, {50257, 768}};
  std::vector<widefuse::optim::Shape> shapes;
  for (int64_t i = 0; i < count; ++i)
    shapes.push_back(pattern[i % 5]);
  return shapes;
}

void segmentAdam(benchmark::State& state) {
  auto fusion = widefuse::optim::buildSeedAdam(mixedShapes(state.range(0)));
  for (auto _ : state) {
    widefuse::SegmentedFusion segmented = widefuse::segment(*fusion);
    benchmark::DoNotOptimize(segmented.phases.data());
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(segmentAdam)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(4000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oN);

void buildAdam(benchmark::State& state) {
  auto shapes = mixedShapes(state.range(0));
  for (auto _ : state) {
    auto fusion = widefuse::optim::buildSeedAdam(shapes);
    benchmark::DoNotOptimize(fusion.get());
  }
}
BENCHMARK(buildAdam)->Arg(1000)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
