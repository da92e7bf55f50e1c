// Every GPU of a node, on the CUDA driver double's two devices: a run goes to the device its
// tensors are on, with its tables, tickets, workspaces and kept results there and its kernels
// on that device's stream; tensors on two devices are refused before anything runs. The double
// checks that every pointer a launch reads is memory of the launching device, and refuses a
// stream of another device's context.

#include "tests/runtime/capture_support.h"
#include "tests/support/error_of.h"

using namespace widefuse;
using namespace widefuse::testing;

namespace {

ExecutorOptions onTheDevice(SegmentationMode mode = SegmentationMode::Batched) {
  ExecutorOptions options;
  options.backend = "cuda";
  options.mode = mode;
  return options;
}

} // namespace

TEST(CudaDevices, AFusionRunsOnTheDeviceItsTensorsAreOn) {
  WF_REQUIRE_DOUBLE();
  const CudaDevice& second = CudaDevice::get(1);
  for (SegmentationMode mode : {SegmentationMode::Batched, SegmentationMode::PerComponent}) {
    SCOPED_TRACE(modeName(mode).str());
    AdamOnDevice adam(second, clippedAdamW(600));
    const Fusion& fusion = adam.fusion();
    CudaStream stream(second, /*nonBlocking=*/true); // a stream of device 1's context
    FusionExecutorCache executor(fusion, onStream(mode, stream.handle()));
    std::unique_ptr<PreparedRun> prepared =
        executor.prepare(adam.arguments, std::nullopt, adam.outputs);
    size_t g1 = inputNamed(fusion, "g1");
    for (int step = 0; step < 3; ++step) {
      prepared->launch();
      evaluate(fusion, adam.reference);
      // A new grad in new memory of device 1: the table is uploaded there again.
      DeviceBuffer moved(second, adam.buffers[g1].size());
      adam.newGrad(g1, moved, 40 + step);
      second.synchronize(nullptr);
      prepared->rebindTensor(g1, moved.pointer());
      std::get<TensorRef>(adam.arguments[g1]).data = moved.pointer();
      std::swap(adam.buffers[g1], moved);
      stream.synchronize();
    }
    executor.run(adam.arguments, adam.outputs); // the checked path too
    evaluate(fusion, adam.reference);
    stream.synchronize();
    EXPECT_EQ(adam.differing(), 0);
    EXPECT_EQ(driverDouble->violations(), "");
  }
}

TEST(CudaDevices, OneExecutorRunsOnEachDeviceItsArgumentsAreOn) {
  // A specialization per device: the same fusion on device 0 and on device 1 (as one process
  // driving two GPUs would), each with its own kernels, tables and kept memory.
  WF_REQUIRE_DOUBLE();
  AdamOnDevice first(CudaDevice::get(0), clippedAdamW(40));
  AdamOnDevice second(CudaDevice::get(1), clippedAdamW(40));
  FusionExecutorCache executor(first.fusion(), onTheDevice());
  // The second one's arguments for the first one's fusion: the same inputs, in order.
  for (int step = 0; step < 2; ++step) {
    executor.run(first.arguments, first.outputs);
    evaluate(first.fusion(), first.reference);
    executor.run(second.arguments, second.outputs);
    evaluate(second.fusion(), second.reference);
  }
  CudaDevice::get(0).synchronizeContext();
  CudaDevice::get(1).synchronizeContext();
  EXPECT_EQ(executor.numSpecializations(), 2u);
  EXPECT_EQ(first.differing(), 0);
  EXPECT_EQ(second.differing(), 0);
  EXPECT_EQ(driverDouble->violations(), "");
}

TEST(CudaDevices, ArgumentsOnTwoDevicesAreRefusedBeforeAnythingRuns) {
  WF_REQUIRE_DOUBLE();
  AdamOnDevice adam(CudaDevice::get(1), clippedAdamW(5));
  const Fusion& fusion = adam.fusion();
  // p0 moves to device 0; the rest stays on device 1.
  size_t p0 = inputNamed(fusion, "p0");
  DeviceBuffer elsewhere(CudaDevice::get(0), adam.buffers[p0].size());
  std::vector<std::byte> before(adam.buffers[p0].size());
  adam.buffers[p0].download(before);
  elsewhere.upload(before);
  std::vector<Argument> arguments = adam.arguments;
  std::get<TensorRef>(arguments[p0]).data = elsewhere.pointer();
  driverDouble->reset();
  FusionExecutorCache executor(fusion, onTheDevice());
  std::string message = errorOf([&] { executor.run(arguments); });
  // Named in input order: which of the two comes first is the fusion's.
  EXPECT_CONTAINS(message, "input 'p0'");
  EXPECT_TRUE(message.find("in the memory of CUDA device 0 but input") != std::string::npos ||
              message.find("in the memory of CUDA device 1 but input") != std::string::npos)
      << message;
  EXPECT_CONTAINS(message, "; a run uses one device: move them to one device first");
  EXPECT_CONTAINS(errorOf([&] { executor.prepare(arguments); }), "a run uses one device");
  wf_double_counters counters = driverDouble->counters();
  EXPECT_EQ(counters.launches, 0u);
  EXPECT_EQ(counters.uploads, 0u);
  EXPECT_EQ(counters.memsets, 0u);
  EXPECT_EQ(adam.differing(), 0) << "nothing was written";
}

TEST(CudaDevices, HostArgumentsRunOnTheDeviceTheOptionsName) {
  WF_REQUIRE_DOUBLE();
  AdamOnDevice adam(CudaDevice::get(0), clippedAdamW(7));
  ExecutorOptions options = onTheDevice();
  options.cuda.device = 1;
  FusionExecutorCache executor(adam.fusion(), options);
  std::vector<Argument> host = adam.reference; // host tensors: staged on device 1
  AdamState expected = initialAdamState(adam.adam);
  std::vector<Argument> reference = expected.arguments(adam.fusion());
  executor.run(host);
  evaluate(adam.fusion(), reference);
  for (size_t i = 0; i < host.size(); ++i)
    if (const auto* tensor = std::get_if<TensorRef>(&host[i]))
      EXPECT_EQ(std::memcmp(tensor->data, std::get<TensorRef>(reference[i]).data,
                            size_t(tensor->numel()) * byteSize(tensor->dtype)),
                0)
          << adam.fusion().inputs()[i]->name();
  EXPECT_EQ(driverDouble->violations(), "");
  options.cuda.device = 5;
  FusionExecutorCache nowhere(adam.fusion(), options);
  EXPECT_CONTAINS(errorOf([&] { nowhere.run(host); }), "no CUDA device 5: the driver sees 2 GPUs");
}
