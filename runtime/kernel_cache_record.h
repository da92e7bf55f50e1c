#pragma once
/// The kernel cache's on-disk record: the key it belongs to and one KernelImage, in a
/// self-checking binary format, so a truncated, altered or foreign file is recognised and
/// recompiled instead of being handed to the driver.

#include "runtime/kernel_image.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>

namespace widefuse {

/// Key material made of `fields` (a compiler's version, its options, the kernel's name and
/// source): every field carries its length, so no two lists of fields share one encoding.
std::string keyMaterial(llvm::ArrayRef<llvm::StringRef> fields);

/// A 128-bit hash of key material: two independent 64-bit FNV-style hashes, so a stored
/// record matches its key with negligible chance of a collision.
struct KeyHash {
  uint64_t first = 0;
  uint64_t second = 0;
  bool operator==(const KeyHash& other) const = default;
};

/// The 128-bit hash of `keyMaterial`.
KeyHash hashKey(llvm::StringRef keyMaterial);

/// The name of the record for `keyMaterial`, without an extension (each store has its own):
/// 16 hex digits of KeyHash::first.
std::string cacheRecordStem(llvm::StringRef keyMaterial);

/// The record's bytes: magic, format version, key length and hash, the kernel's fields with
/// their lengths, and a trailing checksum over all of it.
std::string encodeCacheRecord(llvm::StringRef keyMaterial, const KernelImage& kernel);

/// The kernel stored in `bytes`, or nullopt with `problem` set (e.g. "checksum mismatch")
/// when the bytes are not a well-formed record for exactly `keyMaterial`.
std::optional<KernelImage> decodeCacheRecord(llvm::StringRef bytes, llvm::StringRef keyMaterial,
                                             std::string& problem);

} // namespace widefuse
