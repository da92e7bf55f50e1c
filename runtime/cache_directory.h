#pragma once
/// The kernel caches' directories on disk, shared by the cubin cache (CubinCache) and the host
/// compiler's cache (HostKernelCache) so that both meet the same faults the same way: a
/// directory that cannot be created or written, a write that fails part way (a full disk), two
/// processes writing one record at once. None of them is an error: the caller warns once and
/// goes on without the disk.

#include <llvm/ADT/StringRef.h>

#include <string>
#include <system_error>

namespace widefuse {

/// `directory`/`name`.
std::string joinCachePath(llvm::StringRef directory, llvm::StringRef name);

/// Creates `directory` (and its parents) and proves it writable with a probe file that it then
/// removes. Returns "" when the directory can be used, else the reason it cannot.
std::string prepareCacheDirectory(const std::string& directory);

/// Writes `bytes` to a fresh file beside `path` and renames it over `path`, so that a reader in
/// this or another process sees the old file or the whole new one, never a part, and two
/// writers of one record leave one of their files. Returns "" on success, else the reason; a
/// failed write leaves nothing behind.
std::string writeCacheFileAtomically(const std::string& path, llvm::StringRef bytes);

/// True when a read failed because the file, or its directory, is not there: a record not yet
/// written, not a fault to report.
bool isAbsentFile(std::error_code error);

/// The warning of a cache that has no directory at all (no variable names one).
inline constexpr llvm::StringLiteral kNoCacheDirectoryWarning(
    "no kernel cache directory (set WIDEFUSE_CACHE_DIR, XDG_CACHE_HOME or HOME); caching in "
    "memory only");

/// The warning of a cache whose `directory` cannot be created or written (`reason`).
std::string unwritableCacheDirectoryWarning(llvm::StringRef directory, llvm::StringRef reason);

/// Prints "widefuse: warning: <message>" on standard error.
void warnAboutCache(llvm::StringRef message);

/// Prints "widefuse: warning: <message>" on standard error unless a warning of the same
/// `topic` (a cache directory) has been printed in this process: a directory that cannot be
/// used is reported once, however many caches use it and however often they fail.
void warnAboutCacheOnce(llvm::StringRef topic, llvm::StringRef message);

} // namespace widefuse
