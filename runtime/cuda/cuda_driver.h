#pragma once
/// The CUDA driver API loaded at run time with dlopen: widefuse builds, links and runs on
/// machines without a GPU or a driver, and only the device backend needs libcuda.so.1. The few
/// driver types and prototypes used are declared here (values copied from cuda.h), so no CUDA
/// header is needed at build time and nothing links against libcuda.

#include "ir/error.h"
#include "runtime/shared_library.h"

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/StringRef.h>

#include <cstddef>
#include <memory>
#include <string>

namespace widefuse {

/// The driver's `CUresult`: an enum of int whose 0 is CUDA_SUCCESS.
using CUresult = int;
/// The driver's `CUdevice`: a device ordinal as an int.
using CUdevice = int;
/// The driver's `CUdeviceptr`: a device address (64 bits on every supported platform).
using CUdeviceptr = unsigned long long;
/// The driver's `CUcontext`: an opaque pointer.
using CUcontext = struct CudaContextOpaque*;
/// The driver's `CUmodule`: an opaque pointer.
using CUmodule = struct CudaModuleOpaque*;
/// The driver's `CUfunction`: an opaque pointer.
using CUfunction = struct CudaFunctionOpaque*;
/// The driver's `CUstream`: an opaque pointer; null is the legacy default stream.
using CUstream = struct CudaStreamOpaque*;
/// The driver's `CUevent`: an opaque pointer.
using CUevent = struct CudaEventOpaque*;
/// The driver's `CUgraph`: an opaque pointer.
using CUgraph = struct CudaGraphOpaque*;
/// The driver's `CUuserObject`: an opaque pointer.
using CUuserObject = struct CudaUserObjectOpaque*;
/// The driver's `CUhostFn`: a host function the driver calls with its user data.
using CUhostFn = void (*)(void* userData);

/// CUDA_SUCCESS.
inline constexpr CUresult kCudaSuccess = 0;
/// CUDA_ERROR_INVALID_VALUE.
inline constexpr CUresult kCudaErrorInvalidValue = 1;
/// CUDA_ERROR_STUB_LIBRARY: the toolkit's link stub was loaded instead of a real driver.
inline constexpr CUresult kCudaErrorStubLibrary = 34;
/// CUDA_ERROR_NO_DEVICE.
inline constexpr CUresult kCudaErrorNoDevice = 100;
/// CUDA_ERROR_NOT_FOUND (e.g. cuModuleGetFunction with an unknown name).
inline constexpr CUresult kCudaErrorNotFound = 500;
/// CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: the legacy stream was used (or asked about) while a
/// blocking stream captures.
inline constexpr CUresult kCudaErrorStreamCaptureImplicit = 906;
/// CU_STREAM_CAPTURE_STATUS_NONE: cuStreamIsCapturing's answer for a stream not capturing.
inline constexpr int kCudaStreamCaptureStatusNone = 0;

/// CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT.
inline constexpr int kCudaAttributeMultiprocessorCount = 16;
/// CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR.
inline constexpr int kCudaAttributeComputeCapabilityMajor = 75;
/// CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR.
inline constexpr int kCudaAttributeComputeCapabilityMinor = 76;
/// CU_POINTER_ATTRIBUTE_MEMORY_TYPE (the result is an unsigned CUmemorytype).
inline constexpr int kCudaPointerAttributeMemoryType = 2;
/// CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (the result is an int).
inline constexpr int kCudaPointerAttributeDeviceOrdinal = 9;
/// CU_MEMORYTYPE_DEVICE.
inline constexpr unsigned kCudaMemoryTypeDevice = 2;
/// CU_STREAM_CAPTURE_STATUS_ACTIVE.
inline constexpr int kCudaStreamCaptureStatusActive = 1;
/// CU_EVENT_DISABLE_TIMING: an event for ordering only.
inline constexpr unsigned kCudaEventDisableTiming = 2;
/// CU_USER_OBJECT_NO_DESTRUCTOR_SYNC (the only flag cuUserObjectCreate accepts).
inline constexpr unsigned kCudaUserObjectNoDestructorSync = 1;
/// CU_GRAPH_USER_OBJECT_MOVE: the graph takes over the caller's reference.
inline constexpr unsigned kCudaGraphUserObjectMove = 1;

/// The driver entry points widefuse calls, resolved from one shared library. Where cuda.h
/// #defines a name to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2) the versioned symbol
/// is resolved, since the unversioned one is the legacy ABI kept for old binaries. The library
/// stays loaded for the life of the process: the driver's state must outlive every context.
class CudaDriver {
public:
  /// Finds a symbol by name; null when absent. Lets tests build a driver from fake functions.
  using Resolver = SymbolLookup;

  /// The driver of this process, loaded on first use (thread-safe) from libraryPath(). Throws
  /// Error "no CUDA driver: could not load libcuda.so.1 (<reason>); use backend=host to run
  /// on the CPU" when it cannot be loaded; a later call tries again.
  static const CudaDriver& instance();

  /// Loads the driver from one explicit path (a file path or a soname). Throws Error (starting
  /// "no CUDA driver" and naming backend=host) when it cannot be loaded or lacks an entry point.
  static std::unique_ptr<CudaDriver> load(llvm::StringRef path);

  /// Builds a driver from `resolve` (tests use fake entry points); `origin` stands for the
  /// path in messages. Throws Error like load() when a required entry point is missing.
  static std::unique_ptr<CudaDriver> fromResolver(Resolver resolve, llvm::StringRef origin);

  /// $WIDEFUSE_CUDA_DRIVER_LIBRARY when set and not empty, else "libcuda.so.1".
  static std::string libraryPath();

  /// The path (or origin) this driver was loaded from.
  const std::string& path() const { return path_; }

  /// The driver's name for a result, e.g. "CUDA_ERROR_INVALID_VALUE" ("CUDA error <n>" when
  /// the driver does not know it).
  std::string errorName(CUresult result) const;
  /// The driver's description of a result, e.g. "invalid argument" (empty when unknown).
  std::string errorString(CUresult result) const;
  /// "<name> (<description>)", or just the name when there is no description.
  std::string describe(CUresult result) const;
  /// Throws Error "<call> failed[ for kernel '<kernel>']: <describe(result)>" unless `result`
  /// is success, e.g. "cuLaunchKernel failed for kernel 'adam_class0':
  /// CUDA_ERROR_INVALID_VALUE (invalid argument)".
  void check(CUresult result, llvm::StringRef call, llvm::StringRef kernel = {}) const;

  /// cuInit.
  CUresult (*cuInit)(unsigned flags) = nullptr;
  /// cuDriverGetVersion (1000 * major + 10 * minor, e.g. 12080).
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  /// cuDeviceGetCount.
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  /// cuDeviceGet.
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  /// cuDeviceGetAttribute (`attribute` is a CUdevice_attribute).
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  /// cuDeviceGetName.
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device) = nullptr;
  /// cuDevicePrimaryCtxRetain.
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
  /// cuDevicePrimaryCtxRelease (resolved as cuDevicePrimaryCtxRelease_v2).
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device) = nullptr;
  /// cuCtxSetCurrent.
  CUresult (*cuCtxSetCurrent)(CUcontext context) = nullptr;
  /// cuCtxGetCurrent.
  CUresult (*cuCtxGetCurrent)(CUcontext* context) = nullptr;
  /// cuCtxSynchronize.
  CUresult (*cuCtxSynchronize)() = nullptr;
  /// cuModuleLoadData.
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  /// cuModuleUnload.
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  /// cuModuleGetFunction.
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module,
                                  const char* name) = nullptr;
  /// cuFuncGetAttribute (`attribute` is a CUfunction_attribute).
  CUresult (*cuFuncGetAttribute)(int* value, int attribute, CUfunction function) = nullptr;
  /// cuFuncGetParamInfo; optional (null before driver 12.4), used to check parameter sizes.
  CUresult (*cuFuncGetParamInfo)(CUfunction function, size_t index, size_t* offset,
                                 size_t* size) = nullptr;
  /// cuOccupancyMaxActiveBlocksPerMultiprocessor.
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int* blocks, CUfunction function,
                                                          int threadsPerBlock,
                                                          size_t dynamicSharedBytes) = nullptr;
  /// cuLaunchKernel.
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX, unsigned gridY, unsigned gridZ,
                             unsigned blockX, unsigned blockY, unsigned blockZ,
                             unsigned sharedMemoryBytes, CUstream stream, void** parameters,
                             void** extra) = nullptr;
  /// cuMemAlloc (resolved as cuMemAlloc_v2).
  CUresult (*cuMemAlloc)(CUdeviceptr* address, size_t bytes) = nullptr;
  /// cuMemFree (resolved as cuMemFree_v2).
  CUresult (*cuMemFree)(CUdeviceptr address) = nullptr;
  /// cuMemcpyHtoD (resolved as cuMemcpyHtoD_v2).
  CUresult (*cuMemcpyHtoD)(CUdeviceptr destination, const void* source, size_t bytes) = nullptr;
  /// cuMemcpyHtoDAsync (resolved as cuMemcpyHtoDAsync_v2).
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr destination, const void* source, size_t bytes,
                                CUstream stream) = nullptr;
  /// cuMemcpyDtoH (resolved as cuMemcpyDtoH_v2).
  CUresult (*cuMemcpyDtoH)(void* destination, CUdeviceptr source, size_t bytes) = nullptr;
  /// cuMemcpyDtoHAsync (resolved as cuMemcpyDtoHAsync_v2).
  CUresult (*cuMemcpyDtoHAsync)(void* destination, CUdeviceptr source, size_t bytes,
                                CUstream stream) = nullptr;
  /// cuMemsetD8 (resolved as cuMemsetD8_v2).
  CUresult (*cuMemsetD8)(CUdeviceptr destination, unsigned char value, size_t count) = nullptr;
  /// cuMemsetD8Async.
  CUresult (*cuMemsetD8Async)(CUdeviceptr destination, unsigned char value, size_t count,
                              CUstream stream) = nullptr;
  /// cuStreamCreate.
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags) = nullptr;
  /// cuStreamDestroy (resolved as cuStreamDestroy_v2).
  CUresult (*cuStreamDestroy)(CUstream stream) = nullptr;
  /// cuStreamSynchronize.
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  /// cuGetErrorName.
  CUresult (*cuGetErrorName)(CUresult result, const char** name) = nullptr;
  /// cuGetErrorString.
  CUresult (*cuGetErrorString)(CUresult result, const char** text) = nullptr;
  /// cuPointerGetAttribute (`attribute` is a CUpointer_attribute).
  CUresult (*cuPointerGetAttribute)(void* value, int attribute, CUdeviceptr address) = nullptr;
  /// cuStreamIsCapturing (`status` is a CUstreamCaptureStatus); optional (drivers since 10.0
  /// have it): without it no stream is taken to capture.
  CUresult (*cuStreamIsCapturing)(CUstream stream, int* status) = nullptr;
  /// cuStreamWaitEvent.
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags) = nullptr;
  /// cuEventCreate.
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags) = nullptr;
  /// cuEventRecord.
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  /// cuEventSynchronize.
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  /// cuEventDestroy (cuEventDestroy_v2).
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;
  /// cuMemAllocHost (cuMemAllocHost_v2): page-locked host memory, which copies read and
  /// write without staging (and a captured copy reads at each replay).
  CUresult (*cuMemAllocHost)(void** pointer, size_t bytes) = nullptr;
  /// cuMemFreeHost.
  CUresult (*cuMemFreeHost)(void* pointer) = nullptr;
  /// cuStreamGetCaptureInfo (cuStreamGetCaptureInfo_v2): the graph a capturing stream
  /// records into (`status` is a CUstreamCaptureStatus; `dependencies` may be null).
  CUresult (*cuStreamGetCaptureInfo)(CUstream stream, int* status, unsigned long long* id,
                                     CUgraph* graph, const void** dependencies,
                                     size_t* dependencyCount) = nullptr;
  /// cuUserObjectCreate: a reference-counted object whose `destroy` runs on a driver thread
  /// when its last reference goes (it must not call CUDA).
  CUresult (*cuUserObjectCreate)(CUuserObject* object, void* data, CUhostFn destroy,
                                 unsigned initialReferences, unsigned flags) = nullptr;
  /// cuUserObjectRelease: drops `count` of the caller's references.
  CUresult (*cuUserObjectRelease)(CUuserObject object, unsigned count) = nullptr;
  /// cuGraphRetainUserObject: `graph` (and every executable instantiated from it) holds
  /// `count` references until it is destroyed.
  CUresult (*cuGraphRetainUserObject)(CUgraph graph, CUuserObject object, unsigned count,
                                      unsigned flags) = nullptr;

  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

private:
  CudaDriver() = default;

  std::string path_;
};

} // namespace widefuse
