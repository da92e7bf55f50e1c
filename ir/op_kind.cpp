#include "ir/op_kind.h"

namespace widefuse {
namespace {

struct OpInfo {
  llvm::StringRef name;
  unsigned arity;
  TypeRule rule;
};

constexpr OpInfo kOpInfo[] = {
#define WF_OP(Enum, name, arity, rule) {#name, arity, TypeRule::rule},
#define WF_REDUCTION_OP(Enum, name) {#name, 1, TypeRule::Reduction},
#include "ir/op_kinds.def"
};

} // namespace

llvm::StringRef opName(OpKind op) {
  return kOpInfo[static_cast<unsigned>(op)].name;
}
unsigned opArity(OpKind op) {
  return kOpInfo[static_cast<unsigned>(op)].arity;
}
TypeRule opTypeRule(OpKind op) {
  return kOpInfo[static_cast<unsigned>(op)].rule;
}

bool isReduction(OpKind op) {
  return opTypeRule(op) == TypeRule::Reduction;
}

bool acceptsComplex(OpKind op) {
  switch (op) {
  // Arithmetic with complex values (abs gives the magnitude, a real value).
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::TrueDiv:
  case OpKind::Pow:
  case OpKind::Reciprocal:
  // Elementary functions (ir/complex_math.h); exp2, expm1, log1p and the special functions
  // are not defined on complex values yet.
  case OpKind::Acos:
  case OpKind::Acosh:
  case OpKind::Asin:
  case OpKind::Asinh:
  case OpKind::Atan:
  case OpKind::Atanh:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Log10:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan:
  case OpKind::Sinh:
  case OpKind::Cosh:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  // Classification, equality and truth values (z != 0); complex numbers have no order.
  case OpKind::IsNan:
  case OpKind::IsInf:
  case OpKind::IsFinite:
  case OpKind::IsReal:
  case OpKind::Eq:
  case OpKind::Ne:
  case OpKind::LogicalNot:
  case OpKind::LogicalAnd:
  case OpKind::LogicalOr:
  // Structure.
  case OpKind::Where:
  case OpKind::Set:
  case OpKind::Real:
  case OpKind::Imag:
  case OpKind::Cast:
  case OpKind::Bitcast:
  case OpKind::BroadcastInDim:
  case OpKind::Size:
  // Reductions to truth values read z != 0.
  case OpKind::Any:
  case OpKind::All:
    return true;
  default:
    return false;
  }
}

std::optional<OpKind> parseOpKind(llvm::StringRef name) {
  for (unsigned i = 0; i < kNumOpKinds; ++i)
    if (kOpInfo[i].name == name)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

} // namespace widefuse
