#pragma once
/// The CUDA backend's version rules in one place: which NVRTC suits a driver, how large a
/// kernel's parameter block may be, and what a refused cubin says about versions. Functions of
/// version numbers only, so that tests need neither a driver nor an NVRTC.

#include <llvm/ADT/ArrayRef.h>

#include <compare>
#include <cstddef>
#include <optional>
#include <string>

namespace widefuse {

/// A CUDA version: NVRTC's own (nvrtcVersion), or the newest CUDA a driver supports.
struct CudaVersion {
  /// The major version (13 for CUDA 13.0).
  int major = 0;
  /// The minor version.
  int minor = 0;

  /// The version cuDriverGetVersion reports as 1000 * major + 10 * minor (12040 is 12.4).
  static CudaVersion fromDriver(int driverVersion);
  /// "major.minor", e.g. "12.4".
  std::string str() const;
  /// Orders by major, then minor.
  friend auto operator<=>(const CudaVersion&, const CudaVersion&) = default;
};

/// True when the cubins of NVRTC `nvrtc` load on a driver that supports CUDA `driver`: the
/// driver's major version is at least NVRTC's (CUDA's minor version compatibility covers the
/// minors).
bool nvrtcFitsDriver(CudaVersion nvrtc, CudaVersion driver);

/// The position in `versions` (the NVRTCs that loaded, in search order; not empty) of the one
/// to use with a driver supporting `driver`: the newest that fits it, else the newest of all
/// (a module load then names the mismatch); without a driver (nullopt) the newest. Of equal
/// versions the earliest wins.
size_t chooseNvrtcVersion(llvm::ArrayRef<CudaVersion> versions, std::optional<CudaVersion> driver);

/// The largest kernel parameter block in bytes: 32764 when the driver (12.1 or newer), the
/// device (compute capability 70 or more) and NVRTC (12.1 or newer) all allow it, else 4096.
/// `nvrtc` is nullopt when no NVRTC loads; the driver and the device then decide alone.
unsigned maxKernelParameterBytes(CudaVersion driver, unsigned computeCapability,
                                 std::optional<CudaVersion> nvrtc);

/// For an error where the driver refused a cubin: names the NVRTC that compiled it (nullopt:
/// none loads in this process) and the CUDA version of the driver, and when NVRTC's major
/// exceeds the driver's, says that this is the likely cause and how to fix it.
std::string cubinVersionNote(std::optional<CudaVersion> nvrtc, CudaVersion driver);

/// How to get an NVRTC that suits a driver supporting `driver`: update the driver, or install
/// an NVRTC of its major and point $WIDEFUSE_NVRTC_LIBRARY at it.
std::string fittingNvrtcHint(CudaVersion driver);

} // namespace widefuse
