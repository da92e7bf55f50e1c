#include "segmenter/segment_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace widefuse {
namespace {

llvm::StringRef resolutionName(HazardResolution resolution) {
  return resolution == HazardResolution::InPlace ? "in_place" : "deferred_write";
}

/// "p0 [4, 8], p1 [7], ... (N more)": members of a group, capped for long lists.
std::string describeMembers(const SegmentedFusion& segmented,
                            const std::vector<unsigned>& members) {
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

std::string formatSegmentedFusion(const SegmentedFusion& segmented) {
  std::string text =
      fmt::format("segments of fusion '{}' (mode {}, requested {}): {} components, {} signature "
                  "classes, {} launches\n",
                  segmented.fusion->name(), modeName(segmented.mode).str(),
                  modeName(segmented.requestedMode).str(), segmented.components.size(),
                  segmented.signatureClasses.size(), segmented.numLaunches());
  for (const LaunchGroup& group : segmented.groups) {
    std::string classes;
    for (unsigned id : group.signatureClasses)
      classes += fmt::format("{}{}", classes.empty() ? "" : ", ", id);
    text += fmt::format("  group {}: class {}; {} members: {}\n", group.id, classes,
                        group.members.size(), describeMembers(segmented, group.members));
  }
  for (const SignatureClass& signature : segmented.signatureClasses) {
    const Component& first = segmented.components[signature.members.front()];
    text += fmt::format("  class {} ({:016x}): {} expressions, {} inputs, {} lifted constants\n",
                        signature.id, signature.key.hash(), first.exprs.size(), first.inputs.size(),
                        signature.lifted.size());
  }
  size_t deferred = 0;
  for (const HazardPlan& alias : segmented.aliasPlans)
    deferred += alias.resolution == HazardResolution::DeferredWrite;
  text += fmt::format("  copies: {} in place, {} deferred writes\n",
                      segmented.aliasPlans.size() - deferred, deferred);
  constexpr size_t kShownCopies = 8;
  for (size_t i = 0; i < segmented.aliasPlans.size() && i < kShownCopies; ++i) {
    const HazardPlan& alias = segmented.aliasPlans[i];
    text += fmt::format("    copy_({}, {}): {}: {}\n", alias.alias.source->name(),
                        alias.alias.destination->name(), resolutionName(alias.resolution).str(),
                        alias.reason);
  }
  if (segmented.aliasPlans.size() > kShownCopies)
    text += fmt::format("    ... ({} more)\n", segmented.aliasPlans.size() - kShownCopies);
  text += "  decisions:\n";
  for (const std::string& decision : segmented.decisions)
    text += "    - " + decision + "\n";
  return text;
}

nlohmann::json segmentedFusionToJson(const SegmentedFusion& segmented) {
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
                      {"reason", alias.reason}});
  return {{"fusion", segmented.fusion->name()},
          {"mode", modeName(segmented.mode).str()},
          {"requested_mode", modeName(segmented.requestedMode).str()},
          {"launches", segmented.numLaunches()},
          {"components", segmented.components.size()},
          {"groups", groups},
          {"signature_classes", classes},
          {"copies", copies},
          {"decisions", segmented.decisions}};
}

} // namespace widefuse
