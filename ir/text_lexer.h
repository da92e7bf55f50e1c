#pragma once
/// Tokens of the fusion text form, shared by the parser and its diagnostics.

#include "ir/error.h"

#include <llvm/ADT/StringRef.h>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

namespace widefuse {

/// The kinds of token of the text form. Numbers are unsigned; a leading '-' is its own token
/// because only literals and extents may be negative and the parser knows where they are.
enum class TokenKind : uint8_t {
  Identifier,
  Number,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Equals,
  Minus,
  Question,
  End,
};

/// One token: its text points into the parsed source, which must outlive it.
struct Token {
  TokenKind kind = TokenKind::End;
  llvm::StringRef text;
  /// 1-based line and column (in bytes) of the first character.
  unsigned line = 1;
  unsigned column = 1;
  /// True when a newline separates this token from the previous one (or it is the first);
  /// the parser uses it to keep one statement per line.
  bool startsLine = false;

  /// True for a token of kind `k`.
  bool is(TokenKind k) const { return kind == k; }
  /// True for the identifier `word`.
  bool isWord(llvm::StringRef word) const { return kind == TokenKind::Identifier && text == word; }
};

/// Describes a token for messages: `'abc'`, or `end of input`.
std::string describeToken(const Token& token);

/// Throws Error with the message prefixed `source:line:column: `.
template <typename... Args>
[[noreturn]] void failAt(llvm::StringRef source, const Token& at,
                         fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format("{}:{}:{}: {}", source.str(), at.line, at.column,
                          fmt::format(format, std::forward<Args>(args)...)));
}

/// Splits `text` into tokens, skipping whitespace and `#` comments; the list always ends with
/// an End token located just past the last character. Numbers are taken greedily over
/// letters, digits, '.', and an exponent sign, so `1.2.3` and `12abc` become one token that
/// the parser rejects as malformed. Throws Error (with `source:line:column: `) for a character
/// that starts no token.
std::vector<Token> tokenize(llvm::StringRef text, llvm::StringRef source);

} // namespace widefuse
