#include "runtime/cuda/cuda_versions.h"

#include <fmt/format.h>

namespace widefuse {
namespace {

// CUDA 12.1 raised the parameter limit from 4 KB to 32 KB minus 4 bytes, for Volta and newer.
// The driver must accept such a block and NVRTC must emit a kernel taking one: both from 12.1.
constexpr CudaVersion kLargeParametersSince{12, 1};
constexpr unsigned kLargeParametersComputeCapability = 70;
constexpr unsigned kLargeParameterBytes = 32764;
constexpr unsigned kSmallParameterBytes = 4096;

// The pip packages of NVRTC by major version (their libraries are what the Python package
// finds, runtime/cuda/nvrtc_library.cpp); empty for a major without one.
std::string nvrtcPackage(int major) {
  if (major == 12)
    return "nvidia-cuda-nvrtc-cu12";
  if (major >= 13)
    return fmt::format("'nvidia-cuda-nvrtc=={}.*'", major);
  return {};
}

} // namespace

CudaVersion CudaVersion::fromDriver(int driverVersion) {
  return {driverVersion / 1000, (driverVersion % 1000) / 10};
}

std::string CudaVersion::str() const {
  return fmt::format("{}.{}", major, minor);
}

bool nvrtcFitsDriver(CudaVersion nvrtc, CudaVersion driver) {
  return nvrtc.major <= driver.major;
}

size_t chooseNvrtcVersion(llvm::ArrayRef<CudaVersion> versions, std::optional<CudaVersion> driver) {
  auto fits = [&](CudaVersion version) { return !driver || nvrtcFitsDriver(version, *driver); };
  // A fitting version beats any that does not; among those alike the newer wins, and the
  // strict comparison keeps the earliest of equal versions.
  size_t chosen = 0;
  for (size_t i = 1; i < versions.size(); ++i) {
    bool fitsNow = fits(versions[i]);
    bool fitsChosen = fits(versions[chosen]);
    if ((fitsNow && !fitsChosen) || (fitsNow == fitsChosen && versions[i] > versions[chosen]))
      chosen = i;
  }
  return chosen;
}

unsigned maxKernelParameterBytes(CudaVersion driver, unsigned computeCapability,
                                 std::optional<CudaVersion> nvrtc) {
  bool large = driver >= kLargeParametersSince &&
               computeCapability >= kLargeParametersComputeCapability &&
               (!nvrtc || *nvrtc >= kLargeParametersSince);
  return large ? kLargeParameterBytes : kSmallParameterBytes;
}

std::string fittingNvrtcHint(CudaVersion driver) {
  std::string package = nvrtcPackage(driver.major);
  std::string install =
      package.empty()
          ? std::string()
          : fmt::format("pip install {} (the widefuse Python package finds it), or ", package);
  return fmt::format("update the driver, or use an NVRTC {}.x: {}set WIDEFUSE_NVRTC_LIBRARY to "
                     "its libnvrtc.so.{}",
                     driver.major, install, driver.major);
}

std::string cubinVersionNote(std::optional<CudaVersion> nvrtc, CudaVersion driver) {
  if (!nvrtc)
    return fmt::format("no NVRTC loads in this process to tell which one compiled the cubin; "
                       "the driver supports CUDA {}",
                       driver.str());
  std::string note = fmt::format("the cubin is from NVRTC {}, the driver supports CUDA {}",
                                 nvrtc->str(), driver.str());
  if (nvrtcFitsDriver(*nvrtc, driver))
    return note;
  return fmt::format("{}: an NVRTC newer than the driver ({} > {}) is the likely cause; {}", note,
                     nvrtc->major, driver.major, fittingNvrtcHint(driver));
}

} // namespace widefuse
