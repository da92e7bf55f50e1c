#include "ir/parser.h"
#include "ir/text_arguments.h"

#include "ir/op_builder.h"
#include "ir/reduction.h"
#include "ir/text_lexer.h"
#include "ir/text_literal.h"
#include "ir/verifier.h"

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace widefuse {
namespace {

/// Deeper nesting of calls is rejected rather than risking the stack on hostile input.
constexpr unsigned kMaxCallNesting = 256;

std::string dataTypeList() {
  std::vector<std::string> names;
  for (DataType type : kAllDataTypes)
    names.push_back(shortName(type).str());
  return fmt::format("{}", fmt::join(names, " "));
}

/// Recursive-descent parser over the token list. Builds the fusion as it goes: names are
/// resolved against what is defined so far, so SSA order is the text's order.
class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef source)
      : tokens_(tokenize(text, source)), source_(source) {}

  std::unique_ptr<Fusion> run();

private:
  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& token = peek();
    if (!token.is(TokenKind::End))
      ++pos_;
    return token;
  }
  bool consumeIf(TokenKind kind) {
    if (!peek().is(kind))
      return false;
    next();
    return true;
  }
  const Token& expect(TokenKind kind, llvm::StringRef what) {
    if (!peek().is(kind))
      unexpected(what);
    return next();
  }
  [[noreturn]] void unexpected(llvm::StringRef expected) {
    failAt(source_, peek(), "unexpected {} (expected {})", describeToken(peek()), expected.str());
  }

  /// Runs a Fusion/buildOp call, prefixing its Error with the location of `at`.
  template <typename Build> auto located(const Token& at, Build&& build) -> decltype(build()) {
    try {
      return build();
    } catch (const Error& error) {
      failAt(source_, at, "{}", error.what());
    }
  }

  void declare(const Token& name);
  void parseParameters();
  void parseParameter();
  TensorLayout parseLayout();
  llvm::SmallVector<int64_t, 4> parseIntegerList(bool allowSymbolic);
  void parseShape(OpAttributes& attributes);
  llvm::SmallVector<bool, 4> parseBoolList();
  int64_t parseListInteger(bool allowSymbolic);
  DataType parseDataTypeName();
  void parseBody(const Token& open);
  void parseAssignment();
  void parseCopy();
  void parseReturn();
  void parseArguments(const Token& callee, unsigned expected, llvm::StringRef signature,
                      llvm::function_ref<void(unsigned)> parseOne);
  void skipArgument();
  Value* parseCall(const Token& opToken, llvm::StringRef resultName);
  Value* parseReduction(const Token& opToken, OpKind op, llvm::StringRef resultName);
  int64_t parseBlockSize();
  Codebook parseCodebookName();
  Value* parseOperand();
  Value* parseLiteral();
  ConstantValue parseNumber(const Token& token, bool negative);
  ConstantValue typedConstant(const ConstantValue& value, DataType type, llvm::StringRef text,
                              const Token& at);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  llvm::StringRef source_;
  std::unique_ptr<Fusion> fusion_;
  /// Where each user name was declared, for duplicate-name messages.
  llvm::StringMap<const Token*> declaredAt_;
  /// The statement being parsed: op, copy_ and return errors point at it.
  const Token* statement_ = nullptr;
  /// How many calls enclose the one being parsed.
  unsigned nesting_ = 0;
};

std::unique_ptr<Fusion> Parser::run() {
  const Token& keyword = peek();
  if (!keyword.isWord("fusion"))
    unexpected("'fusion' to start the definition");
  next();
  const Token& name = expect(TokenKind::Identifier, "the fusion name");
  fusion_ = located(name, [&] { return std::make_unique<Fusion>(name.text.str()); });
  // Generated names (nested calls, constants) must not take a name the text uses later.
  for (const Token& token : tokens_)
    if (token.is(TokenKind::Identifier))
      fusion_->reserveName(token.text);
  parseParameters();
  parseBody(expect(TokenKind::LBrace, "'{' to open the fusion body"));
  if (!peek().is(TokenKind::End))
    failAt(source_, peek(), "unexpected {} after the closing '}}' of fusion '{}'",
           describeToken(peek()), fusion_->name());
  located(keyword, [&] { verify(*fusion_); });
  return std::move(fusion_);
}

void Parser::declare(const Token& name) {
  auto [it, inserted] = declaredAt_.try_emplace(name.text, &name);
  if (!inserted)
    failAt(source_, name, "duplicate name '{}' (first defined at {}:{})", name.text.str(),
           it->second->line, it->second->column);
}

void Parser::parseParameters() {
  expect(TokenKind::LParen, "'(' after the fusion name");
  if (consumeIf(TokenKind::RParen))
    return;
  do
    parseParameter();
  while (consumeIf(TokenKind::Comma));
  expect(TokenKind::RParen, "',' or ')' in the parameter list");
}

void Parser::parseParameter() {
  const Token& name = expect(TokenKind::Identifier, "a parameter name");
  declare(name);
  expect(TokenKind::Colon, "':' and a type after the parameter name");
  DataType dtype = parseDataTypeName();
  if (!peek().is(TokenKind::LBracket)) {
    located(name, [&] { fusion_->addScalarInput(name.text, dtype); });
    return;
  }
  llvm::SmallVector<int64_t, 4> extents = parseIntegerList(/*allowSymbolic=*/true);
  TensorLayout layout;
  if (peek().is(TokenKind::LBrace))
    layout = parseLayout();
  located(name, [&] { fusion_->addTensorInput(name.text, dtype, extents, layout); });
}

TensorLayout Parser::parseLayout() {
  expect(TokenKind::LBrace, "'{'");
  TensorLayout layout;
  bool seenOrder = false, seenContiguity = false;
  if (consumeIf(TokenKind::RBrace))
    return layout;
  do {
    const Token& key = expect(TokenKind::Identifier, "'stride_order' or 'contiguity'");
    bool isOrder = key.text == "stride_order";
    if (!isOrder && key.text != "contiguity")
      failAt(source_, key, "unknown layout key '{}' (expected stride_order or contiguity)",
             key.text.str());
    bool& seen = isOrder ? seenOrder : seenContiguity;
    if (seen)
      failAt(source_, key, "layout key '{}' given twice", key.text.str());
    seen = true;
    expect(TokenKind::Equals, fmt::format("'=' after '{}'", key.text.str()));
    if (isOrder)
      layout.strideOrder = parseIntegerList(/*allowSymbolic=*/false);
    else
      layout.contiguity = parseBoolList();
  } while (consumeIf(TokenKind::Comma));
  expect(TokenKind::RBrace, "',' or '}' in the layout");
  return layout;
}

llvm::SmallVector<int64_t, 4> Parser::parseIntegerList(bool allowSymbolic) {
  expect(TokenKind::LBracket, "'['");
  llvm::SmallVector<int64_t, 4> values;
  if (consumeIf(TokenKind::RBracket))
    return values;
  do
    values.push_back(parseListInteger(allowSymbolic));
  while (consumeIf(TokenKind::Comma));
  expect(TokenKind::RBracket, "',' or ']' in the list");
  return values;
}

/// broadcast_in_dim's output shape: extents, `?`, or names of size values (an extent taken
/// from a tensor at run time).
void Parser::parseShape(OpAttributes& attributes) {
  expect(TokenKind::LBracket, "'['");
  llvm::SmallVector<const Value*, 4> extents;
  if (!consumeIf(TokenKind::RBracket)) {
    do {
      const Token& token = peek();
      if (token.is(TokenKind::Identifier) && !peek(1).is(TokenKind::LParen)) {
        next();
        Value* value = declaredAt_.count(token.text) ? fusion_->lookup(token.text) : nullptr;
        if (!value)
          failAt(source_, token, "undefined name '{}'", token.text.str());
        attributes.broadcastShape.push_back(kSymbolicExtent);
        extents.push_back(value);
        continue;
      }
      attributes.broadcastShape.push_back(parseListInteger(/*allowSymbolic=*/true));
      extents.push_back(nullptr);
    } while (consumeIf(TokenKind::Comma));
    expect(TokenKind::RBracket, "',' or ']' in the list");
  }
  if (llvm::any_of(extents, [](const Value* v) { return v != nullptr; }))
    attributes.broadcastExtents = std::move(extents);
}

int64_t Parser::parseListInteger(bool allowSymbolic) {
  if (allowSymbolic && consumeIf(TokenKind::Question))
    return kSymbolicExtent;
  const Token& start = peek();
  bool negative = consumeIf(TokenKind::Minus);
  if (!peek().is(TokenKind::Number))
    unexpected(allowSymbolic ? "an integer or '?'" : "an integer");
  ConstantValue value = parseNumber(next(), negative);
  if (!std::holds_alternative<int64_t>(value))
    failAt(source_, start, "expected an integer, got '{}{}'", negative ? "-" : "",
           tokens_[pos_ - 1].text.str());
  return std::get<int64_t>(value);
}

llvm::SmallVector<bool, 4> Parser::parseBoolList() {
  expect(TokenKind::LBracket, "'['");
  llvm::SmallVector<bool, 4> values;
  if (consumeIf(TokenKind::RBracket))
    return values;
  do {
    if (!peek().isWord("true") && !peek().isWord("false"))
      unexpected("true or false");
    values.push_back(next().text == "true");
  } while (consumeIf(TokenKind::Comma));
  expect(TokenKind::RBracket, "',' or ']' in the list");
  return values;
}

DataType Parser::parseDataTypeName() {
  const Token& token = peek();
  if (!token.is(TokenKind::Identifier))
    unexpected(fmt::format("a dtype ({})", dataTypeList()));
  std::optional<DataType> type = parseDataType(token.text);
  if (!type)
    failAt(source_, token, "unknown dtype '{}' (expected one of: {})", token.text.str(),
           dataTypeList());
  next();
  return *type;
}

void Parser::parseBody(const Token& open) {
  const Token* returnAt = nullptr;
  for (bool first = true;; first = false) {
    const Token& token = peek();
    if (token.is(TokenKind::RBrace)) {
      next();
      return;
    }
    if (token.is(TokenKind::End))
      failAt(source_, token, "missing '}}' at the end of fusion '{}' (opened at {}:{})",
             fusion_->name(), open.line, open.column);
    if (!first && !token.startsLine)
      failAt(source_, token, "unexpected {} after the end of a statement (one per line)",
             describeToken(token));
    if (returnAt)
      failAt(source_, token, "'return' must be the last statement (return at {}:{}); found {}",
             returnAt->line, returnAt->column, describeToken(token));
    statement_ = &token;
    if (token.isWord("return")) {
      returnAt = &token;
      parseReturn();
    } else if (token.isWord("copy_")) {
      parseCopy();
    } else if (token.is(TokenKind::Identifier)) {
      parseAssignment();
    } else {
      unexpected("a statement: 'name = op(...)', 'copy_(source, destination)' or 'return'");
    }
  }
}

void Parser::parseAssignment() {
  const Token& name = next();
  if (peek().is(TokenKind::LParen))
    failAt(source_, name, "the result of '{0}(...)' must be assigned to a name: x = {0}(...)",
           name.text.str());
  expect(TokenKind::Equals, fmt::format("'=' after '{}'", name.text.str()));
  declare(name);
  const Token& rhs = peek();
  if (rhs.is(TokenKind::Identifier) && peek(1).is(TokenKind::LParen)) {
    next();
    parseCall(rhs, name.text);
    return;
  }
  if (!rhs.is(TokenKind::Identifier) && !rhs.is(TokenKind::Number) && !rhs.is(TokenKind::Minus))
    unexpected(fmt::format("an op call after '{} ='", name.text.str()));
  // Show the whole right-hand side, e.g. `1.0:f32`, in the suggestion.
  std::string operand;
  for (size_t i = pos_; !tokens_[i].is(TokenKind::End) && !tokens_[i].is(TokenKind::RBrace) &&
                        (i == pos_ || !tokens_[i].startsLine);
       ++i)
    operand += tokens_[i].text.str();
  failAt(source_, rhs, "'{} = {}' is a plain assignment, not an op; write '{} = set({})'",
         name.text.str(), operand, name.text.str(), operand);
}

void Parser::parseCopy() {
  const Token& keyword = next();
  if (!peek().is(TokenKind::LParen))
    unexpected("'(' after copy_");
  Value* operands[2] = {nullptr, nullptr};
  parseArguments(keyword, 2, " (a source and a destination)",
                 [&](unsigned index) { operands[index] = parseOperand(); });
  located(keyword, [&] { addBroadcastingAlias(*fusion_, operands[0], operands[1]); });
}

void Parser::parseReturn() {
  const Token& keyword = next();
  llvm::SmallVector<Value*, 4> values;
  do
    values.push_back(parseOperand());
  while (consumeIf(TokenKind::Comma));
  located(keyword, [&] {
    for (Value* value : values)
      fusion_->addOutput(value);
  });
}

/// Parses `( arg, ... )`, calling `parseOne(i)` for the first `expected` arguments. Extra ones
/// are skipped unparsed so the count in the message is right.
void Parser::parseArguments(const Token& callee, unsigned expected, llvm::StringRef signature,
                            llvm::function_ref<void(unsigned)> parseOne) {
  expect(TokenKind::LParen, fmt::format("'(' after '{}'", callee.text.str()));
  unsigned count = 0;
  if (!peek().is(TokenKind::RParen)) {
    do {
      if (count < expected)
        parseOne(count);
      else
        skipArgument();
      ++count;
    } while (consumeIf(TokenKind::Comma));
  }
  expect(TokenKind::RParen, fmt::format("',' or ')' in the arguments of '{}'", callee.text.str()));
  if (count != expected)
    failAt(source_, callee, "'{}' expects {} argument{}{}, got {}", callee.text.str(), expected,
           expected == 1 ? "" : "s", signature.str(), count);
}

void Parser::skipArgument() {
  int depth = 0;
  while (true) {
    const Token& token = peek();
    if (token.is(TokenKind::End))
      unexpected("')'");
    bool opens =
        token.is(TokenKind::LParen) || token.is(TokenKind::LBracket) || token.is(TokenKind::LBrace);
    bool closes =
        token.is(TokenKind::RParen) || token.is(TokenKind::RBracket) || token.is(TokenKind::RBrace);
    if (depth == 0 && (closes || token.is(TokenKind::Comma)))
      return;
    depth += opens ? 1 : closes ? -1 : 0;
    next();
  }
}

Value* Parser::parseCall(const Token& opToken, llvm::StringRef resultName) {
  std::optional<OpKind> op = parseOpKind(opToken.text);
  if (!op)
    failAt(source_, opToken, "unknown op '{}'", opToken.text.str());
  if (nesting_ >= kMaxCallNesting)
    failAt(source_, opToken, "calls nested more than {} deep; split the expression",
           kMaxCallNesting);
  if (isReduction(*op))
    return parseReduction(opToken, *op, resultName);
  ++nesting_;
  llvm::SmallVector<ArgumentForm, 3> forms = argumentForms(*op);
  llvm::SmallVector<Value*, 3> operands;
  OpAttributes attributes;
  parseArguments(opToken, static_cast<unsigned>(forms.size()), describeForms(*op),
                 [&](unsigned index) {
                   switch (forms[index]) {
                   case ArgumentForm::Value:
                     operands.push_back(parseOperand());
                     break;
                   case ArgumentForm::DataType:
                     attributes.targetType = parseDataTypeName();
                     break;
                   case ArgumentForm::Shape:
                     parseShape(attributes);
                     break;
                   case ArgumentForm::Dim:
                     attributes.dim = parseListInteger(/*allowSymbolic=*/false);
                     break;
                   case ArgumentForm::Dims:
                     attributes.broadcastDims = parseIntegerList(/*allowSymbolic=*/false);
                     break;
                   case ArgumentForm::Block:
                     attributes.block = parseBlockSize();
                     break;
                   case ArgumentForm::Codebook:
                     attributes.codebook = parseCodebookName();
                     break;
                   }
                 });
  --nesting_;
  return located(*statement_, [&] {
    return buildOp(*fusion_, *op, operands, std::move(attributes), resultName);
  });
}

/// `sum(x)`, `sum(a, b, c)`, `sum(x, [d])` or `sum(x, block=B)`: operands, then at most one
/// dims list or block size.
Value* Parser::parseReduction(const Token& opToken, OpKind op, llvm::StringRef resultName) {
  ++nesting_;
  expect(TokenKind::LParen, fmt::format("'(' after '{}'", opToken.text.str()));
  llvm::SmallVector<Value*, 4> operands;
  std::optional<llvm::SmallVector<int64_t, 4>> dims;
  std::optional<int64_t> block;
  if (!peek().is(TokenKind::RParen)) {
    do {
      if (dims || block)
        unexpected(fmt::format("')' after the {} (it comes last)", dims ? "dims list" : "block"));
      if (peek().is(TokenKind::LBracket))
        dims = parseIntegerList(/*allowSymbolic=*/false);
      else if (peek().isWord("block") && peek(1).is(TokenKind::Equals))
        block = parseBlockSize();
      else
        operands.push_back(parseOperand());
    } while (consumeIf(TokenKind::Comma));
  }
  expect(TokenKind::RParen, fmt::format("',' or ')' in the arguments of '{}'", opToken.text.str()));
  --nesting_;
  return located(*statement_, [&] {
    llvm::SmallVector<const Value*, 4> given(operands.begin(), operands.end());
    if (block)
      return buildOp(*fusion_, op, operands, blockReductionAttributes(op, given, *block),
                     resultName);
    std::optional<llvm::ArrayRef<int64_t>> dimsRef;
    if (dims)
      dimsRef = llvm::ArrayRef<int64_t>(*dims);
    return buildOp(*fusion_, op, operands, reductionAttributes(op, given, dimsRef), resultName);
  });
}

/// `block=B`: the elements of one block (checked by the op's builder).
int64_t Parser::parseBlockSize() {
  if (!peek().isWord("block"))
    unexpected("'block='");
  next();
  expect(TokenKind::Equals, "'=' after 'block'");
  return parseListInteger(/*allowSymbolic=*/false);
}

/// `codebook=NAME`: one of codebookNames().
Codebook Parser::parseCodebookName() {
  if (!peek().isWord("codebook"))
    unexpected("'codebook='");
  next();
  expect(TokenKind::Equals, "'=' after 'codebook'");
  const Token& name = peek();
  std::optional<Codebook> codebook =
      name.is(TokenKind::Identifier) ? parseCodebook(name.text) : std::nullopt;
  if (!codebook)
    unexpected(fmt::format("a codebook name ({})", codebookNames()));
  next();
  return *codebook;
}

Value* Parser::parseOperand() {
  const Token& token = peek();
  if (token.is(TokenKind::Minus) || token.is(TokenKind::Number))
    return parseLiteral();
  if (!token.is(TokenKind::Identifier))
    unexpected("an operand: a name, a literal or an op call");
  if (peek(1).is(TokenKind::LParen)) {
    next();
    return parseCall(token, {});
  }
  llvm::StringRef word = token.text;
  if (word == "true" || word == "false" || word == "inf" || word == "nan")
    return parseLiteral();
  if (parseDataType(word))
    failAt(source_, token, "expected a value, got the dtype name '{}'", word.str());
  // Every identifier is reserved, so generated names never shadow what the user wrote.
  Value* value = declaredAt_.count(word) ? fusion_->lookup(word) : nullptr;
  if (!value)
    failAt(source_, token, "undefined name '{}'{}", word.str(),
           parseOpKind(word) ? fmt::format(" (to call the op, write {}(...))", word.str())
                             : std::string());
  next();
  return value;
}

Value* Parser::parseLiteral() {
  const Token& start = peek();
  bool negative = consumeIf(TokenKind::Minus);
  const Token& token = next();
  ConstantValue value;
  if (token.is(TokenKind::Number)) {
    value = parseNumber(token, negative);
  } else if (token.isWord("inf")) {
    value = negative ? -std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::infinity();
  } else if (token.isWord("nan")) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (!negative && (token.isWord("true") || token.isWord("false"))) {
    value = token.text == "true";
  } else {
    failAt(source_, token, "expected a number after '-', got {}", describeToken(token));
  }
  llvm::StringRef text(start.text.data(), token.text.end() - start.text.data());
  if (!consumeIf(TokenKind::Colon)) {
    DataType type = std::holds_alternative<bool>(value)      ? DataType::Bool
                    : std::holds_alternative<int64_t>(value) ? DataType::Int64
                                                             : DataType::Double;
    return fusion_->addConstant(value, type, /*weak=*/true);
  }
  DataType type = parseDataTypeName();
  return fusion_->addConstant(typedConstant(value, type, text, start), type,
                              /*weak=*/false);
}

ConstantValue Parser::parseNumber(const Token& token, bool negative) {
  return located(token, [&] { return numberLiteral(token.text, negative); });
}

ConstantValue Parser::typedConstant(const ConstantValue& value, DataType type, llvm::StringRef text,
                                    const Token& at) {
  return located(at, [&] { return typedLiteral(value, type, text); });
}

} // namespace

std::unique_ptr<Fusion> parseFusion(llvm::StringRef text, llvm::StringRef sourceName) {
  return Parser(text, sourceName).run();
}

} // namespace widefuse
