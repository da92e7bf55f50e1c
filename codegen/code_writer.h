#pragma once
/// Generated C++ written a line at a time at the current depth, so that an emitter says what
/// it emits and the writer says where (two spaces per level, as .clang-format indents).

#include <fmt/format.h>
#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <string>
#include <utility>

namespace widefuse {

class CodeWriter {
public:
  /// One line at the current depth; an empty line has no indentation.
  void line(llvm::StringRef text = {});
  /// One formatted line at the current depth.
  template <typename... Args> void line(fmt::format_string<Args...> format, Args&&... args) {
    line(llvm::StringRef(fmt::format(format, std::forward<Args>(args)...)));
  }
  /// A line at column 0 whatever the depth (`#pragma`, `#ifndef`).
  void directive(llvm::StringRef text);

  /// `header {` (already formatted), then one level deeper until close().
  void open(llvm::StringRef header);
  template <typename... Args> void open(fmt::format_string<Args...> format, Args&&... args) {
    open(llvm::StringRef(fmt::format(format, std::forward<Args>(args)...)));
  }
  /// `header { // comment`, then one level deeper until close().
  void openCommented(llvm::StringRef header, llvm::StringRef comment);
  /// One level up, then `}` followed by `suffix` (`;` for a struct).
  void close(llvm::StringRef suffix = {});
  /// One level up, then `} else { // comment` (no comment when empty), then one level deeper
  /// until close().
  void openElse(llvm::StringRef comment = {});
  /// One level deeper or up without a brace (the statement of an `if` without braces).
  void indent() { ++depth_; }
  void dedent();

  /// `head` + `items` joined by `separator` + `tail`, broken after a separator where a line
  /// would pass kColumns; continuation lines are two levels deeper.
  void wrapped(llvm::StringRef head, llvm::ArrayRef<std::string> items, llvm::StringRef separator,
               llvm::StringRef tail);

  /// wrapped(head, items, separator, tail + " {"), then one level deeper until close(): a
  /// function signature or an `if` whose condition may need several lines.
  void openWrapped(llvm::StringRef head, llvm::ArrayRef<std::string> items,
                   llvm::StringRef separator, llvm::StringRef tail = ")");

  /// Text laid out already (the prelude), appended as it is.
  void verbatim(llvm::StringRef text);

  /// What was written.
  const std::string& text() const { return text_; }

  /// Generated lines are kept within this many columns where they can be wrapped.
  static constexpr size_t kColumns = 100;

private:
  std::string text_;
  unsigned depth_ = 0;
};

} // namespace widefuse
