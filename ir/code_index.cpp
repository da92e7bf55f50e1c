#include "ir/code_index.h"

#include "ir/error.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <limits>

namespace widefuse {
namespace {

constexpr int32_t kMaxBuckets = 1 << 14;
constexpr unsigned kOffsetBits = 24;

int32_t squeeze(int32_t key, int32_t zero) {
  return key - std::clamp(key, -zero, zero);
}

int32_t unsqueeze(int32_t key, int32_t zero) {
  return key > 0 ? key + zero : key < 0 ? key - zero : 0;
}

/// The ordered keys where the code goes up, ascending: thresholds[j - 1] is the first key whose
/// code is at least j. nearestCode is monotone in x (between two entries x - table[c] only
/// grows), so each is found by bisection.
std::vector<int32_t> thresholds(Codebook codebook) {
  const int32_t lowest = orderedKey(-std::numeric_limits<float>::infinity());
  const int32_t highest = orderedKey(std::numeric_limits<float>::infinity());
  size_t size = codebookValues(codebook).size();
  std::vector<int32_t> found;
  for (size_t code = 1; code < size; ++code) {
    int32_t low = lowest, high = highest;
    while (low < high) {
      int32_t middle = int32_t(low + (int64_t(high) - low) / 2);
      if (nearestCode(codebook, fromOrderedKey(middle)) >= code)
        high = middle;
      else
        low = middle + 1;
    }
    WF_ASSERT(found.empty() || low > found.back());
    found.push_back(low);
  }
  return found;
}

CodeIndex build(Codebook codebook) {
  const std::vector<int32_t> thresholdKeys = thresholds(codebook);
  int32_t nearest = std::numeric_limits<int32_t>::max();
  for (int32_t key : thresholdKeys)
    nearest = std::min(nearest, key < 0 ? -(key + 1) : key);
  CodeIndex index;
  std::vector<int32_t> keys;
  // The widest buckets that keep thresholds apart. The squeeze leaves a bucket's width on each
  // side of zero, so that the thresholds nearest zero stay in buckets of their own.
  for (index.shift = kOffsetBits - 1;; --index.shift) {
    WF_ASSERT(index.shift > 0);
    index.zero = std::max(nearest - (1 << index.shift), 0);
    keys.clear();
    for (int32_t key : thresholdKeys)
      keys.push_back(squeeze(key, index.zero));
    // One key below the first threshold: what is clamped up to `low` keeps code 0.
    index.low = keys.front() - 1;
    bool single = true;
    for (size_t j = 1; j < keys.size() && single; ++j)
      single = ((keys[j] - index.low) >> index.shift) != ((keys[j - 1] - index.low) >> index.shift);
    if (single)
      break;
  }
  // Kernels subtract `low` from any squeezed key in 32 bits.
  int64_t squeezedMax = int64_t(INT32_MAX) - index.zero,
          squeezedMin = int64_t(INT32_MIN) + index.zero;
  WF_ASSERT(squeezedMax - index.low <= INT32_MAX && squeezedMin - index.low >= INT32_MIN);
  int32_t count = ((keys.back() - index.low) >> index.shift) + 1;
  WF_ASSERT(count <= kMaxBuckets);
  index.high = int32_t(index.low + (int64_t(count) << index.shift) - 1);
  index.entries.assign(size_t(count), 1u << index.shift);
  for (int32_t bucket = 0; bucket < count; ++bucket) {
    int32_t start = int32_t(index.low + (int64_t(bucket) << index.shift));
    uint32_t code = nearestCode(codebook, fromOrderedKey(unsqueeze(start, index.zero)));
    index.entries[size_t(bucket)] = code << kOffsetBits | (1u << index.shift);
  }
  for (int32_t key : keys) {
    uint32_t offset = uint32_t((key - index.low) & ((1 << index.shift) - 1));
    uint32_t& entry = index.entries[size_t((key - index.low) >> index.shift)];
    if (offset != 0) // at the bucket's start, its code already counts the threshold
      entry = (entry & ~((1u << kOffsetBits) - 1)) | offset;
  }
  return index;
}

} // namespace

int32_t orderedKey(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits ^ ((bits >> 31) & 0x7fffffff);
}

float fromOrderedKey(int32_t key) {
  int32_t bits = key ^ ((key >> 31) & 0x7fffffff);
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

const CodeIndex& codeIndex(Codebook codebook) {
  static const std::array<CodeIndex, std::size(kAllCodebooks)> indexes = [] {
    std::array<CodeIndex, std::size(kAllCodebooks)> built;
    for (size_t i = 0; i < built.size(); ++i)
      built[i] = build(kAllCodebooks[i]);
    return built;
  }();
  WF_ASSERT(codebook != Codebook::None);
  return indexes[size_t(codebook) - 1];
}

uint8_t indexedCode(const CodeIndex& index, float x) {
  int32_t key = std::clamp(squeeze(orderedKey(x), index.zero), index.low, index.high);
  int32_t from = key - index.low;
  uint32_t entry = index.entries[size_t(from >> index.shift)];
  uint32_t offset = uint32_t(from & ((1 << index.shift) - 1));
  int32_t code =
      int32_t(entry >> kOffsetBits) + int32_t(offset >= (entry & ((1u << kOffsetBits) - 1)));
  return x == x ? uint8_t(code) : 0;
}

} // namespace widefuse
