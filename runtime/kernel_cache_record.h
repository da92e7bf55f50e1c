#pragma once
/// The kernel cache's on-disk record: the key it belongs to and one CudaBinary, in a
/// self-checking binary format, so a truncated, altered or foreign file is recognised and
/// recompiled instead of being handed to the driver.

#include "runtime/cuda_compiler.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>

namespace widefuse {

/// The bytes that identify one compilation: source, kernel name, every compile option and
/// the NVRTC version (a new NVRTC may generate different code from the same text).
std::string kernelCacheKey(llvm::StringRef source, llvm::StringRef kernelName,
                           const CompileOptions& options, llvm::StringRef nvrtcVersion);

/// A 128-bit hash of key material: two independent 64-bit FNV-style hashes, so a stored
/// record matches its key with negligible chance of a collision.
struct KeyHash {
  uint64_t first = 0;
  uint64_t second = 0;
  bool operator==(const KeyHash& other) const = default;
};

/// The 128-bit hash of `keyMaterial`.
KeyHash hashKey(llvm::StringRef keyMaterial);

/// The file name of the record for `keyMaterial`: 16 hex digits of KeyHash::first and an
/// extension.
std::string cacheRecordFileName(llvm::StringRef keyMaterial);

/// The record's bytes: magic, format version, key length and hash, the kernel's fields with
/// their lengths, and a trailing checksum over all of it.
std::string encodeCacheRecord(llvm::StringRef keyMaterial, const CudaBinary& kernel);

/// The kernel stored in `bytes`, or nullopt with `problem` set (e.g. "checksum mismatch")
/// when the bytes are not a well-formed record for exactly `keyMaterial`.
std::optional<CudaBinary> decodeCacheRecord(llvm::StringRef bytes, llvm::StringRef keyMaterial,
                                            std::string& problem);

} // namespace widefuse
