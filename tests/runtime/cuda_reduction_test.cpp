// A fusion with reductions on the CUDA backend, on the CUDA driver double: a clipped step on
// device tensors runs as its two phases with the results between them in device memory, so
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
#include "tests/support/mixed_shapes.h"
#include "tools/adam_state.h"
#include "tools/workloads/adam.h"

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

/// Adafactor's row factor beside the clip: each grad's squares reduced over all elements
/// (the global norm) and over rows (each row's mean square), both in phase 1 as two bodies of
/// one launch; phase 2 reads both.
std::unique_ptr<Fusion> clippedRowFactored() {
  FusionDefinition fd("clipped_factored");
  std::vector<std::pair<int64_t, int64_t>> shapes = {{3, 300}, {43, 200}, {1, 1}, {83, 100}};
  std::vector<Val> params, grads, squares;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto [rows, columns] = shapes[i];
    params.push_back(fd.defineTensor({rows, columns}, DataType::Float, fmt::format("p{}", i)));
    grads.push_back(fd.defineTensor({rows, columns}, DataType::Float, fmt::format("g{}", i)));
    squares.push_back(grads.back() * grads.back());
  }
  Val coefficient = minimum(1.0 / (sqrt(sum(squares)) + 1e-6), 1.0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto [rows, columns] = shapes[i];
    Val meanSquare = sum(squares[i], {1}) / double(columns);
    Val scale = broadcast_in_dim(1.0 / sqrt(meanSquare + 1e-30), {rows, columns}, {0});
    fd.copy_(params[i] - grads[i] * coefficient * scale * 0.01, params[i]);
  }
  return fd.finalize();
}

/// The clipped momentum step with the moments kept scaled by blocks (blockwise quantization's
/// shape): each dequantized by its blocks' scales, updated, its new absmax per block, divided
/// by it; moments and scales in place. Phase 1 the norm, phase 2 everything else.
std::unique_ptr<Fusion> clippedScaledMomentum() {
  FusionDefinition fd("clipped_scaled");
  const int64_t block = 256;
  std::vector<Val> params, grads, moments, scales, squares;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    int64_t n = kSizes[i];
    params.push_back(fd.defineTensor({n}, DataType::Float, fmt::format("p{}", i)));
    grads.push_back(fd.defineTensor({n}, DataType::Float, fmt::format("g{}", i)));
    moments.push_back(fd.defineTensor({n}, DataType::Float, fmt::format("m{}", i)));
    scales.push_back(
        fd.defineTensor({(n + block - 1) / block}, DataType::Float, fmt::format("s{}", i)));
    squares.push_back(grads.back() * grads.back());
  }
  Val coefficient = minimum(1.0 / (sqrt(sum(squares)) + 1e-6), 1.0);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    int64_t n = kSizes[i];
    Val m1 = moments[i] * expand_blocks(scales[i], {n}, Blocks{block}) * 0.9 +
             grads[i] * coefficient * 0.1;
    Val absmax = max(abs(m1), Blocks{block});
    fd.copy_(params[i] - m1 * 0.01, params[i]);
    fd.copy_(m1 / maximum(expand_blocks(absmax, {n}, Blocks{block}), 1e-12), moments[i]);
    fd.copy_(absmax, scales[i]);
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

  /// Random f32 tensors, 0.25 for every scalar.
  OnDevice(const CudaDevice& device, const Fusion& fusion)
      : OnDevice(device, fusion, randomHost(fusion), {}) {}
  /// `host` (one per input; a default tensor for a scalar, whose value is in `scalars`).
  OnDevice(const CudaDevice& device, const Fusion& fusion, std::vector<HostTensor> tensors,
           std::vector<Argument> scalars)
      : fusion(fusion), host(std::move(tensors)) {
    for (size_t i = 0; i < fusion.inputs().size(); ++i) {
      if (!fusion.inputs()[i]->isTensor()) {
        Argument scalar = scalars.empty() ? Argument(ScalarArgument(0.25)) : scalars[i];
        reference.push_back(scalar);
        arguments.push_back(scalar);
        buffers.emplace_back();
        continue;
      }
      reference.push_back(host[i].ref());
      buffers.emplace_back(device, std::max<size_t>(host[i].byteSize(), 1));
      buffers.back().upload({static_cast<const std::byte*>(host[i].data()), host[i].byteSize()});
      TensorRef copy = host[i].ref();
      copy.data = buffers.back().pointer();
      arguments.push_back(copy);
    }
    device.synchronize(nullptr);
  }
  static std::vector<HostTensor> randomHost(const Fusion& fusion) {
    std::mt19937 random(5);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<HostTensor> tensors;
    for (const Value* input : fusion.inputs()) {
      tensors.emplace_back();
      if (!input->isTensor())
        continue;
      tensors.back() = HostTensor(input->dtype(), input->extents());
      for (int64_t e = 0; e < tensors.back().numel(); ++e)
        tensors.back().as<float>()[e] = normal(random);
    }
    return tensors;
  }
  /// Writes `value` into element 0 of tensor input `index`, host and device copies alike.
  void plant(size_t index, float value) {
    host[index].as<float>()[0] = value;
    buffers[index].upload({static_cast<const std::byte*>(host[index].data()), sizeof(float)});
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

/// Packed mode, as widefuse.optim runs: phase 2's update and the 0-d write of the norm are one
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
  widefuse::testing::expectNoHiddenWork(counters, "in a step");
  EXPECT_EQ(driverDouble.violations(), "");
}

/// Three plain steps of `fusion` on device tensors: the third (after the warm-up compiled,
/// loaded and allocated everything) is two launches alone, and every step equals the
/// evaluator's.
void expectPlainStepsAreTwoLaunches(DriverDouble& driverDouble, const Fusion& fusion) {
  const CudaDevice& device = CudaDevice::get();
  OnDevice tensors(device, fusion);
  CudaStream stream(device, /*nonBlocking=*/true);
  FusionExecutorCache executor(fusion, onStream(stream.handle()));
  for (int step = 0; step < 3; ++step) {
    if (step == 2) {
      stream.synchronize();
      driverDouble.reset();
    }
    executor.run(tensors.arguments);
    evaluate(fusion, tensors.reference);
  }
  expectLaunchesAlone(driverDouble, 2);
  stream.synchronize();
  EXPECT_EQ(tensors.differing(), 0);
}

} // namespace

TEST(CudaReductions, AStepOnDeviceTensorsIsTwoLaunchesAndNothingElse) {
  WF_REQUIRE_DOUBLE();
  expectPlainStepsAreTwoLaunches(*driverDouble, *clippedMomentum());
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
  expectPlainStepsAreTwoLaunches(*driverDouble, *rowFactored());
}

TEST(CudaReductions, AClipBesideRowSumsOfTheSameSquaresIsStillTwoLaunches) {
  WF_REQUIRE_DOUBLE();
  expectPlainStepsAreTwoLaunches(*driverDouble, *clippedRowFactored());
}

TEST(CudaReductions, StateScaledByBlocksIsUpdatedInTheSameLaunch) {
  // The blocks' absmax is computed and read in the update's own launch: still two launches.
  WF_REQUIRE_DOUBLE();
  expectPlainStepsAreTwoLaunches(*driverDouble, *clippedScaledMomentum());
}

TEST(CudaReductions, GradScalersStepUnscalesClipsAndSkipsAnInfWithoutWaiting) {
  // optim::buildAdam with GradScaler's scale and the inf check in the step (computeFoundInf)
  // and the clip: phase 1 finds found_inf and the norm, phase 2 updates or skips. No step
  // synchronises: the host never reads found_inf.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  optim::AdamConfig config;
  config.groups.push_back({widefuse::testing::mixedShapes(7), {}});
  config.gradScale = true;
  config.computeFoundInf = true;
  config.maxGradNorm = 1.0;
  optim::AdamFusion adam = optim::buildAdam(config);
  AdamState state = initialAdamState(adam, {/*gradScale=*/1024.0});
  std::vector<HostTensor> tensors;
  std::vector<Argument> scalars = state.arguments(*adam.fusion);
  for (const Argument& argument : scalars) {
    const TensorRef* tensor = std::get_if<TensorRef>(&argument);
    tensors.emplace_back();
    if (!tensor)
      continue;
    tensors.back() = HostTensor(tensor->dtype, tensor->shape);
    if (tensors.back().byteSize() > 0) // no memcpy of null: empty parameters have no bytes
      std::memcpy(tensors.back().data(), tensor->data, tensors.back().byteSize());
  }
  OnDevice tensorsOnDevice(device, *adam.fusion, std::move(tensors), scalars);
  auto firstOf = [&](optim::AdamRole role) {
    for (size_t i = 0; i < adam.inputs.size(); ++i)
      if (adam.inputs[i].role == role)
        return i;
    ADD_FAILURE() << "no input of that role";
    return size_t(0);
  };
  size_t param = firstOf(optim::AdamRole::Param), grad = firstOf(optim::AdamRole::Grad);
  size_t foundInf = firstOf(optim::AdamRole::FoundInf);
  ASSERT_TRUE(adam.gradNormOutput);
  DeviceBuffer norm(device, sizeof(float));
  TensorRef normRef;
  normRef.dtype = adam.fusion->outputs()[*adam.gradNormOutput]->dtype();
  normRef.data = norm.pointer();
  CudaStream stream(device, /*nonBlocking=*/true);
  FusionExecutorCache executor(*adam.fusion, onStream(stream.handle()));
  std::unique_ptr<PreparedRun> prepared =
      executor.prepare(tensorsOnDevice.arguments, std::nullopt, {normRef});
  for (int step = 0; step < 4; ++step) {
    if (step == 2) {        // an inf in one grad: this step changes nothing but found_inf
      stream.synchronize(); // plant() copies on the legacy stream, unordered with `stream`
      tensorsOnDevice.plant(grad, std::numeric_limits<float>::infinity());
      tensorsOnDevice.plant(foundInf, 0.0f); // GradScaler hands the step a zeroed flag
      device.synchronize(nullptr);
      driverDouble->reset();
    }
    HostTensor before = tensorsOnDevice.host[param];
    prepared->launch();
    evaluate(*adam.fusion, tensorsOnDevice.reference);
    if (step == 2) {
      expectLaunchesAlone(*driverDouble, 2);
      stream.synchronize();
      std::vector<std::byte> flag(sizeof(float));
      tensorsOnDevice.buffers[foundInf].download(flag);
      float found;
      std::memcpy(&found, flag.data(), sizeof found);
      EXPECT_EQ(found, 1.0f);
      std::vector<std::byte> after(before.byteSize());
      tensorsOnDevice.buffers[param].download(after);
      EXPECT_EQ(std::memcmp(after.data(), before.data(), after.size()), 0) << "not skipped";
      tensorsOnDevice.plant(grad, 0.5f);
      tensorsOnDevice.plant(foundInf, 0.0f);
      device.synchronize(nullptr);
    }
  }
  stream.synchronize();
  EXPECT_EQ(tensorsOnDevice.differing(), 0);
}
