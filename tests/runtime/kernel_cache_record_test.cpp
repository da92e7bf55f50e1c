#include "runtime/cuda/cubin_cache.h"
#include "runtime/kernel_cache_record.h"

#include <gtest/gtest.h>

using namespace widefuse;

namespace {

KernelImage sampleKernel() {
  // Designated initialisers: assigning a literal to a std::string member trips GCC 12's
  // false -Wrestrict positive.
  return KernelImage{.name = "k",
                     .target = "sm_90",
                     .image = {'\x7f', 'E', 'L', 'F', '\0', '\x01', '\xff'},
                     .ptx = ".visible .entry k()\n{\n\tret;\n}\n",
                     .log = "ptxas info    : Used 4 registers",
                     .stats = {4, 8, 12, 16},
                     .compileMilliseconds = 12.5};
}

std::string sampleKey() {
  CompileOptions options;
  return kernelCacheKey("extern \"C\" __global__ void k() {}", "k", options, "13.0");
}

TEST(KernelCacheRecord, RoundTripsEveryField) {
  KernelImage kernel = sampleKernel();
  std::string key = sampleKey();
  std::string problem;
  std::optional<KernelImage> decoded =
      decodeCacheRecord(encodeCacheRecord(key, kernel), key, problem);
  ASSERT_TRUE(decoded) << problem;
  EXPECT_EQ(decoded->name, kernel.name);
  EXPECT_EQ(decoded->target, kernel.target);
  EXPECT_EQ(decoded->image, kernel.image);
  EXPECT_EQ(decoded->ptx, kernel.ptx);
  EXPECT_EQ(decoded->log, kernel.log);
  EXPECT_EQ(decoded->stats.registers, 4);
  EXPECT_EQ(decoded->stats.spillStoreBytes, 8);
  EXPECT_EQ(decoded->stats.spillLoadBytes, 12);
  EXPECT_EQ(decoded->stats.stackBytes, 16);
  EXPECT_EQ(decoded->compileMilliseconds, 12.5);
}

TEST(KernelCacheRecord, EveryTruncationIsRejected) {
  std::string key = sampleKey();
  std::string record = encodeCacheRecord(key, sampleKernel());
  for (size_t size = 0; size < record.size(); ++size) {
    std::string problem;
    EXPECT_FALSE(decodeCacheRecord(llvm::StringRef(record).take_front(size), key, problem))
        << "accepted a prefix of " << size << " bytes";
    EXPECT_FALSE(problem.empty());
  }
  std::string problem;
  EXPECT_FALSE(decodeCacheRecord(record + "x", key, problem));
}

TEST(KernelCacheRecord, EveryFlippedByteIsRejected) {
  std::string key = sampleKey();
  std::string record = encodeCacheRecord(key, sampleKernel());
  for (size_t at = 0; at < record.size(); ++at) {
    std::string damaged = record;
    damaged[at] ^= 0x20;
    std::string problem;
    EXPECT_FALSE(decodeCacheRecord(damaged, key, problem)) << "accepted a flip at byte " << at;
  }
}

TEST(KernelCacheRecord, EntryOfAnotherKeyIsRejected) {
  std::string key = sampleKey();
  std::string record = encodeCacheRecord(key, sampleKernel());
  CompileOptions noFmad;
  noFmad.fmad = false;
  std::string other = kernelCacheKey("extern \"C\" __global__ void k() {}", "k", noFmad, "13.0");
  std::string problem;
  EXPECT_FALSE(decodeCacheRecord(record, other, problem));
  EXPECT_EQ(problem, "it belongs to another key");
}

TEST(KernelCacheRecord, KeyCoversEveryInput) {
  CompileOptions base;
  CompileOptions sm80;
  sm80.arch = "sm_80";
  CompileOptions noFmad;
  noFmad.fmad = false;
  std::vector<std::string> keys = {
      kernelCacheKey("a", "k", base, "13.0"),
      kernelCacheKey("b", "k", base, "13.0"),
      kernelCacheKey("a", "j", base, "13.0"),
      kernelCacheKey("a", "k", sm80, "13.0"),
      kernelCacheKey("a", "k", noFmad, "13.0"),
      kernelCacheKey("a", "k", base, "12.9"),
      // Field boundaries matter: name "ab" + source "c" differs from name "a" + source "bc".
      kernelCacheKey("c", "ab", base, "13.0"),
      kernelCacheKey("bc", "a", base, "13.0"),
  };
  for (size_t i = 0; i < keys.size(); ++i)
    for (size_t j = i + 1; j < keys.size(); ++j) {
      EXPECT_NE(keys[i], keys[j]) << i << " vs " << j;
      EXPECT_NE(hashKey(keys[i]).first, hashKey(keys[j]).first) << i << " vs " << j;
      EXPECT_NE(hashKey(keys[i]).second, hashKey(keys[j]).second) << i << " vs " << j;
      EXPECT_NE(cacheRecordStem(keys[i]), cacheRecordStem(keys[j]));
    }
  EXPECT_EQ(hashKey(keys[0]), hashKey(kernelCacheKey("a", "k", base, "13.0")));
  // Two independent halves: not the same function of the key.
  EXPECT_NE(hashKey(keys[0]).first, hashKey(keys[0]).second);
}

} // namespace
