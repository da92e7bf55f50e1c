#pragma once
/// One CUDA device and what runs on it: its primary context, loaded cubins, device memory,
/// streams and kernel launches, all through the dlopen'ed driver (runtime/cuda/cuda_driver.h).
/// Every call makes the device's primary context current in the calling thread for its own
/// duration and restores the thread's previous context before it returns, so these objects
/// can be used from any thread without moving a caller (torch on another device, say) to
/// another context.

#include "runtime/cuda/cuda_compiler.h"
#include "runtime/cuda/cuda_driver.h"
#include "scheduler/device_description.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace widefuse {

class CudaModule;

/// A device with its primary context (the context the CUDA runtime and PyTorch also use, so
/// pointers are shared with them).
class CudaDevice {
public:
  /// The device `ordinal` of this process's driver, opened on first use (thread-safe) and
  /// kept for the life of the process. Throws Error "no CUDA driver: ..." without a driver,
  /// "no CUDA device: the driver sees 0 GPUs; use backend=host to run on the CPU" without a
  /// device, and one naming the ordinal and the count when it is out of range.
  static CudaDevice& get(int ordinal = 0);

  /// True when a driver loads and sees at least one device. Never throws (backend=auto and
  /// the gpu tests ask it); creates no context.
  static bool available() noexcept;

  /// Opens device `ordinal` of an explicit driver, owned by the caller (tests use a fake
  /// driver); the driver must outlive it. Throws like get().
  static std::unique_ptr<CudaDevice> open(const CudaDriver& driver, int ordinal);

  /// Releases the primary context (only devices from open() are ever destroyed).
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  /// The driver this device is reached through.
  const CudaDriver& driver() const { return *driver_; }
  /// The device ordinal.
  int ordinal() const { return ordinal_; }
  /// Arch ("sm_<major><minor>"), compute capability and multiprocessor count of the device.
  /// Its parameter limit is maxParameterBytes(), asked at the call: opening a device loads no
  /// NVRTC (a process may use the GPU's memory and run on the host).
  DeviceDescription description() const;
  /// The driver's CUDA version, 1000 * major + 10 * minor (12080 for 12.8).
  int driverVersion() const { return driverVersion_; }
  /// The device's marketing name, e.g. "NVIDIA H200".
  std::string name() const { return name_; }
  /// The largest parameter block a kernel launch accepts: 32764 bytes where the driver, the
  /// device and this process's NVRTC all allow it (12.1 or newer, Volta or newer), 4096 bytes
  /// otherwise (maxKernelParameterBytes). Loads NVRTC to know its version; where none loads,
  /// nothing can be compiled and the driver and the device decide alone.
  unsigned maxParameterBytes() const;

  /// Makes the device's primary context current in the calling thread for the life of the
  /// scope, then restores the context that was current before (a no-op when it already was
  /// the device's). For callers that use the driver table directly; the members below open
  /// one themselves.
  class ContextScope {
  public:
    /// Throws Error when the driver cannot read or set the current context.
    explicit ContextScope(const CudaDevice& device);
    ~ContextScope();
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;

  private:
    const CudaDevice& device_;
    CUcontext previous_ = nullptr;
    bool switched_ = false;
  };

  /// Launches `kernelName` of `module` on `stream` (null: the legacy default stream) with
  /// `gridBlocks` x `threadsPerBlock` threads and one argument, a struct whose bytes are
  /// `parameterBlock`. The driver copies the bytes during the call, so the caller may reuse
  /// them at once. Does not wait for the kernel. Throws Error naming the kernel when the
  /// block exceeds maxParameterBytes(), differs from the size of the kernel's parameter
  /// (checked when the driver can tell), or any driver call fails.
  void launch(const CudaModule& module, llvm::StringRef kernelName,
              llvm::ArrayRef<std::byte> parameterBlock, unsigned gridBlocks,
              unsigned threadsPerBlock, void* stream) const;

  /// Waits for all work queued on `stream` (null: the legacy default stream); throws Error
  /// when it failed (errors of asynchronous work surface here).
  void synchronize(void* stream) const;
  /// Waits for all work of the context, on every stream.
  void synchronizeContext() const;
  /// True while `stream` is being captured into a CUDA graph (torch.cuda.graph), its capture
  /// invalidated included, and for the legacy stream (null) while a blocking stream captures:
  /// work queued there is recorded, not run, and the calls that synchronise or allocate are
  /// refused. A pure query, legal during capture; false when the driver lacks it.
  bool isCapturing(void* stream) const;

  /// The ordinal of the device whose memory `pointer` is (cuMemAlloc, cudaMalloc, PyTorch's
  /// allocator); nullopt for host memory and addresses the driver does not know.
  std::optional<int> deviceOrdinalOf(const void* pointer) const;
  /// True when `pointer` is memory of this device (deviceOrdinalOf is ordinal()).
  bool isDevicePointer(const void* pointer) const;

private:
  friend class CudaModule;
  friend class DeviceBuffer;
  friend class CudaStream;

  CudaDevice(const CudaDriver& driver, int ordinal);

  const CudaDriver* driver_;
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  int driverVersion_ = 0;
  std::string name_;
  DeviceDescription description_;
};

/// A cubin loaded into a device's context, with the kernel's entry function resolved once.
/// Unloaded on destruction; the device must outlive it.
class CudaModule {
public:
  /// Loads `kernel.image` and resolves `kernel.name`. Throws Error naming the kernel when the
  /// driver rejects the image (with both archs when the cubin is for another arch, and NVRTC's
  /// and the driver's CUDA versions: cubinVersionNote) or the entry is missing.
  CudaModule(const CudaDevice& device, const KernelImage& kernel);
  ~CudaModule();
  CudaModule(CudaModule&& other) noexcept;
  CudaModule& operator=(CudaModule&& other) noexcept;

  /// The device the module is loaded on.
  const CudaDevice& device() const { return *device_; }
  /// The kernel's entry name.
  const std::string& kernelName() const { return kernelName_; }
  /// The kernel's entry function.
  CUfunction function() const { return function_; }
  /// Any entry function of the module; throws Error naming `name` when there is none.
  CUfunction function(llvm::StringRef name) const;
  /// How many blocks of `threadsPerBlock` threads of the kernel fit on one multiprocessor
  /// at once (its registers and shared memory decide; at least 1).
  unsigned residentBlocks(unsigned threadsPerBlock) const;
  /// The size of the kernel's single parameter in bytes; nullopt when the driver cannot tell
  /// (before 12.4) or the kernel does not take exactly one parameter.
  std::optional<size_t> parameterBytes() const { return parameterBytes_; }

private:
  void release() noexcept;

  const CudaDevice* device_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  std::string kernelName_;
  std::optional<size_t> parameterBytes_;
};

/// Device memory of one allocation, freed on destruction; the device must outlive it. The
/// synchronous copies order with the legacy default stream and every stream made by
/// CudaStream; the asynchronous ones run in stream order, and their host memory must stay
/// valid (and, for downloads, unread) until the stream reaches them.
class DeviceBuffer {
public:
  /// An empty buffer (null address, size 0).
  DeviceBuffer() = default;
  /// Allocates `bytes` bytes (none for 0: the address stays null); contents are undefined.
  DeviceBuffer(const CudaDevice& device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  /// The size in bytes.
  size_t size() const { return size_; }
  /// The device address as a CUdeviceptr.
  CUdeviceptr address() const { return address_; }
  /// The device address as a pointer, as it is stored in a parameter block.
  void* pointer() const { return reinterpret_cast<void*>(static_cast<uintptr_t>(address_)); }

  /// Copies `bytes` to the buffer at `offset`, returning once the host memory may be reused.
  void upload(llvm::ArrayRef<std::byte> bytes, size_t offset = 0);
  /// Queues a copy of `bytes` to the buffer at `offset` on `stream`.
  void uploadAsync(llvm::ArrayRef<std::byte> bytes, void* stream, size_t offset = 0);
  /// Copies the buffer from `offset` into `bytes`, returning when the copy is done.
  void download(llvm::MutableArrayRef<std::byte> bytes, size_t offset = 0) const;
  /// Queues a copy of the buffer from `offset` into `bytes` on `stream`.
  void downloadAsync(llvm::MutableArrayRef<std::byte> bytes, void* stream, size_t offset = 0) const;
  /// Sets every byte to `byte`. Synchronous with the host, but not ordered with non-blocking
  /// streams: use zeroAsync for memory their kernels use.
  void fill(unsigned char byte);
  /// fill(0).
  void zero() { fill(0); }
  /// Queues setting every byte to zero on `stream`.
  void zeroAsync(void* stream);

  /// upload() of the bytes of `values`.
  template <typename T> void uploadValues(llvm::ArrayRef<T> values, size_t offset = 0) {
    upload({reinterpret_cast<const std::byte*>(values.data()), values.size() * sizeof(T)}, offset);
  }
  /// The whole buffer as values of type T (size() must be a multiple of sizeof(T)).
  template <typename T> std::vector<T> downloadValues() const {
    std::vector<T> values(size_ / sizeof(T));
    download({reinterpret_cast<std::byte*>(values.data()), values.size() * sizeof(T)});
    return values;
  }

private:
  /// Checks that [offset, offset + bytes) lies in the buffer.
  void checkRange(size_t offset, size_t bytes, llvm::StringRef what) const;
  void release() noexcept;

  const CudaDevice* device_ = nullptr;
  CUdeviceptr address_ = 0;
  size_t size_ = 0;
};

/// A stream of the device, destroyed on destruction (after its queued work, which the driver
/// lets finish); the device must outlive it. By default a blocking stream, which orders with
/// the legacy default stream; a non-blocking one does not (torch's pool streams are such).
class CudaStream {
public:
  /// Creates a stream on `device`; `nonBlocking` gives it CU_STREAM_NON_BLOCKING.
  explicit CudaStream(const CudaDevice& device, bool nonBlocking = false);
  ~CudaStream();
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;

  /// The CUstream, as launch() and the copies take it.
  void* handle() const { return stream_; }
  /// Waits for all work queued on the stream.
  void synchronize() const;

private:
  void release() noexcept;

  const CudaDevice* device_ = nullptr;
  CUstream stream_ = nullptr;
};

} // namespace widefuse
