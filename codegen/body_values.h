#pragma once
/// How a body's generated code names the values of its representative component: element
/// values (`in.g0`, `t3` under a view), values computed once per run (`u.beta1`), lifted
/// constants, and the value each written slot receives.

#include "codegen/expression_text.h"
#include "scheduler/kernel_plan.h"

#include <llvm/ADT/DenseMap.h>

#include <map>
#include <string>
#include <utility>

namespace widefuse {

class BodyValues {
public:
  BodyValues(const KernelPlan& plan, const BodyPlan& body);

  /// Operand `index` of `expr`, read under `view` (null outside the element function).
  OperandText operandText(const Expr& expr, unsigned index, const ElementView* view) const;
  /// The C++ text of the value written to `slot`, in the slot's dtype.
  std::string writtenValueText(const Slot& slot) const;
  /// The element value a reduction of the body reduces, in its own dtype.
  std::string reducedValueText(const ReductionSlot& slot) const;
  /// The name of a value computed once per run (the prologue's `u.<name>`).
  std::string uniformName(const Value* value) const { return uniformName_.lookup(value); }
  /// The element value a block reduction of the body reduces (`body.blocks[index]`), in its own
  /// dtype.
  std::string blockOperandText(const BlockSlot& slot) const;
  /// The value a block tensor slot is written with: its block reduction's `<blocks>.<name>`,
  /// in the slot's dtype.
  std::string blockWrittenText(const Slot& slot, llvm::StringRef blocks) const;
  /// The representative component the body is written with.
  const Component& component() const { return component_; }

private:
  void mapLiftedUses();
  OperandText valueText(const Value* value, const ElementView* view) const;
  /// The value copied into a written slot; `liftedSource` says whether it is a lifted constant.
  const Value* writtenValue(const Slot& slot, bool& liftedSource) const;

  const BodyPlan& body_;
  const Component& component_;
  const SignatureClass& signature_;
  /// Lifted constant uses: (expression, operand) or alias index -> the lifted slot's name.
  std::map<std::pair<const Expr*, unsigned>, std::string> liftedOperand_;
  llvm::DenseMap<unsigned, std::string> liftedAliasSource_;
  std::map<std::pair<const Value*, std::string>, std::string> instanceName_;
  llvm::DenseMap<const Value*, std::string> uniformName_;
  /// Block reduction results: their `blk.<name>` and result dtype.
  llvm::DenseMap<const Value*, const BlockSlot*> blockOf_;
};

} // namespace widefuse
