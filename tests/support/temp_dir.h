#pragma once
/// A scratch directory for tests that write files.

#include <gtest/gtest.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <string>

namespace widefuse {

/// A fresh directory under the system's temporary directory, removed with its contents when
/// the object goes away.
class TempDir {
public:
  TempDir() {
    std::error_code code = llvm::sys::fs::createUniqueDirectory("widefuse-test", path_);
    EXPECT_FALSE(code) << code.message();
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { llvm::sys::fs::remove_directories(path_); }

  /// The directory's path.
  std::string path() const { return std::string(path_); }
  /// The path of `name` inside the directory.
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> path(path_);
    llvm::sys::path::append(path, name);
    return std::string(path);
  }

private:
  llvm::SmallString<128> path_;
};

} // namespace widefuse
