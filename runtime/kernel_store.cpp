#include "runtime/kernel_store.h"

#include "runtime/cache_directory.h"
#include "runtime/kernel_cache_record.h"

#include <fmt/format.h>
#include <llvm/Support/MemoryBuffer.h>

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

std::optional<std::string> defaultCacheDirectory() {
  if (std::optional<std::string> directory = environment("WIDEFUSE_CACHE_DIR"))
    return directory;
  if (std::optional<std::string> xdg = environment("XDG_CACHE_HOME"))
    return joinCachePath(*xdg, "widefuse");
  if (std::optional<std::string> home = environment("HOME"))
    return joinCachePath(joinCachePath(*home, ".cache"), "widefuse");
  return std::nullopt;
}

KernelStore::KernelStore(const KernelCacheOptions& options, llvm::StringRef subdirectory,
                         llvm::StringRef extension, Words words)
    : extension_(extension.str()), words_(std::move(words)) {
  if (!options.useDisk)
    return;
  std::optional<std::string> base = options.directory ? options.directory : defaultCacheDirectory();
  if (!base || base->empty()) {
    warnAboutCacheOnce("", kNoCacheDirectoryWarning);
    return;
  }
  topic_ = *base;
  directory_ = subdirectory.empty() ? *base : joinCachePath(*base, subdirectory);
  if (std::string reason = prepareCacheDirectory(directory_); !reason.empty()) {
    warnAboutCacheOnce(topic_, unwritableCacheDirectoryWarning(directory_, reason));
    return;
  }
  enabled_ = true;
}

bool KernelStore::enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return enabled_;
}

std::string KernelStore::path(llvm::StringRef keyMaterial) const {
  return joinCachePath(directory_, cacheRecordStem(keyMaterial) + extension_);
}

std::optional<KernelImage> KernelStore::load(llvm::StringRef keyMaterial) const {
  if (!enabled())
    return std::nullopt;
  std::string file = path(keyMaterial);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(file, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    if (!isAbsentFile(buffer.getError()))
      warnAboutCache(fmt::format("{} {} cannot be read ({}); {}", words_.record, file,
                                 buffer.getError().message(), words_.instead));
    return std::nullopt;
  }
  // The record's checksum and key hash catch a damaged file and one of another key (another
  // compiler, options or source) before anything of it is used.
  std::string problem;
  std::optional<KernelImage> image =
      decodeCacheRecord((*buffer)->getBuffer(), keyMaterial, problem);
  if (!image)
    warnAboutCache(
        fmt::format("{} {} is corrupt; {} ({})", words_.record, file, words_.instead, problem));
  return image;
}

void KernelStore::warnUnusable(llvm::StringRef keyMaterial, llvm::StringRef problem) const {
  warnAboutCache(fmt::format("{} {} cannot be used ({}); {}", words_.record, path(keyMaterial),
                             problem.str(), words_.instead));
}

void KernelStore::store(llvm::StringRef keyMaterial, const KernelImage& image) {
  if (!enabled())
    return;
  std::string file = path(keyMaterial);
  std::string reason = writeCacheFileAtomically(file, encodeCacheRecord(keyMaterial, image));
  if (reason.empty())
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_)
    return; // another thread has already warned
  enabled_ = false;
  warnAboutCacheOnce(topic_, unwritableCacheDirectoryWarning(
                                 directory_, fmt::format("writing {} failed: {}", file, reason)));
}

} // namespace widefuse
