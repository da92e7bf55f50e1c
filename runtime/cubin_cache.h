#pragma once
/// A compile cache in memory and on disk, keyed by source, kernel name, options and NVRTC
/// version: a process compiles each kernel once, and a later process loads the cubin from
/// disk instead of paying NVRTC again.

#include "runtime/cuda_compiler.h"

#include <llvm/ADT/StringRef.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace widefuse {

/// Where and whether a CubinCache stores records on disk.
struct KernelCacheOptions {
  /// The directory of the on-disk store; nullopt means defaultDirectory().
  std::optional<std::string> directory;
  /// Off keeps the cache in memory only and never touches the file system.
  bool useDisk = true;
};

/// Where a CacheResult's kernel came from.
enum class CacheOutcome { Miss, MemoryHit, DiskHit };

/// One CubinCache::compile answer.
struct CacheResult {
  /// The compiled kernel, shared with the cache (immutable, so safe to share across threads).
  std::shared_ptr<const CudaBinary> kernel;
  /// Where it came from.
  CacheOutcome outcome = CacheOutcome::Miss;
  /// Wall time of the whole compile() call (lookup, load or compile, store).
  double milliseconds = 0;
};

/// The name of a CacheOutcome: "miss", "memory hit", "disk hit".
llvm::StringRef cacheOutcomeName(CacheOutcome outcome);

/// A thread-safe kernel cache. Concurrent compile() calls proceed in parallel (the lock is
/// not held while NVRTC runs or files are read); two threads missing on one key may both
/// compile, and then both get the kernel that reached the memory map first. Disk problems
/// are never errors: a corrupt record (or one of another key: another NVRTC, options or
/// source) is recompiled and overwritten, with a warning on stderr; a directory that cannot be
/// created or written, at construction or at any later write (a full disk), leaves the cache
/// in memory only, with one warning per directory per process (runtime/cache_directory.h).
class CubinCache {
public:
  /// Opens the cache. With disk enabled, creates the directory and checks that it is
  /// writable; if not, warns once and caches in memory only.
  explicit CubinCache(KernelCacheOptions options = {});
  CubinCache(const CubinCache&) = delete;
  CubinCache& operator=(const CubinCache&) = delete;

  /// The kernel for this source, name and options: from memory, else from disk, else from
  /// compileCuda() (then stored in both). Throws what compileCuda() throws.
  CacheResult compile(llvm::StringRef source, llvm::StringRef kernelName,
                      const CompileOptions& options);

  /// The on-disk store's directory ("" when there is none to use); records are written there
  /// only when diskEnabled().
  std::string directory() const { return directory_; }
  /// Whether records are read from and written to directory().
  bool diskEnabled() const;
  /// The path of the record file a compilation would use (for tests and diagnostics).
  std::string recordPath(llvm::StringRef source, llvm::StringRef kernelName,
                         const CompileOptions& options) const;
  /// The number of kernels held in memory.
  size_t memoryRecords() const;
  /// Forgets the in-memory kernels (the disk store is kept), so the next compile() of each
  /// reads the disk.
  void clearMemory();

  /// The default directory of the on-disk store: $WIDEFUSE_CACHE_DIR, else
  /// $XDG_CACHE_HOME/widefuse, else $HOME/.cache/widefuse; nullopt when none is set.
  static std::optional<std::string> defaultDirectory();

  /// The process-wide cache with default options, made on first use.
  static CubinCache& global();

private:
  std::shared_ptr<const CudaBinary> loadFromDisk(const std::string& path,
                                                 llvm::StringRef keyMaterial) const;
  void storeToDisk(const std::string& path, llvm::StringRef keyMaterial, const CudaBinary& kernel);
  void disableDisk(llvm::StringRef reason);

  std::string directory_;
  mutable std::mutex mutex_;
  bool diskEnabled_ = false; // Guarded by mutex_: a failed write turns it off.
  std::unordered_map<std::string, std::shared_ptr<const CudaBinary>> kernels_;
};

} // namespace widefuse
