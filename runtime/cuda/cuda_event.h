#pragma once
/// Events and page-locked host memory of a device: what orders work across streams without a
/// context-wide wait, and what copies read without staging. Both are destroyed with the
/// device's context current; the device must outlive them.

#include "runtime/cuda/cuda_device.h"

#include <llvm/ADT/ArrayRef.h>

#include <cstddef>

namespace widefuse {

/// An event for ordering only (no timing): a point in a stream's work that the host or other
/// streams wait for.
class CudaEvent {
public:
  explicit CudaEvent(const CudaDevice& device);
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  /// Captures the work queued on `stream` so far (replacing what an earlier record captured).
  void record(void* stream);
  /// Makes the work queued on `stream` from now on wait for what record() captured (nothing
  /// before the first record).
  void orderBefore(void* stream) const;
  /// Waits in the host for what record() captured.
  void synchronize() const;

private:
  const CudaDevice& device_;
  CUevent event_ = nullptr;
};

/// Page-locked host memory: a copy from it to the device needs no staging, so it runs in
/// stream order without the host waiting, and a copy captured into a CUDA graph reads it at
/// each replay.
class PinnedBuffer {
public:
  /// `bytes` bytes (at least one is allocated); contents are undefined.
  PinnedBuffer(const CudaDevice& device, size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  /// The size in bytes.
  size_t size() const { return size_; }
  /// The memory.
  std::byte* data() const { return data_; }
  /// Copies `bytes` to the start of the memory (they must fit).
  void assign(llvm::ArrayRef<std::byte> bytes);

private:
  const CudaDevice& device_;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

} // namespace widefuse
