#include "runtime/cuda/cuda_driver.h"

#include "ir/error.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <cstdlib>

namespace widefuse {
namespace {

constexpr const char* kEnvironmentVariable = "WIDEFUSE_CUDA_DRIVER_LIBRARY";
constexpr const char* kDefaultPath = "libcuda.so.1";
constexpr const char* kHostHint = "use backend=host to run on the CPU";

std::string lastDlError() {
  const char* message = dlerror();
  return message ? message : "unknown error";
}

// Names of the results a user is most likely to meet when the driver cannot name them itself:
// the toolkit's stub libcuda answers every call, cuGetErrorName included, with error 34.
const char* fallbackErrorName(CUresult result) {
  switch (result) {
  case 0:
    return "CUDA_SUCCESS";
  case 1:
    return "CUDA_ERROR_INVALID_VALUE";
  case 2:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 34:
    return "CUDA_ERROR_STUB_LIBRARY";
  case 35:
    return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 100:
    return "CUDA_ERROR_NO_DEVICE";
  case 209:
    return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 500:
    return "CUDA_ERROR_NOT_FOUND";
  case 900:
    return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
  case 901:
    return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
  case 906:
    return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
  default:
    return nullptr;
  }
}

} // namespace

std::string CudaDriver::libraryPath() {
  const char* explicitPath = std::getenv(kEnvironmentVariable);
  if (explicitPath && *explicitPath)
    return explicitPath;
  return kDefaultPath;
}

const CudaDriver& CudaDriver::instance() {
  // A magic static: initialised once under the compiler's lock, and retried on the next call
  // when the initialiser throws. Never destroyed: contexts and modules outlive static
  // destructors, and the driver must not be unloaded under them.
  static const CudaDriver* driver = [] {
    std::string path = libraryPath();
    try {
      return load(path).release();
    } catch (const Error& error) {
      if (path == kDefaultPath)
        throw;
      // Say where the path came from, so a stale override is easy to spot.
      fail("{} (the path comes from {})", error.what(), kEnvironmentVariable);
    }
  }();
  return *driver;
}

std::unique_ptr<CudaDriver> CudaDriver::load(llvm::StringRef path) {
  // RTLD_LOCAL keeps the driver's symbols out of the global namespace of the process.
  void* handle = dlopen(path.str().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    fail("no CUDA driver: could not load {} ({}); {}", path, lastDlError(), kHostHint);
  auto lookup = [handle](const char* name) { return dlsym(handle, name); };
  // A library that is not the driver stays loaded: unloading it could run arbitrary code.
  return fromResolver(lookup, path);
}

std::unique_ptr<CudaDriver> CudaDriver::fromResolver(Resolver resolver, llvm::StringRef origin) {
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  CudaDriver& d = *driver;
  std::string reason;
  bool ok =
      resolveSymbol(resolver, "cuInit", d.cuInit, reason) &&
      resolveSymbol(resolver, "cuDriverGetVersion", d.cuDriverGetVersion, reason) &&
      resolveSymbol(resolver, "cuDeviceGetCount", d.cuDeviceGetCount, reason) &&
      resolveSymbol(resolver, "cuDeviceGet", d.cuDeviceGet, reason) &&
      resolveSymbol(resolver, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, reason) &&
      resolveSymbol(resolver, "cuDeviceGetName", d.cuDeviceGetName, reason) &&
      resolveSymbol(resolver, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, reason) &&
      resolveSymbol(resolver, "cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease,
                    reason) &&
      resolveSymbol(resolver, "cuCtxSetCurrent", d.cuCtxSetCurrent, reason) &&
      resolveSymbol(resolver, "cuCtxGetCurrent", d.cuCtxGetCurrent, reason) &&
      resolveSymbol(resolver, "cuCtxSynchronize", d.cuCtxSynchronize, reason) &&
      resolveSymbol(resolver, "cuModuleLoadData", d.cuModuleLoadData, reason) &&
      resolveSymbol(resolver, "cuModuleUnload", d.cuModuleUnload, reason) &&
      resolveSymbol(resolver, "cuModuleGetFunction", d.cuModuleGetFunction, reason) &&
      resolveSymbol(resolver, "cuFuncGetAttribute", d.cuFuncGetAttribute, reason) &&
      resolveSymbol(resolver, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                    d.cuOccupancyMaxActiveBlocksPerMultiprocessor, reason) &&
      resolveSymbol(resolver, "cuLaunchKernel", d.cuLaunchKernel, reason) &&
      resolveSymbol(resolver, "cuMemAlloc_v2", d.cuMemAlloc, reason) &&
      resolveSymbol(resolver, "cuMemFree_v2", d.cuMemFree, reason) &&
      resolveSymbol(resolver, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD, reason) &&
      resolveSymbol(resolver, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync, reason) &&
      resolveSymbol(resolver, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH, reason) &&
      resolveSymbol(resolver, "cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync, reason) &&
      resolveSymbol(resolver, "cuMemsetD8_v2", d.cuMemsetD8, reason) &&
      resolveSymbol(resolver, "cuMemsetD8Async", d.cuMemsetD8Async, reason) &&
      resolveSymbol(resolver, "cuStreamCreate", d.cuStreamCreate, reason) &&
      resolveSymbol(resolver, "cuStreamDestroy_v2", d.cuStreamDestroy, reason) &&
      resolveSymbol(resolver, "cuStreamSynchronize", d.cuStreamSynchronize, reason) &&
      resolveSymbol(resolver, "cuGetErrorName", d.cuGetErrorName, reason) &&
      resolveSymbol(resolver, "cuGetErrorString", d.cuGetErrorString, reason) &&
      resolveSymbol(resolver, "cuPointerGetAttribute", d.cuPointerGetAttribute, reason) &&
      resolveSymbol(resolver, "cuStreamWaitEvent", d.cuStreamWaitEvent, reason) &&
      resolveSymbol(resolver, "cuEventCreate", d.cuEventCreate, reason) &&
      resolveSymbol(resolver, "cuEventRecord", d.cuEventRecord, reason) &&
      resolveSymbol(resolver, "cuEventSynchronize", d.cuEventSynchronize, reason) &&
      resolveSymbol(resolver, "cuEventDestroy_v2", d.cuEventDestroy, reason) &&
      resolveSymbol(resolver, "cuMemAllocHost_v2", d.cuMemAllocHost, reason) &&
      resolveSymbol(resolver, "cuMemFreeHost", d.cuMemFreeHost, reason) &&
      resolveSymbol(resolver, "cuStreamGetCaptureInfo_v2", d.cuStreamGetCaptureInfo, reason) &&
      resolveSymbol(resolver, "cuUserObjectCreate", d.cuUserObjectCreate, reason) &&
      resolveSymbol(resolver, "cuUserObjectRelease", d.cuUserObjectRelease, reason) &&
      resolveSymbol(resolver, "cuGraphRetainUserObject", d.cuGraphRetainUserObject, reason);
  if (!ok)
    fail("no CUDA driver: {} is not a usable CUDA driver ({}); {}", origin, reason, kHostHint);
  // Optional: drivers before 12.4 lack it, and launches then skip the parameter size check.
  d.cuFuncGetParamInfo =
      reinterpret_cast<decltype(d.cuFuncGetParamInfo)>(resolver("cuFuncGetParamInfo"));
  // Optional, so that fake drivers of tests need not have it: the runtime then never sees a
  // capture.
  d.cuStreamIsCapturing =
      reinterpret_cast<decltype(d.cuStreamIsCapturing)>(resolver("cuStreamIsCapturing"));
  d.path_ = origin.str();
  return driver;
}

std::string CudaDriver::errorName(CUresult result) const {
  const char* name = nullptr;
  if (cuGetErrorName(result, &name) == kCudaSuccess && name)
    return name;
  if (const char* fallback = fallbackErrorName(result))
    return fallback;
  return fmt::format("CUDA error {}", result);
}

std::string CudaDriver::errorString(CUresult result) const {
  const char* text = nullptr;
  if (cuGetErrorString(result, &text) == kCudaSuccess && text)
    return text;
  return {};
}

std::string CudaDriver::describe(CUresult result) const {
  std::string text = errorString(result);
  if (text.empty())
    return errorName(result);
  return fmt::format("{} ({})", errorName(result), text);
}

void CudaDriver::check(CUresult result, llvm::StringRef call, llvm::StringRef kernel) const {
  if (result == kCudaSuccess)
    return;
  if (kernel.empty())
    fail("{} failed: {}", call, describe(result));
  fail("{} failed for kernel '{}': {}", call, kernel, describe(result));
}

} // namespace widefuse
