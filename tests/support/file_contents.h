#pragma once
/// Whole-file reads and writes for tests.

#include <llvm/ADT/StringRef.h>

#include <fstream>
#include <sstream>
#include <string>

namespace widefuse::testing {

/// The bytes of a file; empty when it cannot be read.
inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Replaces a file's contents with `bytes`.
inline void writeFile(const std::string& path, llvm::StringRef bytes) {
  std::ofstream(path, std::ios::binary) << bytes.str();
}

} // namespace widefuse::testing
