// The Adam library on a real GPU (label `gpu`; every test skips without a device): each
// optimizer configuration and dtype, per-component and batched, with the state in host memory
// (staged through device buffers) and in device memory (used in place), on the legacy default
// stream and on a non-blocking stream, against the reference evaluator on the CPU.
//
// Tolerances: with fmad off every operation but the math functions rounds as the reference
// does; libdevice's powf/sqrtf (and the f64 pow of the bias corrections) may differ from glibc
// in the last place, so f32 values may differ by a few ulps and a 16-bit value may round the
// other way (one ulp of its type). Step counters are exact.

#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_executor.h"

#include "ir/half_float.h"
#include "tests/support/mixed_shapes.h"
#include "tools/adam_state.h"
#include "tools/workloads/adam.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <thread>

using namespace widefuse;

namespace {

#define WF_REQUIRE_DEVICE()                                                                        \
  if (!CudaDevice::available())                                                                    \
  GTEST_SKIP() << "no CUDA device"

/// The spacing of the type's values near `value`: what one rounding the other way moves.
double ulpNear(DataType dtype, double value) {
  int mantissaBits = dtype == DataType::BFloat16 ? 7
                     : dtype == DataType::Half   ? 10
                     : dtype == DataType::Float  ? 23
                                                 : 52;
  int exponent = value == 0 ? -126 : std::ilogb(value);
  return std::ldexp(1.0, std::max(exponent, -126) - mantissaBits);
}

/// Every element of `actual` within a few ulps (f32/f64) or one ulp (16-bit types) of
/// `expected`; 0-d f32 step counters exactly.
void expectClose(const AdamState& actual, const AdamState& expected, const std::string& what) {
  ASSERT_EQ(actual.tensors.size(), expected.tensors.size());
  for (size_t t = 0; t < actual.tensors.size(); ++t) {
    const HostTensor& a = actual.tensors[t];
    const HostTensor& e = expected.tensors[t];
    bool counter = a.shape().empty();
    double ulps = counter ? 0 : byteSize(a.dtype()) == 2 ? 1 : 8;
    for (int64_t i = 0; i < a.numel(); ++i) {
      double x = floatingElement(a, i), y = floatingElement(e, i);
      if (!std::isfinite(y)) { // f16 Adam overflows where torch's does (eps rounds to 0)
        ASSERT_TRUE(std::isnan(y) ? std::isnan(x) : x == y)
            << what << " tensor " << t << " element " << i << ": device " << x << ", reference "
            << y;
        continue;
      }
      ASSERT_LE(std::fabs(x - y), ulps * ulpNear(a.dtype(), std::fabs(y)))
          << what << " tensor " << t << " element " << i << ": device " << x << ", reference " << y;
    }
  }
}

/// The state's tensors in device memory; copies back with download().
struct DeviceState {
  std::vector<DeviceBuffer> buffers;
  std::vector<Argument> arguments;

  DeviceState(const CudaDevice& device, const Fusion& fusion, const AdamState& state) {
    std::vector<Argument> host = const_cast<AdamState&>(state).arguments(fusion);
    for (const Argument& argument : host) {
      const TensorRef* tensor = std::get_if<TensorRef>(&argument);
      if (!tensor) {
        arguments.push_back(argument);
        continue;
      }
      size_t bytes = size_t(tensor->numel()) * byteSize(tensor->dtype);
      buffers.emplace_back(device, bytes);
      buffers.back().upload({static_cast<const std::byte*>(tensor->data), bytes});
      TensorRef onDevice = *tensor;
      onDevice.data = buffers.back().pointer();
      arguments.push_back(onDevice);
    }
  }

  void download(AdamState& state) const {
    size_t b = 0;
    for (HostTensor& tensor : state.tensors)
      buffers[b++].download({static_cast<std::byte*>(tensor.data()), tensor.byteSize()});
  }
};

enum class Residency { Host, Device };

/// Three steps of `config` on the GPU and on the reference evaluator, compared.
void checkAdam(const optim::AdamConfig& config, SegmentationMode mode, Residency residency,
               void* stream, const std::string& what, const ScheduleOptions& schedule = {}) {
  const CudaDevice& device = CudaDevice::get();
  optim::AdamFusion adam = optim::buildAdam(config);
  AdamState onDevice = initialAdamState(adam);
  AdamState reference = onDevice.clone();
  ExecutorOptions options;
  options.backend = "cuda";
  options.mode = mode;
  options.cuda.fmad = false;
  options.cuda.stream = stream;
  options.schedule = schedule;
  FusionExecutorCache executor(*adam.fusion, options);
  std::optional<DeviceState> resident;
  if (residency == Residency::Device) {
    resident.emplace(device, *adam.fusion, onDevice);
    // The uploads are synchronous copies from pageable memory: the legacy stream, which a
    // non-blocking stream does not wait for, may still be moving them.
    device.synchronize(nullptr);
  }
  for (int step = 0; step < 3; ++step) {
    executor.run(resident ? llvm::ArrayRef<Argument>(resident->arguments)
                          : llvm::ArrayRef<Argument>(onDevice.arguments(*adam.fusion)));
    evaluate(*adam.fusion, reference.arguments(*adam.fusion));
  }
  device.synchronize(stream);
  if (resident)
    resident->download(onDevice);
  expectClose(onDevice, reference, what);
}

/// Small shapes of every kind (empty, 1-element, odd tails, 3-D) in two groups.
optim::AdamConfig baseConfig(DataType dtype) {
  optim::AdamConfig config;
  config.dtype = dtype;
  config.groups.push_back({widefuse::testing::mixedShapes(9), {}});
  return config;
}

struct Variant {
  const char* name;
  std::function<void(optim::AdamConfig&)> apply;
};

const Variant kVariants[] = {
    {"adam", [](optim::AdamConfig&) {}},
    {"adamw",
     [](optim::AdamConfig& c) {
       c.decay = optim::WeightDecayKind::Decoupled;
       c.groups[0].hyper.weightDecay = 0.01;
     }},
    {"adam-l2-amsgrad-maximize",
     [](optim::AdamConfig& c) {
       c.groups[0].hyper.weightDecay = 0.1;
       c.amsgrad = true;
       c.maximize = true;
     }},
    {"capturable-two-groups-amp",
     [](optim::AdamConfig& c) {
       c.capturable = true;
       c.gradScale = true;
       c.foundInf = true;
       c.groups.push_back({widefuse::testing::mixedShapes(5), {}});
       c.groups[1].hyper.beta1 = 0.8;
     }},
};

TEST(CudaAdam, EveryVariantDtypeAndModeMatchesTheReference) {
  WF_REQUIRE_DEVICE();
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Half})
    for (const Variant& variant : kVariants)
      for (SegmentationMode mode : {SegmentationMode::PerComponent, SegmentationMode::Batched})
        for (Residency residency : {Residency::Host, Residency::Device}) {
          optim::AdamConfig config = baseConfig(dtype);
          variant.apply(config);
          std::string what =
              fmt::format("{} {} {} {}", variant.name, shortName(dtype).str(), modeName(mode).str(),
                          residency == Residency::Host ? "host" : "device");
          SCOPED_TRACE(what);
          checkAdam(config, mode, residency, nullptr, what);
        }
}

TEST(CudaAdam, OtherSchedulesMatchTheReference) {
  WF_REQUIRE_DEVICE();
  // The schedules benchmarks/gpu compares: prefetching loops, and a 128-register cap.
  for (ScheduleOptions schedule : {ScheduleOptions{4, true}, ScheduleOptions{2, true}})
    for (DataType dtype : {DataType::Float, DataType::BFloat16}) {
      optim::AdamConfig config = baseConfig(dtype);
      config.amsgrad = true;
      std::string what = fmt::format("{} blocks per SM, prefetch, {}",
                                     schedule.minBlocksPerMultiprocessor, shortName(dtype).str());
      checkAdam(config, SegmentationMode::Batched, Residency::Device, nullptr, what, schedule);
    }
}

TEST(CudaAdam, NonBlockingStreamOrdersStagingTicketsAndTables) {
  WF_REQUIRE_DEVICE();
  // A non-blocking stream does not wait for the legacy default stream: every transfer of a
  // launch must be queued on the launch's own stream.
  CudaStream stream(CudaDevice::get(), /*nonBlocking=*/true);
  for (Residency residency : {Residency::Host, Residency::Device}) {
    optim::AdamConfig config = baseConfig(DataType::Float);
    config.amsgrad = true;
    checkAdam(config, SegmentationMode::Batched, residency, stream.handle(),
              residency == Residency::Host ? "non-blocking host" : "non-blocking device");
  }
}

TEST(CudaAdam, SixHundredParametersUseADeviceTableAndAPreparedRun) {
  WF_REQUIRE_DEVICE();
  const CudaDevice& device = CudaDevice::get();
  optim::AdamConfig config = baseConfig(DataType::Float);
  config.groups[0].shapes = widefuse::testing::mixedShapes(600);
  optim::AdamFusion adam = optim::buildAdam(config);
  AdamState onDevice = initialAdamState(adam);
  AdamState reference = onDevice.clone();
  ExecutorOptions options;
  options.backend = "cuda";
  options.mode = SegmentationMode::Batched;
  options.cuda.fmad = false;
  FusionExecutorCache executor(*adam.fusion, options);
  DeviceState resident(device, *adam.fusion, onDevice);
  std::unique_ptr<PreparedRun> prepared = executor.prepare(resident.arguments);
  const KernelPlan& plan = executor.lastCompiled()->scheduled.plans.front();
  EXPECT_EQ(plan.tableLocation, TableLocation::DeviceMemory) << formatKernelPlan(plan);
  for (int step = 0; step < 4; ++step) {
    prepared->launch();
    evaluate(*adam.fusion, reference.arguments(*adam.fusion));
  }
  device.synchronize(nullptr);
  resident.download(onDevice);
  expectClose(onDevice, reference, "600 parameters, prepared");
}

TEST(CudaAdam, ViewsStartingMidVectorPeelAHeadOrStayScalar) {
  WF_REQUIRE_DEVICE();
  // Device tensors that start 0-3 elements past an aligned address (views into larger
  // allocations): a misaligned 16-byte access would fault, so this checks the head peeling
  // (every tensor of a member off by the same amount) and the scalar fallback (off by different
  // amounts) on the hardware.
  const CudaDevice& device = CudaDevice::get();
  for (bool samePhase : {true, false}) {
    optim::AdamConfig config = baseConfig(DataType::Float);
    config.groups[0].shapes = {{4097}, {64, 32}, {3}, {100003}, {8}};
    optim::AdamFusion adam = optim::buildAdam(config);
    AdamState onDevice = initialAdamState(adam);
    AdamState reference = onDevice.clone();
    std::vector<DeviceBuffer> buffers;
    std::vector<int64_t> offsets;
    std::vector<Argument> arguments;
    for (const Argument& argument : onDevice.arguments(*adam.fusion)) {
      const TensorRef* tensor = std::get_if<TensorRef>(&argument);
      if (!tensor) {
        arguments.push_back(argument);
        continue;
      }
      const optim::AdamInput& role = adam.inputs[arguments.size()];
      int64_t offset = tensor->shape.empty() ? 0
                       : samePhase           ? int64_t(role.index % 4)
                                             : int64_t(role.role == optim::AdamRole::Grad);
      size_t bytes = size_t(tensor->numel()) * 4;
      buffers.emplace_back(device, bytes + 16);
      buffers.back().upload({static_cast<const std::byte*>(tensor->data), bytes},
                            size_t(offset) * 4);
      TensorRef view = *tensor;
      view.data = static_cast<std::byte*>(buffers.back().pointer()) + offset * 4;
      arguments.push_back(view);
      offsets.push_back(offset);
    }
    ExecutorOptions options;
    options.backend = "cuda";
    options.mode = SegmentationMode::Batched;
    options.cuda.fmad = false;
    FusionExecutorCache executor(*adam.fusion, options);
    for (int step = 0; step < 3; ++step) {
      executor.run(arguments);
      evaluate(*adam.fusion, reference.arguments(*adam.fusion));
    }
    device.synchronize(nullptr);
    for (size_t t = 0; t < onDevice.tensors.size(); ++t)
      buffers[t].download(
          {static_cast<std::byte*>(onDevice.tensors[t].data()), onDevice.tensors[t].byteSize()},
          size_t(offsets[t]) * 4);
    expectClose(onDevice, reference, samePhase ? "same phase" : "mixed phases");
  }
}

TEST(CudaAdam, RunsLeaveTheCallersContextCurrent) {
  WF_REQUIRE_DEVICE();
  const CudaDriver& driver = CudaDevice::get().driver();
  // A fresh thread has no current context; widefuse must not leave its own behind.
  std::string failure;
  std::thread([&] {
    try {
      optim::AdamConfig config = baseConfig(DataType::Float);
      optim::AdamFusion adam = optim::buildAdam(config);
      AdamState state = initialAdamState(adam);
      ExecutorOptions options;
      options.backend = "cuda";
      FusionExecutorCache executor(*adam.fusion, options);
      executor.run(state.arguments(*adam.fusion));
      CUcontext current = reinterpret_cast<CUcontext>(1);
      if (driver.cuCtxGetCurrent(&current) != kCudaSuccess || current != nullptr)
        failure = "a context is current after the run";
    } catch (const std::exception& error) {
      failure = error.what();
    }
  }).join();
  EXPECT_EQ(failure, "");
}

} // namespace
