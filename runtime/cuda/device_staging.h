#pragma once
/// The CUDA backend's path for tensors in host memory: staged through device buffers on the
/// launch stream, and, after the run, the copy_ destinations and the outputs copied back. A
/// run whose tensors are all in device memory stages nothing and never waits.

#include "ir/evaluator.h"
#include "ir/fusion.h"
#include "runtime/cuda/cuda_device.h"

#include <llvm/ADT/ArrayRef.h>

#include <utility>
#include <vector>

namespace widefuse {

/// The staging of one run; its buffers live as long as it does.
class DeviceStaging {
public:
  DeviceStaging(const CudaDevice& device, const Fusion& fusion, void* stream)
      : device_(device), fusion_(fusion), stream_(stream) {}

  /// `arguments` with every tensor in host memory replaced by a device copy of its span.
  /// Throws Error naming the input when a tensor is in another device's memory.
  std::vector<Argument> stageInputs(llvm::ArrayRef<Argument> arguments);
  /// `outputs` with every non-empty one in host memory replaced by a device buffer.
  std::vector<TensorRef> stageOutputs(llvm::ArrayRef<TensorRef> outputs);
  /// True when stageInputs copied an input (the bindings then hold run-specific addresses).
  /// Staging allocates and, after the run, synchronises: under CUDA graph capture the stage
  /// calls throw an Error naming the tensor instead.
  bool stagedInputs() const { return !inputs_.empty(); }
  /// Waits for the stream, then copies the staged copy_ destinations (element by element, so
  /// interleaved destinations stay intact) and outputs back into `arguments` and `outputs`,
  /// the host tensors given to the stage calls. Does nothing when nothing was staged.
  void copyBack(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<TensorRef> outputs);

private:
  /// Throws Error naming `role` `value` when the stream captures (asked once per staging).
  void refuseUnderCapture(llvm::StringRef role, const Value& value);

  const CudaDevice& device_;
  const Fusion& fusion_;
  void* stream_;
  bool checkedCapture_ = false;
  std::vector<std::pair<size_t, DeviceBuffer>> inputs_;
  std::vector<std::pair<size_t, DeviceBuffer>> outputs_;
};

} // namespace widefuse
