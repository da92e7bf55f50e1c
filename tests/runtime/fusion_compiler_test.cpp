// The compile pipeline on the seed's Adam for 1000 parameters of mixed shapes: batched is one
// NVRTC compile of a spill-free kernel with 16-byte accesses, per-component mode compiles one
// body for all members, the disk cache serves a second process, and every dump is written.

#include "runtime/cuda/fusion_cubins.h"
#include "runtime/fusion_compiler.h"
#include "tests/support/mixed_shapes.h"
#include "tests/support/temp_dir.h"

#include "tools/workloads/seed_adam.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

using namespace widefuse;

namespace {

/// Model-sized shapes with a 1-element, a 0-element and odd-sized members.
std::vector<optim::Shape> mixedShapes(size_t count) {
  const optim::Shape pattern[] = {{1024, 1024}, {4096}, {1}, {0}, {3, 5, 2}, {4097}, {768, 3072}};
  return widefuse::testing::mixedShapes(count, pattern);
}

CubinCache memoryCache() {
  return CubinCache(KernelCacheOptions{std::nullopt, /*useDisk=*/false});
}

FusionCompileOptions optionsFor(SegmentationMode mode) {
  FusionCompileOptions options;
  options.mode = mode;
  return options;
}

/// True when the PTX moves 16 bytes per load and per store somewhere (the aligned path).
bool hasVectorAccesses(const std::string& ptx) {
  static const std::regex load(R"(ld\.global(\.nc)?\.v4\.(f32|b32|u32))");
  static const std::regex store(R"(st\.global\.v4\.(f32|b32|u32))");
  return std::regex_search(ptx, load) && std::regex_search(ptx, store);
}

/// How often compileFusion recompiled a plan's kernel because it spilled.
size_t recompilations(const KernelPlan& plan) {
  return size_t(llvm::count_if(plan.notes, [](const std::string& note) {
    return llvm::StringRef(note).contains("compiled again");
  }));
}

} // namespace

class AdamThousandParameters : public ::testing::TestWithParam<DataType> {};

TEST_P(AdamThousandParameters, BatchedIsOneSpillFreeCompileWithSixteenByteAccesses) {
  auto fusion = optim::buildSeedAdam(mixedShapes(1000), GetParam());
  CubinCache cache = memoryCache();
  CompiledFusion compiled =
      compileFusionToCubins(*fusion, optionsFor(SegmentationMode::Batched), cache);
  EXPECT_EQ(compiled.numLaunches(), 1u);
  ASSERT_EQ(compiled.kernels.size(), 1u);
  const FusionKernel& kernel = compiled.kernels[0];
  EXPECT_EQ(cache.memoryRecords(), 1u + recompilations(*kernel.plan)); // one kernel
  EXPECT_EQ(kernel.cache, CacheOutcome::Miss);
  EXPECT_EQ(kernel.compiled->stats.spillBytes(), 0);
  EXPECT_EQ(kernel.compiled->stats.stackBytes, 0);
  EXPECT_GT(kernel.compiled->stats.registers, 0);
  EXPECT_LE(kernel.compiled->stats.registers, int(registerCap(*kernel.plan)));
  EXPECT_EQ(widestAccessBytes(*kernel.plan), 16u);
  EXPECT_TRUE(hasVectorAccesses(kernel.compiled->ptx));
  EXPECT_EQ(kernel.plan->tableLocation, TableLocation::DeviceMemory);
}

TEST_P(AdamThousandParameters, PerComponentCompilesOneBodyForAllMembers) {
  auto fusion = optim::buildSeedAdam(mixedShapes(1000), GetParam());
  CubinCache cache = memoryCache();
  CompiledFusion compiled =
      compileFusionToCubins(*fusion, optionsFor(SegmentationMode::PerComponent), cache);
  EXPECT_EQ(compiled.numLaunches(), 1000u);
  ASSERT_EQ(compiled.kernels.size(), 1u);
  EXPECT_EQ(compiled.kernels[0].launches, 1000u);
  EXPECT_EQ(cache.memoryRecords(), 1u + recompilations(*compiled.kernels[0].plan));
  EXPECT_EQ(compiled.kernels[0].compiled->stats.spillBytes(), 0);
  EXPECT_EQ(compiled.kernels[0].plan->tableCapacity, 1u);
}

INSTANTIATE_TEST_SUITE_P(Dtype, AdamThousandParameters,
                         ::testing::Values(DataType::Float, DataType::BFloat16),
                         [](const auto& info) { return shortName(info.param).str(); });

TEST(FusionCompiler, ASecondProcessLoadsTheKernelFromDisk) {
  TempDir directory;
  auto fusion = optim::buildSeedAdam(mixedShapes(3));
  std::string firstSource;
  {
    CubinCache cache(KernelCacheOptions{directory.path(), true});
    CompiledFusion first =
        compileFusionToCubins(*fusion, optionsFor(SegmentationMode::Batched), cache);
    EXPECT_EQ(first.kernels[0].cache, CacheOutcome::Miss);
    firstSource = first.kernels[0].source;
  }
  CubinCache fresh(KernelCacheOptions{directory.path(), true});
  CompiledFusion second =
      compileFusionToCubins(*fusion, optionsFor(SegmentationMode::Batched), fresh);
  EXPECT_EQ(second.kernels[0].cache, CacheOutcome::DiskHit);
  EXPECT_EQ(second.kernels[0].source, firstSource); // codegen is deterministic
  EXPECT_FALSE(second.kernels[0].compiled->image.empty());
}

TEST(FusionCompiler, DumpsEveryStageIntoTheDumpDirectory) {
  TempDir directory;
  auto fusion = optim::buildSeedAdam(mixedShapes(2));
  FusionCompileOptions options = optionsFor(SegmentationMode::Batched);
  options.dumps = parseDumpList("fusion,segments,cuda,ptx,plan");
  options.dumps.directory = directory.path();
  CubinCache cache = memoryCache();
  CompiledFusion compiled = compileFusionToCubins(*fusion, options, cache);
  std::string kernel = compiled.kernels[0].plan->name;
  for (std::string file : {std::string("adam_step.wf"), std::string("adam_step.segments.txt"),
                           kernel + ".cu", kernel + ".ptx", kernel + ".plan.txt"})
    EXPECT_TRUE(std::filesystem::exists(directory.file(file))) << file;
  EXPECT_EQ(std::filesystem::file_size(directory.file(kernel + ".cu")),
            compiled.kernels[0].source.size());
}

TEST(FusionCompiler, DumpListsAreCheckedAndEmitOnlySkipsNvrtc) {
  EXPECT_TRUE(parseDumpList("all").plan);
  EXPECT_TRUE(parseDumpList(" cuda , ptx ").ptx);
  EXPECT_FALSE(parseDumpList("").any());
  try {
    parseDumpList("cuda,asm");
    ADD_FAILURE() << "no error for an unknown dump item";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("unknown item 'asm'"), std::string::npos);
  }
  auto fusion = optim::buildSeedAdam(mixedShapes(2));
  // Lowering stops at the sources: NVRTC is the CUDA backend's compile step.
  CompiledFusion compiled = compileFusion(*fusion, optionsFor(SegmentationMode::Batched));
  EXPECT_EQ(compiled.kernels[0].compiled, nullptr);
  EXPECT_NE(compiled.kernels[0].source.find("extern \"C\" __global__"), std::string::npos);
}
