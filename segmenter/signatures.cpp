#include "segmenter/signatures.h"

#include <bit>
#include <cmath>
#include <map>

namespace widefuse {

Subgraph subgraphOf(const Component& component) {
  return Subgraph{component.inputs, component.exprs, component.aliases, component.outputs,
                  component.contributions};
}

llvm::SmallVector<const Value*, 8> constantsOf(const Component& component) {
  llvm::SmallVector<const Value*, 8> constants;
  for (const Expr* expr : component.exprs)
    for (const Value* operand : expr->operands())
      if (operand->isConstant())
        constants.push_back(operand);
  for (const Alias& alias : component.aliases)
    if (alias.source->isConstant())
      constants.push_back(alias.source);
  return constants;
}

namespace {

/// True when the two constants print alike (formatConstant): one type and the same bits,
/// except that every NaN is one literal. Compared without printing: a fusion of many
/// parameters compares every constant of every member.
bool sameLiteral(const ConstantValue& a, const ConstantValue& b) {
  if (a.index() != b.index())
    return false;
  if (const double* x = std::get_if<double>(&a)) {
    double y = std::get<double>(b);
    if (std::isnan(*x) || std::isnan(y))
      return std::isnan(*x) && std::isnan(y);
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(y);
  }
  return a == b;
}

/// Records every constant position whose value differs between the members of `signature`.
void liftConstants(SignatureClass& signature, llvm::ArrayRef<Component> components) {
  llvm::SmallVector<llvm::SmallVector<const Value*, 8>, 4> perMember;
  for (unsigned member : signature.members)
    perMember.push_back(constantsOf(components[member]));
  for (unsigned position = 0; position < perMember.front().size(); ++position) {
    const Value* first = perMember.front()[position];
    // Compare bits: -0.0 and 0.0 are different literals (and NaN equals itself).
    bool differs = llvm::any_of(perMember, [&](const auto& constants) {
      return !sameLiteral(*constants[position]->constant(), *first->constant());
    });
    if (!differs)
      continue;
    LiftedConstant lifted;
    lifted.position = position;
    lifted.dtype = first->dtype();
    for (const auto& constants : perMember)
      lifted.values.push_back(*constants[position]->constant());
    signature.lifted.push_back(std::move(lifted));
  }
}

} // namespace

bool isFlattenable(const Component& component) {
  bool broadcasts = llvm::any_of(
      component.exprs, [](const Expr* expr) { return expr->op() == OpKind::BroadcastInDim; });
  bool dense = llvm::all_of(component.inputs,
                            [](const Value* input) { return input->layout().isDefault(); });
  return dense && !broadcasts;
}

std::vector<SignatureClass> classifySignatures(llvm::ArrayRef<Component> components) {
  std::map<StructuralKey, unsigned> classOfKey;
  std::vector<SignatureClass> classes;
  for (const Component& component : components) {
    StructuralKeyOptions options{.includeExtents = false,
                                 .includeRanks = !isFlattenable(component),
                                 .includeConstantValues = false};
    StructuralKey key = structuralKey(subgraphOf(component), options);
    auto [it, inserted] = classOfKey.try_emplace(key, unsigned(classes.size()));
    if (inserted) {
      classes.emplace_back();
      classes.back().id = it->second;
      classes.back().key = std::move(key);
    }
    classes[it->second].members.push_back(component.id);
  }
  for (SignatureClass& signature : classes)
    liftConstants(signature, components);
  return classes;
}

} // namespace widefuse
