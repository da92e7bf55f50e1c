#include "segmenter/components.h"

#include "ir/error.h"
#include "ir/reduction.h"
#include "segmenter/component_parts.h"
#include "segmenter/iteration_domains.h"

#include <fmt/format.h>

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/IntEqClasses.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>

namespace widefuse {
namespace {

/// What one phase of a fusion computes, writes and returns (all of it for a fusion of one
/// phase), and which values it reads from earlier phases.
class PhaseWork {
public:
  PhaseWork(const Fusion& fusion, const PhasePlan& plan, unsigned phase)
      : plan_(plan), phase_(phase) {
    for (size_t a = 0; a < fusion.aliases().size(); ++a)
      if (plan.aliasPhase[a] == phase)
        aliases_.push_back(fusion.aliases()[a]);
    for (size_t o = 0; o < fusion.outputs().size(); ++o)
      if (plan.outputPhase[o] == phase)
        outputs_.push_back(fusion.outputs()[o]);
  }

  /// True for an expression of this phase that is not a phase reduction (a block reduction
  /// is: its kernel reads it).
  bool computes(const Expr& expr) const {
    return !isPhaseReduction(expr) && plan_.phaseNeeds(phase_, *expr.result());
  }
  /// True for a reduction this phase computes.
  bool reduces(const Expr& expr) const { return plan_.reductionPhase[expr.id()] == phase_; }
  /// True for a reduction result an earlier phase computed: read from memory here.
  bool kept(const Value& value) const { return plan_.computedBefore(value, phase_); }
  llvm::ArrayRef<Alias> aliases() const { return aliases_; }
  llvm::ArrayRef<const Value*> outputs() const { return outputs_; }

private:
  const PhasePlan& plan_;
  unsigned phase_;
  llvm::SmallVector<Alias, 8> aliases_;
  llvm::SmallVector<const Value*, 4> outputs_;
};

/// Values that belong to no component: scalars, constants, read-only 0-d inputs (earlier
/// phases' 0-d results among them) and 0-d values computed only from such values, unless
/// written or returned; and always extent values (size), which kernels read like scalar
/// inputs. An input or constant copied into several tensors stays shared: it is read, like
/// any other, and must not join the subgraphs it is copied into (their tensors may differ in
/// shape at run time).
ValueSet findSharedValues(const Fusion& fusion, const PhaseWork& work) {
  ValueSet pinned(fusion); // written, computed and copied from, or returned as an input
  for (const Alias& alias : work.aliases()) {
    pinned.insert(alias.destination);
    if (!alias.source->isInput() && !alias.source->isConstant() && !work.kept(*alias.source))
      pinned.insert(alias.source);
  }
  // A returned value computed from shared values stays shared (a 0-d program of its own
  // writes it), so that the components reading it do not become one: the clip coefficient's
  // total norm, returned and read by every parameter.
  for (const Value* output : work.outputs())
    if (output->isInput())
      pinned.insert(output);
  ValueSet shared(fusion);
  for (size_t id = 0; id < fusion.numValues(); ++id) {
    const Value* value = fusion.value(unsigned(id));
    bool candidate = value->isScalar() || value->rank() == 0;
    if (!candidate || pinned.count(value))
      continue;
    if (value->isInput() || value->isConstant() || work.kept(*value))
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
    if (!work.computes(*expr) || pinned.count(result) || (result->isTensor() && result->rank() > 0))
      continue;
    if (llvm::all_of(expr->operands(), [&](const Value* v) { return shared.count(v); }))
      shared.insert(result);
  }
  return shared;
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
  // A reduction's operand spans the domain of the component computing it.
  for (auto [reduction, operand] : component.contributions)
    written.push_back({reduction->operand(operand), nullptr});
  const Value* domainDestination = nullptr;
  for (auto [writtenValue, destination] : written) {
    const Value* value = spannedValue(writtenValue);
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
llvm::IntEqClasses unionOfConnectedValues(const Fusion& fusion, const ValueSet& shared,
                                          const PhaseWork& work) {
  // Union-find over value ids: a flat array, much cheaper than a set of nodes for thousands
  // of parameters.
  llvm::IntEqClasses classes(unsigned(fusion.numValues()));
  auto join = [&](const Value* a, const Value* b) {
    if (!shared.count(a) && !shared.count(b))
      classes.join(a->id(), b->id());
  };
  for (size_t id = 0; id < fusion.numExprs(); ++id) {
    const Expr* expr = fusion.expr(unsigned(id));
    // A reduction joins nothing: each operand's cone stays in the operand's component, so a
    // global one over every parameter does not make the parameters one component.
    if (shared.count(expr->result()) || !work.computes(*expr))
      continue;
    for (const Value* operand : expr->operands())
      join(expr->result(), operand);
  }
  for (const Alias& alias : work.aliases())
    join(alias.source, alias.destination);
  return classes;
}

/// Orders a component's expressions canonically and lists its inputs: shared scalar
/// expressions first (they read only shared values), then its own, each in fusion order,
/// whatever member first built them.
void finishComponent(const Fusion& fusion, Component& component,
                     const llvm::DenseSet<const Expr*>& exprs, const ValueSet& shared) {
  component.exprs.assign(exprs.begin(), exprs.end());
  llvm::sort(component.exprs, [&](const Expr* a, const Expr* b) {
    bool aShared = shared.count(a->result()), bShared = shared.count(b->result());
    return aShared != bShared ? aShared : a->id() < b->id();
  });
  llvm::DenseSet<const Value*> seen;
  auto addInput = [&](const Value* value) {
    if (isKernelInput(*value) && seen.insert(value).second)
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
  for (auto [reduction, operand] : component.contributions)
    addInput(reduction->operand(operand));
  assignDomain(fusion, component);
}

/// Gives each operand of a reduction to the component computing it.
template <typename ComponentOf>
void addContributions(const Fusion& fusion, const Expr& reduction, const ValueSet& shared,
                      ComponentOf&& componentOf) {
  for (unsigned k = 0; k < reduction.operands().size(); ++k) {
    const Value* operand = reduction.operand(k);
    if (shared.count(operand) || operand->rank() == 0)
      fail("fusion '{}': '{}' reduces the 0-d value '{}'; kernels reduce tensors of rank >= 1 "
           "only so far (the reference backend runs it)",
           fusion.name(), reduction.result()->name(), operand->name());
    componentOf(operand).contributions.push_back({&reduction, k});
  }
}

/// Adds the components of one part of subgraph `subgraph` to `result`: the part itself, or
/// its parts by the way they reduce, bodies of one launch (one launch unit).
void addLaunchUnit(const Fusion& fusion, ComponentPart part, unsigned subgraph,
                   const ValueSet& shared, std::vector<Component>& result) {
  std::vector<ComponentPart> ways = splitByReduction(part.component, part.exprs, shared);
  if (!ways.empty())
    if (std::optional<std::string> hazard = reductionPartHazard(fusion, ways))
      fail("{}", *hazard);
  if (ways.empty())
    ways.push_back(std::move(part));
  unsigned unit = unsigned(result.size());
  for (ComponentPart& way : ways) {
    way.component.id = unsigned(result.size());
    way.component.subgraph = subgraph;
    way.component.launchUnit = unit;
    finishComponent(fusion, way.component, way.exprs, shared);
    result.push_back(std::move(way.component));
  }
}

/// The components of one phase.
std::vector<Component> findPhaseComponents(const Fusion& fusion, const PhaseWork& work,
                                           const IterationDomains& domains) {
  ValueSet shared = findSharedValues(fusion, work);
  llvm::IntEqClasses classes = unionOfConnectedValues(fusion, shared, work);
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
    // A reduction nothing reads or returns is not computed (its operands' checks stay
    // run-time's); one read in a later phase, or returned, is this phase's.
    if (work.reduces(*expr))
      addContributions(fusion, *expr, shared, componentOf);
    if (shared.count(expr->result()) || !work.computes(*expr))
      continue;
    Component& component = componentOf(expr->result());
    if (exprSets.size() < components.size())
      exprSets.resize(components.size());
    exprSets[component.id].insert(expr);
    collectSharedCone(expr, shared, exprSets[component.id]);
  }
  for (const Alias& alias : work.aliases())
    componentOf(alias.destination).aliases.push_back(alias);
  for (const Value* output : work.outputs())
    if (!isPhaseReductionResult(*output))
      componentOf(output).outputs.push_back(output);
  exprSets.resize(components.size());
  for (const Value* output : work.outputs())
    if (shared.count(output) && output->definition()) { // computed by a 0-d program of its own
      auto& exprs = exprSets[componentOf(output).id];
      exprs.insert(output->definition());
      collectSharedCone(output->definition(), shared, exprs);
    }
  // Each component splits where its writes provably differ in shape. Where a part would
  // read what another writes, parts that may share one shape stay one kernel (checked at
  // run time, as a subgraph joined through a written 0-d step counter is).
  std::vector<Component> result;
  for (Component& component : components) {
    unsigned id = component.id;
    std::vector<ComponentPart> parts = splitByDomain(domains, component, exprSets[id], shared);
    if (!parts.empty()) {
      if (std::optional<std::string> hazard = domainPartHazard(fusion, parts)) {
        if (!mayShareDomain(component))
          fail("{}", *hazard);
        parts.clear(); // one kernel after all: the component itself
      }
    }
    if (parts.empty())
      parts.push_back({std::move(component), std::move(exprSets[id])});
    for (ComponentPart& part : parts)
      addLaunchUnit(fusion, std::move(part), id, shared, result);
  }
  return result;
}

} // namespace

bool isKernelInput(const Value& value) {
  return value.isInput() || isExtentValue(value) || isPhaseReductionResult(value);
}

namespace {
std::atomic<uint64_t> searches{0};
} // namespace

uint64_t componentSearches() {
  return searches.load(std::memory_order_relaxed);
}

FusionComponents findComponents(const Fusion& fusion) {
  searches.fetch_add(1, std::memory_order_relaxed);
  FusionComponents found;
  found.phases = planPhases(fusion);
  IterationDomains domains(fusion);
  for (unsigned phase = 0; phase < found.phases.count; ++phase)
    found.ofPhase.push_back(
        findPhaseComponents(fusion, PhaseWork(fusion, found.phases, phase), domains));
  return found;
}

} // namespace widefuse
