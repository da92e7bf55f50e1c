#pragma once
/// The target GPU as the scheduler sees it: an architecture and enough numbers to size a
/// persistent grid.

#include <llvm/ADT/StringRef.h>

#include <string>

namespace widefuse {

/// What the scheduler needs to know about the device a kernel will run on.
struct DeviceDescription {
  /// NVRTC architecture name, e.g. `sm_90`.
  std::string arch = "sm_90";
  /// Compute capability as one number (90 for sm_90).
  unsigned computeCapability = 90;
  /// Streaming multiprocessors; sizes the persistent grid.
  unsigned multiprocessorCount = 132;
  /// Largest kernel parameter block the driver accepts (4096 before CUDA 12.1).
  unsigned maxParameterBytes = 32764;
  /// True when the numbers come from a real device rather than defaults for the arch.
  bool fromDevice = false;

  bool operator==(const DeviceDescription&) const = default;
};

/// The default target: sm_90 with an H200's 132 multiprocessors.
DeviceDescription defaultDevice();

/// A description for `arch` (`sm_80`, `sm_90`, ...) with that generation's usual
/// multiprocessor count (A100: 108, H100/H200: 132). Throws Error for a malformed name or an
/// architecture older than sm_70 (kernels use `__grid_constant__` and 16-byte accesses).
DeviceDescription deviceForArch(llvm::StringRef arch);

} // namespace widefuse
