#include "runtime/cubin_cache.h"

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

std::optional<std::string> CubinCache::defaultDirectory() {
  if (std::optional<std::string> directory = environment("WIDEFUSE_CACHE_DIR"))
    return directory;
  if (std::optional<std::string> xdg = environment("XDG_CACHE_HOME"))
    return joinCachePath(*xdg, "widefuse");
  if (std::optional<std::string> home = environment("HOME"))
    return joinCachePath(joinCachePath(*home, ".cache"), "widefuse");
  return std::nullopt;
}

CubinCache::CubinCache(KernelCacheOptions options) {
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

CubinCache& CubinCache::global() {
  // Never destroyed: kernels handed out stay valid for threads still running at exit.
  static CubinCache* cache = new CubinCache();
  return *cache;
}

bool CubinCache::diskEnabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return diskEnabled_;
}

std::string CubinCache::recordPath(llvm::StringRef source, llvm::StringRef kernelName,
                                   const CompileOptions& options) const {
  std::string key =
      kernelCacheKey(source, kernelName, options, NvrtcLibrary::instance().versionString());
  return joinCachePath(directory_, cacheRecordFileName(key));
}

size_t CubinCache::memoryRecords() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.size();
}

void CubinCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.clear();
}

CacheResult CubinCache::compile(llvm::StringRef source, llvm::StringRef kernelName,
                                const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::string key =
      kernelCacheKey(source, kernelName, options, NvrtcLibrary::instance().versionString());
  auto finish = [&](std::shared_ptr<const CudaBinary> kernel, CacheOutcome outcome) {
    auto stop = std::chrono::steady_clock::now();
    return CacheResult{std::move(kernel), outcome,
                       std::chrono::duration<double, std::milli>(stop - start).count()};
  };
  // The first kernel to reach the map wins, so every caller of one key shares one object.
  auto publish = [&](std::shared_ptr<const CudaBinary> kernel) {
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
    if (std::shared_ptr<const CudaBinary> loaded = loadFromDisk(path, key))
      return finish(publish(std::move(loaded)), CacheOutcome::DiskHit);
  }

  auto compiled = std::make_shared<const CudaBinary>(compileCuda(source, kernelName, options));
  if (disk)
    storeToDisk(path, key, *compiled);
  return finish(publish(std::move(compiled)), CacheOutcome::Miss);
}

std::shared_ptr<const CudaBinary> CubinCache::loadFromDisk(const std::string& path,
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
  std::optional<CudaBinary> kernel =
      decodeCacheRecord((*buffer)->getBuffer(), keyMaterial, problem);
  if (!kernel) {
    warnAboutCache(
        fmt::format("kernel cache record {} is corrupt; recompiling ({})", path, problem));
    return nullptr;
  }
  return std::make_shared<const CudaBinary>(std::move(*kernel));
}

void CubinCache::storeToDisk(const std::string& path, llvm::StringRef keyMaterial,
                             const CudaBinary& kernel) {
  std::string reason = writeCacheFileAtomically(path, encodeCacheRecord(keyMaterial, kernel));
  if (!reason.empty())
    disableDisk(fmt::format("writing {} failed: {}", path, reason));
}

void CubinCache::disableDisk(llvm::StringRef reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!diskEnabled_)
    return; // Another thread has already warned.
  diskEnabled_ = false;
  warnAboutCacheOnce(directory_, unwritableCacheDirectoryWarning(directory_, reason));
}

} // namespace widefuse
