#pragma once
/// Loading fusion text files for the command-line tools.

#include "ir/fusion.h"

#include <llvm/ADT/StringRef.h>

#include <memory>
#include <string>

namespace CLI {
class App;
}

namespace widefuse {

/// Registers the positional FILE (a fusion text file, `-` for standard input) on `command`.
void addFusionFileArgument(CLI::App& command, std::string& path);

/// Reads, parses and verifies the fusion in a text file (`-` reads standard input). Throws
/// Error naming the path when it cannot be read, or the parser's located message.
std::unique_ptr<Fusion> loadFusionFile(llvm::StringRef path);

} // namespace widefuse
