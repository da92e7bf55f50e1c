#include "codegen/expression_text.h"

#include "codegen/constant_literal.h"
#include "ir/code_index.h"
#include "ir/error.h"
#include "ir/op_builder.h"
#include "ir/value.h"

#include <fmt/format.h>

namespace widefuse {

std::string convertedText(const std::string& text, DataType from, DataType to) {
  if (from == to)
    return text;
  return fmt::format("wf_convert<{}>({})", cppType(to), text);
}

namespace {

/// The operand as a value of the compute type.
std::string operandAs(const Expr& expr, const OperandText& operand, unsigned index, DataType type) {
  if (operand.constant)
    return constantLiteral(*operand.constant, type);
  return convertedText(operand.text, expr.operand(index)->dtype(), type);
}

/// Infix spelling where C++ operators compute exactly the op's semantics (floating-point
/// arithmetic, comparisons); integer arithmetic wraps through the prelude instead.
const char* infixOperator(OpKind op, DataType compute) {
  if (isComplex(compute)) // complex values are structs: every op is a prelude function
    return nullptr;
  switch (op) {
  case OpKind::Eq:
    return "==";
  case OpKind::Ne:
    return "!=";
  case OpKind::Lt:
    return "<";
  case OpKind::Le:
    return "<=";
  case OpKind::Gt:
    return ">";
  case OpKind::Ge:
    return ">=";
  default:
    break;
  }
  if (!isFloatingPoint(compute))
    return nullptr;
  switch (op) {
  case OpKind::Add:
    return "+";
  case OpKind::Sub:
    return "-";
  case OpKind::Mul:
    return "*";
  case OpKind::Div:
  case OpKind::TrueDiv:
    return "/";
  default:
    return nullptr;
  }
}

/// The dtype the op itself yields in compute type `compute`.
DataType opResultType(OpKind op, DataType compute) {
  switch (opTypeRule(op)) {
  case TypeRule::Predicate:
  case TypeRule::Comparison:
  case TypeRule::Logical:
    return DataType::Bool;
  case TypeRule::ComplexPart:
    return complexPartType(compute);
  case TypeRule::MakeComplex:
    return complexTypeOf(compute);
  default:
    return op == OpKind::Abs ? complexPartType(compute) : compute;
  }
}

} // namespace

std::string codebookTableName(const Expr& expr) {
  return fmt::format("wf_codebook_{}", codebookName(expr.attributes().codebook).str());
}

std::string codebookTable(Codebook codebook) {
  llvm::SmallVector<std::string, 256> entries;
  for (float value : codebookValues(codebook))
    entries.push_back(fmt::format("{:a}f", value));
  return fmt::format("WF_CODEBOOK wf_codebook_{}[{}] = {{{}}};\n", codebookName(codebook).str(),
                     entries.size(), fmt::join(entries, ", "));
}

std::string codeIndexText(Codebook codebook) {
  const CodeIndex& index = codeIndex(codebook);
  std::string name = "wf_codebook_" + codebookName(codebook).str() + "_index";
  return fmt::format("#ifndef __CUDACC__\nstatic const u32 {0}_entries[{1}] = {{{2:#x}}};\n"
                     "inline u8 {0}(f32 x) {{\n"
                     "  return wf_indexed_code<{3}, {4}, {5}, {6}>({0}_entries, x);\n}}\n#endif\n",
                     name, index.entries.size(), fmt::join(index.entries, ", "), index.shift,
                     index.zero, index.low, index.high);
}

std::string expressionText(const Expr& expr, llvm::ArrayRef<OperandText> operands) {
  WF_ASSERT(operands.size() == expr.operands().size());
  DataType result = expr.result()->dtype();
  DataType source = expr.operand(0)->dtype();
  switch (expr.op()) {
  case OpKind::Set:
  case OpKind::BroadcastInDim:
  case OpKind::ExpandBlocks:
    return operandAs(expr, operands[0], 0, source);
  case OpKind::Cast:
    return operandAs(expr, operands[0], 0, result);
  case OpKind::Bitcast:
    return fmt::format("wf_bitcast<{}>({})", cppType(result),
                       operandAs(expr, operands[0], 0, source));
  case OpKind::ElementIndex: // the element function's parameter; a 0-d tensor's is 0
    return expr.result()->rank() > 0 ? "element_index" : "i64(0)";
  case OpKind::CodeValue:
    return fmt::format("wf_code_value({}, {})", codebookTableName(expr),
                       operandAs(expr, operands[0], 0, source));
  case OpKind::NearestCode:
    return fmt::format("WF_NEAREST_CODE({}, {})", codebookTableName(expr),
                       operandAs(expr, operands[0], 0, source));
  default:
    break;
  }
  DataType compute = exprComputeType(expr);
  llvm::SmallVector<std::string, 3> arguments;
  for (unsigned i = 0; i < operands.size(); ++i) {
    // where's condition stays a truth value; its branches take the compute type.
    DataType wanted = expr.op() == OpKind::Where && i == 0 ? DataType::Bool : compute;
    arguments.push_back(operandAs(expr, operands[i], i, wanted));
  }
  std::string text;
  if (const char* infix = infixOperator(expr.op(), compute))
    text = fmt::format("{} {} {}", arguments[0], infix, arguments[1]);
  else if (expr.op() == OpKind::Neg && isFloatingPoint(compute))
    text = "-" + arguments[0];
  else
    text = fmt::format("wf_{}({})", opName(expr.op()).str(), fmt::join(arguments, ", "));
  DataType yielded = opResultType(expr.op(), compute);
  if (yielded == result)
    return text;
  return fmt::format("wf_convert<{}>({})", cppType(result), text);
}

} // namespace widefuse
