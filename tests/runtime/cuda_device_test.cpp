// CudaDevice on a real GPU: NVRTC-compiled kernels launched with one parameter block, device
// memory round trips. Every test skips when no device is present (label `gpu`).
#include "runtime/cuda/cuda_device.h"

#include "runtime/cuda/cuda_compiler.h"
#include "tests/support/error_of.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <regex>
#include <thread>

using namespace widefuse;
using widefuse::testing::errorOf;

namespace {

bool contains(llvm::StringRef text, llvm::StringRef part) {
  return text.contains(part);
}

#define WF_REQUIRE_DEVICE()                                                                        \
  if (!CudaDevice::available())                                                                    \
  GTEST_SKIP() << "no CUDA device"

// The kernel's single parameter is a struct, passed by value like widefuse's parameter block.
const char* kFillSource = R"(
struct FillParams { float* out; int n; float value; };
extern "C" __global__ void fill(const __grid_constant__ FillParams params) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < params.n)
    params.out[i] = params.value + i;
}
)";

// A parameter struct of 32,016 bytes: over the old 4 KB limit, under the 32,764-byte one.
constexpr int kLargeCount = 8000;
const char* kCopyLargeSource = R"(
struct LargeParams { float* out; int n; int pad; float values[8000]; };
extern "C" __global__ void copy_large(const __grid_constant__ LargeParams params) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < params.n; i += gridDim.x * blockDim.x)
    params.out[i] = params.values[i];
}
)";

KernelImage compileFor(const CudaDevice& device, const char* source, const char* name) {
  CompileOptions options;
  options.arch = device.description().arch;
  return compileCuda(source, name, options);
}

// Appends the bytes of `value` at `offset` of `block` (the host side of a struct field).
template <typename T> void put(std::vector<std::byte>& block, size_t offset, const T& value) {
  std::memcpy(block.data() + offset, &value, sizeof(T));
}

std::vector<std::byte> fillBlock(const DeviceBuffer& out, int n, float value) {
  std::vector<std::byte> block(16);
  put(block, 0, out.pointer());
  put(block, 8, n);
  put(block, 12, value);
  return block;
}

std::vector<float> expectedFill(int n, float value) {
  std::vector<float> expected(n);
  for (int i = 0; i < n; ++i)
    expected[i] = value + static_cast<float>(i);
  return expected;
}

TEST(CudaDevice, DescribesTheDevice) {
  WF_REQUIRE_DEVICE();
  CudaDevice& device = CudaDevice::get();
  EXPECT_EQ(&device, &CudaDevice::get(0));
  DeviceDescription description = device.description();
  EXPECT_TRUE(std::regex_match(description.arch, std::regex("sm_[0-9]+"))) << description.arch;
  EXPECT_EQ(description.arch, "sm_" + std::to_string(description.computeCapability));
  EXPECT_GE(description.computeCapability, 70u);
  EXPECT_GT(description.multiprocessorCount, 0u);
  EXPECT_TRUE(description.fromDevice);
  EXPECT_FALSE(device.name().empty());
  EXPECT_GE(device.driverVersion(), 12000);
  EXPECT_TRUE(device.maxParameterBytes() == 32764 || device.maxParameterBytes() == 4096);
  std::cout << device.name() << ", " << description.arch << ", " << description.multiprocessorCount
            << " SMs, driver " << device.driverVersion() << ", parameters up to "
            << device.maxParameterBytes() << " bytes\n";
}

TEST(CudaDevice, LaunchFillsTheOutput) {
  WF_REQUIRE_DEVICE();
  CudaDevice& device = CudaDevice::get();
  CudaModule module(device, compileFor(device, kFillSource, "fill"));
  EXPECT_EQ(module.parameterBytes().value_or(16), 16u); // When the driver can tell.
  const int n = 1000;
  DeviceBuffer out(device, n * sizeof(float));
  EXPECT_TRUE(device.isDevicePointer(out.pointer()));
  EXPECT_FALSE(device.isDevicePointer(&n));
  out.zero();
  device.launch(module, "fill", fillBlock(out, n, 0.5f), (n + 255) / 256, 256, nullptr);
  device.synchronize(nullptr);
  EXPECT_EQ(out.downloadValues<float>(), expectedFill(n, 0.5f));
}

TEST(CudaDevice, LaunchOnAStreamFromAnotherThread) {
  WF_REQUIRE_DEVICE();
  CudaDevice& device = CudaDevice::get();
  CudaModule module(device, compileFor(device, kFillSource, "fill"));
  const int n = 4096;
  DeviceBuffer out(device, n * sizeof(float));
  CudaStream stream(device);
  std::vector<float> result(n, -1.0f);
  // A fresh thread has no current context: launch() must make the primary context current.
  std::thread worker([&] {
    out.zeroAsync(stream.handle());
    std::vector<std::byte> block = fillBlock(out, n, 3.0f);
    device.launch(module, "fill", block, n / 256, 256, stream.handle());
    block.assign(block.size(), std::byte{0}); // The driver copied the block at launch.
    out.downloadAsync({reinterpret_cast<std::byte*>(result.data()), n * sizeof(float)},
                      stream.handle());
    stream.synchronize();
  });
  worker.join();
  EXPECT_EQ(result, expectedFill(n, 3.0f));
}

TEST(CudaDevice, LaunchErrorsNameTheKernel) {
  WF_REQUIRE_DEVICE();
  CudaDevice& device = CudaDevice::get();
  CudaModule module(device, compileFor(device, kFillSource, "fill"));
  DeviceBuffer out(device, 64);
  std::vector<std::byte> block = fillBlock(out, 16, 1.0f);
  std::string message =
      errorOf([&] { device.launch(module, "no_such_kernel", block, 1, 256, nullptr); });
  EXPECT_TRUE(contains(message, "kernel 'no_such_kernel'")) << message;
  EXPECT_TRUE(contains(message, "CUDA_ERROR_NOT_FOUND")) << message;
  if (module.parameterBytes()) {
    message = errorOf([&] {
      device.launch(module, "fill", llvm::makeArrayRef(block).take_front(8), 1, 256, nullptr);
    });
    EXPECT_TRUE(contains(message, "has 8 bytes but the kernel's parameter has 16")) << message;
  }
  // A rejected launch leaves the context usable.
  device.launch(module, "fill", block, 1, 256, nullptr);
  EXPECT_EQ(out.downloadValues<float>(), expectedFill(16, 1.0f));
}

TEST(CudaDevice, LaunchesA32KilobyteParameterBlock) {
  WF_REQUIRE_DEVICE();
  CudaDevice& device = CudaDevice::get();
  const size_t blockBytes = 16 + kLargeCount * sizeof(float);
  if (device.maxParameterBytes() < blockBytes)
    GTEST_SKIP() << "the driver accepts " << device.maxParameterBytes() << " parameter bytes";
  CudaModule module(device, compileFor(device, kCopyLargeSource, "copy_large"));
  EXPECT_EQ(module.parameterBytes().value_or(blockBytes), blockBytes);
  DeviceBuffer out(device, kLargeCount * sizeof(float));
  out.zero();
  std::vector<std::byte> block(blockBytes);
  put(block, 0, out.pointer());
  put(block, 8, kLargeCount);
  std::vector<float> values(kLargeCount);
  for (int i = 0; i < kLargeCount; ++i)
    values[i] = static_cast<float>(i) * 0.25f - 7.0f;
  std::memcpy(block.data() + 16, values.data(), values.size() * sizeof(float));
  device.launch(module, "copy_large", block, device.description().multiprocessorCount, 256,
                nullptr);
  device.synchronize(nullptr);
  EXPECT_EQ(out.downloadValues<float>(), values);
}

TEST(CudaDevice, BufferCopiesAtOffsets) {
  WF_REQUIRE_DEVICE();
  CudaDevice& device = CudaDevice::get();
  DeviceBuffer buffer(device, 8 * sizeof(int));
  buffer.zero();
  buffer.uploadValues(llvm::ArrayRef<int>({1, 2, 3}), 2 * sizeof(int));
  EXPECT_EQ(buffer.downloadValues<int>(), std::vector<int>({0, 0, 1, 2, 3, 0, 0, 0}));
  int tail[2] = {};
  buffer.download({reinterpret_cast<std::byte*>(tail), sizeof(tail)}, 3 * sizeof(int));
  EXPECT_EQ(tail[0], 2);
  EXPECT_EQ(tail[1], 3);
}

} // namespace
