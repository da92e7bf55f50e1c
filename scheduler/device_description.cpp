#include "scheduler/device_description.h"

#include "ir/error.h"

namespace widefuse {

DeviceDescription defaultDevice() {
  return DeviceDescription{};
}

DeviceDescription deviceForArch(llvm::StringRef arch) {
  llvm::StringRef digits = arch;
  unsigned capability = 0;
  if (!digits.consume_front("sm_") || digits.empty() || digits.size() > 3 ||
      digits.getAsInteger(10, capability))
    fail("invalid arch '{}': expected sm_ followed by the compute capability, e.g. sm_80 or "
         "sm_90",
         arch.str());
  if (capability < 70)
    fail("arch '{}' is too old: widefuse kernels need sm_70 or newer", arch.str());
  DeviceDescription device;
  device.arch = arch.str();
  device.computeCapability = capability;
  // Multiprocessor counts of the flagship part of each generation; a real device overrides
  // them at run time.
  if (capability >= 100)
    device.multiprocessorCount = 148;
  else if (capability >= 90)
    device.multiprocessorCount = 132;
  else if (capability == 80)
    device.multiprocessorCount = 108;
  else if (capability >= 86)
    device.multiprocessorCount = 84;
  else
    device.multiprocessorCount = 80;
  return device;
}

} // namespace widefuse
