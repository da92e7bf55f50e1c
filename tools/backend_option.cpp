#include "tools/backend_option.h"

#include "runtime/backend_registry.h"

namespace widefuse {

std::string commandLineBackend(llvm::StringRef name) {
  if (findBackend(name))
    return name.str();
  return findBackend("cuda")->available() ? "cuda" : "host";
}

} // namespace widefuse
