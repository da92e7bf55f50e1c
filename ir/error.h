#pragma once
/// Errors of widefuse: one for users (bad input, environment) and one for broken invariants.

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace widefuse {

/// A problem the user can act on: a bad definition, a wrong argument, a missing driver.
/// The message names what is wrong.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A broken internal invariant: always a bug in widefuse, never the user's input.
class InternalError : public std::logic_error {
public:
  explicit InternalError(const std::string& message)
      : std::logic_error("widefuse internal error (this is a bug, please report it): " + message) {}
};

/// Throws widefuse::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

} // namespace widefuse

/// Checks an internal invariant; a failure is a bug in widefuse, reported with its location.
#define WF_ASSERT(condition, ...)                                                                  \
  do {                                                                                             \
    if (!(condition))                                                                              \
      throw ::widefuse::InternalError(fmt::format("{}:{}: {} ({})", __FILE__, __LINE__,            \
                                                  #condition, fmt::format("" __VA_ARGS__)));       \
  } while (false)

/// Marks code that is reached only through a bug in widefuse.
#define WF_UNREACHABLE(...)                                                                        \
  throw ::widefuse::InternalError(                                                                 \
      fmt::format("{}:{}: unreachable: {}", __FILE__, __LINE__, fmt::format(__VA_ARGS__)))
