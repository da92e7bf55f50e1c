#pragma once
/// Loading fusion text files for the command-line tools.

#include "ir/fusion.h"

#include <llvm/ADT/StringRef.h>

#include <memory>

namespace widefuse {

/// Reads, parses and verifies the fusion in a text file (`-` reads standard input). Throws
/// Error naming the path when it cannot be read, or the parser's located message.
std::unique_ptr<Fusion> loadFusionFile(llvm::StringRef path);

} // namespace widefuse
