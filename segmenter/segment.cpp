#include "segmenter/segment.h"

#include "ir/error.h"
#include "segmenter/component_parts.h"
#include "segmenter/components.h"
#include "segmenter/hazards.h"
#include "segmenter/signatures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <llvm/ADT/IntEqClasses.h>

#include <optional>

namespace widefuse {

llvm::StringRef modeName(SegmentationMode mode) {
  switch (mode) {
  case SegmentationMode::PerComponent:
    return "per-component";
  case SegmentationMode::Batched:
    return "batched";
  case SegmentationMode::Packed:
    return "packed";
  case SegmentationMode::Auto:
    return "auto";
  }
  WF_UNREACHABLE("unknown mode");
}

SegmentationMode parseMode(llvm::StringRef name) {
  for (SegmentationMode mode : {SegmentationMode::PerComponent, SegmentationMode::Batched,
                                SegmentationMode::Packed, SegmentationMode::Auto})
    if (modeName(mode) == name)
      return mode;
  fail("unknown mode '{}': use per-component, batched, packed or auto", name.str());
}

namespace {

/// The launch units of the phase: its components by Component::launchUnit (consecutive).
std::vector<llvm::ArrayRef<Component>> launchUnits(const SegmentedPhase& segmented) {
  std::vector<llvm::ArrayRef<Component>> units;
  llvm::ArrayRef<Component> components = segmented.components;
  for (size_t first = 0; first < components.size();) {
    size_t end = first + 1;
    while (end < components.size() && components[end].launchUnit == components[first].launchUnit)
      ++end;
    units.push_back(components.slice(first, end - first));
    first = end;
  }
  return units;
}

/// The signature classes that must share a launch, each set ascending, the sets ordered by
/// their first class: classes of one launch unit's components are one set, transitively.
std::vector<llvm::SmallVector<unsigned, 2>> classSets(const SegmentedPhase& segmented) {
  llvm::IntEqClasses joined(unsigned(segmented.signatureClasses.size()));
  for (llvm::ArrayRef<Component> unit : launchUnits(segmented))
    for (const Component& component : unit.drop_front())
      joined.join(segmented.classOfComponent[unit.front().id],
                  segmented.classOfComponent[component.id]);
  std::vector<llvm::SmallVector<unsigned, 2>> sets;
  std::vector<int> setOfLeader(segmented.signatureClasses.size(), -1);
  for (unsigned id = 0; id < segmented.signatureClasses.size(); ++id) {
    int& set = setOfLeader[joined.findLeader(id)];
    if (set < 0) {
      set = int(sets.size());
      sets.emplace_back();
    }
    sets[size_t(set)].push_back(id);
  }
  return sets;
}

/// Adds the classes in `set`, and all their members, to `group`.
void addClasses(const SegmentedPhase& segmented, llvm::ArrayRef<unsigned> set, LaunchGroup& group) {
  for (unsigned id : set) {
    const SignatureClass& signature = segmented.signatureClasses[id];
    group.signatureClasses.push_back(id);
    group.members.insert(group.members.end(), signature.members.begin(), signature.members.end());
  }
  llvm::sort(group.members);
}

void groupPerComponent(SegmentedPhase& segmented) {
  for (llvm::ArrayRef<Component> unit : launchUnits(segmented)) {
    LaunchGroup group{unsigned(segmented.groups.size()), {}, {}};
    for (const Component& component : unit) {
      unsigned id = segmented.classOfComponent[component.id];
      if (!llvm::is_contained(group.signatureClasses, id))
        group.signatureClasses.push_back(id);
      group.members.push_back(component.id);
    }
    llvm::sort(group.signatureClasses);
    segmented.groups.push_back(std::move(group));
  }
  segmented.notes.push_back(fmt::format(
      "per-component: one launch per component ({} launches); components of one signature "
      "class share a compiled kernel ({} kernels)",
      segmented.groups.size(), segmented.signatureClasses.size()));
}

/// True when every member of the class is a 0-d program (one element of work).
bool isZeroDimensionalClass(const SegmentedPhase& segmented, const SignatureClass& signature) {
  return llvm::all_of(signature.members,
                      [&](unsigned member) { return segmented.components[member].domain.empty(); });
}

/// One launch per signature class (per set of classes that share a launch); with `riders`,
/// the classes of 0-d programs join the launch of the first class with elements instead (as a
/// packed kernel's further bodies).
void groupBatched(SegmentedPhase& segmented, bool riders) {
  std::vector<llvm::SmallVector<unsigned, 2>> riding;
  std::optional<unsigned> host;
  for (const auto& set : classSets(segmented)) {
    bool zeroD = llvm::all_of(set, [&](unsigned id) {
      return isZeroDimensionalClass(segmented, segmented.signatureClasses[id]);
    });
    if (riders && zeroD) {
      riding.push_back(set);
      continue;
    }
    if (!zeroD && !host)
      host = unsigned(segmented.groups.size());
    addClasses(
        segmented, set,
        segmented.groups.emplace_back(LaunchGroup{unsigned(segmented.groups.size()), {}, {}}));
  }
  unsigned joined = 0;
  for (const auto& set : riding) {
    if (host &&
        segmented.groups[*host].signatureClasses.size() + set.size() <= kMaxSignaturesPerPack) {
      addClasses(segmented, set, segmented.groups[*host]);
      joined += unsigned(set.size());
      continue;
    }
    addClasses(
        segmented, set,
        segmented.groups.emplace_back(LaunchGroup{unsigned(segmented.groups.size()), {}, {}}));
  }
  segmented.notes.push_back(fmt::format(
      "batched: one launch per signature class; {} components in {} classes give {} launches",
      segmented.components.size(), segmented.signatureClasses.size(), segmented.groups.size()));
  if (joined)
    segmented.notes.push_back(fmt::format(
        "auto, with several phases: {} class{} of 0-d programs (values computed from reduction "
        "results) join{} the launch of class {}: one element of work needs no launch of its own",
        joined, joined == 1 ? "" : "es", joined == 1 ? "s" : "",
        segmented.groups[*host].signatureClasses.front()));
}

/// Up to kMaxSignaturesPerPack classes per launch, classes that share a launch together (a
/// set of more is one launch of its own).
void groupPacked(SegmentedPhase& segmented) {
  for (const auto& set : classSets(segmented)) {
    if (segmented.groups.empty() ||
        segmented.groups.back().signatureClasses.size() + set.size() > kMaxSignaturesPerPack)
      segmented.groups.push_back({unsigned(segmented.groups.size()), {}, {}});
    addClasses(segmented, set, segmented.groups.back());
  }
  segmented.notes.push_back(fmt::format(
      "packed: up to {} signature classes per kernel, each block running one member's body; "
      "{} classes give {} launches",
      kMaxSignaturesPerPack, segmented.signatureClasses.size(), segmented.groups.size()));
}

/// One line per connected subgraph split by shape (segmenter.md §2.4), and one per launch
/// unit split by the way it reduces (§2.5).
void explainSplits(SegmentedPhase& segmented) {
  std::vector<llvm::ArrayRef<Component>> units = launchUnits(segmented);
  for (size_t first = 0; first < units.size();) {
    size_t end = first + 1;
    while (end < units.size() && units[end].front().subgraph == units[first].front().subgraph)
      ++end;
    if (end - first > 1) {
      std::vector<std::string> parts;
      for (size_t u = first; u < end; ++u)
        parts.push_back(
            fmt::format("{} {}", units[u].front().id, formatExtents(units[u].front().domain)));
      segmented.notes.push_back(fmt::format(
          "a subgraph writes tensors of {} shapes: components {}, one kernel body each, each "
          "recomputing the values it shares",
          end - first, fmt::join(parts, ", ")));
    }
    first = end;
  }
  for (llvm::ArrayRef<Component> unit : units) {
    if (unit.size() == 1)
      continue;
    std::vector<std::string> parts;
    for (const Component& component : unit)
      parts.push_back(fmt::format("{} {}", component.id, reductionWay(component)));
    segmented.notes.push_back(fmt::format(
        "a subgraph reduces in {} ways: components {}, one body each (a body reduces one way) "
        "in one launch, each recomputing the values it shares",
        unit.size(), fmt::join(parts, ", ")));
  }
}

void explainLifting(SegmentedPhase& segmented) {
  for (const SignatureClass& signature : segmented.signatureClasses)
    for (const LiftedConstant& lifted : signature.lifted) {
      std::string values;
      for (size_t i = 0; i < lifted.values.size() && i < 4; ++i)
        values += (i ? ", " : "") + formatConstant(lifted.values[i]);
      if (lifted.values.size() > 4)
        values += ", ...";
      segmented.notes.push_back(fmt::format(
          "signature class {}: constant #{} ({}) differs between members ({}); lifted into "
          "the member table",
          signature.id, lifted.position, shortName(lifted.dtype).str(), values));
    }
}

} // namespace

size_t SegmentedFusion::numLaunches() const {
  size_t launches = 0;
  for (const SegmentedPhase& phase : phases)
    launches += phase.numLaunches();
  return launches;
}

size_t SegmentedFusion::numComponents() const {
  size_t components = 0;
  for (const SegmentedPhase& phase : phases)
    components += phase.components.size();
  return components;
}

namespace {

/// Groups the components of one phase into launches under `mode` (a concrete one).
SegmentedPhase segmentPhase(const Fusion& fusion, unsigned index, unsigned count,
                            std::vector<Component> components, SegmentationMode requested,
                            SegmentationMode mode) {
  SegmentedPhase segmented;
  segmented.fusion = &fusion;
  segmented.index = index;
  segmented.name = count == 1 ? fusion.name() : fmt::format("{}_phase{}", fusion.name(), index + 1);
  segmented.mode = mode;
  segmented.components = std::move(components);
  segmented.signatureClasses = classifySignatures(segmented.components);
  segmented.classOfComponent.resize(segmented.components.size());
  for (const SignatureClass& signature : segmented.signatureClasses)
    for (unsigned member : signature.members)
      segmented.classOfComponent[member] = signature.id;
  segmented.aliasPlans = planAliases(segmented.components);
  if (requested == SegmentationMode::Auto)
    segmented.notes.push_back(
        "auto chose batched: the fewest launches whose kernels each run one body; use "
        "packed to merge classes further, per-component for one kernel per component");
  switch (mode) {
  case SegmentationMode::PerComponent:
    groupPerComponent(segmented);
    break;
  case SegmentationMode::Packed:
    groupPacked(segmented);
    break;
  default:
    // In a fusion of several phases, the 0-d programs that compute from reduction results
    // ride in a launch with elements.
    groupBatched(segmented, requested == SegmentationMode::Auto && count > 1);
    break;
  }
  explainSplits(segmented);
  explainLifting(segmented);
  return segmented;
}

} // namespace

SegmentedFusion segment(const Fusion& fusion, const SegmentOptions& options) {
  FusionComponents found = options.components ? *options.components : findComponents(fusion);
  SegmentedFusion segmented;
  segmented.fusion = &fusion;
  segmented.requestedMode = options.mode;
  segmented.mode =
      options.mode == SegmentationMode::Auto ? SegmentationMode::Batched : options.mode;
  unsigned count = unsigned(found.ofPhase.size());
  for (unsigned phase = 0; phase < count; ++phase)
    segmented.phases.push_back(segmentPhase(fusion, phase, count, std::move(found.ofPhase[phase]),
                                            options.mode, segmented.mode));
  segmented.kept = std::move(found.phases.kept);
  segmented.notes = std::move(found.phases.notes);
  return segmented;
}

} // namespace widefuse
