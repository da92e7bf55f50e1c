// The CUDA backend end to end (needs a GPU; skips without one): the seed's Adam over awkward
// shapes through FusionExecutorCache, host tensors staged through device memory, compared
// with the reference evaluator. On the device, libdevice's powf and sqrtf may differ from
// glibc in the last place, so the comparison allows a relative 1e-5; with fmad off every
// other operation rounds as the reference does.

#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_executor.h"

#include "optim/seed_adam.h"

#include <gtest/gtest.h>

#include <cmath>
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
    options.fmad = false;
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
