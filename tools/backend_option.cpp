#include "tools/backend_option.h"

#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_device.h"

namespace widefuse {

std::string commandLineBackend(llvm::StringRef name) {
  if (findBackend(name))
    return name.str();
  return CudaDevice::available() ? "cuda" : "host";
}

} // namespace widefuse
