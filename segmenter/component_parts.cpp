#include "segmenter/component_parts.h"

#include "ir/reduction.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace widefuse {

void collectSharedCone(const Expr* expr, const ValueSet& shared,
                       llvm::DenseSet<const Expr*>& needed) {
  for (const Value* operand : expr->operands()) {
    const Expr* definition = operand->definition();
    // Bound from the shapes, or an earlier phase's result: read, not computed in the kernel.
    if (isExtentValue(*operand) || isPhaseReductionResult(*operand))
      continue;
    if (definition && shared.count(operand) && needed.insert(definition).second)
      collectSharedCone(definition, shared, needed);
  }
}

const Value* spannedValue(const Value* written) {
  while (isBlockReductionResult(*written))
    written = written->definition()->operand(0);
  return written;
}

namespace {

/// The expressions that compute `value` inside its component (the shared scalar expressions
/// it reads included), added to `cone`.
void collectCone(const Value* value, const llvm::DenseSet<const Expr*>& component,
                 const ValueSet& shared, llvm::DenseSet<const Expr*>& cone) {
  const Expr* definition = value->definition();
  if (!definition || shared.count(value) || !component.count(definition) ||
      !cone.insert(definition).second)
    return;
  collectSharedCone(definition, shared, cone);
  for (const Value* operand : definition->operands())
    collectCone(operand, component, shared, cone);
}

/// One thing a component writes: an in-place update, an output, or the operand it reduces
/// (which spans a domain too).
struct Write {
  const Value* value;
  const Alias* alias = nullptr;
  const Contribution* contribution = nullptr;
};

/// What `component` writes: tensors of rank >= 1 first, so that 0-d writes join a real part.
llvm::SmallVector<Write, 8> writesOf(const Component& component) {
  llvm::SmallVector<Write, 8> written;
  for (bool zeroD : {false, true}) {
    for (const Alias& alias : component.aliases)
      if ((alias.source->rank() == 0) == zeroD)
        written.push_back({alias.source, &alias});
    for (const Value* output : component.outputs)
      if ((output->rank() == 0) == zeroD)
        written.push_back({output});
    for (const Contribution& contribution : component.contributions)
      if (!zeroD) // kernels reduce operands of rank >= 1 only
        written.push_back(
            {contribution.first->operand(contribution.second), nullptr, &contribution});
  }
  return written;
}

/// The parts that compute `written[i]` in part `partOf[i]`, each with the cone of its writes,
/// aliases and outputs in the component's order.
std::vector<ComponentPart> assembleParts(const Component& component,
                                         const llvm::DenseSet<const Expr*>& exprs,
                                         const ValueSet& shared, llvm::ArrayRef<Write> written,
                                         llvm::ArrayRef<size_t> partOf, size_t partCount) {
  std::vector<ComponentPart> parts(partCount);
  for (size_t i = 0; i < written.size(); ++i) {
    const Write& write = written[i];
    ComponentPart& part = parts[partOf[i]];
    if (write.alias)
      part.component.aliases.push_back(*write.alias);
    else if (write.contribution)
      part.component.contributions.push_back(*write.contribution);
    else
      part.component.outputs.push_back(write.value);
    collectCone(write.value, exprs, shared, part.exprs);
  }
  auto position = [&](const Alias& alias) {
    return llvm::find_if(
               component.aliases,
               [&](const Alias& other) { return other.destination == alias.destination; }) -
           component.aliases.begin();
  };
  for (ComponentPart& part : parts) {
    llvm::sort(part.component.aliases,
               [&](const Alias& a, const Alias& b) { return position(a) < position(b); });
    llvm::sort(part.component.outputs, [&](const Value* a, const Value* b) {
      return llvm::find(component.outputs, a) < llvm::find(component.outputs, b);
    });
  }
  return parts;
}

/// A copy_ destination one part writes and another reads.
struct CrossRead {
  const ComponentPart* writer;
  const Alias* alias;
  const ComponentPart* reader;
};

/// True when `part` reads `value`: an operand of its expressions, or a value it writes or
/// reduces as it is (an input copied to an output, reduced without an expression).
bool reads(const ComponentPart& part, const Value* value) {
  const Component& component = part.component;
  return llvm::any_of(
             part.exprs,
             [&](const Expr* expr) { return llvm::is_contained(expr->operands(), value); }) ||
         llvm::any_of(component.aliases,
                      [&](const Alias& alias) { return alias.source == value; }) ||
         llvm::is_contained(component.outputs, value) ||
         llvm::any_of(component.contributions, [&](const Contribution& contribution) {
           return contribution.first->operand(contribution.second) == value;
         });
}

std::optional<CrossRead> findCrossRead(llvm::ArrayRef<ComponentPart> parts) {
  for (const ComponentPart& writer : parts)
    for (const Alias& alias : writer.component.aliases)
      for (const ComponentPart& reader : parts) {
        if (&reader == &writer)
          continue;
        if (reads(reader, alias.destination))
          return CrossRead{&writer, &alias, &reader};
      }
  return std::nullopt;
}

/// The first write a part makes (for messages).
const Value* firstWrite(const Component& component) {
  if (!component.aliases.empty())
    return component.aliases.front().source;
  if (!component.outputs.empty())
    return component.outputs.front();
  auto [reduction, operand] = component.contributions.front();
  return reduction->operand(operand);
}

/// The ways a body reduces, in splitByReduction's order of parts: all elements, blocks, then
/// rows by the dimensions after the reduced one.
constexpr int kOverAll = 0;
constexpr int kByBlocks = 1;
constexpr int kOverRows = 2; ///< plus the static 1s after the reduced dimension

int wayOf(const Expr& reduction) {
  if (reduction.attributes().reduction != ReductionScope::Rows)
    return kOverAll;
  const Value* operand = reduction.operand(0);
  return kOverRows + int(operand->rank()) - 1 - int(reduction.attributes().dim);
}

/// reductionWay of a component with these contributions computing `exprs`.
template <typename Exprs>
std::string waysInWords(llvm::ArrayRef<Contribution> contributions, const Exprs& exprs) {
  std::map<int, std::string> ways;
  for (auto [reduction, operand] : contributions)
    ways.emplace(wayOf(*reduction),
                 wayOf(*reduction) == kOverAll
                     ? std::string("over all elements")
                     : fmt::format("over rows of dimension {}", reduction->attributes().dim));
  if (llvm::any_of(exprs, [](const Expr* expr) { return expr->attributes().block > 0; }))
    ways.emplace(kByBlocks, "by blocks");
  if (ways.empty())
    return "nothing";
  std::vector<std::string> words;
  for (auto& [way, text] : ways)
    words.push_back(text);
  return fmt::format("{}", fmt::join(words, " and "));
}

} // namespace

std::vector<ComponentPart> splitByDomain(const IterationDomains& domains,
                                         const Component& component,
                                         const llvm::DenseSet<const Expr*>& exprs,
                                         const ValueSet& shared) {
  llvm::SmallVector<Write, 8> written = writesOf(component);
  std::vector<llvm::SmallVector<int64_t, 4>> keys;
  llvm::SmallVector<size_t, 8> partOf;
  for (const Write& write : written) {
    const Value* value = spannedValue(write.value);
    llvm::SmallVector<int64_t, 4> key = domains.keyOf(value);
    if (value->rank() == 0 && !keys.empty()) {
      partOf.push_back(0);
      continue;
    }
    auto found = llvm::find(keys, key);
    partOf.push_back(size_t(found - keys.begin()));
    if (found == keys.end())
      keys.push_back(key);
  }
  if (keys.size() <= 1) // the common case (every optimizer step): the component itself
    return {};
  return assembleParts(component, exprs, shared, written, partOf, keys.size());
}

std::vector<ComponentPart> splitByReduction(const Component& component,
                                            const llvm::DenseSet<const Expr*>& exprs,
                                            const ValueSet& shared) {
  llvm::SmallVector<Write, 8> written = writesOf(component);
  constexpr int kAny = -1; // a write that reads no reduction
  llvm::SmallVector<int, 8> ways;
  std::map<int, size_t> partOfWay; // ordered: the order of the parts
  for (const Write& write : written) {
    int way = kAny;
    if (write.contribution) {
      way = wayOf(*write.contribution->first);
    } else {
      llvm::DenseSet<const Expr*> cone;
      collectCone(write.value, exprs, shared, cone);
      if (llvm::any_of(cone, [](const Expr* expr) { return expr->attributes().block > 0; }))
        way = kByBlocks;
    }
    ways.push_back(way);
    if (way != kAny)
      partOfWay.emplace(way, 0);
  }
  if (partOfWay.size() <= 1)
    return {};
  size_t next = 0;
  for (auto& [way, part] : partOfWay)
    part = next++;
  llvm::SmallVector<size_t, 8> partOf;
  for (int way : ways)
    partOf.push_back(way == kAny ? 0 : partOfWay[way]);
  return assembleParts(component, exprs, shared, written, partOf, partOfWay.size());
}

std::optional<std::string> domainPartHazard(const Fusion& fusion,
                                            llvm::ArrayRef<ComponentPart> parts) {
  std::optional<CrossRead> read = findCrossRead(parts);
  if (!read)
    return std::nullopt;
  const Alias& alias = *read->alias;
  const Value* other = firstWrite(read->reader->component);
  return fmt::format("fusion '{}': one subgraph writes '{}' (copy_ of '{}') of shape {} and '{}' "
                     "of shape {}, which reads '{}'; tensors of different shapes are written by "
                     "different kernels, and that read would not see the entry value (read a "
                     "copy of '{}', or split the fusion)",
                     fusion.name(), alias.destination->name(), alias.source->name(),
                     formatExtents(alias.source->extents()), other->name(),
                     formatExtents(other->extents()), alias.destination->name(),
                     alias.destination->name());
}

std::optional<std::string> reductionPartHazard(const Fusion& fusion,
                                               llvm::ArrayRef<ComponentPart> parts) {
  std::optional<CrossRead> read = findCrossRead(parts);
  if (!read)
    return std::nullopt;
  const Alias& alias = *read->alias;
  return fmt::format(
      "fusion '{}': '{}' (copy_ of '{}') is written by the kernel body that reduces {} and "
      "read by the one that reduces {}; a body reduces one way, so the two run side by side "
      "in one launch, where that read could see the new value (read a copy of '{}', or split "
      "the fusion)",
      fusion.name(), alias.destination->name(), alias.source->name(),
      waysInWords(read->writer->component.contributions, read->writer->exprs),
      waysInWords(read->reader->component.contributions, read->reader->exprs),
      alias.destination->name());
}

bool mayShareDomain(const Component& component) {
  const Value* first = nullptr;
  auto compatible = [&](const Value* value) {
    if (!value->isTensor() || value->rank() == 0)
      return true;
    value = spannedValue(value);
    if (!first)
      first = value;
    if (value->rank() != first->rank())
      return false;
    for (size_t d = 0; d < value->rank(); ++d) {
      int64_t a = value->extents()[d], b = first->extents()[d];
      if (a != b && a != kSymbolicExtent && b != kSymbolicExtent)
        return false;
    }
    return true;
  };
  return llvm::all_of(component.aliases, [&](const Alias& a) { return compatible(a.source); }) &&
         llvm::all_of(component.outputs, compatible);
}

std::string reductionWay(const Component& component) {
  return waysInWords(component.contributions, component.exprs);
}

} // namespace widefuse
