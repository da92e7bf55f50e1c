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

std::optional<OpKind> parseOpKind(llvm::StringRef name) {
  for (unsigned i = 0; i < kNumOpKinds; ++i)
    if (kOpInfo[i].name == name)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

} // namespace widefuse
