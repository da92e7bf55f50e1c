#include "tests/fuzz/reducer.h"

#include "tests/fuzz/reductions.h"

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"

#include <fmt/format.h>
#include <llvm/ADT/StringExtras.h>

namespace widefuse::fuzz {
namespace {

/// The text form cut into the pieces a reduction removes.
struct Pieces {
  std::string name;
  std::vector<std::string> params;
  std::vector<std::string> lines;   // assignments and copy_ lines
  std::vector<std::string> returns; // values of the return statement

  std::string text() const {
    std::string out = fmt::format("fusion {}(\n    {}) {{\n", name, fmt::join(params, ",\n    "));
    for (const std::string& line : lines)
      out += "  " + line + "\n";
    if (!returns.empty())
      out += fmt::format("  return {}\n", fmt::join(returns, ", "));
    return out + "}\n";
  }
};

/// Splits `text` at commas outside brackets.
std::vector<std::string> splitTopLevel(llvm::StringRef text) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    depth += (c == '[' || c == '{' || c == '(') - (c == ']' || c == '}' || c == ')');
    if (c == ',' && depth == 0) {
      std::string part = text.slice(start, i).trim().str();
      if (!part.empty())
        parts.push_back(part);
      start = i + 1;
    }
  }
  return parts;
}

Pieces cut(const Fusion& fusion) {
  std::string text = printFusion(fusion);
  llvm::StringRef rest(text);
  Pieces pieces;
  pieces.name = fusion.name();
  size_t open = rest.find('(');
  size_t close = rest.find(") {\n");
  pieces.params = splitTopLevel(rest.slice(open + 1, close));
  llvm::SmallVector<llvm::StringRef, 32> lines;
  rest.drop_front(close + 4).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line == "}" || line.empty() || line.startswith("#"))
      continue;
    if (line.consume_front("return "))
      pieces.returns = splitTopLevel(line);
    else
      pieces.lines.push_back(line.str());
  }
  return pieces;
}

/// A reduction line `t = sum(a, b, c)` cut at its operands: `t = sum(` and {a, b, c}. False
/// for any other line, and for rows (`sum(x, [1])`), whose list is no operand.
bool cutReduction(const std::string& line, std::string& head, std::vector<std::string>& operands) {
  llvm::StringRef text(line);
  size_t equals = text.find(" = ");
  size_t open = text.find('(');
  if (equals == llvm::StringRef::npos || open == llvm::StringRef::npos || !text.endswith(")"))
    return false;
  llvm::StringRef op = text.slice(equals + 3, open);
  if (!llvm::any_of(kReductionOps, [&](OpKind kind) { return opName(kind) == op; }))
    return false;
  head = text.take_front(open + 1).str();
  operands = splitTopLevel(text.slice(open + 1, text.size() - 1));
  return llvm::none_of(operands, [](const std::string& o) { return o.front() == '['; });
}

class Reducer {
public:
  Reducer(const FuzzCase& failing, const RunOutcome& failure, RunnerOptions options)
      : inputs_(failing.inputs), signature_(failure.signature), options_(std::move(options)) {
    best_.text = printFusion(*failing.fusion);
    best_.outcome = failure;
  }

  /// Keeps `candidate` when it parses and still fails the same way.
  bool tryCandidate(const Pieces& candidate) {
    ++best_.candidatesTried;
    FuzzCase reduced;
    try {
      reduced.fusion = parseFusion(candidate.text(), "reduced");
    } catch (const Error&) {
      return false;
    }
    // A candidate the generator would not draw, as it would crash this process.
    if (hasKnownReductionBug(*reduced.fusion))
      return false;
    reduced.inputs = inputs_;
    RunOutcome outcome = runCase(reduced, options_);
    if (outcome.kind != RunOutcome::Kind::Mismatch || outcome.signature != signature_)
      return false;
    best_.text = printFusion(*reduced.fusion);
    best_.outcome = outcome;
    return true;
  }

  /// Removes chunks of `list` (halves, quarters, ... single items) while the failure stays.
  bool removeChunks(Pieces& pieces, std::vector<std::string> Pieces::*list) {
    bool changed = false;
    for (size_t chunk = std::max<size_t>((pieces.*list).size() / 2, 1); chunk >= 1; chunk /= 2) {
      for (size_t start = 0; start < (pieces.*list).size();) {
        Pieces candidate = pieces;
        auto& items = candidate.*list;
        items.erase(items.begin() + start, items.begin() + std::min(items.size(), start + chunk));
        if (tryCandidate(candidate)) {
          pieces = std::move(candidate);
          changed = true;
        } else {
          start += chunk;
        }
      }
      if (chunk == 1)
        break;
    }
    return changed;
  }

  /// Drops operands of reductions over several (global scope) one at a time while the
  /// failure stays: `sum(a, b)` becomes `sum(a)`, still a valid reduction (tensor scope).
  bool removeReductionOperands(Pieces& pieces) {
    bool changed = false;
    for (size_t i = 0; i < pieces.lines.size(); ++i) {
      std::string head;
      std::vector<std::string> operands;
      for (size_t drop = 0; cutReduction(pieces.lines[i], head, operands) && operands.size() >= 2 &&
                            drop < operands.size();) {
        Pieces candidate = pieces;
        operands.erase(operands.begin() + drop);
        candidate.lines[i] = fmt::format("{}{})", head, fmt::join(operands, ", "));
        if (tryCandidate(candidate)) {
          pieces = std::move(candidate);
          changed = true;
        } else {
          ++drop;
        }
      }
    }
    return changed;
  }

  Reduction run(Pieces pieces) {
    bool changed = true;
    while (changed) {
      changed = removeChunks(pieces, &Pieces::returns);
      changed |= removeChunks(pieces, &Pieces::lines);
      changed |= removeReductionOperands(pieces);
      changed |= removeChunks(pieces, &Pieces::params);
    }
    return best_;
  }

private:
  std::map<std::string, InputData> inputs_;
  std::string signature_;
  RunnerOptions options_;
  Reduction best_;
};

} // namespace

Reduction reduceCase(const FuzzCase& failing, const RunOutcome& failure,
                     const RunnerOptions& options) {
  RunnerOptions narrowed = options;
  // Only the configuration that failed: a candidate costs one compilation, not three.
  if (failure.configIndex >= 0)
    narrowed.configs = {options.configs[size_t(failure.configIndex)]};
  else
    narrowed.configs.clear();
  return Reducer(failing, failure, narrowed).run(cut(*failing.fusion));
}

} // namespace widefuse::fuzz
