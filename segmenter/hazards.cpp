#include "segmenter/hazards.h"

#include <fmt/format.h>

namespace widefuse {
namespace {

/// Why `destination` is read at positions other than the one its element is written to,
/// or an empty string when every read is at the written position.
std::string crossPositionRead(const Component& component, const Value* destination) {
  if (destination->rank() == 0 && !component.domain.empty())
    return fmt::format("'{}' is 0-d and every element of the {} domain reads it",
                       destination->name(), formatExtents(component.domain));
  for (const Expr* expr : component.exprs)
    if (expr->op() == OpKind::BroadcastInDim && expr->operand(0) == destination)
      return fmt::format("'{}' is read through broadcast_in_dim into '{}'", destination->name(),
                         expr->result()->name());
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
      std::string why = crossPositionRead(component, alias.destination);
      if (why.empty()) {
        plan.resolution = HazardResolution::InPlace;
        plan.note =
            fmt::format("'{}' is read and written at the same position", alias.destination->name());
      } else {
        plan.resolution = HazardResolution::DeferredWrite;
        plan.note = why + "; written once after every block has read it";
      }
      plans.push_back(std::move(plan));
    }
  return plans;
}

} // namespace widefuse
