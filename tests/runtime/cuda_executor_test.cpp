// The CUDA backend end to end (needs a GPU; skips without one): the seed's Adam over awkward
// shapes through FusionExecutorCache, host tensors staged through device memory, compared
// with the reference evaluator. On the device, libdevice's powf and sqrtf may differ from
// glibc in the last place, so the comparison allows a relative 1e-5; with fmad off every
// other operation rounds as the reference does.

#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_executor.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "tools/workloads/seed_adam.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace widefuse;

TEST(CudaExecutor, SeedAdamMatchesTheReferenceInEveryMode) {
  if (!CudaDevice::available())
    GTEST_SKIP() << "no CUDA device";
  std::vector<optim::Shape> shapes = {{0}, {1}, {3}, {4097}, {65537}, {1000003}, {64, 32}};
  auto fusion = optim::buildSeedAdam(shapes);
  for (SegmentationMode mode :
       {SegmentationMode::PerComponent, SegmentationMode::Batched, SegmentationMode::Packed}) {
    std::vector<HostTensor> device, reference;
    std::mt19937 random(3);
    std::normal_distribution<float> normal;
    for (const Value* input : fusion->inputs())
      if (input->isTensor()) {
        HostTensor tensor(input->dtype(), input->extents());
        bool isStep = input->rank() == 0;
        for (int64_t i = 0; i < tensor.numel(); ++i)
          tensor.as<float>()[i] = isStep ? 2.0f : std::fabs(normal(random));
        device.push_back(tensor);
        reference.push_back(tensor);
      }
    auto arguments = [](std::vector<HostTensor>& tensors) {
      std::vector<Argument> list;
      for (HostTensor& tensor : tensors)
        list.push_back(tensor.ref());
      for (double scalar : {1e-3, 0.9, 0.999, 1e-8})
        list.push_back(ScalarArgument(scalar));
      return list;
    };
    ExecutorOptions options;
    options.backend = "cuda";
    options.mode = mode;
    options.cuda.fmad = false;
    FusionExecutorCache executor(*fusion, options);
    for (int step = 0; step < 3; ++step) {
      executor.run(arguments(device));
      evaluate(*fusion, arguments(reference));
    }
    for (size_t t = 0; t < device.size(); ++t)
      for (int64_t i = 0; i < device[t].numel(); ++i) {
        float a = device[t].as<float>()[i], b = reference[t].as<float>()[i];
        ASSERT_LE(std::fabs(a - b), 1e-6f + 1e-5f * std::fabs(b))
            << modeName(mode).str() << " tensor " << t << " element " << i;
      }
  }
}

TEST(CudaExecutor, ReductionsOfEveryScopeEqualTheEvaluatorBitForBit) {
  // The device's reduction kernels (shared-memory trees over rows of threads, chunk partials,
  // the last contributor's combine; a thread per row for rows scope) give the reduction
  // tree's bits: with fmad off, squares and sums round as the evaluator's do.
  if (!CudaDevice::available())
    GTEST_SKIP() << "no CUDA device";
  const std::vector<int64_t> sizes = {1023, 0, 1, 4097, 70001};
  FusionDefinition fd("reductions");
  std::vector<Val> xs, squares;
  for (size_t i = 0; i < sizes.size(); ++i) {
    xs.push_back(fd.defineTensor({sizes[i]}, DataType::Float, fmt::format("x{}", i)));
    squares.push_back(xs.back() * xs.back());
  }
  Val wide = fd.defineTensor({300, 1029}, DataType::Float, "wide");
  Val tall = fd.defineTensor({5000, 3}, DataType::Float, "tall");
  fd.addOutput(sum(squares));          // global
  fd.addOutput(max(xs));               // global
  fd.addOutput(sum(xs[4]));            // tensor
  fd.addOutput(any(xs[3]));            // tensor
  fd.addOutput(sum(wide * wide, {1})); // rows
  fd.addOutput(min(tall, {1}));        // rows
  auto fusion = fd.finalize();
  std::mt19937 random(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<HostTensor> tensors;
  for (const Value* input : fusion->inputs()) {
    tensors.emplace_back(input->dtype(), input->extents());
    for (int64_t e = 0; e < tensors.back().numel(); ++e)
      tensors.back().as<float>()[e] = normal(random);
  }
  std::vector<Argument> arguments;
  for (HostTensor& tensor : tensors)
    arguments.push_back(tensor.ref());
  EvaluationResult expected = evaluate(*fusion, arguments);
  for (SegmentationMode mode : {SegmentationMode::Batched, SegmentationMode::Packed}) {
    ExecutorOptions options;
    options.backend = "cuda";
    options.mode = mode;
    options.cuda.fmad = false;
    FusionExecutorCache executor(*fusion, options);
    for (int run = 0; run < 2; ++run) { // the second reuses the workspace and tickets
      RunResult result = executor.run(arguments);
      ASSERT_EQ(result.outputs.size(), expected.outputs.size());
      for (size_t o = 0; o < expected.outputs.size(); ++o) {
        ASSERT_EQ(result.outputs[o].byteSize(), expected.outputs[o].byteSize());
        EXPECT_EQ(std::memcmp(result.outputs[o].data(), expected.outputs[o].data(),
                              expected.outputs[o].byteSize()),
                  0)
            << modeName(mode).str() << " output " << o << " run " << run;
      }
    }
  }
}

TEST(CudaExecutor, NarrowingConversionsOfEveryKindOfF32EqualTheEvaluator) {
  // f32 to bf16 and f16 on the device (one cvt.rn instruction on sm_80 and newer, a select for
  // NaN) against the evaluator: signed zeros, infinities, NaNs of both signs and several
  // payloads, f32 and f16 subnormals, ties, the largest finite values, and random patterns.
  if (!CudaDevice::available())
    GTEST_SKIP() << "no CUDA device";
  std::vector<uint32_t> patterns = {
      0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
      0xffbfffffu, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu, 0x3f808000u, 0x3f818000u,
      0x477fe000u, 0x477ff000u, 0x33800000u, 0x33000001u, 0x38800000u, 0x387fe000u};
  std::mt19937 random(5);
  while (patterns.size() < (1u << 20))
    patterns.push_back(uint32_t(random()));
  const int64_t n = int64_t(patterns.size());
  FusionDefinition fd("narrowing");
  Val x = fd.defineTensor({n}, DataType::Float, "x");
  fd.addOutput(cast(x, DataType::BFloat16));
  fd.addOutput(cast(x, DataType::Half));
  auto fusion = fd.finalize();
  HostTensor input(DataType::Float, {n});
  std::memcpy(input.data(), patterns.data(), patterns.size() * sizeof(uint32_t));
  std::vector<Argument> arguments = {input.ref()};
  EvaluationResult expected = evaluate(*fusion, arguments);
  ExecutorOptions options;
  options.backend = "cuda";
  RunResult result = FusionExecutorCache(*fusion, options).run(arguments);
  for (size_t o = 0; o < expected.outputs.size(); ++o)
    EXPECT_EQ(std::memcmp(result.outputs[o].data(), expected.outputs[o].data(),
                          expected.outputs[o].byteSize()),
              0)
        << "output " << o;
}
