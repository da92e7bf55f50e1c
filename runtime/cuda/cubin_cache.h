#pragma once
/// A compile cache in memory and on disk, keyed by source, kernel name, options and NVRTC
/// version: a process compiles each kernel once, and a later process loads the cubin from
/// disk instead of paying NVRTC again.

#include "runtime/cuda/cuda_compiler.h"
#include "runtime/kernel_store.h"

#include <llvm/ADT/StringRef.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace widefuse {

/// One CubinCache::compile answer.
struct CacheResult {
  /// The compiled kernel, shared with the cache (immutable, so safe to share across threads).
  std::shared_ptr<const KernelImage> kernel;
  /// Where it came from.
  CacheOutcome outcome = CacheOutcome::Miss;
  /// Wall time of the whole compile() call (lookup, load or compile, store).
  double milliseconds = 0;
};

/// The bytes that identify one compilation: source, kernel name, every compile option and
/// the NVRTC version (a new NVRTC may generate different code from the same text).
std::string kernelCacheKey(llvm::StringRef source, llvm::StringRef kernelName,
                           const CompileOptions& options, llvm::StringRef nvrtcVersion);

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
  std::string directory() const { return store_.directory(); }
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

  /// The process-wide cache with default options, made on first use.
  static CubinCache& global();

private:
  /// Records in the base directory itself, `<hash>.wfkernel`.
  KernelStore store_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const KernelImage>> kernels_;
};

} // namespace widefuse
