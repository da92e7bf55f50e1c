#include "runtime/cuda/cuda_event.h"

#include "ir/error.h"

#include <algorithm>
#include <cstring>

namespace widefuse {

CudaEvent::CudaEvent(const CudaDevice& device) : device_(device) {
  CudaDevice::ContextScope scope(device);
  device.driver().check(device.driver().cuEventCreate(&event_, kCudaEventDisableTiming),
                        "cuEventCreate");
}

CudaEvent::~CudaEvent() {
  try {
    CudaDevice::ContextScope scope(device_);
    device_.driver().cuEventDestroy(event_);
  } catch (const Error&) {
    // Process teardown: the driver cannot switch contexts any more; the event leaks.
  }
}

void CudaEvent::record(void* stream) {
  CudaDevice::ContextScope scope(device_);
  device_.driver().check(device_.driver().cuEventRecord(event_, static_cast<CUstream>(stream)),
                         "cuEventRecord");
}

void CudaEvent::orderBefore(void* stream) const {
  CudaDevice::ContextScope scope(device_);
  device_.driver().check(
      device_.driver().cuStreamWaitEvent(static_cast<CUstream>(stream), event_, 0),
      "cuStreamWaitEvent");
}

void CudaEvent::synchronize() const {
  CudaDevice::ContextScope scope(device_);
  device_.driver().check(device_.driver().cuEventSynchronize(event_), "cuEventSynchronize");
}

PinnedBuffer::PinnedBuffer(const CudaDevice& device, size_t bytes) : device_(device), size_(bytes) {
  CudaDevice::ContextScope scope(device);
  void* memory = nullptr;
  device.driver().check(device.driver().cuMemAllocHost(&memory, std::max<size_t>(bytes, 1)),
                        "cuMemAllocHost");
  data_ = static_cast<std::byte*>(memory);
}

PinnedBuffer::~PinnedBuffer() {
  try {
    CudaDevice::ContextScope scope(device_);
    device_.driver().cuMemFreeHost(data_);
  } catch (const Error&) {
  }
}

void PinnedBuffer::assign(llvm::ArrayRef<std::byte> bytes) {
  WF_ASSERT(bytes.size() <= size_, "{} bytes do not fit a {}-byte pinned buffer", bytes.size(),
            size_);
  if (!bytes.empty())
    std::memcpy(data_, bytes.data(), bytes.size());
}

} // namespace widefuse
