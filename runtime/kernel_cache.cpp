#include "runtime/kernel_cache.h"

#include "runtime/kernel_cache_record.h"
#include "runtime/nvrtc_library.h"

#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace widefuse {
namespace {

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

std::string joinPath(llvm::StringRef directory, llvm::StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

// Writes `bytes` to a fresh file in `directory` and renames it over `path`, so a reader (in
// this or another process) sees either the old record or the whole new one, never a part.
// Returns an empty string on success, else the reason.
std::string writeAtomically(const std::string& path, llvm::StringRef bytes) {
  int fd = -1;
  llvm::SmallString<256> temporary;
  std::string model = path + ".tmp-%%%%%%%%";
  if (std::error_code code = llvm::sys::fs::createUniqueFile(model, fd, temporary))
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

// Creates `directory` and proves it writable with a probe file; the reason when it is not.
std::string prepareDirectory(const std::string& directory) {
  if (std::error_code code = llvm::sys::fs::create_directories(directory))
    return code.message();
  int fd = -1;
  llvm::SmallString<256> probe;
  if (std::error_code code =
          llvm::sys::fs::createUniqueFile(joinPath(directory, ".probe-%%%%%%%%"), fd, probe))
    return code.message();
  llvm::sys::fs::closeFile(fd);
  llvm::sys::fs::remove(probe);
  return {};
}

void warn(const std::string& message) {
  fmt::print(stderr, "widefuse: warning: {}\n", message);
}

} // namespace

llvm::StringRef cacheOutcomeName(CacheOutcome outcome) {
  switch (outcome) {
  case CacheOutcome::Miss:
    return "miss";
  case CacheOutcome::MemoryHit:
    return "memory hit";
  case CacheOutcome::DiskHit:
    return "disk hit";
  }
  return "unknown";
}

std::optional<std::string> KernelCache::defaultDirectory() {
  if (std::optional<std::string> directory = environment("WIDEFUSE_CACHE_DIR"))
    return directory;
  if (std::optional<std::string> xdg = environment("XDG_CACHE_HOME"))
    return joinPath(*xdg, "widefuse");
  if (std::optional<std::string> home = environment("HOME"))
    return joinPath(joinPath(*home, ".cache"), "widefuse");
  return std::nullopt;
}

KernelCache::KernelCache(KernelCacheOptions options) {
  if (!options.useDisk)
    return;
  std::optional<std::string> directory = options.directory ? options.directory : defaultDirectory();
  if (!directory || directory->empty()) {
    warn("no kernel cache directory (set WIDEFUSE_CACHE_DIR, XDG_CACHE_HOME or HOME); caching "
         "in memory only");
    return;
  }
  directory_ = *directory;
  if (std::string reason = prepareDirectory(directory_); !reason.empty()) {
    warn(fmt::format("kernel cache directory '{}' is not writable ({}); caching in memory only",
                     directory_, reason));
    return;
  }
  diskEnabled_ = true;
}

KernelCache& KernelCache::global() {
  // Never destroyed: kernels handed out stay valid for threads still running at exit.
  static KernelCache* cache = new KernelCache();
  return *cache;
}

bool KernelCache::diskEnabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return diskEnabled_;
}

std::string KernelCache::recordPath(llvm::StringRef source, llvm::StringRef kernelName,
                                    const CompileOptions& options) const {
  std::string key =
      kernelCacheKey(source, kernelName, options, NvrtcLibrary::instance().versionString());
  return joinPath(directory_, cacheRecordFileName(key));
}

size_t KernelCache::memoryRecords() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.size();
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.clear();
}

CacheResult KernelCache::compile(llvm::StringRef source, llvm::StringRef kernelName,
                                 const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::string key =
      kernelCacheKey(source, kernelName, options, NvrtcLibrary::instance().versionString());
  auto finish = [&](std::shared_ptr<const CompiledKernel> kernel, CacheOutcome outcome) {
    auto stop = std::chrono::steady_clock::now();
    return CacheResult{std::move(kernel), outcome,
                       std::chrono::duration<double, std::milli>(stop - start).count()};
  };
  // The first kernel to reach the map wins, so every caller of one key shares one object.
  auto publish = [&](std::shared_ptr<const CompiledKernel> kernel) {
    std::lock_guard<std::mutex> lock(mutex_);
    return kernels_.try_emplace(key, std::move(kernel)).first->second;
  };

  bool disk = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = kernels_.find(key); found != kernels_.end())
      return finish(found->second, CacheOutcome::MemoryHit);
    disk = diskEnabled_;
  }

  std::string path = disk ? joinPath(directory_, cacheRecordFileName(key)) : std::string();
  if (disk) {
    if (std::shared_ptr<const CompiledKernel> loaded = loadFromDisk(path, key))
      return finish(publish(std::move(loaded)), CacheOutcome::DiskHit);
  }

  auto compiled = std::make_shared<const CompiledKernel>(compileCuda(source, kernelName, options));
  if (disk)
    storeToDisk(path, key, *compiled);
  return finish(publish(std::move(compiled)), CacheOutcome::Miss);
}

std::shared_ptr<const CompiledKernel> KernelCache::loadFromDisk(const std::string& path,
                                                                llvm::StringRef keyMaterial) const {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    if (buffer.getError() != std::errc::no_such_file_or_directory)
      warn(fmt::format("kernel cache record {} cannot be read ({}); recompiling", path,
                       buffer.getError().message()));
    return nullptr;
  }
  std::string problem;
  std::optional<CompiledKernel> kernel =
      decodeCacheRecord((*buffer)->getBuffer(), keyMaterial, problem);
  if (!kernel) {
    warn(fmt::format("kernel cache record {} is corrupt; recompiling ({})", path, problem));
    return nullptr;
  }
  return std::make_shared<const CompiledKernel>(std::move(*kernel));
}

void KernelCache::storeToDisk(const std::string& path, llvm::StringRef keyMaterial,
                              const CompiledKernel& kernel) {
  std::string reason = writeAtomically(path, encodeCacheRecord(keyMaterial, kernel));
  if (!reason.empty())
    disableDisk(fmt::format("writing {} failed: {}", path, reason));
}

void KernelCache::disableDisk(llvm::StringRef reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!diskEnabled_)
    return; // Another thread has already warned.
  diskEnabled_ = false;
  warn(fmt::format("kernel cache directory '{}' is not writable ({}); caching in memory only",
                   directory_, reason));
}

} // namespace widefuse
