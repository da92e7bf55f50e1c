#include "runtime/kernel_cache_record.h"

#include <fmt/format.h>

#include <bit>

namespace widefuse {
namespace {

// Bump kFormatVersion whenever the layout below changes: old records then read as corrupt
// and are recompiled and overwritten.
constexpr llvm::StringLiteral kMagic("WFKCACHE");
constexpr uint32_t kFormatVersion = 1;

constexpr uint64_t kFnvPrime = 0x100000001b3ull;
constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;

// FNV-1a: xor, then multiply.
uint64_t fnv1a(llvm::StringRef bytes, uint64_t hash = kFnvOffsetBasis) {
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= kFnvPrime;
  }
  return hash;
}

// The second half of the key hash: FNV-1 (multiply, then xor) from another basis, finished
// with a SplitMix64 mix, so its collisions are unrelated to those of fnv1a.
uint64_t fnv1Mixed(llvm::StringRef bytes) {
  uint64_t hash = 0x84222325cbf29ce4ull;
  for (unsigned char byte : bytes) {
    hash *= kFnvPrime;
    hash ^= byte;
  }
  hash ^= bytes.size();
  hash = (hash ^ (hash >> 30)) * 0xbf58476d1ce4e5b9ull;
  hash = (hash ^ (hash >> 27)) * 0x94d049bb133111ebull;
  return hash ^ (hash >> 31);
}

// Little-endian fields, so an record means the same on every host that reads it.
class Writer {
public:
  void u32(uint32_t value) { integer(value, 4); }
  void u64(uint64_t value) { integer(value, 8); }
  void i32(int value) { u32(static_cast<uint32_t>(value)); }
  void f64(double value) { u64(std::bit_cast<uint64_t>(value)); }
  void raw(llvm::StringRef bytes) { out_.append(bytes.data(), bytes.size()); }
  void bytes(llvm::StringRef bytes) {
    u64(bytes.size());
    raw(bytes);
  }
  std::string& text() { return out_; }

private:
  void integer(uint64_t value, int width) {
    for (int i = 0; i < width; ++i)
      out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  std::string out_;
};

// Reads fields back; any read past the end leaves the reader failed (and later reads empty),
// so the caller checks once at the end.
class Reader {
public:
  explicit Reader(llvm::StringRef data) : data_(data) {}
  uint32_t u32() { return static_cast<uint32_t>(integer(4)); }
  uint64_t u64() { return integer(8); }
  int i32() { return static_cast<int>(u32()); }
  double f64() { return std::bit_cast<double>(u64()); }
  llvm::StringRef raw(uint64_t size) {
    if (failed_ || size > data_.size() - position_) {
      failed_ = true;
      return {};
    }
    llvm::StringRef bytes = data_.substr(position_, size);
    position_ += size;
    return bytes;
  }
  llvm::StringRef bytes() { return raw(u64()); }
  bool failed() const { return failed_; }
  bool atEnd() const { return position_ == data_.size(); }

private:
  uint64_t integer(int width) {
    llvm::StringRef bytes = raw(width);
    uint64_t value = 0;
    for (size_t i = 0; i < bytes.size(); ++i)
      value |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
    return value;
  }
  llvm::StringRef data_;
  size_t position_ = 0;
  bool failed_ = false;
};

} // namespace

std::string keyMaterial(llvm::ArrayRef<llvm::StringRef> fields) {
  Writer key;
  for (llvm::StringRef field : fields)
    key.bytes(field);
  return std::move(key.text());
}

KeyHash hashKey(llvm::StringRef keyMaterial) {
  return {fnv1a(keyMaterial), fnv1Mixed(keyMaterial)};
}

std::string cacheRecordStem(llvm::StringRef keyMaterial) {
  return fmt::format("{:016x}", hashKey(keyMaterial).first);
}

std::string encodeCacheRecord(llvm::StringRef keyMaterial, const KernelImage& kernel) {
  KeyHash key = hashKey(keyMaterial);
  Writer record;
  record.raw(kMagic);
  record.u32(kFormatVersion);
  record.u64(keyMaterial.size());
  record.u64(key.first);
  record.u64(key.second);
  record.bytes(kernel.name);
  record.bytes(kernel.target);
  record.i32(kernel.stats.registers);
  record.i32(kernel.stats.spillStoreBytes);
  record.i32(kernel.stats.spillLoadBytes);
  record.i32(kernel.stats.stackBytes);
  record.bytes(kernel.log);
  record.bytes(kernel.ptx);
  record.bytes(llvm::StringRef(kernel.image.data(), kernel.image.size()));
  record.f64(kernel.compileMilliseconds);
  uint64_t checksum = fnv1a(record.text());
  record.u64(checksum);
  return std::move(record.text());
}

std::optional<KernelImage> decodeCacheRecord(llvm::StringRef bytes, llvm::StringRef keyMaterial,
                                             std::string& problem) {
  // The checksum first: after it passes, every later mismatch is a real difference of key
  // or format, not damage.
  if (bytes.size() < kMagic.size() + 8) {
    problem = fmt::format("{} bytes is too short", bytes.size());
    return std::nullopt;
  }
  llvm::StringRef body = bytes.drop_back(8);
  Reader tail(bytes.take_back(8));
  if (tail.u64() != fnv1a(body)) {
    problem = "checksum mismatch";
    return std::nullopt;
  }
  Reader in(body);
  if (in.raw(kMagic.size()) != kMagic) {
    problem = "bad magic";
    return std::nullopt;
  }
  if (uint32_t version = in.u32(); version != kFormatVersion) {
    problem = fmt::format("format version {} (expected {})", version, kFormatVersion);
    return std::nullopt;
  }
  KeyHash expected = hashKey(keyMaterial);
  uint64_t keySize = in.u64();
  KeyHash stored;
  stored.first = in.u64();
  stored.second = in.u64();
  if (in.failed() || keySize != keyMaterial.size() || !(stored == expected)) {
    problem = "it belongs to another key";
    return std::nullopt;
  }
  KernelImage kernel;
  kernel.name = in.bytes().str();
  kernel.target = in.bytes().str();
  kernel.stats.registers = in.i32();
  kernel.stats.spillStoreBytes = in.i32();
  kernel.stats.spillLoadBytes = in.i32();
  kernel.stats.stackBytes = in.i32();
  kernel.log = in.bytes().str();
  kernel.ptx = in.bytes().str();
  llvm::StringRef cubin = in.bytes();
  kernel.image.assign(cubin.begin(), cubin.end());
  kernel.compileMilliseconds = in.f64();
  if (in.failed() || !in.atEnd()) {
    problem = "fields do not match their lengths";
    return std::nullopt;
  }
  if (kernel.image.empty()) {
    problem = "empty image";
    return std::nullopt;
  }
  return kernel;
}

} // namespace widefuse
