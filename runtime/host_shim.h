#pragma once
/// The host shim: CUDA built-ins for compiling generated kernels with the host compiler.

#include <llvm/ADT/StringRef.h>

namespace widefuse {

/// The text of runtime/host_shim.cuh, put in front of a kernel's source by the host backend.
llvm::StringRef hostShim();

} // namespace widefuse
