#include "ir/text_lexer.h"

#include <cctype>

namespace widefuse {

std::string describeToken(const Token& token) {
  if (token.is(TokenKind::End))
    return "end of input";
  return fmt::format("'{}'", token.text.str());
}

namespace {

bool isIdentifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool isDigit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

TokenKind punctuationKind(char c) {
  switch (c) {
  case '(':
    return TokenKind::LParen;
  case ')':
    return TokenKind::RParen;
  case '[':
    return TokenKind::LBracket;
  case ']':
    return TokenKind::RBracket;
  case '{':
    return TokenKind::LBrace;
  case '}':
    return TokenKind::RBrace;
  case ',':
    return TokenKind::Comma;
  case ':':
    return TokenKind::Colon;
  case '=':
    return TokenKind::Equals;
  case '-':
    return TokenKind::Minus;
  case '?':
    return TokenKind::Question;
  default:
    return TokenKind::End; // not punctuation
  }
}

/// Walks the text keeping line and column.
class Lexer {
public:
  Lexer(llvm::StringRef text, llvm::StringRef source) : text_(text), source_(source) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    bool sawNewline = true;
    while (true) {
      sawNewline |= skipSpaceAndComments();
      Token token = lexOne();
      token.startsLine = sawNewline;
      sawNewline = false;
      tokens.push_back(token);
      if (token.is(TokenKind::End))
        return tokens;
    }
  }

private:
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  /// Returns true when a newline was skipped.
  bool skipSpaceAndComments() {
    bool newline = false;
    while (pos_ < text_.size()) {
      char c = peek();
      if (c == '#') {
        while (pos_ < text_.size() && peek() != '\n')
          advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        newline |= c == '\n';
        advance();
      } else {
        break;
      }
    }
    return newline;
  }

  Token lexOne() {
    Token token;
    token.line = line_;
    token.column = column_;
    size_t start = pos_;
    if (pos_ >= text_.size()) {
      token.kind = TokenKind::End;
    } else if (isIdentifierStart(peek())) {
      token.kind = TokenKind::Identifier;
      while (pos_ < text_.size() && isIdentifierChar(peek()))
        advance();
    } else if (isDigit(peek()) || (peek() == '.' && isDigit(peek(1)))) {
      token.kind = TokenKind::Number;
      lexNumber();
    } else if (TokenKind kind = punctuationKind(peek()); kind != TokenKind::End) {
      token.kind = kind;
      advance();
    } else {
      unsigned char c = static_cast<unsigned char>(peek());
      token.text = text_.substr(start, 1);
      if (std::isprint(c))
        failAt(source_, token, "unexpected character '{}'", static_cast<char>(c));
      failAt(source_, token, "unexpected byte 0x{:02x}", c);
    }
    token.text = text_.slice(start, pos_);
    return token;
  }

  /// Greedy over everything that could belong to a number, so a malformed one is reported
  /// whole rather than split into confusing pieces.
  void lexNumber() {
    while (pos_ < text_.size()) {
      char c = peek();
      bool exponentSign =
          (c == '+' || c == '-') && pos_ > 0 && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E');
      if (!isIdentifierChar(c) && c != '.' && !exponentSign)
        break;
      advance();
    }
  }

  llvm::StringRef text_;
  llvm::StringRef source_;
  size_t pos_ = 0;
  unsigned line_ = 1;
  unsigned column_ = 1;
};

} // namespace

std::vector<Token> tokenize(llvm::StringRef text, llvm::StringRef source) {
  return Lexer(text, source).run();
}

} // namespace widefuse
