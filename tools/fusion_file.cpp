#include "tools/fusion_file.h"

#include <CLI/CLI.hpp>

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/verifier.h"

#include <llvm/Support/MemoryBuffer.h>

namespace widefuse {

void addFusionFileArgument(CLI::App& command, std::string& path) {
  command.add_option("file", path, "Fusion text file ('-' for standard input)")->required();
}

std::unique_ptr<Fusion> loadFusionFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer)
    fail("cannot read '{}': {}", path.str(), buffer.getError().message());
  std::unique_ptr<Fusion> fusion =
      parseFusion((*buffer)->getBuffer(), path == "-" ? llvm::StringRef("<stdin>") : path);
  // The parser verifies too; checking again keeps the tools honest if that ever changes.
  verify(*fusion);
  return fusion;
}

} // namespace widefuse
