#include "segmenter/segment_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace widefuse {
namespace {

llvm::StringRef resolutionName(HazardResolution resolution) {
  return resolution == HazardResolution::InPlace ? "in_place" : "deferred_write";
}

/// "p0 [4, 8], p1 [7], ... (N more)": members of a group, capped for long lists.
std::string describeMembers(const SegmentedPhase& segmented, const std::vector<unsigned>& members) {
  constexpr size_t kShown = 6;
  std::string text;
  for (size_t i = 0; i < members.size() && i < kShown; ++i) {
    const Component& component = segmented.components[members[i]];
    text += fmt::format("{}{} {}", i ? ", " : "", componentName(component),
                        formatExtents(component.domain));
  }
  if (members.size() > kShown)
    text += fmt::format(", ... ({} more)", members.size() - kShown);
  return text;
}

} // namespace

std::string componentName(const Component& component) {
  if (!component.aliases.empty())
    return component.aliases.front().destination->name();
  if (!component.outputs.empty())
    return component.outputs.front()->name();
  return fmt::format("component{}", component.id);
}

namespace {

/// One phase's groups, classes, copies and notes, each line after `indent`.
std::string formatPhase(const SegmentedPhase& segmented, const std::string& indent) {
  std::string text;
  for (const LaunchGroup& group : segmented.groups) {
    std::string classes;
    for (unsigned id : group.signatureClasses)
      classes += fmt::format("{}{}", classes.empty() ? "" : ", ", id);
    text += fmt::format("{}group {}: class {}; {} members: {}\n", indent, group.id, classes,
                        group.members.size(), describeMembers(segmented, group.members));
  }
  for (const SignatureClass& signature : segmented.signatureClasses) {
    const Component& first = segmented.components[signature.members.front()];
    text += fmt::format("{}class {} ({:016x}): {} expressions, {} inputs, {} lifted constants\n",
                        indent, signature.id, signature.key.hash(), first.exprs.size(),
                        first.inputs.size(), signature.lifted.size());
  }
  size_t deferred = 0;
  for (const HazardPlan& alias : segmented.aliasPlans)
    deferred += alias.resolution == HazardResolution::DeferredWrite;
  text += fmt::format("{}copies: {} in place, {} deferred writes\n", indent,
                      segmented.aliasPlans.size() - deferred, deferred);
  constexpr size_t kShownCopies = 8;
  for (size_t i = 0; i < segmented.aliasPlans.size() && i < kShownCopies; ++i) {
    const HazardPlan& alias = segmented.aliasPlans[i];
    text += fmt::format("{}  copy_({}, {}): {}: {}\n", indent, alias.alias.source->name(),
                        alias.alias.destination->name(), resolutionName(alias.resolution).str(),
                        alias.note);
  }
  if (segmented.aliasPlans.size() > kShownCopies)
    text += fmt::format("{}  ... ({} more)\n", indent, segmented.aliasPlans.size() - kShownCopies);
  text += indent + "notes:\n";
  for (const std::string& decision : segmented.notes)
    text += indent + "  - " + decision + "\n";
  return text;
}

nlohmann::json phaseToJson(const SegmentedPhase& segmented) {
  using nlohmann::json;
  json groups = json::array();
  for (const LaunchGroup& group : segmented.groups) {
    json members = json::array();
    for (unsigned id : group.members)
      members.push_back(componentName(segmented.components[id]));
    groups.push_back(
        {{"id", group.id}, {"signature_classes", group.signatureClasses}, {"members", members}});
  }
  json classes = json::array();
  for (const SignatureClass& signature : segmented.signatureClasses) {
    json lifted = json::array();
    for (const LiftedConstant& constant : signature.lifted) {
      json values = json::array();
      for (const ConstantValue& value : constant.values)
        values.push_back(formatConstant(value));
      lifted.push_back({{"position", constant.position},
                        {"dtype", shortName(constant.dtype).str()},
                        {"values", values}});
    }
    classes.push_back({{"id", signature.id},
                       {"hash", fmt::format("{:016x}", signature.key.hash())},
                       {"members", signature.members.size()},
                       {"lifted_constants", lifted}});
  }
  json copies = json::array();
  for (const HazardPlan& alias : segmented.aliasPlans)
    copies.push_back({{"component", componentName(segmented.components[alias.component])},
                      {"source", alias.alias.source->name()},
                      {"destination", alias.alias.destination->name()},
                      {"resolution", resolutionName(alias.resolution).str()},
                      {"note", alias.note}});
  return {{"phase", segmented.index + 1},
          {"name", segmented.name},
          {"launches", segmented.numLaunches()},
          {"components", segmented.components.size()},
          {"groups", groups},
          {"signature_classes", classes},
          {"copies", copies},
          {"notes", segmented.notes}};
}

} // namespace

std::string formatSegmentedFusion(const SegmentedFusion& segmented) {
  size_t classes = 0;
  for (const SegmentedPhase& phase : segmented.phases)
    classes += phase.signatureClasses.size();
  std::string phases =
      segmented.phases.size() == 1 ? "" : fmt::format("{} phases, ", segmented.phases.size());
  std::string text = fmt::format(
      "segments of fusion '{}' (mode {}, requested {}): {}{} components, {} signature classes, "
      "{} launches\n",
      segmented.fusion->name(), modeName(segmented.mode).str(),
      modeName(segmented.requestedMode).str(), phases, segmented.numComponents(), classes,
      segmented.numLaunches());
  if (segmented.phases.size() == 1)
    return text + formatPhase(segmented.phases.front(), "  ");
  for (const SegmentedPhase& phase : segmented.phases)
    text += fmt::format("  phase {} ({}): {} components, {} signature classes, {} launches\n",
                        phase.index + 1, phase.name, phase.components.size(),
                        phase.signatureClasses.size(), phase.numLaunches()) +
            formatPhase(phase, "    ");
  std::string kept;
  for (const KeptResult& result : segmented.kept)
    kept += fmt::format("{}'{}'", kept.empty() ? "" : ", ", result.value->name());
  text += fmt::format("  kept between phases: {}\n", kept.empty() ? "nothing" : kept);
  text += "  notes:\n";
  for (const std::string& decision : segmented.notes)
    text += "    - " + decision + "\n";
  return text;
}

nlohmann::json segmentedFusionToJson(const SegmentedFusion& segmented) {
  using nlohmann::json;
  json phases = json::array();
  for (const SegmentedPhase& phase : segmented.phases)
    phases.push_back(phaseToJson(phase));
  json kept = json::array();
  for (const KeptResult& result : segmented.kept)
    kept.push_back(result.value->name());
  return {{"fusion", segmented.fusion->name()},
          {"mode", modeName(segmented.mode).str()},
          {"requested_mode", modeName(segmented.requestedMode).str()},
          {"launches", segmented.numLaunches()},
          {"components", segmented.numComponents()},
          {"phases", phases},
          {"kept", kept},
          {"notes", segmented.notes}};
}

} // namespace widefuse
