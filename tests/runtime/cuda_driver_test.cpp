// The CUDA driver's loading and errors, and CudaDevice's plumbing on a fake driver: runs on
// any machine. The same code on a real GPU is tested by cuda_device_test.cpp.
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_versions.h"
#include "runtime/cuda/nvrtc_library.h"

#include "tests/runtime/runtime_test_support.h"
#include "tests/support/error_of.h"

#include <gtest/gtest.h>
#include <llvm/ADT/STLExtras.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

using namespace widefuse;
using widefuse::testing::errorOf;
using widefuse::testing::ScopedEnvironment;

namespace {

bool contains(llvm::StringRef text, llvm::StringRef part) {
  return text.contains(part);
}

// --- A fake driver: device memory is host memory, a launch records its argument ------------

struct FakeState {
  CUresult initResult = kCudaSuccess;
  int deviceCount = 1;
  int driverVersion = 12080;
  int major = 9, minor = 0, multiprocessors = 132;
  int parameterCount = 1;
  size_t parameterBytes = 16;
  int retainedContexts = 0, liveModules = 0, liveStreams = 0;
  unsigned streamFlags = 99;
  std::set<CUdeviceptr> allocations;
  std::vector<std::byte> launchedBlock;
  unsigned grid = 0, block = 0;
  CUstream launchStream = nullptr;
};

FakeState fake;
thread_local CUcontext fakeCurrent = nullptr;
const auto kFakeContext = reinterpret_cast<CUcontext>(0x1000);
const auto kFakeStream = reinterpret_cast<CUstream>(0x4000);
constexpr CUresult kInvalidImage = 200, kInvalidContext = 201;

// Converts a lambda to the exact type of a driver table entry, so a wrong fake signature does
// not compile.
template <auto Member, typename Lambda> void* entry(Lambda lambda) {
  std::remove_reference_t<decltype(std::declval<CudaDriver&>().*Member)> function = lambda;
  return reinterpret_cast<void*>(function);
}

void* address(CUdeviceptr pointer) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
}

// Evaluates its arguments for their effects and succeeds: keeps the fakes one-liners.
template <typename... Effects> CUresult ok(Effects&&...) {
  return kCudaSuccess;
}

// Results the fake can name, with the real driver's names and descriptions.
const std::map<CUresult, std::pair<const char*, const char*>> kFakeErrors = {
    {1, {"CUDA_ERROR_INVALID_VALUE", "invalid argument"}},
    {200, {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"}},
    {201, {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"}},
    {500, {"CUDA_ERROR_NOT_FOUND", "named symbol not found"}}};

std::map<std::string, void*> fakeSymbols() {
  using D = CudaDriver;
  // Like the real driver, everything past context creation needs the context current.
#define WF_NEED_CONTEXT                                                                            \
  if (fakeCurrent != kFakeContext)                                                                 \
  return kInvalidContext
  return {
      {"cuInit", entry<&D::cuInit>([](unsigned) { return fake.initResult; })},
      {"cuDriverGetVersion", entry<&D::cuDriverGetVersion>(
                                 [](int* version) { return ok(*version = fake.driverVersion); })},
      {"cuDeviceGetCount",
       entry<&D::cuDeviceGetCount>([](int* count) { return ok(*count = fake.deviceCount); })},
      {"cuDeviceGet",
       entry<&D::cuDeviceGet>([](CUdevice* device, int ordinal) { return ok(*device = ordinal); })},
      {"cuDeviceGetAttribute", entry<&D::cuDeviceGetAttribute>([](int* value, int which, CUdevice) {
         return ok(*value = which == kCudaAttributeComputeCapabilityMajor   ? fake.major
                            : which == kCudaAttributeComputeCapabilityMinor ? fake.minor
                                                                            : fake.multiprocessors);
       })},
      {"cuDeviceGetName", entry<&D::cuDeviceGetName>([](char* name, int length, CUdevice) {
         return ok(std::snprintf(name, length, "Fake GPU"));
       })},
      {"cuDevicePrimaryCtxRetain",
       entry<&D::cuDevicePrimaryCtxRetain>([](CUcontext* context, CUdevice) {
         return ok(++fake.retainedContexts, *context = kFakeContext);
       })},
      {"cuDevicePrimaryCtxRelease_v2",
       entry<&D::cuDevicePrimaryCtxRelease>([](CUdevice) { return ok(--fake.retainedContexts); })},
      {"cuCtxSetCurrent",
       entry<&D::cuCtxSetCurrent>([](CUcontext context) { return ok(fakeCurrent = context); })},
      {"cuCtxGetCurrent",
       entry<&D::cuCtxGetCurrent>([](CUcontext* context) { return ok(*context = fakeCurrent); })},
      {"cuCtxSynchronize", entry<&D::cuCtxSynchronize>([] { return ok(); })},
      {"cuModuleLoadData", entry<&D::cuModuleLoadData>([](CUmodule* module, const void* image) {
         WF_NEED_CONTEXT;
         if (std::memcmp(image, "FAKECUBIN", 9) != 0)
           return kInvalidImage;
         return ok(++fake.liveModules, *module = reinterpret_cast<CUmodule>(0x2000));
       })},
      {"cuModuleUnload",
       entry<&D::cuModuleUnload>([](CUmodule) { return ok(--fake.liveModules); })},
      {"cuModuleGetFunction",
       entry<&D::cuModuleGetFunction>([](CUfunction* function, CUmodule, const char* name) {
         WF_NEED_CONTEXT;
         if (std::strcmp(name, "fill") != 0)
           return kCudaErrorNotFound;
         return ok(*function = reinterpret_cast<CUfunction>(0x3000));
       })},
      {"cuFuncGetAttribute",
       entry<&D::cuFuncGetAttribute>([](int*, int, CUfunction) { return ok(); })},
      {"cuFuncGetParamInfo",
       entry<&D::cuFuncGetParamInfo>([](CUfunction, size_t index, size_t* offset, size_t* size) {
         if (index >= static_cast<size_t>(fake.parameterCount))
           return kCudaErrorInvalidValue;
         return ok(*offset = 0, *size = fake.parameterBytes);
       })},
      {"cuOccupancyMaxActiveBlocksPerMultiprocessor",
       entry<&D::cuOccupancyMaxActiveBlocksPerMultiprocessor>(
           [](int* blocks, CUfunction, int, size_t) { return ok(*blocks = 4); })},
      {"cuLaunchKernel",
       entry<&D::cuLaunchKernel>([](CUfunction, unsigned gridX, unsigned, unsigned, unsigned blockX,
                                    unsigned, unsigned, unsigned, CUstream stream,
                                    void** parameters, void**) {
         WF_NEED_CONTEXT;
         auto* bytes = static_cast<const std::byte*>(parameters[0]);
         fake.launchedBlock.assign(bytes, bytes + fake.parameterBytes);
         return ok(fake.grid = gridX, fake.block = blockX, fake.launchStream = stream);
       })},
      {"cuMemAlloc_v2", entry<&D::cuMemAlloc>([](CUdeviceptr* pointer, size_t bytes) {
         WF_NEED_CONTEXT;
         *pointer = reinterpret_cast<uintptr_t>(std::malloc(bytes));
         return ok(fake.allocations.insert(*pointer));
       })},
      {"cuMemFree_v2", entry<&D::cuMemFree>([](CUdeviceptr pointer) {
         WF_NEED_CONTEXT;
         if (!fake.allocations.erase(pointer))
           return kCudaErrorInvalidValue;
         std::free(address(pointer));
         return ok();
       })},
      {"cuMemcpyHtoD_v2", entry<&D::cuMemcpyHtoD>([](CUdeviceptr to, const void* from, size_t n) {
         WF_NEED_CONTEXT;
         return ok(std::memcpy(address(to), from, n));
       })},
      {"cuMemcpyHtoDAsync_v2",
       entry<&D::cuMemcpyHtoDAsync>([](CUdeviceptr to, const void* from, size_t n, CUstream) {
         return ok(std::memcpy(address(to), from, n));
       })},
      {"cuMemcpyDtoH_v2", entry<&D::cuMemcpyDtoH>([](void* to, CUdeviceptr from, size_t n) {
         WF_NEED_CONTEXT;
         return ok(std::memcpy(to, address(from), n));
       })},
      {"cuMemcpyDtoHAsync_v2",
       entry<&D::cuMemcpyDtoHAsync>([](void* to, CUdeviceptr from, size_t n, CUstream) {
         return ok(std::memcpy(to, address(from), n));
       })},
      {"cuMemsetD8_v2", entry<&D::cuMemsetD8>([](CUdeviceptr to, unsigned char value, size_t n) {
         return ok(std::memset(address(to), value, n));
       })},
      {"cuMemsetD8Async",
       entry<&D::cuMemsetD8Async>([](CUdeviceptr to, unsigned char value, size_t n, CUstream) {
         return ok(std::memset(address(to), value, n));
       })},
      {"cuStreamCreate", entry<&D::cuStreamCreate>([](CUstream* stream, unsigned flags) {
         WF_NEED_CONTEXT;
         return ok(++fake.liveStreams, fake.streamFlags = flags, *stream = kFakeStream);
       })},
      {"cuStreamDestroy_v2",
       entry<&D::cuStreamDestroy>([](CUstream) { return ok(--fake.liveStreams); })},
      {"cuStreamSynchronize", entry<&D::cuStreamSynchronize>([](CUstream) { return ok(); })},
      // Events, page-locked memory and graph user objects: resolved, never used here.
      {"cuStreamWaitEvent",
       entry<&D::cuStreamWaitEvent>([](CUstream, CUevent, unsigned) { return ok(); })},
      {"cuEventCreate", entry<&D::cuEventCreate>([](CUevent*, unsigned) { return ok(); })},
      {"cuEventRecord", entry<&D::cuEventRecord>([](CUevent, CUstream) { return ok(); })},
      {"cuEventSynchronize", entry<&D::cuEventSynchronize>([](CUevent) { return ok(); })},
      {"cuEventDestroy_v2", entry<&D::cuEventDestroy>([](CUevent) { return ok(); })},
      {"cuMemAllocHost_v2",
       entry<&D::cuMemAllocHost>([](void**, size_t) { return kCudaErrorInvalidValue; })},
      {"cuMemFreeHost", entry<&D::cuMemFreeHost>([](void*) { return ok(); })},
      {"cuStreamGetCaptureInfo_v2",
       entry<&D::cuStreamGetCaptureInfo>([](CUstream, int*, unsigned long long*, CUgraph*,
                                            const void**, size_t*) { return ok(); })},
      {"cuUserObjectCreate",
       entry<&D::cuUserObjectCreate>([](CUuserObject*, void*, CUhostFn, unsigned, unsigned) {
         return kCudaErrorInvalidValue;
       })},
      {"cuUserObjectRelease",
       entry<&D::cuUserObjectRelease>([](CUuserObject, unsigned) { return ok(); })},
      {"cuGraphRetainUserObject",
       entry<&D::cuGraphRetainUserObject>(
           [](CUgraph, CUuserObject, unsigned, unsigned) { return kCudaErrorInvalidValue; })},
      {"cuGetErrorName", entry<&D::cuGetErrorName>([](CUresult result, const char** name) {
         auto found = kFakeErrors.find(result);
         if (found == kFakeErrors.end())
           return kCudaErrorInvalidValue;
         return ok(*name = found->second.first);
       })},
      {"cuGetErrorString", entry<&D::cuGetErrorString>([](CUresult result, const char** text) {
         auto found = kFakeErrors.find(result);
         if (found == kFakeErrors.end())
           return kCudaErrorInvalidValue;
         return ok(*text = found->second.second);
       })},
      {"cuPointerGetAttribute",
       entry<&D::cuPointerGetAttribute>([](void* value, int which, CUdeviceptr pointer) {
         if (which != kCudaPointerAttributeMemoryType || !fake.allocations.count(pointer))
           return kCudaErrorInvalidValue;
         return ok(*static_cast<unsigned*>(value) = kCudaMemoryTypeDevice);
       })},
  };
#undef WF_NEED_CONTEXT
}

// A fake driver without the symbols in `omit`; `requested` collects every name looked up.
std::unique_ptr<CudaDriver> fakeDriver(const std::set<std::string>& omit = {},
                                       std::vector<std::string>* requested = nullptr) {
  std::map<std::string, void*> symbols = fakeSymbols();
  return CudaDriver::fromResolver(
      [&](const char* name) -> void* {
        if (requested)
          requested->push_back(name);
        auto found = symbols.find(name);
        return found == symbols.end() || omit.count(name) ? nullptr : found->second;
      },
      "fake-libcuda");
}

// --- Loading the driver --------------------------------------------------------------------

TEST(CudaDriver, MissingLibraryNamesTheHostBackend) {
  std::string message = errorOf([] { CudaDriver::load("/nonexistent/libcuda.so.1"); });
  EXPECT_TRUE(contains(message, "no CUDA driver: could not load /nonexistent/libcuda.so.1 ("))
      << message;
  EXPECT_TRUE(contains(message, "; use backend=host to run on the CPU")) << message;
}

TEST(CudaDriver, LibraryWithoutDriverEntryPointsIsRejected) {
  std::string message = errorOf([] { CudaDriver::load("libm.so.6"); });
  EXPECT_EQ(message, "no CUDA driver: libm.so.6 is not a usable CUDA driver (it lacks cuInit); "
                     "use backend=host to run on the CPU");
}

TEST(CudaDriver, ToolkitStubExportsEveryEntryPoint) {
  // The toolkit's link stub exports the real driver's symbols and fails every call, which
  // checks the (versioned) names against a real export list without a GPU. Its soname is
  // libcuda.so.1, so from here on instance() finds it too (CUDA_ERROR_STUB_LIBRARY).
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub))
    GTEST_SKIP() << "no " << stub;
  std::unique_ptr<CudaDriver> driver = CudaDriver::load(stub);
  EXPECT_NE(driver->cuFuncGetParamInfo, nullptr);
  EXPECT_EQ(driver->cuInit(0), kCudaErrorStubLibrary);
  EXPECT_EQ(driver->describe(kCudaErrorStubLibrary), "CUDA_ERROR_STUB_LIBRARY");
  std::string message = errorOf([&] { CudaDevice::open(*driver, 0); });
  EXPECT_EQ(message, std::string("the CUDA driver ") + stub +
                         " failed to initialise: cuInit failed: CUDA_ERROR_STUB_LIBRARY; use "
                         "backend=host to run on the CPU");
}

TEST(CudaDriver, ResolvesVersionedSymbols) {
  std::vector<std::string> requested;
  fakeDriver({}, &requested);
  for (const char* name :
       {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyHtoDAsync_v2",
        "cuMemcpyDtoH_v2", "cuMemcpyDtoHAsync_v2", "cuMemsetD8_v2", "cuStreamDestroy_v2",
        "cuDevicePrimaryCtxRelease_v2", "cuMemsetD8Async", "cuLaunchKernel", "cuFuncGetParamInfo"})
    EXPECT_TRUE(llvm::is_contained(requested, name)) << name;
  for (const char* legacy : {"cuMemAlloc", "cuMemFree", "cuMemcpyHtoD", "cuStreamDestroy"})
    EXPECT_FALSE(llvm::is_contained(requested, legacy)) << legacy;
}

TEST(CudaDriver, MissingEntryPointIsNamedAndParamInfoIsOptional) {
  std::string message = errorOf([] { fakeDriver({"cuLaunchKernel"}); });
  EXPECT_EQ(message, "no CUDA driver: fake-libcuda is not a usable CUDA driver (it lacks "
                     "cuLaunchKernel); use backend=host to run on the CPU");
  EXPECT_EQ(fakeDriver({"cuFuncGetParamInfo"})->cuFuncGetParamInfo, nullptr);
}

TEST(CudaDriver, CheckNamesTheCallTheKernelAndTheError) {
  std::unique_ptr<CudaDriver> driver = fakeDriver();
  EXPECT_EQ(errorOf([&] { driver->check(kCudaErrorInvalidValue, "cuLaunchKernel", "adam"); }),
            "cuLaunchKernel failed for kernel 'adam': CUDA_ERROR_INVALID_VALUE (invalid argument)");
  EXPECT_EQ(errorOf([&] { driver->check(kCudaErrorNotFound, "cuMemAlloc"); }),
            "cuMemAlloc failed: CUDA_ERROR_NOT_FOUND (named symbol not found)");
  EXPECT_NO_THROW(driver->check(kCudaSuccess, "cuInit"));
  EXPECT_EQ(driver->describe(12345), "CUDA error 12345");
  EXPECT_EQ(driver->path(), "fake-libcuda");
}

TEST(CudaDriver, LibraryPathFollowsTheEnvironment) {
  {
    ScopedEnvironment unset("WIDEFUSE_CUDA_DRIVER_LIBRARY", std::nullopt);
    EXPECT_EQ(CudaDriver::libraryPath(), "libcuda.so.1");
  }
  ScopedEnvironment set("WIDEFUSE_CUDA_DRIVER_LIBRARY", "/opt/driver/libcuda.so.1");
  EXPECT_EQ(CudaDriver::libraryPath(), "/opt/driver/libcuda.so.1");
}

TEST(CudaDriver, UnavailableWithoutADriver) {
  ScopedEnvironment missing("WIDEFUSE_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
  try {
    CudaDriver::instance();
    GTEST_SKIP() << "a driver was loaded earlier in this process";
  } catch (const Error& error) {
    EXPECT_TRUE(contains(error.what(), "WIDEFUSE_CUDA_DRIVER_LIBRARY")) << error.what();
  }
  EXPECT_FALSE(CudaDevice::available());
  std::string message = errorOf([] { CudaDevice::get(); });
  EXPECT_TRUE(contains(message, "no CUDA driver")) << message;
  EXPECT_TRUE(contains(message, "backend=host")) << message;
}

TEST(CudaDriver, InstanceWorksOrExplainsTheHostBackend) {
  try {
    EXPECT_EQ(&CudaDriver::instance(), &CudaDriver::instance());
  } catch (const Error& error) {
    EXPECT_TRUE(contains(error.what(), "no CUDA driver: could not load libcuda.so.1 ("))
        << error.what();
    EXPECT_TRUE(contains(error.what(), "use backend=host to run on the CPU")) << error.what();
  }
}

// --- CudaDevice on the fake driver ----------------------------------------------------------

class FakeDevice : public ::testing::Test {
protected:
  void SetUp() override {
    fake = FakeState{};
    fakeCurrent = nullptr;
    driver = fakeDriver();
  }
  std::unique_ptr<CudaDevice> openDevice() { return CudaDevice::open(*driver, 0); }

  std::unique_ptr<CudaDriver> driver;
};

KernelImage fakeKernel(std::string arch = "sm_90", std::string image = "FAKECUBIN") {
  return KernelImage{"fill", std::move(arch), {image.begin(), image.end()}, {}, {}, {}, 0};
}

TEST_F(FakeDevice, DescribesTheDevice) {
  std::unique_ptr<CudaDevice> device = openDevice();
  DeviceDescription description = device->description();
  EXPECT_EQ(description.arch, "sm_90");
  EXPECT_EQ(description.computeCapability, 90u);
  EXPECT_EQ(description.multiprocessorCount, 132u);
  EXPECT_TRUE(description.fromDevice);
  EXPECT_EQ(device->name(), "Fake GPU");
  EXPECT_EQ(device->driverVersion(), 12080);
  EXPECT_EQ(device->maxParameterBytes(), 32764u);
  EXPECT_EQ(fake.retainedContexts, 1);
  device.reset();
  EXPECT_EQ(fake.retainedContexts, 0);

  fake.driverVersion = 12000;
  EXPECT_EQ(openDevice()->maxParameterBytes(), 4096u);
  fake = FakeState{};
  fake.major = 6, fake.minor = 1;
  EXPECT_EQ(openDevice()->description().arch, "sm_61");
  EXPECT_EQ(openDevice()->maxParameterBytes(), 4096u);
}

TEST_F(FakeDevice, MissingDevicesNameTheHostBackend) {
  const char* none = "no CUDA device: the driver sees 0 GPUs; use backend=host to run on the CPU";
  fake.deviceCount = 0;
  EXPECT_EQ(errorOf([&] { openDevice(); }), none);
  fake.initResult = kCudaErrorNoDevice;
  EXPECT_EQ(errorOf([&] { openDevice(); }), none);
  fake = FakeState{};
  EXPECT_EQ(errorOf([&] { CudaDevice::open(*driver, 3); }),
            "no CUDA device 3: the driver sees 1 GPU");
}

TEST_F(FakeDevice, LaunchPassesTheBlockAsTheOnlyArgument) {
  std::unique_ptr<CudaDevice> device = openDevice();
  CudaModule module(*device, fakeKernel());
  EXPECT_EQ(module.parameterBytes(), std::optional<size_t>(16));
  CudaStream stream(*device);
  std::vector<std::byte> block(16);
  for (size_t i = 0; i < block.size(); ++i)
    block[i] = std::byte(i * 7 + 1);
  fakeCurrent = nullptr; // Another thread, or another library, left no context current.
  // The fake launch fails unless the device's context is current during the call.
  device->launch(module, "fill", block, 7, 256, stream.handle());
  EXPECT_EQ(fake.launchedBlock, block);
  EXPECT_EQ(fake.grid, 7u);
  EXPECT_EQ(fake.block, 256u);
  EXPECT_EQ(fake.launchStream, kFakeStream);
  EXPECT_EQ(fakeCurrent, nullptr); // and the caller's (none) is current again afterwards
}

TEST_F(FakeDevice, EveryCallRestoresTheCallersContext) {
  std::unique_ptr<CudaDevice> device = openDevice();
  // torch working on another device has its context current in this thread.
  const auto torchContext = reinterpret_cast<CUcontext>(0x1111);
  fakeCurrent = torchContext;
  CudaModule module(*device, fakeKernel());
  EXPECT_EQ(fakeCurrent, torchContext);
  DeviceBuffer buffer(*device, 16);
  buffer.zero();
  EXPECT_EQ(fakeCurrent, torchContext);
  CudaStream stream(*device);
  device->launch(module, "fill", std::vector<std::byte>(16), 1, 32, stream.handle());
  EXPECT_EQ(fakeCurrent, torchContext);
  device->synchronize(stream.handle());
  EXPECT_TRUE(device->isDevicePointer(buffer.pointer()));
  EXPECT_EQ(fakeCurrent, torchContext);
}

TEST_F(FakeDevice, LaunchErrorsNameTheKernel) {
  std::unique_ptr<CudaDevice> device = openDevice();
  CudaModule module(*device, fakeKernel());
  std::vector<std::byte> block(16);
  EXPECT_EQ(errorOf([&] { device->launch(module, "nope", block, 1, 256, nullptr); }),
            "cuModuleGetFunction failed for kernel 'nope': CUDA_ERROR_NOT_FOUND (named symbol "
            "not found)");
  EXPECT_EQ(errorOf([&] {
              device->launch(module, "fill", llvm::makeArrayRef(block).take_front(8), 1, 256,
                             nullptr);
            }),
            "the parameter block of kernel 'fill' has 8 bytes but the kernel's parameter has 16");
  std::vector<std::byte> huge(40000);
  EXPECT_EQ(errorOf([&] { device->launch(module, "fill", huge, 1, 256, nullptr); }),
            "the parameter block of kernel 'fill' has 40000 bytes, more than the 32764 bytes "
            "device 0 with driver 12080 accepts");
}

TEST_F(FakeDevice, ModuleErrorsNameTheKernelAndUnload) {
  std::unique_ptr<CudaDevice> device = openDevice();
  // (Fake images are at least 9 bytes: the fake compares that many.) The versions of NVRTC
  // and the driver end the message (nvrtc_fit_test.cpp tests them with fake NVRTCs).
  EXPECT_EQ(errorOf([&] { CudaModule module(*device, fakeKernel("sm_80", "not a cubin")); }),
            "cuModuleLoadData failed for kernel 'fill': CUDA_ERROR_INVALID_IMAGE (device kernel "
            "image is invalid) (the cubin is for sm_80, device 0 is sm_90); " +
                cubinVersionNote(NvrtcLibrary::instanceVersion(), CudaVersion{12, 8}));
  EXPECT_EQ(errorOf([&] { CudaModule module(*device, fakeKernel("sm_90", "")); }),
            "kernel 'fill' has no cubin to load");
  fake.parameterCount = 2;
  EXPECT_EQ(errorOf([&] { CudaModule module(*device, fakeKernel()); }),
            "kernel 'fill' takes more than one parameter; widefuse launches pass a single "
            "parameter block");
  EXPECT_EQ(fake.liveModules, 0);
  fake.parameterCount = 1;
  {
    CudaModule first(*device, fakeKernel());
    CudaModule second = std::move(first);
    EXPECT_EQ(second.kernelName(), "fill");
    EXPECT_EQ(fake.liveModules, 1);
  }
  EXPECT_EQ(fake.liveModules, 0);
}

TEST_F(FakeDevice, BuffersCopyAndFree) {
  std::unique_ptr<CudaDevice> device = openDevice();
  {
    DeviceBuffer buffer(*device, 4 * sizeof(float));
    EXPECT_EQ(buffer.size(), 16u);
    EXPECT_TRUE(device->isDevicePointer(buffer.pointer()));
    float onHost = 0;
    EXPECT_FALSE(device->isDevicePointer(&onHost));
    buffer.uploadValues(llvm::ArrayRef<float>({1, 2, 3, 4}));
    EXPECT_EQ(buffer.downloadValues<float>(), std::vector<float>({1, 2, 3, 4}));
    float five = 5;
    buffer.upload({reinterpret_cast<const std::byte*>(&five), sizeof(float)}, 8);
    CudaStream stream(*device);
    float read[2];
    buffer.downloadAsync({reinterpret_cast<std::byte*>(read), sizeof(read)}, stream.handle(), 4);
    stream.synchronize();
    EXPECT_EQ(read[0], 2);
    EXPECT_EQ(read[1], 5);
    DeviceBuffer moved = std::move(buffer);
    EXPECT_EQ(buffer.address(), 0u);
    moved.zeroAsync(stream.handle());
    EXPECT_EQ(moved.downloadValues<float>(), std::vector<float>(4, 0.0f));
    EXPECT_THROW(moved.upload(std::vector<std::byte>(12), 8), InternalError);
    EXPECT_EQ(fake.allocations.size(), 1u);
  }
  EXPECT_TRUE(fake.allocations.empty());
  DeviceBuffer empty(*device, 0);
  EXPECT_EQ(empty.pointer(), nullptr);
  empty.zero();
  EXPECT_TRUE(empty.downloadValues<float>().empty());
}

TEST_F(FakeDevice, StreamsAreBlockingAndDestroyed) {
  std::unique_ptr<CudaDevice> device = openDevice();
  {
    CudaStream stream(*device);
    CudaStream other = std::move(stream);
    EXPECT_EQ(other.handle(), kFakeStream);
    EXPECT_EQ(fake.streamFlags, 0u); // CU_STREAM_DEFAULT: orders with the legacy stream.
    EXPECT_EQ(fake.liveStreams, 1);
  }
  EXPECT_EQ(fake.liveStreams, 0);
  EXPECT_NO_THROW(device->synchronizeContext());
}

} // namespace
