#include "codegen/code_writer.h"

#include "ir/error.h"

namespace widefuse {

void CodeWriter::line(llvm::StringRef text) {
  if (!text.empty())
    text_.append(2 * depth_, ' ');
  text_ += text;
  text_ += '\n';
}

void CodeWriter::directive(llvm::StringRef text) {
  text_ += text;
  text_ += '\n';
}

void CodeWriter::open(llvm::StringRef header) {
  line(header.empty() ? std::string("{") : header.str() + " {");
  ++depth_;
}

void CodeWriter::openElse(llvm::StringRef comment) {
  dedent();
  line(comment.empty() ? std::string("} else {") : "} else { // " + comment.str());
  ++depth_;
}

void CodeWriter::openCommented(llvm::StringRef header, llvm::StringRef comment) {
  line(header.str() + " { // " + comment.str());
  ++depth_;
}

void CodeWriter::close(llvm::StringRef suffix) {
  dedent();
  line("}" + suffix.str());
}

void CodeWriter::dedent() {
  WF_ASSERT(depth_ > 0, "code writer closes more levels than it opened");
  --depth_;
}

void CodeWriter::wrapped(llvm::StringRef head, llvm::ArrayRef<std::string> items,
                         llvm::StringRef separator, llvm::StringRef tail) {
  // Items fill each line up to kColumns; a broken line ends with the separator's text (`,`,
  // ` &&`) and the next one starts two levels deeper, as clang-format continues lines.
  llvm::StringRef glue = separator.rtrim();
  std::string current = head.str();
  bool continued = false;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string piece = items[i] + (i + 1 == items.size() ? tail.str() : std::string());
    size_t indent = 2 * (depth_ + (continued ? 2 : 0));
    std::string joined = current + (i ? separator.str() : std::string()) + piece;
    if (i == 0 || indent + joined.size() + glue.size() <= kColumns ||
        (i + 1 == items.size() && indent + joined.size() <= kColumns)) {
      current = joined;
      continue;
    }
    line(current + glue.str());
    if (!continued)
      depth_ += 2;
    continued = true;
    current = piece;
  }
  if (items.empty())
    current += tail;
  line(current);
  if (continued)
    depth_ -= 2;
}

void CodeWriter::openWrapped(llvm::StringRef head, llvm::ArrayRef<std::string> items,
                             llvm::StringRef separator, llvm::StringRef tail) {
  wrapped(head, items, separator, tail.str() + " {");
  ++depth_;
}

void CodeWriter::verbatim(llvm::StringRef text) {
  text_ += text;
}

} // namespace widefuse
