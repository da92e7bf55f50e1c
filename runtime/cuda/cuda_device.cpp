#include "runtime/cuda/cuda_device.h"

#include "runtime/cuda/cuda_versions.h"
#include "runtime/cuda/nvrtc_library.h"

#include "ir/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace widefuse {
namespace {

constexpr const char* kHostHint = "use backend=host to run on the CPU";

// The size of `function`'s only parameter; nullopt when the driver cannot tell (it lacks
// cuFuncGetParamInfo, or the kernel takes no parameter). A kernel with several parameters
// would read argument pointers past the one launch() passes, so it is refused.
std::optional<size_t> singleParameterBytes(const CudaDriver& driver, CUfunction function,
                                           llvm::StringRef kernel) {
  if (!driver.cuFuncGetParamInfo)
    return std::nullopt;
  size_t offset = 0;
  size_t bytes = 0;
  if (driver.cuFuncGetParamInfo(function, 0, &offset, &bytes) != kCudaSuccess)
    return std::nullopt;
  size_t secondOffset = 0;
  size_t secondBytes = 0;
  if (driver.cuFuncGetParamInfo(function, 1, &secondOffset, &secondBytes) == kCudaSuccess)
    fail("kernel '{}' takes more than one parameter; widefuse launches pass a single parameter "
         "block",
         kernel);
  return bytes;
}

} // namespace

// --- CudaDevice ----------------------------------------------------------------------------

CudaDevice& CudaDevice::get(int ordinal) {
  // Devices are never destroyed: modules, buffers and contexts of other libraries may still
  // use the primary context during static destruction.
  static std::mutex mutex;
  static auto* devices = new std::map<int, CudaDevice*>();
  std::lock_guard<std::mutex> lock(mutex);
  auto found = devices->find(ordinal);
  if (found != devices->end())
    return *found->second;
  CudaDevice* device = open(CudaDriver::instance(), ordinal).release();
  devices->emplace(ordinal, device);
  return *device;
}

bool CudaDevice::available() noexcept {
  try {
    const CudaDriver& driver = CudaDriver::instance();
    int count = 0;
    return driver.cuInit(0) == kCudaSuccess && driver.cuDeviceGetCount(&count) == kCudaSuccess &&
           count > 0;
  } catch (...) {
    return false;
  }
}

std::unique_ptr<CudaDevice> CudaDevice::open(const CudaDriver& driver, int ordinal) {
  CUresult init = driver.cuInit(0);
  if (init == kCudaErrorNoDevice)
    fail("no CUDA device: the driver sees 0 GPUs; {}", kHostHint);
  if (init != kCudaSuccess)
    fail("the CUDA driver {} failed to initialise: cuInit failed: {}; {}", driver.path(),
         driver.describe(init), kHostHint);
  int count = 0;
  driver.check(driver.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count <= 0)
    fail("no CUDA device: the driver sees 0 GPUs; {}", kHostHint);
  if (ordinal < 0 || ordinal >= count)
    fail("no CUDA device {}: the driver sees {} GPU{}", ordinal, count, count == 1 ? "" : "s");
  return std::unique_ptr<CudaDevice>(new CudaDevice(driver, ordinal));
}

CudaDevice::CudaDevice(const CudaDriver& driver, int ordinal)
    : driver_(&driver), ordinal_(ordinal) {
  driver.check(driver.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  driver.check(driver.cuDriverGetVersion(&driverVersion_), "cuDriverGetVersion");
  auto attribute = [&](int which) {
    int value = 0;
    driver.check(driver.cuDeviceGetAttribute(&value, which, device_), "cuDeviceGetAttribute");
    return value;
  };
  int major = attribute(kCudaAttributeComputeCapabilityMajor);
  int minor = attribute(kCudaAttributeComputeCapabilityMinor);
  description_.arch = fmt::format("sm_{}{}", major, minor);
  description_.computeCapability = static_cast<unsigned>(major * 10 + minor);
  description_.multiprocessorCount =
      static_cast<unsigned>(attribute(kCudaAttributeMultiprocessorCount));
  description_.fromDevice = true;
  char name[256] = {};
  driver.check(driver.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
  name_ = name;
  // Retained last, so a failure above leaves nothing to release.
  driver.check(driver.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
}

CudaDevice::~CudaDevice() {
  if (context_)
    driver_->cuDevicePrimaryCtxRelease(device_);
}

DeviceDescription CudaDevice::description() const {
  DeviceDescription description = description_;
  description.maxParameterBytes = maxParameterBytes();
  return description;
}

unsigned CudaDevice::maxParameterBytes() const {
  // The NVRTC of this process compiles every kernel it launches, so its version counts too.
  // Without one no kernel can be compiled (the cache's keys need its version): a device used
  // for memory alone then gets the driver's and the device's limit rather than an error.
  return maxKernelParameterBytes(CudaVersion::fromDriver(driverVersion_),
                                 description_.computeCapability, NvrtcLibrary::instanceVersion());
}

CudaDevice::ContextScope::ContextScope(const CudaDevice& device) : device_(device) {
  const CudaDriver& driver = device.driver();
  driver.check(driver.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  if (previous_ == device.context_)
    return;
  driver.check(driver.cuCtxSetCurrent(device.context_), "cuCtxSetCurrent");
  switched_ = true;
}

CudaDevice::ContextScope::~ContextScope() {
  // Restoring a context that was valid a moment ago cannot fail in a way the caller could
  // act on; the next driver call of theirs would report it.
  if (switched_)
    device_.driver().cuCtxSetCurrent(previous_);
}

namespace {

/// Runs `release` with the device's context current, for destructors: a driver that cannot
/// switch contexts any more (process teardown) leaks the resource instead of throwing.
template <typename Release> void releaseInContext(const CudaDevice& device, Release release) {
  try {
    CudaDevice::ContextScope scope(device);
    release();
  } catch (const Error&) {
  }
}

} // namespace

void CudaDevice::launch(const CudaModule& module, llvm::StringRef kernelName,
                        llvm::ArrayRef<std::byte> parameterBlock, unsigned gridBlocks,
                        unsigned threadsPerBlock, void* stream) const {
  WF_ASSERT(&module.device() == this, "kernel '{}' is loaded on another device", kernelName.str());
  WF_ASSERT(gridBlocks > 0 && threadsPerBlock > 0, "empty launch of kernel '{}'", kernelName.str());
  if (parameterBlock.size() > maxParameterBytes())
    fail("the parameter block of kernel '{}' has {} bytes, more than the {} bytes device {} "
         "with driver {} accepts",
         kernelName, parameterBlock.size(), maxParameterBytes(), ordinal_, driverVersion_);
  ContextScope scope(*this);
  CUfunction function = module.function();
  std::optional<size_t> expectedBytes = module.parameterBytes();
  if (kernelName != module.kernelName()) {
    function = module.function(kernelName);
    expectedBytes = singleParameterBytes(*driver_, function, kernelName);
  }
  if (expectedBytes && *expectedBytes != parameterBlock.size())
    fail("the parameter block of kernel '{}' has {} bytes but the kernel's parameter has {}",
         kernelName, parameterBlock.size(), *expectedBytes);
  // The kernel takes one argument, the whole block: its only kernelParams entry points at the
  // block, which the driver copies before cuLaunchKernel returns.
  void* arguments[] = {const_cast<std::byte*>(parameterBlock.data())};
  driver_->check(driver_->cuLaunchKernel(function, gridBlocks, 1, 1, threadsPerBlock, 1, 1,
                                         /*sharedMemoryBytes=*/0, static_cast<CUstream>(stream),
                                         parameterBlock.empty() ? nullptr : arguments,
                                         /*extra=*/nullptr),
                 "cuLaunchKernel", kernelName);
}

void CudaDevice::synchronize(void* stream) const {
  ContextScope scope(*this);
  driver_->check(driver_->cuStreamSynchronize(static_cast<CUstream>(stream)),
                 "cuStreamSynchronize");
}

void CudaDevice::synchronizeContext() const {
  ContextScope scope(*this);
  driver_->check(driver_->cuCtxSynchronize(), "cuCtxSynchronize");
}

bool CudaDevice::isCapturing(void* stream) const {
  if (!driver_->cuStreamIsCapturing)
    return false;
  ContextScope scope(*this);
  int status = kCudaStreamCaptureStatusNone;
  CUresult result = driver_->cuStreamIsCapturing(static_cast<CUstream>(stream), &status);
  if (result == kCudaErrorStreamCaptureImplicit)
    return true; // the legacy stream, while a blocking stream captures
  driver_->check(result, "cuStreamIsCapturing");
  return status != kCudaStreamCaptureStatusNone;
}

std::optional<int> CudaDevice::deviceOrdinalOf(const void* pointer) const {
  ContextScope scope(*this);
  auto address = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer));
  unsigned memoryType = 0;
  if (driver_->cuPointerGetAttribute(&memoryType, kCudaPointerAttributeMemoryType, address) !=
          kCudaSuccess ||
      memoryType != kCudaMemoryTypeDevice)
    return std::nullopt;
  int ordinal = ordinal_; // a driver that cannot tell has one device
  driver_->cuPointerGetAttribute(&ordinal, kCudaPointerAttributeDeviceOrdinal, address);
  return ordinal;
}

bool CudaDevice::isDevicePointer(const void* pointer) const {
  return deviceOrdinalOf(pointer) == ordinal_;
}

// --- CudaModule ----------------------------------------------------------------------------

CudaModule::CudaModule(const CudaDevice& device, const KernelImage& kernel)
    : device_(&device), kernelName_(kernel.name) {
  const CudaDriver& driver = device.driver();
  if (kernel.image.empty())
    fail("kernel '{}' has no cubin to load", kernel.name);
  CudaDevice::ContextScope scope(device);
  CUresult result = driver.cuModuleLoadData(&module_, kernel.image.data());
  if (result != kCudaSuccess) {
    module_ = nullptr;
    std::string archNote;
    if (!kernel.target.empty() && kernel.target != device.description().arch)
      archNote = fmt::format(" (the cubin is for {}, device {} is {})", kernel.target,
                             device.ordinal(), device.description().arch);
    // Every cubin of this process comes from its NVRTC (the cache keys on its version).
    fail("cuModuleLoadData failed for kernel '{}': {}{}; {}", kernel.name, driver.describe(result),
         archNote,
         cubinVersionNote(NvrtcLibrary::instanceVersion(),
                          CudaVersion::fromDriver(device.driverVersion())));
  }
  try {
    function_ = function(kernelName_);
    parameterBytes_ = singleParameterBytes(driver, function_, kernelName_);
  } catch (...) {
    release();
    throw;
  }
}

CudaModule::~CudaModule() {
  release();
}

CudaModule::CudaModule(CudaModule&& other) noexcept
    : device_(other.device_), module_(std::exchange(other.module_, nullptr)),
      function_(std::exchange(other.function_, nullptr)), kernelName_(std::move(other.kernelName_)),
      parameterBytes_(other.parameterBytes_) {}

CudaModule& CudaModule::operator=(CudaModule&& other) noexcept {
  if (this != &other) {
    release();
    device_ = other.device_;
    module_ = std::exchange(other.module_, nullptr);
    function_ = std::exchange(other.function_, nullptr);
    kernelName_ = std::move(other.kernelName_);
    parameterBytes_ = other.parameterBytes_;
  }
  return *this;
}

CUfunction CudaModule::function(llvm::StringRef name) const {
  WF_ASSERT(module_, "kernel '{}' used after its module was moved from", name.str());
  CudaDevice::ContextScope scope(*device_);
  CUfunction found = nullptr;
  device_->driver().check(
      device_->driver().cuModuleGetFunction(&found, module_, name.str().c_str()),
      "cuModuleGetFunction", name);
  return found;
}

unsigned CudaModule::residentBlocks(unsigned threadsPerBlock) const {
  CudaDevice::ContextScope scope(*device_);
  int blocks = 0;
  device_->driver().check(device_->driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
                              &blocks, function_, int(threadsPerBlock), 0),
                          "cuOccupancyMaxActiveBlocksPerMultiprocessor", kernelName_);
  return unsigned(std::max(1, blocks));
}

void CudaModule::release() noexcept {
  if (module_)
    releaseInContext(*device_, [&] { device_->driver().cuModuleUnload(module_); });
  module_ = nullptr;
  function_ = nullptr;
}

// --- DeviceBuffer --------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(const CudaDevice& device, size_t bytes)
    : device_(&device), size_(bytes) {
  // cuMemAlloc rejects 0 bytes; an empty buffer needs no memory and keeps a null address.
  if (bytes == 0)
    return;
  CudaDevice::ContextScope scope(device);
  CUresult result = device.driver().cuMemAlloc(&address_, bytes);
  if (result != kCudaSuccess)
    fail("cuMemAlloc of {} bytes on device {} failed: {}", bytes, device.ordinal(),
         device.driver().describe(result));
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(other.device_), address_(std::exchange(other.address_, 0)),
      size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    device_ = other.device_;
    address_ = std::exchange(other.address_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (address_)
    releaseInContext(*device_, [&] { device_->driver().cuMemFree(address_); });
  address_ = 0;
  size_ = 0;
}

void DeviceBuffer::checkRange(size_t offset, size_t bytes, llvm::StringRef what) const {
  WF_ASSERT(offset <= size_ && bytes <= size_ - offset,
            "{} of {} bytes at offset {} overruns a {}-byte device buffer", what.str(), bytes,
            offset, size_);
}

void DeviceBuffer::upload(llvm::ArrayRef<std::byte> bytes, size_t offset) {
  if (bytes.empty())
    return;
  checkRange(offset, bytes.size(), "upload");
  CudaDevice::ContextScope scope(*device_);
  device_->driver().check(
      device_->driver().cuMemcpyHtoD(address_ + offset, bytes.data(), bytes.size()),
      "cuMemcpyHtoD");
}

void DeviceBuffer::uploadAsync(llvm::ArrayRef<std::byte> bytes, void* stream, size_t offset) {
  if (bytes.empty())
    return;
  checkRange(offset, bytes.size(), "upload");
  CudaDevice::ContextScope scope(*device_);
  device_->driver().check(device_->driver().cuMemcpyHtoDAsync(address_ + offset, bytes.data(),
                                                              bytes.size(),
                                                              static_cast<CUstream>(stream)),
                          "cuMemcpyHtoDAsync");
}

void DeviceBuffer::download(llvm::MutableArrayRef<std::byte> bytes, size_t offset) const {
  if (bytes.empty())
    return;
  checkRange(offset, bytes.size(), "download");
  CudaDevice::ContextScope scope(*device_);
  device_->driver().check(
      device_->driver().cuMemcpyDtoH(bytes.data(), address_ + offset, bytes.size()),
      "cuMemcpyDtoH");
}

void DeviceBuffer::downloadAsync(llvm::MutableArrayRef<std::byte> bytes, void* stream,
                                 size_t offset) const {
  if (bytes.empty())
    return;
  checkRange(offset, bytes.size(), "download");
  CudaDevice::ContextScope scope(*device_);
  device_->driver().check(device_->driver().cuMemcpyDtoHAsync(bytes.data(), address_ + offset,
                                                              bytes.size(),
                                                              static_cast<CUstream>(stream)),
                          "cuMemcpyDtoHAsync");
}

void DeviceBuffer::fill(unsigned char byte) {
  if (size_ == 0)
    return;
  checkRange(0, size_, "fill");
  CudaDevice::ContextScope scope(*device_);
  device_->driver().check(device_->driver().cuMemsetD8(address_, byte, size_), "cuMemsetD8");
}

void DeviceBuffer::zeroAsync(void* stream) {
  if (size_ == 0)
    return;
  checkRange(0, size_, "zero");
  CudaDevice::ContextScope scope(*device_);
  device_->driver().check(
      device_->driver().cuMemsetD8Async(address_, 0, size_, static_cast<CUstream>(stream)),
      "cuMemsetD8Async");
}

// --- CudaStream ----------------------------------------------------------------------------

CudaStream::CudaStream(const CudaDevice& device, bool nonBlocking) : device_(&device) {
  CudaDevice::ContextScope scope(device);
  device.driver().check(device.driver().cuStreamCreate(&stream_, nonBlocking ? 1u : 0u),
                        "cuStreamCreate");
}

CudaStream::~CudaStream() {
  release();
}

CudaStream::CudaStream(CudaStream&& other) noexcept
    : device_(other.device_), stream_(std::exchange(other.stream_, nullptr)) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    release();
    device_ = other.device_;
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void CudaStream::synchronize() const {
  device_->synchronize(stream_);
}

void CudaStream::release() noexcept {
  if (stream_)
    releaseInContext(*device_, [&] { device_->driver().cuStreamDestroy(stream_); });
  stream_ = nullptr;
}

} // namespace widefuse
