// Compiling the seed Adam's batched kernel for N parameters of mixed shapes: cold (segment,
// schedule, emit and NVRTC, with an empty memory-only cache) and warm (a fresh process-like
// cache that finds the cubin on disk). The fusion is built outside the timed loop. Also the host
// backend's compile of the same kernel, with and without the precompiled prelude. Results go
// to docs/performance.md.

#include "runtime/cuda/fusion_cubins.h"
#include "runtime/fusion_compiler.h"
#include "runtime/host/host_compiler.h"
#include "tools/workloads/seed_adam.h"

#include <benchmark/benchmark.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>

namespace {

using namespace widefuse;

std::vector<optim::Shape> mixedShapes(int64_t count) {
  const optim::Shape pattern[] = {{768, 768}, {768}, {3072, 768}, {1}, {50257, 768}};
  std::vector<optim::Shape> shapes;
  for (int64_t i = 0; i < count; ++i)
    shapes.push_back(pattern[i % 5]);
  return shapes;
}

FusionCompileOptions batched() {
  FusionCompileOptions options;
  options.mode = SegmentationMode::Batched;
  return options;
}

/// Loads NVRTC once so that its dlopen is not charged to the first measurement.
void warmUpNvrtc() {
  static bool done = [] {
    CubinCache cache(KernelCacheOptions{std::nullopt, false});
    auto fusion = optim::buildSeedAdam(mixedShapes(1));
    compileFusionToCubins(*fusion, batched(), cache);
    return true;
  }();
  (void)done;
}

void coldCompile(benchmark::State& state) {
  warmUpNvrtc();
  auto fusion = optim::buildSeedAdam(mixedShapes(state.range(0)));
  for (auto _ : state) {
    CubinCache cache(KernelCacheOptions{std::nullopt, /*useDisk=*/false});
    CompiledFusion compiled = compileFusionToCubins(*fusion, batched(), cache);
    benchmark::DoNotOptimize(compiled.kernels.data());
    if (compiled.kernels.size() != 1 || compiled.kernels[0].cache != CacheOutcome::Miss)
      state.SkipWithError("expected one compiled kernel");
  }
}
BENCHMARK(coldCompile)->Arg(1)->Arg(100)->Arg(1000)->Iterations(3)->Unit(benchmark::kMillisecond);

void warmDiskCacheHit(benchmark::State& state) {
  warmUpNvrtc();
  llvm::SmallString<128> directory;
  llvm::sys::fs::createUniqueDirectory("widefuse-benchmark-cache", directory);
  auto fusion = optim::buildSeedAdam(mixedShapes(state.range(0)));
  {
    CubinCache fill(KernelCacheOptions{directory.str().str(), true});
    compileFusionToCubins(*fusion, batched(), fill);
  }
  for (auto _ : state) {
    CubinCache cache(KernelCacheOptions{directory.str().str(), true});
    CompiledFusion compiled = compileFusionToCubins(*fusion, batched(), cache);
    benchmark::DoNotOptimize(compiled.kernels.data());
    if (compiled.kernels[0].cache != CacheOutcome::DiskHit)
      state.SkipWithError("expected a disk-cache hit");
  }
  llvm::sys::fs::remove_directories(directory);
}
BENCHMARK(warmDiskCacheHit)->Arg(1)->Arg(1000)->Unit(benchmark::kMillisecond);

void emitOnly(benchmark::State& state) {
  auto fusion = optim::buildSeedAdam(mixedShapes(state.range(0)));
  for (auto _ : state) {
    CompiledFusion compiled = compileFusion(*fusion, batched());
    benchmark::DoNotOptimize(compiled.kernels.data());
  }
}
BENCHMARK(emitOnly)->Arg(1)->Arg(1000)->Unit(benchmark::kMillisecond);

/// The host compiler building the seed Adam's batched kernel (100 parameters) into a shared
/// object: arg 0 from the plain text (a memory-only cache, which precompiles nothing), arg 1
/// with the host and device preludes precompiled, as every kernel after a cache directory's first
/// finds them (the records are removed before each iteration; the prelude's files stay).
void hostCompile(benchmark::State& state) {
  bool precompiled = state.range(0) == 1;
  auto fusion = optim::buildSeedAdam(mixedShapes(100));
  CompiledFusion emitted = compileFusion(*fusion, batched());
  const std::string& source = emitted.kernels[0].source;
  const std::string& name = emitted.kernels[0].plan->name;
  llvm::SmallString<128> directory;
  llvm::sys::fs::createUniqueDirectory("widefuse-benchmark-host", directory);
  KernelCacheOptions cacheOptions{std::nullopt, false};
  if (precompiled)
    cacheOptions = KernelCacheOptions{directory.str().str(), true};
  if (precompiled)
    HostKernelCache(cacheOptions).compile(source, name); // builds the prelude's files
  std::string records = (directory + "/host").str();
  for (auto _ : state) {
    state.PauseTiming();
    std::error_code error;
    for (llvm::sys::fs::directory_iterator file(records, error), end; !error && file != end;
         file.increment(error))
      if (llvm::StringRef(file->path()).endswith(".wfhost"))
        llvm::sys::fs::remove(file->path());
    state.ResumeTiming();
    HostKernelCache cache(cacheOptions);
    benchmark::DoNotOptimize(cache.compile(source, name).get());
  }
  llvm::sys::fs::remove_directories(directory);
}
BENCHMARK(hostCompile)->Arg(0)->Arg(1)->Iterations(5)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
