// A child process of kernel_cache_processes_test: waits until its start pipe closes (so that all
// children start compiling at once), compiles the test kernel through one of the two disk
// caches and checks the kernel it got. Exit status 0 when the kernel is right.
//
//   kernel_cache_child nvrtc|host CACHE_DIR START_FD

#include "runtime/cuda/cubin_cache.h"
#include "runtime/host/host_compiler.h"

#include "tests/runtime/runtime_test_support.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include <unistd.h>

using namespace widefuse;

namespace {

int compileWithNvrtc(const KernelCacheOptions& options) {
  CubinCache cache(options);
  CacheResult result = cache.compile(testing::addKernelSource("shared"), "shared", {});
  bool right = result.kernel->name == "shared" && !result.kernel->image.empty() &&
               result.kernel->ptx.find(".entry shared(") != std::string::npos;
  fmt::print("{}\n", cacheOutcomeName(result.outcome));
  return right ? 0 : 1;
}

int compileForTheHost(const KernelCacheOptions& options) {
  HostKernelCache cache(options);
  std::shared_ptr<const HostKernel> kernel =
      cache.compile(testing::hostKernelSource("shared"), "shared");
  int out[4] = {0, 0, 0, 0};
  int* parameters = out;
  kernel->runBlockFast(&parameters, 3, 4);
  return out[3] == testing::kHostKernelMagic + 3 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fmt::print(stderr, "usage: kernel_cache_child nvrtc|host CACHE_DIR START_FD\n");
    return 2;
  }
  char byte;
  while (read(std::atoi(argv[3]), &byte, 1) > 0) {
  }
  KernelCacheOptions options;
  options.directory = argv[2];
  try {
    return std::string(argv[1]) == "nvrtc" ? compileWithNvrtc(options) : compileForTheHost(options);
  } catch (const std::exception& error) {
    fmt::print(stderr, "error: {}\n", error.what());
    return 1;
  }
}
