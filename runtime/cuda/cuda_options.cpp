#include "runtime/cuda/cuda_options.h"

#include <cstdlib>
#include <cstring>

namespace widefuse {

bool synchronizeEachLaunchFromEnvironment() {
  const char* value = std::getenv("WIDEFUSE_CUDA_SYNC");
  return value && *value && std::strcmp(value, "0") != 0;
}

} // namespace widefuse
