#include "runtime/cache_directory.h"

#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringSet.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <mutex>

namespace widefuse {

std::string joinCachePath(llvm::StringRef directory, llvm::StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

std::string prepareCacheDirectory(const std::string& directory) {
  if (std::error_code code = llvm::sys::fs::create_directories(directory))
    return code.message();
  int fd = -1;
  llvm::SmallString<256> probe;
  if (std::error_code code =
          llvm::sys::fs::createUniqueFile(joinCachePath(directory, ".probe-%%%%%%%%"), fd, probe))
    return code.message();
  llvm::sys::fs::closeFile(fd);
  llvm::sys::fs::remove(probe);
  return {};
}

std::string writeCacheFileAtomically(const std::string& path, llvm::StringRef bytes) {
  int fd = -1;
  llvm::SmallString<256> temporary;
  if (std::error_code code = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temporary))
    return code.message();
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  out << bytes;
  out.close();
  if (out.has_error()) {
    std::string reason = out.error().message();
    out.clear_error(); // raw_fd_ostream aborts the process on an unchecked error.
    llvm::sys::fs::remove(temporary);
    return reason;
  }
  if (std::error_code code = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return code.message();
  }
  return {};
}

bool isAbsentFile(std::error_code error) {
  return error == std::errc::no_such_file_or_directory || error == std::errc::not_a_directory;
}

std::string unwritableCacheDirectoryWarning(llvm::StringRef directory, llvm::StringRef reason) {
  return fmt::format("kernel cache directory '{}' is not writable ({}); caching in memory only",
                     directory.str(), reason.str());
}

void warnAboutCache(llvm::StringRef message) {
  fmt::print(stderr, "widefuse: warning: {}\n", message.str());
}

void warnAboutCacheOnce(llvm::StringRef topic, llvm::StringRef message) {
  // Never destroyed: a cache may warn from a thread still running at exit.
  static std::mutex* mutex = new std::mutex;
  static llvm::StringSet<>* warned = new llvm::StringSet<>;
  std::lock_guard<std::mutex> lock(*mutex);
  if (warned->insert(topic).second)
    warnAboutCache(message);
}

} // namespace widefuse
