#include "runtime/kernel_cache.h"

#include "runtime/cache_directory.h"
#include "runtime/kernel_cache_record.h"
#include "runtime/nvrtc_library.h"

#include <fmt/format.h>
#include <llvm/Support/MemoryBuffer.h>

#include <chrono>
#include <cstdlib>

namespace widefuse {
namespace {

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
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
    return joinCachePath(*xdg, "widefuse");
  if (std::optional<std::string> home = environment("HOME"))
    return joinCachePath(joinCachePath(*home, ".cache"), "widefuse");
  return std::nullopt;
}

KernelCache::KernelCache(KernelCacheOptions options) {
  if (!options.useDisk)
    return;
  std::optional<std::string> directory = options.directory ? options.directory : defaultDirectory();
  if (!directory || directory->empty()) {
    warnAboutCacheOnce("", kNoCacheDirectoryWarning);
    return;
  }
  directory_ = *directory;
  if (std::string reason = prepareCacheDirectory(directory_); !reason.empty()) {
    warnAboutCacheOnce(directory_, unwritableCacheDirectoryWarning(directory_, reason));
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
  return joinCachePath(directory_, cacheRecordFileName(key));
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

  std::string path = disk ? joinCachePath(directory_, cacheRecordFileName(key)) : std::string();
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
    if (!isAbsentFile(buffer.getError()))
      warnAboutCache(fmt::format("kernel cache record {} cannot be read ({}); recompiling", path,
                                 buffer.getError().message()));
    return nullptr;
  }
  std::string problem;
  std::optional<CompiledKernel> kernel =
      decodeCacheRecord((*buffer)->getBuffer(), keyMaterial, problem);
  if (!kernel) {
    warnAboutCache(
        fmt::format("kernel cache record {} is corrupt; recompiling ({})", path, problem));
    return nullptr;
  }
  return std::make_shared<const CompiledKernel>(std::move(*kernel));
}

void KernelCache::storeToDisk(const std::string& path, llvm::StringRef keyMaterial,
                              const CompiledKernel& kernel) {
  std::string reason = writeCacheFileAtomically(path, encodeCacheRecord(keyMaterial, kernel));
  if (!reason.empty())
    disableDisk(fmt::format("writing {} failed: {}", path, reason));
}

void KernelCache::disableDisk(llvm::StringRef reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!diskEnabled_)
    return; // Another thread has already warned.
  diskEnabled_ = false;
  warnAboutCacheOnce(directory_, unwritableCacheDirectoryWarning(directory_, reason));
}

} // namespace widefuse
