#pragma once
// What the CUDA tests on the driver double share: an Adam step whose tensors live on a
// device, stepped beside the reference evaluator, and the double's stream capture driven as
// torch.cuda.graph drives it.

#include "ir/evaluator.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/fusion_executor.h"

#include "tests/support/driver_double.h"
#include "tests/support/mixed_shapes.h"
#include "tools/adam_state.h"
#include "tools/workloads/adam.h"

#include <gtest/gtest.h>
#include <llvm/ADT/STLFunctionalExtras.h>

#include <cstring>
#include <random>

namespace widefuse::testing {

/// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
constexpr int kInvalidated = 901;

inline size_t inputNamed(const Fusion& fusion, llvm::StringRef name) {
  for (size_t i = 0; i < fusion.inputs().size(); ++i)
    if (fusion.inputs()[i]->name() == name)
      return i;
  ADD_FAILURE() << "no input " << name.str();
  return 0;
}

/// An Adam step (amsgrad) over `count` mixed parameters: host arguments the reference
/// evaluator steps, and a device copy of every tensor the runtime steps.
struct AdamOnDevice {
  optim::AdamFusion adam;
  AdamState state;
  std::vector<Argument> reference;
  std::vector<DeviceBuffer> buffers; // by input index (empty for scalars)
  std::vector<Argument> arguments;
  /// Device memory for the plain outputs (the clip's total norm, a 0-d tensor).
  std::vector<DeviceBuffer> outputBuffers;
  std::vector<TensorRef> outputs;

  AdamOnDevice(const CudaDevice& device, size_t count) : AdamOnDevice(device, amsgrad(count)) {}
  AdamOnDevice(const CudaDevice& device, const optim::AdamConfig& config)
      : adam(optim::buildAdam(config)) {
    state = initialAdamState(adam);
    reference = state.arguments(*adam.fusion);
    for (const Argument& argument : reference) {
      buffers.emplace_back();
      const TensorRef* tensor = std::get_if<TensorRef>(&argument);
      if (!tensor) {
        arguments.push_back(argument);
        continue;
      }
      buffers.back() = DeviceBuffer(device, std::max<size_t>(bytesOf(*tensor), 1));
      buffers.back().upload({static_cast<const std::byte*>(tensor->data), bytesOf(*tensor)});
      TensorRef copy = *tensor;
      copy.data = buffers.back().pointer();
      arguments.push_back(copy);
    }
    for (const Value* output : adam.fusion->outputs()) {
      TensorRef tensor;
      tensor.dtype = output->dtype();
      tensor.shape.assign(output->extents().begin(), output->extents().end());
      tensor.strides = contiguousStrides(tensor.shape);
      outputBuffers.emplace_back(device, std::max<size_t>(bytesOf(tensor), 1));
      tensor.data = outputBuffers.back().pointer();
      outputs.push_back(tensor);
    }
    device.synchronize(nullptr);
  }
  /// Adam with amsgrad over `count` mixed small parameters.
  static optim::AdamConfig amsgrad(size_t count) {
    optim::AdamConfig config;
    config.amsgrad = true;
    config.groups.push_back({widefuse::testing::mixedShapes(count), {}});
    return config;
  }
  static size_t bytesOf(const TensorRef& tensor) {
    return size_t(tensor.numel()) * byteSize(tensor.dtype);
  }
  const Fusion& fusion() const { return *adam.fusion; }
  /// Tensor inputs whose device copy differs in bits from the reference's.
  int differing() const {
    int different = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
      const TensorRef* tensor = std::get_if<TensorRef>(&reference[i]);
      if (!tensor || bytesOf(*tensor) == 0)
        continue;
      std::vector<std::byte> bytes(bytesOf(*tensor));
      buffers[i].download(bytes);
      different += std::memcmp(bytes.data(), tensor->data, bytes.size()) != 0;
    }
    return different;
  }
  /// New random grad values for input `index`, written to the reference and to `target`
  /// (the device memory the runtime reads it from); the copy is waited for.
  void newGrad(size_t index, DeviceBuffer& target, uint32_t seed) {
    auto& tensor = std::get<TensorRef>(reference[index]);
    std::mt19937 random(seed);
    std::normal_distribution<float> normal;
    auto* values = static_cast<float*>(tensor.data);
    for (int64_t e = 0; e < tensor.numel(); ++e)
      values[e] = normal(random);
    // On the legacy stream: the caller synchronises before a step reads it.
    target.upload({static_cast<const std::byte*>(tensor.data), bytesOf(tensor)});
  }
};

/// Small shapes, so that hundreds of parameters stay cheap on the emulated device.
inline const optim::Shape kTinyShapes[] = {{7}, {1}, {16, 16}, {3, 5, 2}, {33}};

/// Clipped AdamW (decoupled decay, clip by the total norm, GradScaler's scale) over `count`
/// tiny parameters: two phases with kept results; pass 1's member table takes 64 bytes an
/// entry, so from about 500 parameters it is in device memory.
inline optim::AdamConfig clippedAdamW(size_t count) {
  optim::AdamConfig config;
  config.decay = optim::WeightDecayKind::Decoupled;
  config.maxGradNorm = 1.0;
  config.gradScale = true;
  config.groups.push_back({mixedShapes(count, kTinyShapes), {}});
  return config;
}

inline ExecutorOptions onStream(SegmentationMode mode, void* stream) {
  ExecutorOptions options;
  options.backend = "cuda";
  options.mode = mode;
  options.cuda.stream = stream;
  return options;
}

/// Runs `body` while `stream` captures.
struct Capture {
  void* graph;         ///< null when the capture was invalidated
  int result;          ///< cuStreamEndCapture's
  std::string failure; ///< the Error `body` threw, if any
};

template <typename Body>
Capture captured(DriverDouble& driverDouble, void* stream, Body body,
                 const CudaDevice& device = CudaDevice::get()) {
  CudaDevice::ContextScope scope(device);
  EXPECT_EQ(driverDouble.beginCapture(stream), 0);
  std::string failure;
  try {
    body();
  } catch (const Error& error) {
    failure = error.what();
  }
  void* graph = nullptr;
  int result = driverDouble.endCapture(stream, &graph);
  return {graph, result, failure};
}

/// Checks that the capture since the double's reset recorded `launches` kernel launches and
/// nothing else: no allocation, copy, memset, wait, legacy-stream work or refused call, and
/// `pointerQueries` pointer queries.
inline void expectLaunchesAlone(DriverDouble& driverDouble, size_t launches,
                                uint64_t pointerQueries) {
  wf_double_counters counters = driverDouble.counters();
  EXPECT_EQ(counters.capturedOperations, launches);
  EXPECT_EQ(counters.launches, launches);
  widefuse::testing::expectNoHiddenWork(counters, "during the capture");
  EXPECT_EQ(counters.pointerQueries, pointerQueries);
}

/// Replays `graph` on `stream` three times, each checked against the reference evaluator;
/// `refill(round)` writes new grads after each, as torch's recipe copies them into the static
/// grads between replays.
inline void expectReplaysMatch(DriverDouble& driverDouble, const CudaDevice& device,
                               AdamOnDevice& adam, void* graph, const CudaStream& stream,
                               llvm::function_ref<void(uint32_t)> refill) {
  for (uint32_t round = 0; round < 3; ++round) {
    evaluate(adam.fusion(), adam.reference);
    {
      CudaDevice::ContextScope scope(device);
      ASSERT_EQ(driverDouble.launchGraph(graph, stream.handle()), 0);
    }
    stream.synchronize();
    EXPECT_EQ(adam.differing(), 0) << "replay " << round;
    refill(round);
    device.synchronize(nullptr);
  }
}

} // namespace widefuse::testing
