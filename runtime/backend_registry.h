#pragma once
/// The backends a name selects, listed once (backend_registry.cpp), and the one rule of
/// `auto`: a fusion runs where its arguments live.

#include "runtime/backend.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace widefuse {

/// Every registered backend, in the order messages list them.
llvm::ArrayRef<const Backend*> registeredBackends();

/// Every name ExecutorOptions::backend accepts: `auto`, then each registered backend's.
std::vector<std::string> backendNames();

/// The backend named `name`; null for `auto`. Throws Error listing backendNames() for any
/// other name.
const Backend* findBackend(llvm::StringRef name);

/// The rule of `auto`: arguments of which one is in device memory run on the backend of that
/// memory (cuda), others on the host backend. The Python frontend asks it with what the
/// arrays' own protocols say (python_frontend/bindings: select_backend).
const Backend& backendForPlacement(bool inDeviceMemory);

/// What `auto` runs `arguments` on: backendForPlacement of whether a registered backend holds
/// one of them (the CUDA driver knows a device pointer). The command line's .npy inputs are
/// placed on the GPU when there is one (tools/run_command.cpp).
const Backend& backendForArguments(llvm::ArrayRef<Argument> arguments);

} // namespace widefuse
