#pragma once
// Shared by the tests: run code that must fail with a widefuse::Error and get its message.

#include "ir/error.h"

#include <gtest/gtest.h>

#include <string>

namespace widefuse::testing {

/// Runs `body` and returns the message of the widefuse::Error it must throw (records a test
/// failure and returns "" when it throws nothing).
template <typename Body> std::string errorOf(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a widefuse::Error";
  return {};
}

} // namespace widefuse::testing

/// Expects `needle` in the string `haystack` (an error message), printing both when not.
#define EXPECT_CONTAINS(haystack, needle)                                                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)                                 \
      << "'" << (needle) << "' not in: " << (haystack)
