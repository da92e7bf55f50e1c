#include "segmenter/components.h"

#include "ir/error.h"

#include <fmt/format.h>

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/IntEqClasses.h>

#include <algorithm>

namespace widefuse {
namespace {

/// Values that belong to no component: scalars, constants, read-only 0-d inputs and 0-d
/// values computed only from such values, unless written or returned; and always extent
/// values (size), which kernels read like scalar inputs. An input or constant
/// copied into several tensors stays shared: it is read, like any other, and must not join
/// the subgraphs it is copied into (their tensors may differ in shape at run time).
llvm::DenseSet<const Value*> findSharedValues(const Fusion& fusion) {
  llvm::DenseSet<const Value*> pinned; // written, computed and copied from, or returned
  for (const Alias& alias : fusion.aliases()) {
    pinned.insert(alias.destination);
    if (!alias.source->isInput() && !alias.source->isConstant())
      pinned.insert(alias.source);
  }
  for (const Value* output : fusion.outputs())
    pinned.insert(output);
  llvm::DenseSet<const Value*> shared;
  for (size_t id = 0; id < fusion.numValues(); ++id) {
    const Value* value = fusion.value(unsigned(id));
    bool candidate = value->isScalar() || value->rank() == 0;
    if (!candidate || pinned.count(value))
      continue;
    if (value->isInput() || value->isConstant())
      shared.insert(value);
  }
  // Expressions are in topological order, so operands are classified before their users.
  for (size_t id = 0; id < fusion.numExprs(); ++id) {
    const Expr* expr = fusion.expr(unsigned(id));
    const Value* result = expr->result();
    if (isExtentValue(*result)) { // read like an input by every component that uses it
      shared.insert(result);
      continue;
    }
    if (pinned.count(result) || (result->isTensor() && result->rank() > 0))
      continue;
    if (llvm::all_of(expr->operands(), [&](const Value* v) { return shared.count(v); }))
      shared.insert(result);
  }
  return shared;
}

/// Adds the shared expressions `expr` reads, transitively, to `needed`.
void collectSharedCone(const Expr* expr, const llvm::DenseSet<const Value*>& shared,
                       llvm::DenseSet<const Expr*>& needed) {
  for (const Value* operand : expr->operands()) {
    const Expr* definition = operand->definition();
    if (isExtentValue(*operand)) // bound from the shapes, not computed in the kernel
      continue;
    if (definition && shared.count(operand) && needed.insert(definition).second)
      collectSharedCone(definition, shared, needed);
  }
}

/// Describes a written value for messages: the input it is copied into, or the output.
std::string describeWrite(const Value* value, const Value* destination) {
  if (destination)
    return fmt::format("'{}' (copy_ of '{}')", destination->name(), value->name());
  return fmt::format("output '{}'", value->name());
}

/// Fills the iteration domain: the shape every written non-0-d tensor shares.
void assignDomain(const Fusion& fusion, Component& component) {
  llvm::SmallVector<std::pair<const Value*, const Value*>, 4> written; // (value, destination)
  for (const Alias& alias : component.aliases)
    written.push_back({alias.source, alias.destination});
  for (const Value* output : component.outputs)
    written.push_back({output, nullptr});
  const Value* domainDestination = nullptr;
  for (auto [value, destination] : written) {
    if (!value->isTensor() || value->rank() == 0)
      continue;
    if (!component.domainValue) {
      component.domainValue = value;
      domainDestination = destination;
      component.domain.assign(value->extents().begin(), value->extents().end());
      continue;
    }
    bool same = value->rank() == component.domain.size();
    for (size_t d = 0; same && d < value->rank(); ++d) {
      int64_t a = value->extents()[d], b = component.domain[d];
      same = a == b || a == kSymbolicExtent || b == kSymbolicExtent;
      if (same && b == kSymbolicExtent)
        component.domain[d] = a;
    }
    if (!same)
      fail("fusion '{}': one subgraph writes {} of shape {} and {} of shape {}; a kernel "
           "has one iteration domain, and keeping both correct would need a kernel "
           "boundary, which widefuse does not insert (split the fusion or broadcast "
           "explicitly)",
           fusion.name(), describeWrite(component.domainValue, domainDestination),
           formatExtents(component.domainValue->extents()), describeWrite(value, destination),
           formatExtents(value->extents()));
  }
  if (!component.domainValue && !written.empty())
    component.domainValue = written.front().first; // a 0-d program (a lone step counter)
}

/// Joins values into classes: an expression with its operands, a copy_'s source with its
/// destination; shared values (read by several components) join nothing.
llvm::IntEqClasses unionOfConnectedValues(const Fusion& fusion,
                                          const llvm::DenseSet<const Value*>& shared) {
  // Union-find over value ids: a flat array, much cheaper than a set of nodes for thousands
  // of parameters.
  llvm::IntEqClasses classes(unsigned(fusion.numValues()));
  auto join = [&](const Value* a, const Value* b) {
    if (!shared.count(a) && !shared.count(b))
      classes.join(a->id(), b->id());
  };
  for (size_t id = 0; id < fusion.numExprs(); ++id) {
    const Expr* expr = fusion.expr(unsigned(id));
    if (shared.count(expr->result()))
      continue;
    for (const Value* operand : expr->operands())
      join(expr->result(), operand);
  }
  for (const Alias& alias : fusion.aliases())
    join(alias.source, alias.destination);
  return classes;
}

/// Orders a component's expressions canonically and lists its inputs: shared scalar
/// expressions first (they read only shared values), then its own, each in fusion order,
/// whatever member first built them.
void finishComponent(const Fusion& fusion, Component& component,
                     const llvm::DenseSet<const Expr*>& exprs,
                     const llvm::DenseSet<const Value*>& shared) {
  component.exprs.assign(exprs.begin(), exprs.end());
  llvm::sort(component.exprs, [&](const Expr* a, const Expr* b) {
    bool aShared = shared.count(a->result()), bShared = shared.count(b->result());
    return aShared != bShared ? aShared : a->id() < b->id();
  });
  llvm::DenseSet<const Value*> seen;
  auto addInput = [&](const Value* value) {
    if ((value->isInput() || isExtentValue(*value)) && seen.insert(value).second)
      component.inputs.push_back(value);
  };
  for (const Expr* expr : component.exprs)
    for (const Value* operand : expr->operands())
      addInput(operand);
  for (const Alias& alias : component.aliases) {
    addInput(alias.source);
    addInput(alias.destination);
  }
  for (const Value* output : component.outputs)
    addInput(output);
  assignDomain(fusion, component);
}

} // namespace

std::vector<Component> findComponents(const Fusion& fusion) {
  llvm::DenseSet<const Value*> shared = findSharedValues(fusion);
  llvm::IntEqClasses classes = unionOfConnectedValues(fusion, shared);
  // Number components by their first expression (or written input) in fusion order.
  constexpr unsigned kNone = ~0u;
  std::vector<unsigned> componentOfLeader(fusion.numValues(), kNone);
  std::vector<Component> components;
  auto componentOf = [&](const Value* value) -> Component& {
    unsigned& slot = componentOfLeader[classes.findLeader(value->id())];
    if (slot == kNone) {
      slot = unsigned(components.size());
      components.emplace_back();
      components.back().id = slot;
    }
    return components[slot];
  };
  std::vector<llvm::DenseSet<const Expr*>> exprSets;
  for (size_t id = 0; id < fusion.numExprs(); ++id) {
    const Expr* expr = fusion.expr(unsigned(id));
    if (shared.count(expr->result()))
      continue;
    Component& component = componentOf(expr->result());
    if (exprSets.size() < components.size())
      exprSets.resize(components.size());
    exprSets[component.id].insert(expr);
    collectSharedCone(expr, shared, exprSets[component.id]);
  }
  for (const Alias& alias : fusion.aliases())
    componentOf(alias.destination).aliases.push_back(alias);
  for (const Value* output : fusion.outputs())
    componentOf(output).outputs.push_back(output);
  exprSets.resize(components.size());
  for (Component& component : components)
    finishComponent(fusion, component, exprSets[component.id], shared);
  return components;
}

} // namespace widefuse
