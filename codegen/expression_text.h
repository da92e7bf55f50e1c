#pragma once
/// The C++ expression for one IR expression, with the evaluator's conversions: operands to
/// the compute type, the op in it, the result rounded to the result type.

#include "ir/expr.h"

#include <llvm/ADT/ArrayRef.h>

#include <string>

namespace widefuse {

/// An operand as the emitter refers to it.
struct OperandText {
  /// C++ text of the operand in its own dtype (a name such as `in.g0` or `u.beta1`).
  std::string text;
  /// Set for a constant that is not lifted: it becomes a literal of the type it is used in.
  const Value* constant = nullptr;
};

/// The right-hand side computing `expr` from its operands, of the result's C++ type.
std::string expressionText(const Expr& expr, llvm::ArrayRef<OperandText> operands);

/// The name of the table code_value or nearest_code `expr` reads (wf_codebook_<name>).
std::string codebookTableName(const Expr& expr);

/// The definition of `codebook`'s table as a kernel declares it (exact hexadecimal floats).
std::string codebookTable(Codebook codebook);

/// The host's code index of the codebook (wf_codebook_<name>_index, which nearest_code reads
/// on the host), left out of device compilations.
std::string codeIndexText(Codebook codebook);

/// `text` (of dtype `from`) as a value of dtype `to`; unchanged when the types are equal.
std::string convertedText(const std::string& text, DataType from, DataType to);

} // namespace widefuse
