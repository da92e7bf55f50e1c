// The kernels of the reductions users run, as NVRTC compiles them for an H100/H200 (sm_90): no
// stack frame and no spills, and a combine whose dependent chain stays within
// ceil(partials / 256) + 8 steps (docs/reductions.md §10). A stack frame reserves local memory
// for every resident thread at the first launch (hundreds of MB, an out-of-memory error when
// torch's allocator holds the GPU); a spill makes a bandwidth-bound step wait on local memory.
// The corpus: clipped AdamW with GradScaler's inf check on GPT-2 and LLaMA-7B shapes in every
// segmentation mode, and a packed file of every reduction op, scope and accumulator type.
// Adafactor on GPT-2 is checked from Python (test_kernel_stats.py), where it is traced.

#include "ir/parser.h"
#include "runtime/cuda/fusion_cubins.h"
#include "runtime/fusion_compiler.h"
#include "tools/workloads/adam.h"
#include "tools/workloads/model_presets.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <llvm/Support/MathExtras.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

using namespace widefuse;

namespace {

/// Compiles `fusion` for sm_90 in `mode` and checks every kernel's ptxas statistics.
void expectNoStackAndNoSpills(const Fusion& fusion, SegmentationMode mode,
                              const std::string& what) {
  FusionCompileOptions options;
  options.mode = mode;
  options.device = deviceForArch("sm_90");
  CubinCache cache(KernelCacheOptions{std::nullopt, /*useDisk=*/false});
  CompiledFusion compiled = compileFusionToCubins(fusion, options, cache);
  ASSERT_FALSE(compiled.kernels.empty()) << what;
  for (const FusionKernel& kernel : compiled.kernels) {
    const KernelStats& stats = kernel.compiled->stats;
    EXPECT_GT(stats.registers, 0) << what << ": no ptxas statistics for " << kernel.plan->name;
    EXPECT_EQ(stats.stackBytes, 0) << what << ": kernel " << kernel.plan->name << " has a "
                                   << stats.stackBytes << "-byte stack frame";
    EXPECT_EQ(stats.spillBytes(), 0)
        << what << ": kernel " << kernel.plan->name << " spills " << stats.spillBytes()
        << " bytes with " << stats.registers << " registers";
  }
}

/// A clipped AdamW step with GradScaler's inf check over `shapes`.
optim::AdamConfig clippedAdamW(const std::vector<optim::Shape>& shapes, DataType dtype) {
  optim::AdamConfig config;
  config.dtype = dtype;
  config.groups.push_back({shapes, {}});
  config.groups[0].hyper.weightDecay = 0.01;
  config.decay = optim::WeightDecayKind::Decoupled;
  config.maxGradNorm = 1.0;
  config.gradScale = true;
  config.computeFoundInf = true;
  if (dtype != DataType::Float)
    config.masterWeights = optim::MasterWeights::Fp32;
  return config;
}

TEST(ReductionKernelStats, ClippedAdamWWithTheInfCheckOnGpt2InEveryMode) {
  const std::vector<optim::Shape>& shapes = optim::modelPreset("gpt2").shapes;
  for (DataType dtype : {DataType::Float, DataType::BFloat16})
    for (SegmentationMode mode : {SegmentationMode::PerComponent, SegmentationMode::Batched,
                                  SegmentationMode::Packed, SegmentationMode::Auto}) {
      optim::AdamFusion adam = optim::buildAdam(clippedAdamW(shapes, dtype));
      expectNoStackAndNoSpills(
          *adam.fusion, mode,
          fmt::format("gpt2 {} {}", shortName(dtype).str(), modeName(mode).str()));
    }
}

TEST(ReductionKernelStats, ClippedAdamWWithTheInfCheckOnLlama7b) {
  const std::vector<optim::Shape>& shapes = optim::modelPreset("llama-7b").shapes;
  for (SegmentationMode mode : {SegmentationMode::Batched, SegmentationMode::Packed}) {
    optim::AdamFusion adam = optim::buildAdam(clippedAdamW(shapes, DataType::BFloat16));
    expectNoStackAndNoSpills(*adam.fusion, mode, "llama-7b bf16 " + modeName(mode).str());
  }
}

/// A fusion of the corpus directory, by file name.
std::unique_ptr<Fusion> corpusFusion(const std::string& name) {
  std::ifstream file(WIDEFUSE_SOURCE_DIR "/tests/tools/workloads/kernel_stats/" + name);
  if (!file)
    throw std::runtime_error(name + " is missing");
  std::stringstream text;
  text << file.rdbuf();
  return parseFusion(text.str(), name);
}

TEST(ReductionKernelStats, EveryReductionPackedInOneKernel) {
  std::unique_ptr<Fusion> fusion = corpusFusion("every_reduction.wf");
  expectNoStackAndNoSpills(*fusion, SegmentationMode::Packed, "every_reduction.wf");
}

TEST(ReductionKernelStats, EveryBlockReductionPackedInOneKernel) {
  // Scaled state in place by blocks of 256 and 128 (a short last block in a [?, 4097] member)
  // beside every op over blocks of 2 to 1024.
  std::unique_ptr<Fusion> fusion = corpusFusion("every_block.wf");
  expectNoStackAndNoSpills(*fusion, SegmentationMode::Packed, "every_block.wf");
  expectNoStackAndNoSpills(*fusion, SegmentationMode::Batched, "every_block.wf");
}

TEST(ReductionKernelStats, TheCombineChainOfTheLargestMembersIsBounded) {
  // The partials of each parameter's norm and the operands of the global norm, from the plan's
  // chunk size: GPT-2's wte gives 37,693 chunks, LLaMA-7B's embedding 128,000.
  for (llvm::StringRef model : {"gpt2", "llama-7b"}) {
    const std::vector<optim::Shape>& shapes = optim::modelPreset(model).shapes;
    optim::AdamFusion adam = optim::buildAdam(clippedAdamW(shapes, DataType::Float));
    FusionCompileOptions options;
    options.mode = SegmentationMode::Packed;
    options.device = deviceForArch("sm_90");
    CompiledFusion compiled = compileFusion(*adam.fusion, options);
    int64_t chunkElements = 0;
    for (const KernelPlan& plan : compiled.scheduled.plans)
      for (const BodyPlan& body : plan.bodies)
        if (!body.reductions.empty() && !body.reducesRows)
          chunkElements = body.chunkElements;
    ASSERT_GT(chunkElements, 0) << model.str() << ": no reducing body";
    std::vector<int64_t> counts = {int64_t(shapes.size())}; // the global level's operands
    for (const optim::Shape& shape : shapes) {
      int64_t elements = 1;
      for (int64_t extent : shape)
        elements *= extent;
      counts.push_back(std::max<int64_t>(1, llvm::divideCeil(elements, chunkElements)));
    }
    for (int64_t partials : counts)
      EXPECT_LE(combineSteps(partials, 256), llvm::divideCeil(partials, 256) + 8)
          << model.str() << ": " << partials << " partials";
    EXPECT_EQ(*std::max_element(counts.begin(), counts.end()), model == "gpt2" ? 37693 : 128000);
  }
}

} // namespace
