#pragma once
/// The reduction tree and max/min written as docs/reductions.md defines them, independently
/// of ir/reduction_tree.h: what the IR's reduction tests compare the evaluator with.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace widefuse::testing {

/// T(i, m) of reductions.md §3, written as its definition: recursive, missing past the end.
template <typename T, typename Combine>
inline std::optional<T> tree(const std::vector<T>& leaves, size_t begin, size_t size,
                             Combine combine) {
  if (begin >= leaves.size())
    return std::nullopt;
  if (size == 1)
    return leaves[begin];
  std::optional<T> left = tree(leaves, begin, size / 2, combine);
  std::optional<T> right = tree(leaves, begin + size / 2, size / 2, combine);
  return right ? combine(*left, *right) : left;
}

template <typename T, typename Combine>
inline std::optional<T> treeOf(const std::vector<T>& leaves, Combine combine) {
  size_t size = 1;
  while (size < leaves.size())
    size *= 2;
  return tree(leaves, 0, size, combine);
}

/// max and min as reductions.md §1 defines them, with the standard library's predicates.
inline double referenceMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return std::max(a, b);
}
inline double referenceMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return std::min(a, b);
}

/// Bits of a result element compared as doubles, NaN equal to NaN, zeros by sign.
inline void expectSameValue(double actual, double expected, const std::string& what) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << ": " << actual;
    return;
  }
  EXPECT_EQ(actual, expected) << what;
  EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << what << " (sign of zero)";
}

} // namespace widefuse::testing
