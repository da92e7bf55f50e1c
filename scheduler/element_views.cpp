#include "scheduler/element_views.h"

#include <llvm/ADT/DenseMap.h>

#include <fmt/format.h>

namespace widefuse {

bool isUniformValue(const Value& value, const Component& component) {
  if (value.isScalar())
    return true;
  return value.rank() == 0 && !component.domain.empty();
}

ElementView blockView(int64_t block) {
  return {-2, block};
}

int64_t blockOfView(const ElementView& view) {
  return view.size() == 2 && view[0] == -2 ? view[1] : 0;
}

namespace {

/// The view a written value is needed under: a block reduction's result is written by blocks.
ElementView writtenView(const Value* value, const ElementView& identity) {
  const Expr* definition = value->definition();
  if (definition && definition->attributes().reduction == ReductionScope::Block)
    return blockView(definition->attributes().block);
  return identity;
}

using ViewLists = llvm::DenseMap<const Value*, llvm::SmallVector<ElementView, 1>>;

/// Records that `value` is needed under `view` (once per distinct view).
void need(ViewLists& needed, const Component& component, const Value* value,
          const ElementView& view) {
  if (isUniformValue(*value, component))
    return;
  auto& views = needed[value];
  if (llvm::find(views, view) == views.end())
    views.push_back(view);
}

/// Walks the expressions backwards from the written values: a broadcast_in_dim operand is
/// needed under the result's view composed with the broadcast dimensions, any other operand
/// under the result's view.
ViewLists neededViews(const Component& component, Indexing indexing) {
  ElementView identity;
  if (indexing == Indexing::Strided)
    for (size_t d = 0; d < component.domain.size(); ++d)
      identity.push_back(int64_t(d));
  ViewLists needed;
  for (const Alias& alias : component.aliases)
    need(needed, component, alias.source, writtenView(alias.source, identity));
  for (const Value* output : component.outputs)
    need(needed, component, output, writtenView(output, identity));
  for (auto [reduction, operand] : component.contributions)
    need(needed, component, reduction->operand(operand), identity);
  for (auto it = component.exprs.rbegin(); it != component.exprs.rend(); ++it) {
    const Expr* expr = *it;
    auto found = needed.find(expr->result());
    if (found == needed.end())
      continue;
    llvm::SmallVector<ElementView, 1> resultViews = found->second;
    for (const ElementView& view : resultViews)
      for (const Value* operand : expr->operands()) {
        // expand_blocks reads its operand by blocks; a block reduction reduces its operand's
        // elements where the domain has them.
        if (expr->op() == OpKind::ExpandBlocks) {
          need(needed, component, operand, blockView(expr->attributes().block));
          continue;
        }
        if (expr->attributes().reduction == ReductionScope::Block) {
          need(needed, component, operand, identity);
          continue;
        }
        if (expr->op() != OpKind::BroadcastInDim || indexing == Indexing::Flat) {
          need(needed, component, operand, view);
          continue;
        }
        ElementView operandView;
        for (int64_t resultDim : expr->attributes().broadcastDims)
          operandView.push_back(view[size_t(resultDim)]);
        need(needed, component, operand, operandView);
      }
  }
  return needed;
}

/// Appends one instance per needed view of `value`: the first view keeps the IR name.
void addInstances(const Value* value, const ViewLists& needed, CppNames& names,
                  std::vector<ElementInstance>& instances) {
  auto found = needed.find(value);
  if (found == needed.end())
    return;
  for (size_t k = 0; k < found->second.size(); ++k) {
    std::string base = k == 0 ? value->name() : fmt::format("{}_view{}", value->name(), k);
    instances.push_back({value, found->second[k], names.claim(base)});
  }
}

} // namespace

std::vector<ElementInstance> computeElementInstances(const Component& component, Indexing indexing,
                                                     CppNames& names) {
  ViewLists needed = neededViews(component, indexing);
  std::vector<ElementInstance> instances;
  for (const Value* input : component.inputs)
    addInstances(input, needed, names, instances);
  for (const Expr* expr : component.exprs)
    addInstances(expr->result(), needed, names, instances);
  return instances;
}

} // namespace widefuse
