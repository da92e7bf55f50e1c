// The CUDA backend's protocol with the driver, checked on the CUDA driver double
// (tests/support/cuda_double): what a GPU would only show by timing luck or a lost context.
// Every test skips unless the process's driver is the double (ctest sets it up); each names
// the defect it guards against.

#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_executor.h"

#include "ir/fusion_definition.h"
#include "tests/support/driver_double.h"
#include "tests/support/error_of.h"
#include "tests/support/mixed_shapes.h"
#include "tools/adam_state.h"
#include "tools/workloads/adam.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace widefuse;
using widefuse::testing::DriverDouble;
using widefuse::testing::errorOf;

namespace {

/// Bit-for-bit equality: the double runs the kernels' host build, which computes what the
/// reference evaluator computes.
int64_t differingTensors(const AdamState& a, const AdamState& b) {
  int64_t different = 0;
  for (size_t t = 0; t < a.tensors.size(); ++t)
    different +=
        a.tensors[t].byteSize() != 0 && // empty tensors have no data pointer
        std::memcmp(a.tensors[t].data(), b.tensors[t].data(), a.tensors[t].byteSize()) != 0;
  return different;
}

/// An Adam step over `count` mixed small parameters (0 to 4097 elements).
optim::AdamFusion adamOver(size_t count) {
  optim::AdamConfig config;
  config.amsgrad = true;
  config.groups.push_back({widefuse::testing::mixedShapes(count), {}});
  return optim::buildAdam(config);
}

/// The state's tensors copied into device memory (and the copies waited for).
struct DeviceCopy {
  std::vector<DeviceBuffer> buffers;
  std::vector<Argument> arguments;
  DeviceCopy(const CudaDevice& device, const Fusion& fusion, AdamState& state) {
    for (const Argument& argument : state.arguments(fusion)) {
      const TensorRef* tensor = std::get_if<TensorRef>(&argument);
      if (!tensor) {
        arguments.push_back(argument);
        continue;
      }
      size_t bytes = size_t(tensor->numel()) * byteSize(tensor->dtype);
      buffers.emplace_back(device, std::max<size_t>(bytes, 1));
      buffers.back().upload({static_cast<const std::byte*>(tensor->data), bytes});
      TensorRef copy = *tensor;
      copy.data = buffers.back().pointer();
      arguments.push_back(copy);
    }
    device.synchronize(nullptr);
  }
  void download(AdamState& state) const {
    for (size_t t = 0; t < state.tensors.size(); ++t)
      buffers[t].download(
          {static_cast<std::byte*>(state.tensors[t].data()), state.tensors[t].byteSize()});
  }
};

/// An Adam step over `count` mixed parameters, its state, and the state's device copy.
struct AdamOnDevice {
  optim::AdamFusion adam;
  AdamState state;
  DeviceCopy copy;
  AdamOnDevice(const CudaDevice& device, size_t count)
      : adam(adamOver(count)), state(initialAdamState(adam)), copy(device, *adam.fusion, state) {}
};

ExecutorOptions onTheDevice(SegmentationMode mode, void* stream = nullptr) {
  ExecutorOptions options;
  options.backend = "cuda";
  options.mode = mode;
  options.cuda.stream = stream;
  return options;
}

} // namespace

TEST(CudaProtocol, EveryTransferOfALaunchIsOnItsStream) {
  // Defect 1: tickets zeroed with a synchronous memset and host tensors staged with a
  // synchronous copy, both on the legacy stream, while the kernel ran on the caller's
  // non-blocking stream (torch's pool streams are such): nothing ordered them.
  WF_REQUIRE_DOUBLE();
  CudaStream stream(CudaDevice::get(), /*nonBlocking=*/true);
  optim::AdamFusion adam = adamOver(12);
  AdamState state = initialAdamState(adam), reference = state.clone();
  FusionExecutorCache executor(*adam.fusion,
                               onTheDevice(SegmentationMode::Batched, stream.handle()));
  for (int step = 0; step < 3; ++step) {
    executor.run(state.arguments(*adam.fusion));
    evaluate(*adam.fusion, reference.arguments(*adam.fusion));
  }
  EXPECT_EQ(driverDouble->violations(), "");
  EXPECT_EQ(driverDouble->counters().legacyStreamWrites, 0u);
  EXPECT_EQ(differingTensors(state, reference), 0);
}

TEST(CudaProtocol, AFailedLaunchLeavesNoBindingsToReuse) {
  // Defect 2: the bindings were marked reusable before the launcher put device addresses in
  // them one launch at a time; a launch failing half way left host addresses behind for the
  // next run (or PreparedRun) to launch with.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  AdamOnDevice setup(device, 5);
  auto& [adam, state, copy] = setup;
  FusionExecutorCache executor(*adam.fusion, onTheDevice(SegmentationMode::PerComponent));
  driverDouble->failLaunch(3, /*CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES*/ 701);
  std::string failure = errorOf([&] { executor.run(copy.arguments); });
  EXPECT_NE(failure.find("cuLaunchKernel failed"), std::string::npos) << failure;
  executor.run(copy.arguments); // the same arguments again: bound anew
  std::unique_ptr<PreparedRun> prepared = executor.prepare(copy.arguments);
  prepared->launch();
  device.synchronize(nullptr);
  EXPECT_EQ(driverDouble->violations(), "");
}

TEST(CudaProtocol, TensorsOfAnotherDeviceAreLaunchedOnThatDevice) {
  // Defect 4: a pointer into device 1's memory would have been launched on device 0. The
  // double checks that every pointer a launch reads is memory of the launching device.
  WF_REQUIRE_DOUBLE();
  optim::AdamFusion adam = adamOver(2);
  AdamState state = initialAdamState(adam);
  DeviceCopy onDevice1(CudaDevice::get(1), *adam.fusion, state);
  FusionExecutorCache executor(*adam.fusion, onTheDevice(SegmentationMode::Batched));
  executor.run(onDevice1.arguments);
  CudaDevice::get(1).synchronizeContext();
  EXPECT_GT(driverDouble->counters().launches, 0u);
  EXPECT_EQ(driverDouble->violations(), "");
}

TEST(CudaProtocol, AnEmptyOutputNeedsNoBufferAndNoSynchronisation) {
  // Defect 5: a 0-element output in host memory got a 1-byte device buffer and a stream
  // synchronisation on every run.
  WF_REQUIRE_DOUBLE();
  FusionDefinition fd("scale");
  Val x = fd.defineTensor({kSymbolicExtent}, DataType::Float, "x");
  fd.addOutput(x * 2.0);
  auto fusion = fd.finalize();
  const CudaDevice& device = CudaDevice::get();
  DeviceBuffer empty(device, 16);
  std::vector<Argument> arguments = {TensorRef{DataType::Float, {0}, {1}, empty.pointer()}};
  FusionExecutorCache executor(*fusion, onTheDevice(SegmentationMode::Batched));
  executor.run(arguments); // compiles, loads, allocates the tickets
  driverDouble->reset();
  RunResult result = executor.run(arguments);
  ASSERT_EQ(result.outputs.size(), 1u);
  EXPECT_EQ(result.outputs[0].numel(), 0);
  wf_double_counters counters = driverDouble->counters();
  EXPECT_EQ(counters.allocations, 0u);
  EXPECT_EQ(counters.synchronizations, 0u);
  EXPECT_EQ(counters.downloads, 0u);
}

TEST(CudaProtocol, SynchronizingEachLaunchNamesTheKernelThatFaulted) {
  // Defect 6: an asynchronous fault surfaced as the error of some later call.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  AdamOnDevice setup(device, 2);
  auto& [adam, state, copy] = setup;
  // A write on a non-blocking stream that nothing orders before the step: its kernel faults.
  CudaStream other(device, /*nonBlocking=*/true);
  copy.buffers[0].zeroAsync(other.handle());
  ExecutorOptions options = onTheDevice(SegmentationMode::Batched);
  options.cuda.synchronizeEachLaunch = true;
  FusionExecutorCache executor(*adam.fusion, options);
  std::string message = errorOf([&] { executor.run(copy.arguments); });
  EXPECT_NE(message.find("kernel 'adam_step_class0' failed (found by synchronizing after each "
                         "launch"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("cuMemsetD8Async"), std::string::npos) << message;
  driverDouble->reset(); // a real context would be lost now
  other.synchronize();
}

TEST(CudaProtocol, TheSteadyStateAsksTheDriverNothingButLaunches) {
  // The review's steady-state risks: no pointer queries, uploads, allocations or
  // synchronisations per step once the tensors stay where they are (600 parameters: the member
  // table lives in device memory).
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  AdamOnDevice setup(device, 600);
  auto& [adam, state, copy] = setup;
  for (SegmentationMode mode : {SegmentationMode::Batched, SegmentationMode::PerComponent}) {
    FusionExecutorCache executor(*adam.fusion, onTheDevice(mode));
    executor.run(copy.arguments);
    std::unique_ptr<PreparedRun> prepared = executor.prepare(copy.arguments);
    prepared->launch();
    device.synchronize(nullptr);
    driverDouble->reset();
    for (int step = 0; step < 3; ++step) {
      prepared->launch();
      executor.run(copy.arguments);
    }
    wf_double_counters counters = driverDouble->counters();
    EXPECT_EQ(counters.launches, 6 * executor.lastCompiled()->numLaunches())
        << modeName(mode).str();
    for (auto [count, what] :
         {std::pair(counters.allocations, "allocations"), std::pair(counters.frees, "frees"),
          std::pair(counters.uploads, "uploads"), std::pair(counters.downloads, "downloads"),
          std::pair(counters.memsets, "memsets"),
          std::pair(counters.pointerQueries, "pointer queries"),
          std::pair(counters.synchronizations, "synchronizations")})
      EXPECT_EQ(count, 0u) << what << " in " << modeName(mode).str() << " mode";
    device.synchronize(nullptr);
    EXPECT_EQ(driverDouble->violations(), "");
  }
}

TEST(CudaProtocol, TheDoubleCatchesAnUnorderedLegacyStreamWrite) {
  // The test of the test: the protocol defect 1 had, played on purpose, is reported.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  AdamOnDevice setup(device, 2);
  auto& [adam, state, copy] = setup;
  CudaStream stream(device, /*nonBlocking=*/true);
  copy.buffers[1].upload({static_cast<const std::byte*>(state.tensors[1].data()),
                          state.tensors[1].byteSize()}); // legacy stream, not waited for
  FusionExecutorCache executor(*adam.fusion,
                               onTheDevice(SegmentationMode::Batched, stream.handle()));
  executor.run(copy.arguments);
  std::string message = errorOf([&] { stream.synchronize(); });
  EXPECT_NE(message.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << message;
  EXPECT_NE(driverDouble->violations().find("cuMemcpyHtoD queued on the legacy default stream"),
            std::string::npos)
      << driverDouble->violations();
  driverDouble->reset();
}

TEST(CudaProtocol, TheDoubleCatchesATensorReachingPastItsAllocation) {
  // The test of the test: a flat body's tensor whose elements run past the end of its device
  // allocation is reported before the launch touches it.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  AdamOnDevice setup(device, 3);
  auto& [adam, state, copy] = setup;
  TensorRef* tensor = nullptr;
  for (Argument& argument : copy.arguments)
    if (auto* candidate = std::get_if<TensorRef>(&argument); candidate && candidate->numel() > 1)
      tensor = tensor ? tensor : candidate;
  ASSERT_NE(tensor, nullptr);
  // The last element's worth of bytes further on: numel elements now end past the buffer.
  tensor->data = static_cast<std::byte*>(tensor->data) + byteSize(tensor->dtype);
  FusionExecutorCache executor(*adam.fusion, onTheDevice(SegmentationMode::Batched));
  executor.run(copy.arguments);
  std::string message = errorOf([&] { device.synchronize(nullptr); });
  EXPECT_NE(message.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << message;
  EXPECT_NE(driverDouble->violations().find("past the end of its allocation"), std::string::npos)
      << driverDouble->violations();
  driverDouble->reset();
}
