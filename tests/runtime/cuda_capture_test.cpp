// CUDA graph capture of a prepared step (torch.cuda.graph), on the CUDA driver double: its
// capture mode records the work of a capturing stream instead of running it, refuses every
// call a real capture forbids (tests/support/cuda_double/capture_model.h), and replays the
// recorded work. A step whose setup already happened must be captured with nothing but its
// launches; what cannot be captured must be an Error naming it, never a wrong graph.

#include "tests/runtime/capture_support.h"
#include "tests/support/error_of.h"

using namespace widefuse;
using widefuse::testing::DriverDouble;
using widefuse::testing::errorOf;

using namespace widefuse::testing;

TEST(CudaCapture, APreparedStepIsCapturedWithItsLaunchesAloneAndReplays) {
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  for (SegmentationMode mode : {SegmentationMode::Batched, SegmentationMode::PerComponent}) {
    SCOPED_TRACE(modeName(mode).str());
    AdamOnDevice adam(device, 9);
    const Fusion& fusion = adam.fusion();
    CudaStream stream(device, /*nonBlocking=*/true); // torch's capture streams are such
    FusionExecutorCache executor(fusion, onStream(mode, stream.handle()));
    std::unique_ptr<PreparedRun> prepared = executor.prepare(adam.arguments);
    // The warm-up torch's recipe asks for: the first launch zeroes the tickets.
    for (int step = 0; step < 2; ++step) {
      prepared->launch();
      evaluate(fusion, adam.reference);
    }
    // Before the capture: a new grad for p1 (another buffer) and a new learning rate.
    size_t g1 = inputNamed(fusion, "g1"), g5 = inputNamed(fusion, "g5");
    size_t lr = inputNamed(fusion, "lr0");
    DeviceBuffer movedGrad(device, adam.buffers[g1].size());
    adam.newGrad(g1, movedGrad, 1);
    device.synchronize(nullptr);
    prepared->rebindTensor(g1, movedGrad.pointer());
    std::swap(adam.buffers[g1], movedGrad); // where the runtime now reads g1 from
    prepared->setScalar(lr, 0.5e-3);
    adam.reference[lr] = ScalarArgument(0.5e-3);

    stream.synchronize();
    driverDouble->reset();
    auto [graph, result, failure] =
        captured(*driverDouble, stream.handle(), [&] { prepared->launch(); });
    EXPECT_EQ(failure, "");
    ASSERT_EQ(result, 0) << driverDouble->violations();
    ASSERT_NE(graph, nullptr);
    // Only the rebound grad is asked about (memory type and device: pure queries, legal under
    // capture).
    expectLaunchesAlone(*driverDouble, executor.lastCompiled()->numLaunches(), 2);
    EXPECT_EQ(driverDouble->violations(), "");
    // Recorded, not run: the device state is still that of the warm-up.
    stream.synchronize();
    EXPECT_EQ(adam.differing(), 0);

    // Replays with new values in the static grads, as torch's recipe copies them in.
    expectReplaysMatch(*driverDouble, device, adam, graph, stream, [&](uint32_t round) {
      adam.newGrad(g1, adam.buffers[g1], 10 + round);
      adam.newGrad(g5, adam.buffers[g5], 20 + round);
    });
    // After the capture the step still runs outside it.
    prepared->launch();
    evaluate(fusion, adam.reference);
    stream.synchronize();
    EXPECT_EQ(adam.differing(), 0);
    EXPECT_EQ(driverDouble->violations(), "");
    driverDouble->destroyGraph(graph);
  }
}

TEST(CudaCapture, AStepWarmedUpOnOneStreamIsCapturedOnAnother) {
  // torch.cuda.graph(g) without stream= captures on a stream of its own, not the warm-up's:
  // the stream is each launch's, so the captured step is the warm-up's kernels on the capture
  // stream, and nothing else.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  for (SegmentationMode mode : {SegmentationMode::Batched, SegmentationMode::PerComponent}) {
    SCOPED_TRACE(modeName(mode).str());
    AdamOnDevice adam(device, 9);
    const Fusion& fusion = adam.fusion();
    CudaStream warmUp(device, /*nonBlocking=*/true), capture(device, /*nonBlocking=*/true);
    // The executor's own stream is neither: every launch names its stream.
    FusionExecutorCache executor(fusion, onStream(mode, nullptr));
    std::unique_ptr<PreparedRun> prepared = executor.prepare(adam.arguments, warmUp.handle());
    for (int step = 0; step < 2; ++step) {
      prepared->launch(warmUp.handle());
      evaluate(fusion, adam.reference);
    }
    size_t lr = inputNamed(fusion, "lr0"), g3 = inputNamed(fusion, "g3");
    prepared->setScalar(lr, 2e-3);
    adam.reference[lr] = ScalarArgument(2e-3);
    // What torch.cuda.graph does before its capture: the device is idle.
    device.synchronizeContext();
    driverDouble->reset();
    auto [graph, result, failure] =
        captured(*driverDouble, capture.handle(), [&] { prepared->launch(capture.handle()); });
    EXPECT_EQ(failure, "");
    ASSERT_EQ(result, 0) << driverDouble->violations();
    ASSERT_NE(graph, nullptr);
    expectLaunchesAlone(*driverDouble, executor.lastCompiled()->numLaunches(), 0);
    EXPECT_EQ(driverDouble->violations(), "");
    device.synchronizeContext();
    EXPECT_EQ(adam.differing(), 0) << "the capture ran something";

    // Replayed on a third stream, as a graph may be, with new grads copied in between.
    CudaStream replay(device, /*nonBlocking=*/true);
    expectReplaysMatch(*driverDouble, device, adam, graph, replay,
                       [&](uint32_t round) { adam.newGrad(g3, adam.buffers[g3], 30 + round); });
    // Eager steps go on: back on the warm-up stream, and on the executor's default one.
    prepared->launch(warmUp.handle());
    evaluate(fusion, adam.reference);
    prepared->launch();
    evaluate(fusion, adam.reference);
    device.synchronizeContext();
    EXPECT_EQ(adam.differing(), 0);
    EXPECT_EQ(driverDouble->violations(), "");
    driverDouble->destroyGraph(graph);
  }
}

TEST(CudaCapture, AStepOnAnotherStreamWaitsForTheLastStreamsWork) {
  // The tables and tickets are the executor's, not the stream's: a launch on a new stream
  // must not upload a table or count tickets while the last stream's kernels may still run.
  // The double runs queued work only when forced, so an unordered reader would find the
  // writes pending and be reported.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  AdamOnDevice adam(device, 600); // a member table in device memory
  const Fusion& fusion = adam.fusion();
  CudaStream first(device, /*nonBlocking=*/true), second(device, /*nonBlocking=*/true);
  FusionExecutorCache executor(fusion, onStream(SegmentationMode::Batched, first.handle()));
  size_t g1 = inputNamed(fusion, "g1");
  std::unique_ptr<PreparedRun> prepared = executor.prepare(adam.arguments);
  driverDouble->reset();
  prepared->launch(); // the options' stream: `first`
  evaluate(fusion, adam.reference);
  EXPECT_EQ(driverDouble->counters().synchronizations, 0u);
  // A new grad in fresh memory (written on the legacy stream, which `first` does not wait
  // for); the rebind uploads the table again, now on `second`.
  DeviceBuffer movedGrad(device, adam.buffers[g1].size());
  adam.newGrad(g1, movedGrad, 7);
  device.synchronize(nullptr); // the legacy stream alone: `first` still has its step queued
  prepared->rebindTensor(g1, movedGrad.pointer());
  std::swap(adam.buffers[g1], movedGrad);
  wf_double_counters before = driverDouble->counters();
  prepared->launch(second.handle());
  evaluate(fusion, adam.reference);
  wf_double_counters after = driverDouble->counters();
  EXPECT_EQ(after.eventWaits, before.eventWaits + 1) << "one wait, at the switch";
  EXPECT_EQ(after.synchronizations, before.synchronizations) << "the device waits, not the host";
  prepared->launch(second.handle());
  evaluate(fusion, adam.reference);
  EXPECT_EQ(driverDouble->counters().eventWaits, after.eventWaits) << "none on one stream";
  second.synchronize();
  EXPECT_EQ(adam.differing(), 0);
  EXPECT_EQ(driverDouble->violations(), "");
}

TEST(CudaCapture, TheDoubleRefusesWhatACaptureForbids) {
  // The test of the test: each call a real capture refuses is refused, recorded and
  // invalidates the capture, so a runtime that made one would fail the test above.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  CudaStream stream(device, /*nonBlocking=*/true), blocking(device, /*nonBlocking=*/false);
  DeviceBuffer buffer(device, 64);
  std::vector<std::byte> host(64);
  struct Case {
    const char* call;
    const char* error;
    CudaStream* captured;
    std::function<void()> body;
  };
  Case cases[] = {
      {"cuStreamSynchronize", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", &stream,
       [&] { stream.synchronize(); }},
      {"cuCtxSynchronize", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", &stream,
       [&] { device.synchronizeContext(); }},
      {"cuMemAlloc", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", &stream,
       [&] { DeviceBuffer(device, 16); }},
      {"cuMemcpyHtoDAsync", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", &stream,
       [&] { buffer.uploadAsync(host, stream.handle()); }},
      {"cuMemcpyHtoD", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", &stream,
       [&] { buffer.upload(host); }},
      {"cuMemsetD8Async", "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", &blocking,
       [&] { buffer.zeroAsync(nullptr); }}, // the legacy stream, beside a blocking capture
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.call);
    driverDouble->reset();
    auto [graph, result, failure] = captured(*driverDouble, test.captured->handle(), test.body);
    EXPECT_NE(failure.find(test.error), std::string::npos) << failure;
    EXPECT_NE(driverDouble->violations().find(std::string(test.call) + " during stream capture"),
              std::string::npos)
        << driverDouble->violations();
    EXPECT_EQ(result, kInvalidated);
    EXPECT_EQ(graph, nullptr);
    EXPECT_EQ(driverDouble->counters().captureRefusals, 1u);
  }
  driverDouble->reset();
}

TEST(CudaCapture, WhatCannotBeCapturedIsAnErrorNamingIt) {
  // The runtime asks whether its stream captures wherever a step would stage, upload, load or
  // wait, and refuses before the driver has to: no call is refused, nothing is half captured.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  CudaStream stream(device, /*nonBlocking=*/true);
  auto expectRefused = [&](const char* what, auto body) {
    SCOPED_TRACE(what);
    driverDouble->reset();
    Capture capture = captured(*driverDouble, stream.handle(), body);
    EXPECT_NE(capture.failure.find(what), std::string::npos) << capture.failure;
    EXPECT_EQ(driverDouble->counters().captureRefusals, 0u) << driverDouble->violations();
    EXPECT_EQ(driverDouble->counters().capturedOperations, 0u);
    EXPECT_EQ(capture.result, 0);
    driverDouble->destroyGraph(capture.graph);
  };
  AdamOnDevice adam(device, 3);
  // Host tensors are staged: a device buffer, and a wait to copy them back.
  FusionExecutorCache staged(adam.fusion(), onStream(SegmentationMode::Batched, stream.handle()));
  staged.run(adam.reference);
  expectRefused("input 'p0' is in host memory, and a run under CUDA graph capture cannot stage it",
                [&] { staged.run(adam.reference); });
  // The first run loads the kernels and allocates their tickets.
  FusionExecutorCache fresh(adam.fusion(), onStream(SegmentationMode::Batched, stream.handle()));
  expectRefused("runs for the first time", [&] { fresh.run(adam.arguments); });
  // WIDEFUSE_CUDA_SYNC=1 waits for each kernel.
  ExecutorOptions waiting = onStream(SegmentationMode::Batched, stream.handle());
  waiting.cuda.synchronizeEachLaunch = true;
  FusionExecutorCache synchronizing(adam.fusion(), waiting);
  synchronizing.run(adam.arguments);
  expectRefused("WIDEFUSE_CUDA_SYNC=1", [&] { synchronizing.run(adam.arguments); });
  // A member table in device memory (600 parameters) is uploaded under capture after a
  // rebind, from memory made beforehand: two captures in a row, not three.
  AdamOnDevice large(device, 600);
  FusionExecutorCache executor(large.fusion(),
                               onStream(SegmentationMode::Batched, stream.handle()));
  std::unique_ptr<PreparedRun> prepared = executor.prepare(large.arguments);
  prepared->launch();
  size_t g1 = inputNamed(large.fusion(), "g1");
  std::vector<DeviceBuffer> grads;
  std::vector<void*> graphs;
  for (int capture = 0; capture < 3; ++capture) {
    grads.emplace_back(device, large.buffers[g1].size());
    grads.back().zero();
    device.synchronize(nullptr); // the legacy stream's memset, before the step reads it
    prepared->rebindTensor(g1, grads.back().pointer());
    stream.synchronize();
    if (capture == 2) {
      expectRefused("changed in 2 captures since its last launch outside capture",
                    [&] { prepared->launch(); });
      break;
    }
    Capture taken = captured(*driverDouble, stream.handle(), [&] { prepared->launch(); });
    EXPECT_EQ(taken.failure, "");
    graphs.push_back(taken.graph);
  }
  // Outside the capture the same step runs, and makes spare tables again.
  driverDouble->reset();
  prepared->launch();
  stream.synchronize();
  EXPECT_EQ(driverDouble->violations(), "");
  for (void* graph : graphs)
    driverDouble->destroyGraph(graph);
}
