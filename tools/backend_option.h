#pragma once
/// The command line's --backend: a registered backend's name, or `auto`, which places the
/// .npy inputs on the GPU when there is one (the cuda backend stages them) and otherwise
/// runs them where they are, on the host: the executor's rule (arguments run where they
/// live) applied to files, which live nowhere yet.

#include <llvm/ADT/StringRef.h>

#include <string>

namespace widefuse {

/// The backend `--backend name` runs on; throws Error listing the names for an unknown one.
std::string commandLineBackend(llvm::StringRef name);

} // namespace widefuse
