#pragma once
/// KernelStore: the on-disk half of a kernel cache, one record file per key (the format of
/// runtime/kernel_cache_record.h) in one directory. The CUDA backend's cubin cache and the host
/// backend's shared-object cache each keep one, so both meet a damaged file, an unwritable
/// directory or a full disk the same way: never an error, a warning and the next best thing
/// (recompile, or go on in memory).

#include "runtime/kernel_image.h"

#include <llvm/ADT/StringRef.h>

#include <mutex>
#include <optional>
#include <string>

namespace widefuse {

/// Where and whether a kernel cache stores records on disk.
struct KernelCacheOptions {
  /// The base directory of the on-disk stores; nullopt means defaultCacheDirectory().
  std::optional<std::string> directory;
  /// Off keeps the cache in memory only and never touches the file system.
  bool useDisk = true;
};

/// Where a kernel cache's image came from.
enum class CacheOutcome { Miss, MemoryHit, DiskHit };

/// The name of a CacheOutcome: "miss", "memory hit", "disk hit".
llvm::StringRef cacheOutcomeName(CacheOutcome outcome);

/// The default base directory of the kernel caches: $WIDEFUSE_CACHE_DIR, else
/// $XDG_CACHE_HOME/widefuse, else $HOME/.cache/widefuse; nullopt when none is set.
std::optional<std::string> defaultCacheDirectory();

/// One directory of records. Thread-safe.
class KernelStore {
public:
  /// The words of the store's warnings: what a record is called and what happens instead of
  /// using a damaged one ("kernel cache record", "recompiling").
  struct Words {
    std::string record;
    std::string instead;
  };

  /// A store in `subdirectory` ("" for the base itself) of `options`' base directory, whose
  /// record files end in `extension`. With disk enabled, creates the directory and checks that
  /// it is writable; if not, warns once per base directory and stores nothing.
  KernelStore(const KernelCacheOptions& options, llvm::StringRef subdirectory,
              llvm::StringRef extension, Words words);

  /// Whether records are read and written (false without a usable directory, and after a
  /// write there failed).
  bool enabled() const;
  /// The store's directory ("" when there is none to use).
  const std::string& directory() const { return directory_; }
  /// The file of the record of `keyMaterial`.
  std::string path(llvm::StringRef keyMaterial) const;

  /// The image stored for exactly `keyMaterial`: nullopt when there is none, or (with a
  /// warning naming the file) when the file cannot be read or is not a well-formed record of
  /// that key.
  std::optional<KernelImage> load(llvm::StringRef keyMaterial) const;
  /// Writes the record of `keyMaterial` atomically; a failed write warns once and turns the
  /// store off.
  void store(llvm::StringRef keyMaterial, const KernelImage& image);
  /// Warns that the record of `keyMaterial`, though well formed, could not be used
  /// (`problem`), and that it is being redone.
  void warnUnusable(llvm::StringRef keyMaterial, llvm::StringRef problem) const;

private:
  std::string directory_;
  /// The base directory: its problems are reported once per process, whichever store meets
  /// them.
  std::string topic_;
  std::string extension_;
  Words words_;
  mutable std::mutex mutex_;
  bool enabled_ = false; // guarded by mutex_: a failed write turns it off
};

} // namespace widefuse
