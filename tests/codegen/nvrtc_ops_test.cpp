// Every op of the IR, in every dtype its typing rule accepts, on both code paths (per
// element and once per chunk), plus every cast and bitcast pair, broadcast_in_dim and every
// codebook: the
// generated kernels must compile with NVRTC for sm_80 and sm_90 within their register cap.
// No GPU is needed. These kernels hold ~100 outputs each, far more live values than a real
// fusion, so spills are allowed here; the optimizer kernels' spill-free budget is checked in
// tests/runtime/fusion_compiler_test.cpp and tests/tools/workloads/adam_kernel_stats_test.cpp.

#include "runtime/cuda/fusion_cubins.h"
#include "runtime/fusion_compiler.h"

#include "tests/codegen/test_fusions.h"

#include <gtest/gtest.h>

#include <set>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// Compiles every kernel of `fusion` for `arch`.
void expectCompiles(const Fusion& fusion, llvm::StringRef arch, SegmentationMode mode) {
  SCOPED_TRACE(fmt::format("{} for {}", fusion.name(), arch.str()));
  CubinCache cache(KernelCacheOptions{std::nullopt, /*useDisk=*/false});
  FusionCompileOptions options;
  options.mode = mode;
  options.device = deviceForArch(arch);
  CompiledFusion compiled = compileFusionToCubins(fusion, options, cache);
  ASSERT_FALSE(compiled.kernels.empty());
  for (const FusionKernel& kernel : compiled.kernels) {
    ASSERT_TRUE(kernel.compiled);
    EXPECT_FALSE(kernel.compiled->image.empty());
    EXPECT_GT(kernel.compiled->stats.registers, 0) << kernel.plan->name;
    // The register cap of the blocks per multiprocessor the kernel ended up compiled for
    // (compileFusion lowers it while a kernel spills).
    EXPECT_LE(kernel.compiled->stats.registers, int(registerCap(*kernel.plan)))
        << kernel.plan->name;
  }
}

} // namespace

class EveryOpCompiles : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryOpCompiles, InEveryDtypeOnBothPaths) {
  std::set<OpKind> covered;
  std::set<DataType> dtypesWithOps;
  for (DataType dtype : kAllDataTypes) {
    std::set<OpKind> ops;
    auto fusion = allOpsFusion(dtype, ops);
    covered.insert(ops.begin(), ops.end());
    if (!ops.empty())
      dtypesWithOps.insert(dtype);
    expectCompiles(*fusion, GetParam(), SegmentationMode::Batched);
  }
  for (OpKind op : kAllOps)
    if (!isStructural(op))
      EXPECT_TRUE(covered.count(op)) << opName(op).str() << " was not emitted in any dtype";
  EXPECT_EQ(dtypesWithOps.size(), std::size(kAllDataTypes));
}

TEST_P(EveryOpCompiles, EveryCastBitcastAndBroadcast) {
  std::set<std::pair<DataType, DataType>> bitcasts;
  auto conversions = conversionsFusion(bitcasts);
  EXPECT_GE(bitcasts.size(), 20u); // f32/i32/u32, f64/i64, f16/bf16/i16/u16, i8/u8
  expectCompiles(*conversions, GetParam(), SegmentationMode::Packed);
  expectCompiles(*broadcastFusion(), GetParam(), SegmentationMode::Batched);
  expectCompiles(*codebookFusion(), GetParam(), SegmentationMode::Batched);
  expectCompiles(*elementIndexFusion(), GetParam(), SegmentationMode::Packed);
  expectCompiles(*packedPairsFusion(4096), GetParam(), SegmentationMode::Packed);
}

INSTANTIATE_TEST_SUITE_P(Arch, EveryOpCompiles, ::testing::Values("sm_80", "sm_90"));
