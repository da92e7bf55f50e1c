// The generated sources also compile with the host C++ compiler: NVRTC has no offsetof, so the
// member-table and parameter-block offsets of every plan are checked here (WF_CHECK_OFFSET
// static_asserts), and the prelude's host path and the host entry points compile, with the
// host backend's shim of CUDA built-ins, for every op.

#include "runtime/fusion_compiler.h"
#include "runtime/host_shim.h"
#include "tests/codegen/test_fusions.h"
#include "tests/support/file_contents.h"
#include "tests/support/mixed_shapes.h"
#include "tests/support/temp_dir.h"

#include "ir/parser.h"
#include "optim/seed_adam.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// Emits every kernel of `fusion` and runs `c++ -fsyntax-only` on shim + source.
void expectHostCompiles(const Fusion& fusion, SegmentationMode mode) {
  SCOPED_TRACE(fusion.name());
  KernelCache cache(KernelCacheOptions{std::nullopt, false});
  FusionCompileOptions options;
  options.mode = mode;
  options.emitOnly = true;
  CompiledFusion compiled = compileFusion(fusion, options, cache);
  TempDir directory;
  for (const FusionKernel& kernel : compiled.kernels) {
    std::string path = directory.file(kernel.plan->name + ".cpp");
    writeFile(path, hostShim().str() + "\n" + kernel.source);
    std::string log = directory.file("log.txt");
    std::string command = "c++ -std=c++17 -fsyntax-only -Wall -Wno-unknown-pragmas "
                          "-Wno-unused-variable -Wno-unused-but-set-variable '" +
                          path + "' >'" + log + "' 2>&1";
    int status = std::system(command.c_str());
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << kernel.plan->name << ":\n"
        << readFile(log);
    EXPECT_EQ(readFile(log), "") << kernel.plan->name << " compiled with warnings";
  }
}

} // namespace

TEST(HostSyntax, AdamKernelsWithEveryTableLayout) {
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Double}) {
    auto small = optim::buildSeedAdam(mixedShapes(3), dtype);
    expectHostCompiles(*small, SegmentationMode::Batched);      // table in parameters
    expectHostCompiles(*small, SegmentationMode::PerComponent); // one-entry table
    auto large = optim::buildSeedAdam(mixedShapes(1000), dtype);
    expectHostCompiles(*large, SegmentationMode::Batched); // table in device memory
  }
}

TEST(HostSyntax, PackedStridedAndEveryOp) {
  std::set<std::pair<DataType, DataType>> bitcasts;
  expectHostCompiles(*conversionsFusion(bitcasts), SegmentationMode::Packed);
  expectHostCompiles(*broadcastFusion(), SegmentationMode::Batched);
  for (DataType dtype : kAllDataTypes) {
    std::set<OpKind> covered;
    expectHostCompiles(*allOpsFusion(dtype, covered), SegmentationMode::Batched);
  }
}
