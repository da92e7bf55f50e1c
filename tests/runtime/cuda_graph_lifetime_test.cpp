// CUDA graphs of any model, on the CUDA driver double: a captured step whose grads have new
// addresses rebinds its member tables under capture, whatever the parameter count; and what a
// captured graph uses stays alive while it can be replayed (a larger eager step, a dropped
// executor). The double checks every pointer a replayed launch reads against the live
// allocations, so memory freed under a graph is a violation, not a silent corruption.

#include "tests/runtime/capture_support.h"
#include "tests/support/error_of.h"

#include "ir/fusion_definition.h"

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// The grad inputs of an Adam fusion (g0, g1, ...), by input index.
std::vector<size_t> gradInputs(const Fusion& fusion) {
  std::vector<size_t> grads;
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    llvm::StringRef name = fusion.inputs()[i]->name();
    if (name.size() > 1 && name[0] == 'g' && std::isdigit(name[1]))
      grads.push_back(i);
  }
  return grads;
}

/// New memory for every grad of `adam`, with new values (written to the reference too), bound
/// to `prepared`; the old buffers are returned (a captured graph may still read them).
std::vector<DeviceBuffer> moveEveryGrad(AdamOnDevice& adam, PreparedRun& prepared,
                                        const CudaDevice& device, uint32_t seed) {
  std::vector<DeviceBuffer> old;
  for (size_t g : gradInputs(adam.fusion())) {
    DeviceBuffer moved(device, adam.buffers[g].size());
    adam.newGrad(g, moved, seed + uint32_t(g));
    prepared.rebindTensor(g, moved.pointer());
    old.push_back(std::move(adam.buffers[g]));
    adam.buffers[g] = std::move(moved);
  }
  device.synchronize(nullptr); // the legacy stream's uploads, before a step reads them
  return old;
}

/// A clip of one tensor of any length by its own norm: its reduction workspace grows with the
/// length, one executor serving every length.
std::unique_ptr<Fusion> clipOfAnyLength() {
  FusionDefinition fd("clip_any_length");
  Val total = fd.defineTensor({}, DataType::Float, "total");
  Val p = fd.defineTensor({kSymbolicExtent}, DataType::Float, "p");
  Val g = fd.defineTensor({kSymbolicExtent}, DataType::Float, "g");
  Val norm = sqrt(sum(std::vector<Val>{g * g}));
  Val coefficient = minimum(1.0 / (norm + 1e-6), 1.0);
  fd.copy_(p - 0.1 * (g * coefficient), p);
  fd.copy_(norm, total);
  return fd.finalize();
}

/// The tensors of clipOfAnyLength with `length` elements: in host memory for the evaluator,
/// and a device copy the runtime steps.
struct ClipTensors {
  std::vector<HostTensor> host;
  std::vector<DeviceBuffer> buffers;
  std::vector<Argument> reference, arguments;

  ClipTensors(const CudaDevice& device, int64_t length) {
    host.emplace_back(DataType::Float, std::vector<int64_t>{});
    host.emplace_back(DataType::Float, std::vector<int64_t>{length});
    host.emplace_back(DataType::Float, std::vector<int64_t>{length});
    std::mt19937 random{uint32_t(length)};
    std::normal_distribution<float> normal;
    for (HostTensor& tensor : host) {
      auto* values = static_cast<float*>(tensor.data());
      for (int64_t e = 0; e < tensor.numel(); ++e)
        values[e] = normal(random);
      reference.push_back(tensor.ref());
      buffers.emplace_back(device, std::max<size_t>(tensor.byteSize(), 1));
      buffers.back().upload({static_cast<const std::byte*>(tensor.data()), tensor.byteSize()});
      TensorRef onDevice = tensor.ref();
      onDevice.data = buffers.back().pointer();
      arguments.push_back(onDevice);
    }
    device.synchronize(nullptr);
  }
  /// Whether every device tensor equals the reference's, bit for bit.
  bool equal() const {
    for (size_t i = 0; i < host.size(); ++i) {
      std::vector<std::byte> bytes(host[i].byteSize());
      buffers[i].download(bytes);
      if (std::memcmp(bytes.data(), host[i].data(), bytes.size()) != 0)
        return false;
    }
    return true;
  }
};

} // namespace

TEST(CudaGraphLifetime, AThousandParameterClippedStepIsCapturedWithNewGradAddresses) {
  // torch's whole-network capture re-allocates every grad inside the capture, so the member
  // tables (in device memory at this size) are rebound under capture.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  AdamOnDevice adam(device, clippedAdamW(1000));
  const Fusion& fusion = adam.fusion();
  CudaStream stream(device, /*nonBlocking=*/true);
  FusionExecutorCache executor(fusion, onStream(SegmentationMode::Batched, stream.handle()));
  std::unique_ptr<PreparedRun> prepared =
      executor.prepare(adam.arguments, std::nullopt, adam.outputs);
  std::vector<std::vector<DeviceBuffer>> retired;
  for (uint32_t step = 0; step < 2; ++step) { // warm-up steps, each with new grad memory
    prepared->launch();
    evaluate(fusion, adam.reference);
    stream.synchronize();
    retired.push_back(moveEveryGrad(adam, *prepared, device, 100 * step));
  }
  stream.synchronize();
  driverDouble->reset();
  auto [graph, result, failure] =
      captured(*driverDouble, stream.handle(), [&] { prepared->launch(); });
  EXPECT_EQ(failure, "");
  ASSERT_EQ(result, 0) << driverDouble->violations();
  ASSERT_NE(graph, nullptr);
  wf_double_counters counters = driverDouble->counters();
  size_t launches = executor.lastCompiled()->numLaunches();
  EXPECT_GT(counters.uploads, 0u) << "the tables are rebound in the graph";
  EXPECT_EQ(counters.capturedOperations, launches + counters.uploads);
  EXPECT_EQ(counters.allocations, 0u);
  EXPECT_EQ(counters.frees, 0u);
  EXPECT_EQ(counters.synchronizations + counters.eventSynchronizations, 0u);
  EXPECT_EQ(counters.captureRefusals, 0u) << driverDouble->violations();
  // Replays, with new grad values copied into the captured grads between them.
  std::vector<size_t> grads = gradInputs(fusion);
  auto refill = [&](uint32_t round) {
    for (size_t g : grads)
      adam.newGrad(g, adam.buffers[g], 7000 + 31 * round + uint32_t(g));
  };
  expectReplaysMatch(*driverDouble, device, adam, graph, stream, refill);
  // An eager step with grads elsewhere uploads its tables to new memory, not the graph's.
  std::vector<DeviceBuffer> capturedGrads = moveEveryGrad(adam, *prepared, device, 900);
  prepared->launch();
  evaluate(fusion, adam.reference);
  stream.synchronize();
  EXPECT_EQ(adam.differing(), 0);
  // The graph still reads the grads it captured, and its own tables.
  for (size_t k = 0; k < grads.size(); ++k)
    std::swap(adam.buffers[grads[k]], capturedGrads[k]);
  refill(50);
  device.synchronize(nullptr);
  expectReplaysMatch(*driverDouble, device, adam, graph, stream, refill);
  EXPECT_EQ(driverDouble->violations(), "");
  driverDouble->destroyGraph(graph);
}

TEST(CudaGraphLifetime, ALargerEagerStepAfterACaptureLeavesTheGraphItsWorkspace) {
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  std::unique_ptr<Fusion> fusion = clipOfAnyLength();
  CudaStream stream(device, /*nonBlocking=*/true);
  FusionExecutorCache executor(*fusion, onStream(SegmentationMode::Batched, stream.handle()));
  ClipTensors small(device, 5000), large(device, 300000);
  std::unique_ptr<PreparedRun> prepared = executor.prepare(small.arguments);
  prepared->launch();
  evaluate(*fusion, small.reference);
  stream.synchronize();
  auto [graph, result, failure] =
      captured(*driverDouble, stream.handle(), [&] { prepared->launch(); });
  ASSERT_EQ(failure, "");
  ASSERT_NE(graph, nullptr);
  // Sixty times the partials: the workspace grows, and the captured one stays the graph's.
  executor.run(large.arguments);
  evaluate(*fusion, large.reference);
  stream.synchronize();
  EXPECT_TRUE(large.equal());
  for (int round = 0; round < 2; ++round) {
    {
      CudaDevice::ContextScope scope(device);
      ASSERT_EQ(driverDouble->launchGraph(graph, stream.handle()), 0);
    }
    evaluate(*fusion, small.reference);
    stream.synchronize();
    EXPECT_TRUE(small.equal()) << "replay " << round;
  }
  EXPECT_EQ(driverDouble->violations(), "");
  driverDouble->destroyGraph(graph);
}

TEST(CudaGraphLifetime, AGraphOutlivesTheExecutorItCaptured) {
  // The optimizer (its executor, prepared step, kernels, tables and kept results) is dropped
  // while torch keeps the graph: replays still find their memory and modules; destroying the
  // graph lets them go at the next launch outside capture.
  WF_REQUIRE_DOUBLE();
  const CudaDevice& device = CudaDevice::get();
  CudaStream stream(device, /*nonBlocking=*/true);
  // Another fusion, whose launches release what destroyed graphs held (earlier tests' too).
  std::unique_ptr<Fusion> other = clipOfAnyLength();
  ClipTensors tensors(device, 100);
  auto launchOther = [&] {
    FusionExecutorCache executor(*other, onStream(SegmentationMode::Batched, stream.handle()));
    executor.run(tensors.arguments);
    stream.synchronize();
  };
  launchOther();
  AdamOnDevice adam(device, clippedAdamW(600));
  const Fusion& fusion = adam.fusion();
  size_t before = driverDouble->liveAllocations();
  void* graph = nullptr;
  {
    FusionExecutorCache executor(fusion, onStream(SegmentationMode::Batched, stream.handle()));
    std::unique_ptr<PreparedRun> prepared =
        executor.prepare(adam.arguments, std::nullopt, adam.outputs);
    prepared->launch();
    evaluate(fusion, adam.reference);
    std::vector<DeviceBuffer> old = moveEveryGrad(adam, *prepared, device, 5);
    stream.synchronize();
    Capture capture = captured(*driverDouble, stream.handle(), [&] { prepared->launch(); });
    ASSERT_EQ(capture.failure, "");
    ASSERT_NE(capture.graph, nullptr);
    graph = capture.graph;
    EXPECT_EQ(driverDouble->liveUserObjects(), 1u);
  }
  size_t g1 = inputNamed(fusion, "g1");
  expectReplaysMatch(*driverDouble, device, adam, graph, stream,
                     [&](uint32_t round) { adam.newGrad(g1, adam.buffers[g1], 60 + round); });
  EXPECT_EQ(driverDouble->violations(), "");
  driverDouble->destroyGraph(graph);
  EXPECT_EQ(driverDouble->liveUserObjects(), 0u);
  // The next launch outside capture (of any fusion) frees what the graph held.
  EXPECT_GT(driverDouble->liveAllocations(), before) << "held until a launch";
  launchOther();
  EXPECT_EQ(driverDouble->liveAllocations(), before) << "only the step's own tensors are left";
}
