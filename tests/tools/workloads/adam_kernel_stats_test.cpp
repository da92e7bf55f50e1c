// Every Adam kernel of optim::buildAdam (structurally widefuse.optim's), as NVRTC compiles it
// for an H100/H200 (sm_90): no register spills and no stack frame. A spill turns a bandwidth-bound
// optimizer step into one bound by local memory traffic, so each configuration users can ask for is
// compiled and its ptxas statistics checked (no GPU needed: NVRTC runs on any machine). Mixed
// precision (bf16/f16 parameters with f32 masters, remainders or state) keeps 16-byte accesses of
// its 2-byte tensors.

#include "runtime/cuda/fusion_cubins.h"
#include "runtime/fusion_compiler.h"
#include "tools/workloads/adam.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

using namespace widefuse;

namespace {

/// The shapes decide only flat vs. 0-d bodies; two parameters and a 0-d one cover both.
optim::AdamConfig configFor(DataType dtype, unsigned variant) {
  optim::AdamConfig config;
  config.dtype = dtype;
  config.groups.push_back({{{1024, 768}, {768}, {}}, {}});
  config.decay = variant & 1 ? optim::WeightDecayKind::Decoupled : optim::WeightDecayKind::L2;
  config.groups[0].hyper.weightDecay = variant & 2 ? 0.01 : 0;
  config.amsgrad = variant & 4;
  config.capturable = variant & 8;
  config.maximize = variant & 16;
  bool amp = variant & 32;
  config.gradScale = amp;
  config.foundInf = amp;
  if (variant & 64) { // a second group with other hyperparameters (its own runtime scalars)
    config.groups.push_back(config.groups[0]);
    config.groups[1].hyper.beta1 = 0.8;
    config.groups[1].hyper.weightDecay = variant & 2 ? 0.05 : 0;
  }
  return config;
}

std::string describe(DataType dtype, unsigned variant) {
  return fmt::format("{} {}{}{}{}{}{}{}", shortName(dtype).str(), variant & 1 ? "adamw" : "adam",
                     variant & 2 ? " +decay" : "", variant & 4 ? " +amsgrad" : "",
                     variant & 8 ? " +capturable" : "", variant & 16 ? " +maximize" : "",
                     variant & 32 ? " +amp" : "", variant & 64 ? " +2 groups" : "");
}

TEST(AdamKernelStats, EveryConfigurationCompilesForSm90WithoutSpills) {
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Half})
    for (unsigned variant = 0; variant < 128; ++variant) {
      // Every option alone and every option together, per dtype: 9 of the 128 variants.
      if (variant != 127 && (variant & (variant - 1)) != 0)
        continue;
      optim::AdamFusion adam = optim::buildAdam(configFor(dtype, variant));
      FusionCompileOptions options;
      options.mode = SegmentationMode::Batched;
      options.device = deviceForArch("sm_90");
      CubinCache cache(KernelCacheOptions{std::nullopt, /*useDisk=*/false});
      CompiledFusion compiled = compileFusionToCubins(*adam.fusion, options, cache);
      for (const FusionKernel& kernel : compiled.kernels) {
        const KernelStats& stats = kernel.compiled->stats;
        EXPECT_EQ(stats.spillBytes(), 0)
            << describe(dtype, variant) << ": kernel " << kernel.plan->name << " uses "
            << stats.registers << " registers and spills " << stats.spillStoreBytes
            << " bytes (stores) / " << stats.spillLoadBytes << " (loads)";
        EXPECT_GT(stats.registers, 0) << describe(dtype, variant) << ": no ptxas statistics";
        // No local memory either, the inf check's combine included (+amp).
        EXPECT_EQ(stats.stackBytes, 0)
            << describe(dtype, variant) << ": kernel " << kernel.plan->name << " has a stack frame";
      }
    }
}

TEST(AdamKernelStats, MixedPrecisionUses16ByteAccessesWithoutSpills) {
  using optim::MasterWeights;
  struct Mixed {
    DataType param;
    std::optional<DataType> grad, state;
    MasterWeights master;
  };
  for (Mixed mixed : {Mixed{DataType::BFloat16, {}, {}, MasterWeights::Fp32},
                      Mixed{DataType::BFloat16, {}, {}, MasterWeights::Remainders},
                      Mixed{DataType::BFloat16, {}, DataType::BFloat16, MasterWeights::Remainders},
                      Mixed{DataType::BFloat16, DataType::Float, {}, MasterWeights::None},
                      Mixed{DataType::Half, DataType::Float, {}, MasterWeights::Fp32}})
    for (unsigned variant : {0u, 4u, 127u}) {
      optim::AdamConfig config = configFor(mixed.param, variant);
      config.gradDtype = mixed.grad;
      config.stateDtype = mixed.state;
      config.masterWeights = mixed.master;
      std::string what = fmt::format("{} master {} {}", describe(mixed.param, variant),
                                     optim::masterWeightsName(mixed.master).str(),
                                     shortName(optim::adamStateDtype(config)).str());
      optim::AdamFusion adam = optim::buildAdam(config);
      FusionCompileOptions options;
      options.mode = SegmentationMode::Batched;
      options.device = deviceForArch("sm_90");
      CubinCache cache(KernelCacheOptions{std::nullopt, /*useDisk=*/false});
      CompiledFusion compiled = compileFusionToCubins(*adam.fusion, options, cache);
      unsigned widest = 0; // of the flat bodies: a 0-d parameter's moves one element
      for (const FusionKernel& kernel : compiled.kernels) {
        EXPECT_EQ(kernel.compiled->stats.spillBytes(), 0) << what;
        for (const BodyPlan& body : kernel.plan->bodies)
          widest = std::max(widest, body.vectorElements);
      }
      EXPECT_EQ(widest, 8u) << what << ": 2-byte tensors move 16 bytes per access";
    }
}

} // namespace
