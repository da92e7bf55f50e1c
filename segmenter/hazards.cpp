#include "segmenter/hazards.h"

#include <fmt/format.h>

namespace widefuse {
namespace {

/// The block of a block reduction's result, 0 for any other value.
int64_t blockOf(const Value* value) {
  const Expr* definition = value->definition();
  bool block = definition && definition->attributes().reduction == ReductionScope::Block;
  return block ? definition->attributes().block : 0;
}

/// Why `alias.destination` is read at positions other than the one its element is written
/// to, or an empty string when every read is at the written position. A block's element (a
/// quantized tensor's scale) read through expand_blocks by the elements of that block, and
/// written with a block result of the same blocks, is read and written by one block only.
std::string crossPositionRead(const Component& component, const Alias& alias) {
  const Value* destination = alias.destination;
  if (destination->rank() == 0 && !component.domain.empty())
    return fmt::format("'{}' is 0-d and every element of the {} domain reads it",
                       destination->name(), formatExtents(component.domain));
  for (const Expr* expr : component.exprs) {
    if (expr->operands().empty() || expr->operand(0) != destination)
      continue;
    if (expr->op() == OpKind::BroadcastInDim)
      return fmt::format("'{}' is read through broadcast_in_dim into '{}'", destination->name(),
                         expr->result()->name());
    if (expr->op() == OpKind::ExpandBlocks && blockOf(alias.source) != expr->attributes().block)
      return fmt::format("'{}' is read through expand_blocks into '{}' by blocks of {}, but "
                         "'{}' is not a reduction over those blocks",
                         destination->name(), expr->result()->name(), expr->attributes().block,
                         alias.source->name());
  }
  return {};
}

} // namespace

std::vector<HazardPlan> planAliases(llvm::ArrayRef<Component> components) {
  std::vector<HazardPlan> plans;
  for (const Component& component : components)
    for (const Alias& alias : component.aliases) {
      HazardPlan plan;
      plan.component = component.id;
      plan.alias = alias;
      std::string why = crossPositionRead(component, alias);
      if (why.empty()) {
        plan.resolution = HazardResolution::InPlace;
        plan.note =
            blockOf(alias.source)
                ? fmt::format("'{}' is read and written by the block of {} elements it belongs to",
                              alias.destination->name(), blockOf(alias.source))
                : fmt::format("'{}' is read and written at the same position",
                              alias.destination->name());
      } else {
        plan.resolution = HazardResolution::DeferredWrite;
        plan.note = why + "; written once after every block has read it";
      }
      plans.push_back(std::move(plan));
    }
  return plans;
}

} // namespace widefuse
