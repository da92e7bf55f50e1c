// A fusion with reductions on the CUDA backend, on the CUDA driver double: a clipped step on
// device tensors runs as its two passes with the results between them in device memory, so
// a step (plain or prepared) queues its two launches and nothing else: no copy, no
// allocation, no wait. CUDA graph capture records just those launches, and every replay
// writes the reference evaluator's bits (the double runs each launch through the kernel's
// host build, blocks in a shuffled order).

#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_executor.h"
#include "runtime/prepared_run.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "tests/support/driver_double.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace widefuse;
using widefuse::testing::DriverDouble;

namespace {

const std::vector<int64_t> kSizes = {1023, 0, 1, 4097, 7, 256};

/// A momentum step with the grads clipped by their global norm; the norm is written in place
/// into the 0-d input `total` (as torch's clip_grad_norm_ returns it on the device), so the
/// fusion has no plain outputs.
std::unique_ptr<Fusion> clippedMomentum() {
  FusionDefinition fd("clipped");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  Val total = fd.defineTensor({}, DataType::Float, "total");
  std::vector<Val> params, grads, moments, squares;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    params.push_back(fd.defineTensor({kSizes[i]}, DataType::Float, fmt::format("p{}", i)));
    grads.push_back(fd.defineTensor({kSizes[i]}, DataType::Float, fmt::format("g{}", i)));
    moments.push_back(fd.defineTensor({kSizes[i]}, DataType::Float, fmt::format("m{}", i)));
    squares.push_back(grads.back() * grads.back());
  }
  Val norm = sqrt(sum(squares));
  Val coefficient = minimum(1.0 / (norm + 1e-6), 1.0);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    Val m1 = moments[i] * 0.9 + grads[i] * coefficient * 0.1;
    fd.copy_(params[i] - lr * m1, params[i]);
    fd.copy_(m1, moments[i]);
  }
  fd.copy_(norm, total);
  return fd.finalize();
}

/// Adafactor's row factor: each row's mean square (rows scope), read back along its row.
std::unique_ptr<Fusion> rowFactored() {
  FusionDefinition fd("factored");
  for (int i = 0; i < 3; ++i) {
    int64_t rows = 3 + 40 * i, columns = 300 - 100 * i;
    Val p = fd.defineTensor({rows, columns}, DataType::Float, fmt::format("p{}", i));
    Val g = fd.defineTensor({rows, columns}, DataType::Float, fmt::format("g{}", i));
    Val meanSquare = sum(g * g, {1}) / double(columns);
    Val scale = broadcast_in_dim(1.0 / sqrt(meanSquare + 1e-30), {rows, columns}, {0});
    fd.copy_(p - g * scale * 0.01, p);
  }
  return fd.finalize();
}

/// The fusion's arguments twice: in host memory for the reference evaluator, and a device
/// copy of every tensor for the runtime.
struct OnDevice {
  const Fusion& fusion;
  std::vector<HostTensor> host;
  std::vector<Argument> reference;
  std::vector<DeviceBuffer> buffers; // by input index (empty for scalars)
  std::vector<Argument> arguments;

  OnDevice(const CudaDevice& device, const Fusion& fusion) : fusion(fusion) {
    std::mt19937 random(5);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    host.reserve(fusion.inputs().size()); // reference holds pointers into it
    for (const Value* input : fusion.inputs()) {
      if (!input->isTensor()) {
        host.emplace_back();
        reference.push_back(ScalarArgument(0.25));
        arguments.push_back(ScalarArgument(0.25));
        buffers.emplace_back();
        continue;
      }
      host.emplace_back(input->dtype(), input->extents());
      for (int64_t e = 0; e < host.back().numel(); ++e)
        host.back().as<float>()[e] = normal(random);
      reference.push_back(host.back().ref());
      buffers.emplace_back(device, std::max<size_t>(host.back().byteSize(), 1));
      buffers.back().upload(
          {static_cast<const std::byte*>(host.back().data()), host.back().byteSize()});
      TensorRef copy = host.back().ref();
      copy.data = buffers.back().pointer();
      arguments.push_back(copy);
    }
    device.synchronize(nullptr);
  }
  /// Tensor inputs whose device copy differs in bits from the reference's.
  int differing() const {
    int different = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      if (!fusion.inputs()[i]->isTensor() || host[i].byteSize() == 0)
        continue;
      std::vector<std::byte> bytes(host[i].byteSize());
      buffers[i].download(bytes);
      different += std::memcmp(bytes.data(), host[i].data(), bytes.size()) != 0;
    }
    return different;
  }
};

/// Packed mode, as widefuse.optim runs: pass 2's update and the 0-d write of the norm are one
/// launch (in batched mode they are two signature classes, two launches).
ExecutorOptions onStream(void* stream) {
  ExecutorOptions options;
  options.backend = "cuda";
  options.mode = SegmentationMode::Packed;
  options.cuda.stream = stream;
  return options;
}

/// Expects the double's counters since its reset to show `launches` launches and nothing
/// else a step could do behind the caller's back.
void expectLaunchesAlone(DriverDouble& driverDouble, uint64_t launches) {
  wf_double_counters counters = driverDouble.counters();
  EXPECT_EQ(counters.launches, launches);
  for (auto [count, what] :
       {std::pair(counters.allocations, "allocations"), std::pair(counters.frees, "frees"),
        std::pair(counters.uploads, "uploads"), std::pair(counters.downloads, "downloads"),
        std::pair(counters.memsets, "memsets"),
        std::pair(counters.synchronizations, "synchronizations"),
        std::pair(counters.legacyStreamWrites, "legacy stream writes"),
        std::pair(counters.captureRefusals, "refused calls")})
    EXPECT_EQ(count, 0u) << what << " in a step";
  EXPECT_EQ(driverDouble.violations(), "");
}

} // namespace

TEST(CudaReductions, AStepOnDeviceTensorsIsTwoLaunchesAndNothingElse) {
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  auto fusion = clippedMomentum();
  OnDevice tensors(device, *fusion);
  CudaStream stream(device, /*nonBlocking=*/true);
  FusionExecutorCache executor(*fusion, onStream(stream.handle()));
  for (int step = 0; step < 3; ++step) {
    if (step == 2) { // the warm-up compiled, loaded and allocated everything
      stream.synchronize();
      driverDouble->reset();
    }
    executor.run(tensors.arguments);
    evaluate(*fusion, tensors.reference);
  }
  expectLaunchesAlone(*driverDouble, 2);
  stream.synchronize();
  EXPECT_EQ(tensors.differing(), 0);
}

TEST(CudaReductions, APreparedStepIsCapturedAsItsTwoLaunchesAndReplays) {
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  auto fusion = clippedMomentum();
  OnDevice tensors(device, *fusion);
  CudaStream stream(device, /*nonBlocking=*/true);
  FusionExecutorCache executor(*fusion, onStream(stream.handle()));
  std::unique_ptr<PreparedRun> prepared = executor.prepare(tensors.arguments);
  prepared->launch(); // the warm-up: the first launch zeroes the tickets
  evaluate(*fusion, tensors.reference);
  stream.synchronize();
  EXPECT_EQ(tensors.differing(), 0);

  driverDouble->reset();
  void* graph = nullptr;
  {
    CudaDevice::ContextScope scope(device);
    ASSERT_EQ(driverDouble->beginCapture(stream.handle()), 0);
    prepared->launch();
    ASSERT_EQ(driverDouble->endCapture(stream.handle(), &graph), 0);
  }
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(driverDouble->counters().capturedOperations, 2u);
  expectLaunchesAlone(*driverDouble, 2);
  for (int replay = 0; replay < 3; ++replay) {
    evaluate(*fusion, tensors.reference);
    {
      CudaDevice::ContextScope scope(device);
      ASSERT_EQ(driverDouble->launchGraph(graph, stream.handle()), 0);
    }
    stream.synchronize();
    EXPECT_EQ(tensors.differing(), 0) << "replay " << replay;
  }
  driverDouble->destroyGraph(graph);
}

TEST(CudaReductions, RowsOnTheDeviceFeedTheUpdate) {
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  auto fusion = rowFactored();
  OnDevice tensors(device, *fusion);
  CudaStream stream(device, /*nonBlocking=*/true);
  FusionExecutorCache executor(*fusion, onStream(stream.handle()));
  for (int step = 0; step < 3; ++step) {
    if (step == 2) {
      stream.synchronize();
      driverDouble->reset();
    }
    executor.run(tensors.arguments);
    evaluate(*fusion, tensors.reference);
  }
  expectLaunchesAlone(*driverDouble, 2);
  stream.synchronize();
  EXPECT_EQ(tensors.differing(), 0);
}
