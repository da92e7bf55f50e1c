#include "runtime/cuda/device_staging.h"

#include "ir/error.h"

#include <cstring>

namespace widefuse {
namespace {

/// True when `data` is in `device`'s memory, false in host memory; Error when it is in
/// another device's memory (a kernel of this device cannot use it).
bool inDeviceMemory(const CudaDevice& device, const void* data, llvm::StringRef role,
                    const Value& value) {
  std::optional<int> ordinal = device.deviceOrdinalOf(data);
  if (ordinal && *ordinal != device.ordinal())
    fail("{} '{}' is in the memory of CUDA device {}, but widefuse runs on device {}: move it "
         "there first",
         role.str(), value.name(), *ordinal, device.ordinal());
  return ordinal.has_value();
}

/// Copies the elements of `tensor` (and nothing between them) from `source`, a buffer laid
/// out like the tensor's span.
void copyElements(const TensorRef& tensor, const std::byte* source) {
  size_t element = byteSize(tensor.dtype);
  llvm::SmallVector<int64_t, 4> index(tensor.shape.size(), 0);
  auto* target = static_cast<std::byte*>(tensor.data);
  for (int64_t i = 0, count = tensor.numel(); i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * tensor.strides[d];
    std::memcpy(target + offset * int64_t(element), source + offset * int64_t(element), element);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < tensor.shape[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace

void DeviceStaging::refuseUnderCapture(llvm::StringRef role, const Value& value) {
  if (checkedCapture_)
    return;
  if (device_.isCapturing(stream_))
    fail("{} '{}' is in host memory, and a run under CUDA graph capture cannot stage it (a "
         "device buffer, and a synchronisation to copy results back): pass tensors in device "
         "memory",
         role.str(), value.name());
  checkedCapture_ = true;
}

std::vector<Argument> DeviceStaging::stageInputs(llvm::ArrayRef<Argument> arguments) {
  std::vector<Argument> staged(arguments.begin(), arguments.end());
  for (size_t i = 0; i < staged.size(); ++i) {
    TensorRef* tensor = std::get_if<TensorRef>(&staged[i]);
    // An empty tensor is never dereferenced: nothing to stage.
    if (!tensor || !tensor->data || tensor->numel() == 0 ||
        inDeviceMemory(device_, tensor->data, "input", *fusion_.inputs()[i]))
      continue;
    refuseUnderCapture("input", *fusion_.inputs()[i]);
    size_t bytes = size_t(tensor->span()) * byteSize(tensor->dtype);
    DeviceBuffer buffer(device_, bytes);
    // On the launch stream: a synchronous copy from pageable memory returns before the data
    // has arrived, and a non-blocking stream would not wait for it.
    buffer.uploadAsync({static_cast<const std::byte*>(tensor->data), bytes}, stream_);
    tensor->data = buffer.pointer();
    inputs_.emplace_back(i, std::move(buffer));
  }
  return staged;
}

std::vector<TensorRef> DeviceStaging::stageOutputs(llvm::ArrayRef<TensorRef> outputs) {
  std::vector<TensorRef> staged(outputs.begin(), outputs.end());
  for (size_t i = 0; i < staged.size(); ++i) {
    if (staged[i].numel() == 0 ||
        inDeviceMemory(device_, staged[i].data, "output", *fusion_.outputs()[i]))
      continue; // an empty output has nothing to write or copy back
    refuseUnderCapture("output", *fusion_.outputs()[i]);
    DeviceBuffer buffer(device_, size_t(staged[i].numel()) * byteSize(staged[i].dtype));
    staged[i].data = buffer.pointer();
    outputs_.emplace_back(i, std::move(buffer));
  }
  return staged;
}

void DeviceStaging::copyBack(llvm::ArrayRef<Argument> arguments,
                             llvm::ArrayRef<TensorRef> outputs) {
  if (inputs_.empty() && outputs_.empty())
    return;
  device_.synchronize(stream_);
  for (auto& [index, buffer] : inputs_) {
    if (!fusion_.aliasOf(fusion_.inputs()[index]))
      continue; // only copy_ destinations change
    const TensorRef& original = std::get<TensorRef>(arguments[index]);
    // Only the tensor's own elements: a strided destination may interleave with another.
    std::vector<std::byte> span(size_t(original.span()) * byteSize(original.dtype));
    buffer.download(span);
    copyElements(original, span.data());
  }
  for (auto& [index, buffer] : outputs_)
    buffer.download({static_cast<std::byte*>(outputs[index].data),
                     size_t(outputs[index].numel()) * byteSize(outputs[index].dtype)});
}

} // namespace widefuse
