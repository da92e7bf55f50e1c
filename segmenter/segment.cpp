#include "segmenter/segment.h"

#include "ir/error.h"
#include "segmenter/components.h"
#include "segmenter/hazards.h"
#include "segmenter/signatures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

void groupPerComponent(SegmentedPhase& segmented) {
  for (const Component& component : segmented.components)
    segmented.groups.push_back({unsigned(segmented.groups.size()),
                                {segmented.classOfComponent[component.id]},
                                {component.id}});
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

/// One launch per signature class; with `riders`, the classes of 0-d programs join the launch
/// of the first class with elements instead (as a packed kernel's further bodies).
void groupBatched(SegmentedPhase& segmented, bool riders) {
  std::vector<unsigned> riding;
  std::optional<unsigned> host;
  for (const SignatureClass& signature : segmented.signatureClasses) {
    bool zeroD = isZeroDimensionalClass(segmented, signature);
    if (riders && zeroD) {
      riding.push_back(signature.id);
      continue;
    }
    if (!zeroD && !host)
      host = unsigned(segmented.groups.size());
    segmented.groups.push_back({unsigned(segmented.groups.size()),
                                {signature.id},
                                {signature.members.begin(), signature.members.end()}});
  }
  unsigned joined = 0;
  for (unsigned id : riding) {
    const SignatureClass& signature = segmented.signatureClasses[id];
    if (host && segmented.groups[*host].signatureClasses.size() < kMaxSignaturesPerPack) {
      LaunchGroup& group = segmented.groups[*host];
      group.signatureClasses.push_back(id);
      group.members.insert(group.members.end(), signature.members.begin(), signature.members.end());
      llvm::sort(group.members);
      ++joined;
      continue;
    }
    segmented.groups.push_back({unsigned(segmented.groups.size()),
                                {id},
                                {signature.members.begin(), signature.members.end()}});
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

void groupPacked(SegmentedPhase& segmented) {
  for (const SignatureClass& signature : segmented.signatureClasses) {
    if (segmented.groups.empty() ||
        segmented.groups.back().signatureClasses.size() == kMaxSignaturesPerPack)
      segmented.groups.push_back({unsigned(segmented.groups.size()), {}, {}});
    LaunchGroup& group = segmented.groups.back();
    group.signatureClasses.push_back(signature.id);
    group.members.insert(group.members.end(), signature.members.begin(), signature.members.end());
  }
  for (LaunchGroup& group : segmented.groups)
    llvm::sort(group.members);
  segmented.notes.push_back(fmt::format(
      "packed: up to {} signature classes per kernel, each block running one member's body; "
      "{} classes give {} launches",
      kMaxSignaturesPerPack, segmented.signatureClasses.size(), segmented.groups.size()));
}

/// One line per connected subgraph split by shape (segmenter.md §2.4).
void explainSplits(SegmentedPhase& segmented) {
  const auto& components = segmented.components;
  for (size_t first = 0; first < components.size();) {
    size_t end = first + 1;
    while (end < components.size() && components[end].subgraph == components[first].subgraph)
      ++end;
    if (end - first > 1) {
      std::vector<std::string> parts;
      for (size_t c = first; c < end; ++c)
        parts.push_back(fmt::format("{} {}", c, formatExtents(components[c].domain)));
      segmented.notes.push_back(fmt::format(
          "a subgraph writes tensors of {} shapes: components {}, one kernel body each, each "
          "recomputing the values it shares",
          end - first, fmt::join(parts, ", ")));
    }
    first = end;
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
