#pragma once
/// The host prelude: the CUDA built-ins generated kernels use, for the host C++ compiler.

#include <llvm/ADT/StringRef.h>

namespace widefuse {

/// The text of codegen/host_prelude.cuh, put in front of a kernel's source by the host backend.
llvm::StringRef hostPrelude();

} // namespace widefuse
