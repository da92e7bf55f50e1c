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

/// What `auto` runs `arguments` on: the first registered backend that holds them (cuda for a
/// tensor in device memory), else the host backend. The Python frontend follows the same
/// rule for its arrays; the command line's .npy inputs are placed on the GPU when there is
/// one (tools/run_command.cpp).
const Backend& backendForArguments(llvm::ArrayRef<Argument> arguments);

} // namespace widefuse
