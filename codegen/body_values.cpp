#include "codegen/body_values.h"

#include "codegen/constant_literal.h"
#include "ir/error.h"
#include "scheduler/element_views.h"
#include "segmenter/components.h"

#include <fmt/format.h>

namespace widefuse {
namespace {

std::string viewKey(const ElementView& view) {
  return fmt::format("{}", fmt::join(view, ","));
}

} // namespace

BodyValues::BodyValues(const KernelPlan& plan, const BodyPlan& body)
    : body_(body), component_(plan.phase->components[body.representative]),
      signature_(plan.phase->signatureClasses[body.signatureClass]) {
  mapLiftedUses();
  for (const ElementInstance& instance : body.elementInstances)
    instanceName_[{instance.value, viewKey(instance.view)}] = instance.name;
  for (const ElementInstance& instance : body.uniformValues)
    uniformName_[instance.value] = instance.name;
  // The body's block slots follow the component's block reductions in order.
  size_t next = 0;
  for (const Expr* expr : component_.exprs)
    if (expr->attributes().reduction == ReductionScope::Block)
      blockOf_[expr->result()] = &body.blocks[next++];
}

void BodyValues::mapLiftedUses() {
  // Positions count constant uses in the order of segmenter's constantsOf().
  llvm::DenseMap<unsigned, std::string> slotOfPosition;
  for (const Slot& slot : body_.slots)
    if (slot.kind == SlotKind::LiftedConstant)
      slotOfPosition[signature_.lifted[slot.source.index].position] = slot.name;
  unsigned position = 0;
  for (const Expr* expr : component_.exprs)
    for (unsigned i = 0; i < expr->operands().size(); ++i)
      if (expr->operand(i)->isConstant()) {
        auto found = slotOfPosition.find(position++);
        if (found != slotOfPosition.end())
          liftedOperand_[{expr, i}] = found->second;
      }
  for (unsigned i = 0; i < component_.aliases.size(); ++i)
    if (component_.aliases[i].source->isConstant()) {
      auto found = slotOfPosition.find(position++);
      if (found != slotOfPosition.end())
        liftedAliasSource_[i] = found->second;
    }
}

OperandText BodyValues::valueText(const Value* value, const ElementView* view) const {
  if (value->isConstant())
    return {"", value};
  if (isUniformValue(*value, component_)) {
    auto found = uniformName_.find(value);
    WF_ASSERT(found != uniformName_.end(), "no uniform value for '{}'", value->name());
    return {"u." + found->second};
  }
  WF_ASSERT(view, "element value '{}' read outside the element function", value->name());
  if (const BlockSlot* block = blockOf_.lookup(value))
    return {"blk." + block->name};
  auto found = instanceName_.find({value, viewKey(*view)});
  WF_ASSERT(found != instanceName_.end(), "no instance of '{}'", value->name());
  return {(isKernelInput(*value) ? "in." : "") + found->second};
}

OperandText BodyValues::operandText(const Expr& expr, unsigned index,
                                    const ElementView* view) const {
  auto lifted = liftedOperand_.find({&expr, index});
  if (lifted != liftedOperand_.end())
    return {"u." + lifted->second};
  if (view && expr.op() == OpKind::ExpandBlocks) { // the element of the block
    ElementView byBlocks = blockView(expr.attributes().block);
    return valueText(expr.operand(index), &byBlocks);
  }
  if (!view || expr.op() != OpKind::BroadcastInDim || view->empty())
    return valueText(expr.operand(index), view);
  ElementView operandView;
  for (int64_t resultDim : expr.attributes().broadcastDims)
    operandView.push_back((*view)[size_t(resultDim)]);
  return valueText(expr.operand(index), &operandView);
}

const Value* BodyValues::writtenValue(const Slot& slot, bool& liftedSource) const {
  liftedSource = false;
  if (slot.source.kind == SlotSource::Kind::Output)
    return component_.outputs[slot.source.index];
  const Value* destination = component_.inputs[slot.source.index];
  for (unsigned i = 0; i < component_.aliases.size(); ++i)
    if (component_.aliases[i].destination == destination) {
      liftedSource = liftedAliasSource_.count(i) != 0;
      return component_.aliases[i].source;
    }
  WF_UNREACHABLE("written slot '{}' has no copy_", slot.name);
}

std::string BodyValues::writtenValueText(const Slot& slot) const {
  bool liftedSource = false;
  const Value* source = writtenValue(slot, liftedSource);
  if (liftedSource) {
    for (unsigned i = 0; i < component_.aliases.size(); ++i)
      if (component_.aliases[i].source == source && liftedAliasSource_.count(i))
        return convertedText("u." + liftedAliasSource_.lookup(i), source->dtype(), slot.dtype);
  }
  if (source->isConstant())
    return constantLiteral(*source, slot.dtype);
  const ElementView* view = slot.kind == SlotKind::ElementTensor ? &slot.view : nullptr;
  return convertedText(valueText(source, view).text, source->dtype(), slot.dtype);
}

std::string BodyValues::blockOperandText(const BlockSlot& slot) const {
  for (auto [value, block] : blockOf_)
    if (block == &slot) {
      ElementView identity;
      if (body_.indexing == Indexing::Strided)
        for (unsigned d = 0; d < body_.domainRank; ++d)
          identity.push_back(int64_t(d));
      return valueText(value->definition()->operand(0), &identity).text;
    }
  WF_UNREACHABLE("block slot '{}' is not the body's", slot.name);
}

std::string BodyValues::blockWrittenText(const Slot& slot, llvm::StringRef blocks) const {
  const BlockSlot& block = body_.blocks[slot.blockSource];
  return convertedText(blocks.str() + "." + block.name, block.result, slot.dtype);
}

std::string BodyValues::reducedValueText(const ReductionSlot& slot) const {
  auto [reduction, operand] = component_.contributions[slot.contribution];
  ElementView identity;
  if (body_.indexing == Indexing::Strided)
    for (unsigned d = 0; d < body_.domainRank; ++d)
      identity.push_back(int64_t(d));
  return valueText(reduction->operand(operand), &identity).text;
}

} // namespace widefuse
