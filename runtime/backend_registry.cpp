#include "runtime/backend_registry.h"

#include "ir/error.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/host/host_backend.h"
#include "runtime/none/none_backend.h"
#include "runtime/reference/reference_backend.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

namespace widefuse {

llvm::ArrayRef<const Backend*> registeredBackends() {
  // One line per backend; `auto` asks them in this order.
  static const Backend* const backends[] = {
      &cudaBackend(),
      &hostBackend(),
      &referenceBackend(),
      &noneBackend(),
  };
  return backends;
}

std::vector<std::string> backendNames() {
  std::vector<std::string> names{"auto"};
  for (const Backend* backend : registeredBackends())
    names.push_back(backend->name().str());
  return names;
}

const Backend* findBackend(llvm::StringRef name) {
  if (name == "auto")
    return nullptr;
  for (const Backend* backend : registeredBackends())
    if (backend->name() == name)
      return backend;
  std::vector<std::string> names = backendNames();
  std::string last = names.back();
  names.pop_back();
  fail("unknown backend '{}': use {} or {}", name.str(), llvm::join(names, ", "), last);
}

const Backend& backendForPlacement(bool inDeviceMemory) {
  return inDeviceMemory ? cudaBackend() : hostBackend();
}

const Backend& backendForArguments(llvm::ArrayRef<Argument> arguments) {
  return backendForPlacement(llvm::any_of(registeredBackends(), [&](const Backend* backend) {
    return backend->holdsArguments(arguments);
  }));
}

} // namespace widefuse
