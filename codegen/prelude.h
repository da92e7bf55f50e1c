#pragma once
/// The device prelude: widefuse's own types, conversions, element ops and vector memory
/// accesses that every generated kernel starts with. No CUDA headers, so NVRTC compiles it
/// quickly and the host compiler compiles the same text (host backend).

#include <llvm/ADT/StringRef.h>

namespace widefuse {

/// The text of codegen/prelude.cuh.
llvm::StringRef devicePrelude();

/// The text of codegen/chunk_shares.h: how a launch's blocks share its chunks (every kernel's
/// skeleton).
llvm::StringRef chunkSharesText();

/// The text of codegen/prelude_reduce.cuh (with ir/reduction_tree.h in it): what kernels that
/// reduce add after devicePrelude(); the others leave it out, which keeps their compile short.
llvm::StringRef reductionPrelude();

} // namespace widefuse
