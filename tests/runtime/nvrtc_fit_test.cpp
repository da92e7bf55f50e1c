// What the process's NVRTC decides on a device: the parameter limit, and what a refused cubin's
// error says. ctest runs this once with each fake NVRTC of tests/support/cuda_double as the
// process's NVRTC ($WIDEFUSE_NVRTC_LIBRARY), on a fake driver supporting CUDA 12.4.
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/nvrtc_library.h"

#include "tests/support/error_of.h"

#include <gtest/gtest.h>
#include <llvm/ADT/StringRef.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

using namespace widefuse;
using widefuse::testing::errorOf;

namespace {

// What each fake NVRTC must lead to with a 12.4 driver and an sm_90 device.
struct Expected {
  unsigned parameterBytes;
  // Whether NVRTC's major exceeds the driver's, which errors name as the likely cause.
  bool newerThanDriver;
};
const std::map<std::string, Expected> kExpected = {
    {"12.0", {4096, false}}, // NVRTC 12.0 cannot emit 32 KB parameter blocks
    {"12.4", {32764, false}},
    {"13.0", {32764, true}},
};

constexpr int kDriverVersion = 12040;
constexpr CUresult kNoBinaryForGpu = 209, kNotSupported = 801;
const auto kContext = reinterpret_cast<CUcontext>(0x1000);
CUcontext current = nullptr;

// Converts a lambda to the exact type of a driver table entry.
template <auto Member, typename Lambda> void* entry(Lambda lambda) {
  std::remove_reference_t<decltype(std::declval<CudaDriver&>().*Member)> function = lambda;
  return reinterpret_cast<void*>(function);
}

// A driver supporting CUDA 12.4 with one sm_90 device, whose cuModuleLoadData refuses every
// image as a 12.x driver refuses a CUDA 13 cubin.
std::unique_ptr<CudaDriver> fakeDriver() {
  using D = CudaDriver;
  auto unsupported = [](auto...) { return kNotSupported; };
  std::map<std::string, void*> symbols = {
      {"cuInit", entry<&D::cuInit>([](unsigned) { return kCudaSuccess; })},
      {"cuDriverGetVersion", entry<&D::cuDriverGetVersion>([](int* version) {
         *version = kDriverVersion;
         return kCudaSuccess;
       })},
      {"cuDeviceGetCount", entry<&D::cuDeviceGetCount>([](int* count) {
         *count = 1;
         return kCudaSuccess;
       })},
      {"cuDeviceGet", entry<&D::cuDeviceGet>([](CUdevice* device, int ordinal) {
         *device = ordinal;
         return kCudaSuccess;
       })},
      {"cuDeviceGetAttribute", entry<&D::cuDeviceGetAttribute>([](int* value, int which, CUdevice) {
         *value = which == kCudaAttributeComputeCapabilityMajor   ? 9
                  : which == kCudaAttributeComputeCapabilityMinor ? 0
                                                                  : 132;
         return kCudaSuccess;
       })},
      {"cuDeviceGetName", entry<&D::cuDeviceGetName>([](char* name, int length, CUdevice) {
         std::snprintf(name, length, "Fake H100");
         return kCudaSuccess;
       })},
      {"cuDevicePrimaryCtxRetain", entry<&D::cuDevicePrimaryCtxRetain>([](CUcontext* c, CUdevice) {
         *c = kContext;
         return kCudaSuccess;
       })},
      {"cuDevicePrimaryCtxRelease_v2",
       entry<&D::cuDevicePrimaryCtxRelease>([](CUdevice) { return kCudaSuccess; })},
      {"cuCtxSetCurrent", entry<&D::cuCtxSetCurrent>([](CUcontext context) {
         current = context;
         return kCudaSuccess;
       })},
      {"cuCtxGetCurrent", entry<&D::cuCtxGetCurrent>([](CUcontext* context) {
         *context = current;
         return kCudaSuccess;
       })},
      {"cuModuleLoadData",
       entry<&D::cuModuleLoadData>([](CUmodule*, const void*) { return kNoBinaryForGpu; })},
  };
  // The rest is never reached; the names the driver cannot give, CudaDriver has itself.
  for (auto [name, function] : std::initializer_list<std::pair<const char*, void*>>{
           {"cuCtxSynchronize", entry<&D::cuCtxSynchronize>(unsupported)},
           {"cuModuleUnload", entry<&D::cuModuleUnload>(unsupported)},
           {"cuModuleGetFunction", entry<&D::cuModuleGetFunction>(unsupported)},
           {"cuFuncGetAttribute", entry<&D::cuFuncGetAttribute>(unsupported)},
           {"cuOccupancyMaxActiveBlocksPerMultiprocessor",
            entry<&D::cuOccupancyMaxActiveBlocksPerMultiprocessor>(unsupported)},
           {"cuLaunchKernel", entry<&D::cuLaunchKernel>(unsupported)},
           {"cuMemAlloc_v2", entry<&D::cuMemAlloc>(unsupported)},
           {"cuMemFree_v2", entry<&D::cuMemFree>(unsupported)},
           {"cuMemcpyHtoD_v2", entry<&D::cuMemcpyHtoD>(unsupported)},
           {"cuMemcpyHtoDAsync_v2", entry<&D::cuMemcpyHtoDAsync>(unsupported)},
           {"cuMemcpyDtoH_v2", entry<&D::cuMemcpyDtoH>(unsupported)},
           {"cuMemcpyDtoHAsync_v2", entry<&D::cuMemcpyDtoHAsync>(unsupported)},
           {"cuMemsetD8_v2", entry<&D::cuMemsetD8>(unsupported)},
           {"cuMemsetD8Async", entry<&D::cuMemsetD8Async>(unsupported)},
           {"cuStreamCreate", entry<&D::cuStreamCreate>(unsupported)},
           {"cuStreamDestroy_v2", entry<&D::cuStreamDestroy>(unsupported)},
           {"cuStreamSynchronize", entry<&D::cuStreamSynchronize>(unsupported)},
           {"cuPointerGetAttribute", entry<&D::cuPointerGetAttribute>(unsupported)},
           {"cuGetErrorName", entry<&D::cuGetErrorName>(unsupported)},
           {"cuGetErrorString", entry<&D::cuGetErrorString>(unsupported)},
           {"cuStreamWaitEvent", entry<&D::cuStreamWaitEvent>(unsupported)},
           {"cuEventCreate", entry<&D::cuEventCreate>(unsupported)},
           {"cuEventRecord", entry<&D::cuEventRecord>(unsupported)},
           {"cuEventSynchronize", entry<&D::cuEventSynchronize>(unsupported)},
           {"cuEventDestroy_v2", entry<&D::cuEventDestroy>(unsupported)},
           {"cuMemAllocHost_v2", entry<&D::cuMemAllocHost>(unsupported)},
           {"cuMemFreeHost", entry<&D::cuMemFreeHost>(unsupported)},
           {"cuStreamGetCaptureInfo_v2", entry<&D::cuStreamGetCaptureInfo>(unsupported)},
           {"cuUserObjectCreate", entry<&D::cuUserObjectCreate>(unsupported)},
           {"cuUserObjectRelease", entry<&D::cuUserObjectRelease>(unsupported)},
           {"cuGraphRetainUserObject", entry<&D::cuGraphRetainUserObject>(unsupported)}})
    symbols[name] = function;
  return CudaDriver::fromResolver(
      [&](const char* name) -> void* {
        auto found = symbols.find(name);
        return found == symbols.end() ? nullptr : found->second;
      },
      "fake-libcuda-12.4");
}

// The expectations for this process's NVRTC, which must be the fake ctest chose.
const Expected& expectedForThisNvrtc() {
  const NvrtcLibrary& nvrtc = NvrtcLibrary::instance();
  const char* chosen = std::getenv("WIDEFUSE_NVRTC_LIBRARY");
  EXPECT_TRUE(chosen && nvrtc.path() == chosen) << "run by ctest, with a fake NVRTC";
  auto found = kExpected.find(nvrtc.versionString());
  if (found == kExpected.end())
    ADD_FAILURE() << "no expectations for NVRTC " << nvrtc.versionString();
  static const Expected kNone{0, false};
  return found == kExpected.end() ? kNone : found->second;
}

TEST(NvrtcFit, ParameterLimitFollowsTheNvrtc) {
  const Expected& expected = expectedForThisNvrtc();
  std::unique_ptr<CudaDriver> driver = fakeDriver();
  std::unique_ptr<CudaDevice> device = CudaDevice::open(*driver, 0);
  EXPECT_EQ(device->driverVersion(), kDriverVersion);
  EXPECT_EQ(device->maxParameterBytes(), expected.parameterBytes);
  // What the scheduler plans with.
  EXPECT_EQ(device->description().maxParameterBytes, expected.parameterBytes);
}

TEST(NvrtcFit, ModuleLoadErrorNamesBothVersions) {
  const Expected& expected = expectedForThisNvrtc();
  std::unique_ptr<CudaDriver> driver = fakeDriver();
  std::unique_ptr<CudaDevice> device = CudaDevice::open(*driver, 0);
  std::string image = "a cubin";
  KernelImage kernel{"step", "sm_90", {image.begin(), image.end()}, {}, {}, {}, 0};
  std::string message = errorOf([&] { CudaModule module(*device, kernel); });
  std::string version = NvrtcLibrary::instance().versionString();
  EXPECT_CONTAINS(message, "cuModuleLoadData failed for kernel 'step': "
                           "CUDA_ERROR_NO_BINARY_FOR_GPU; the cubin is from NVRTC " +
                               version + ", the driver supports CUDA 12.4");
  EXPECT_EQ(llvm::StringRef(message).contains("is the likely cause"), expected.newerThanDriver)
      << message;
  if (expected.newerThanDriver) {
    EXPECT_CONTAINS(message, "an NVRTC newer than the driver (13 > 12) is the likely cause; "
                             "update the driver, or use an NVRTC 12.x");
  }
}

} // namespace
