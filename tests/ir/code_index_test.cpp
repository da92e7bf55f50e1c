// The code index (ir/code_index.h) against nearestCode, for every codebook: every key around
// each threshold and each bucket's edges, a stride through all f32 keys, NaN of both signs.
#include "ir/code_index.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

using namespace widefuse;

namespace {

void expectSameCode(Codebook codebook, const CodeIndex& index, int32_t key) {
  float x = fromOrderedKey(key);
  ASSERT_EQ(indexedCode(index, x), nearestCode(codebook, x))
      << codebookName(codebook).str() << " at key " << key << " (" << x << ")";
}

TEST(CodeIndexTest, OrderedKeysFollowTheValues) {
  EXPECT_LT(orderedKey(-1.0f), orderedKey(-0.5f));
  EXPECT_EQ(orderedKey(-0.0f) + 1, orderedKey(0.0f));
  EXPECT_LT(orderedKey(0.0f), orderedKey(1e-30f));
  EXPECT_LT(orderedKey(1.0f), orderedKey(std::numeric_limits<float>::infinity()));
  for (float x : {-3.5f, -0.0f, 0.0f, 1e-38f, 0.25f, 7.0f})
    EXPECT_EQ(fromOrderedKey(orderedKey(x)), x);
}

TEST(CodeIndexTest, GivesNearestCodesCodeForEveryKeyTried) {
  for (Codebook codebook : kAllCodebooks) {
    const CodeIndex& index = codeIndex(codebook);
    EXPECT_LE(index.entries.size(), 1u << 14) << codebookName(codebook).str();
    // Around each bucket's edges (where the squeezed keys meet the real ones) and its threshold.
    for (size_t bucket = 0; bucket < index.entries.size(); ++bucket) {
      int64_t start = index.low + (int64_t(bucket) << index.shift);
      int64_t threshold = start + (index.entries[bucket] & 0xffffff);
      for (int64_t edge : {start, threshold})
        for (int64_t delta = -3; delta <= 3; ++delta) {
          int64_t squeezed = edge + delta;
          int64_t key = squeezed > 0   ? squeezed + index.zero
                        : squeezed < 0 ? squeezed - index.zero
                                       : 0;
          if (key >= INT32_MIN && key <= INT32_MAX)
            expectSameCode(codebook, index, int32_t(key));
        }
    }
    // A stride through every key, both signs, infinities and NaNs included.
    for (int64_t key = INT32_MIN; key <= INT32_MAX; key += 1009)
      expectSameCode(codebook, index, int32_t(key));
    for (int32_t key :
         {INT32_MIN, INT32_MAX, -index.zero - 1, -index.zero, 0, index.zero, index.zero + 1})
      expectSameCode(codebook, index, key);
    EXPECT_EQ(indexedCode(index, std::nanf("")), 0);
    EXPECT_EQ(indexedCode(index, -std::nanf("")), 0);
  }
}

} // namespace
