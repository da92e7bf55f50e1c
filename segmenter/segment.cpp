#include "segmenter/segment.h"

#include "ir/error.h"
#include "segmenter/components.h"
#include "segmenter/hazards.h"
#include "segmenter/signatures.h"

#include <fmt/format.h>

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

void groupPerComponent(SegmentedFusion& plan) {
  for (const Component& component : plan.components)
    plan.groups.push_back(
        {unsigned(plan.groups.size()), {plan.classOfComponent[component.id]}, {component.id}});
  plan.decisions.push_back(fmt::format(
      "per-component: one kernel per component ({} kernels); components of one signature "
      "share a compiled body ({} bodies)",
      plan.groups.size(), plan.signatureClasses.size()));
}

void groupBatched(SegmentedFusion& plan) {
  for (const SignatureClass& signature : plan.signatureClasses)
    plan.groups.push_back({unsigned(plan.groups.size()),
                           {signature.id},
                           {signature.members.begin(), signature.members.end()}});
  plan.decisions.push_back(fmt::format(
      "batched: one kernel per signature class; {} components in {} classes give {} kernels",
      plan.components.size(), plan.signatureClasses.size(), plan.groups.size()));
}

void groupPacked(SegmentedFusion& plan) {
  for (const SignatureClass& signature : plan.signatureClasses) {
    if (plan.groups.empty() || plan.groups.back().signatureClasses.size() == kMaxSignaturesPerPack)
      plan.groups.push_back({unsigned(plan.groups.size()), {}, {}});
    KernelGroup& group = plan.groups.back();
    group.signatureClasses.push_back(signature.id);
    group.members.insert(group.members.end(), signature.members.begin(), signature.members.end());
  }
  for (KernelGroup& group : plan.groups)
    llvm::sort(group.members);
  plan.decisions.push_back(fmt::format(
      "packed: up to {} signature classes per kernel, each block running one member's body; "
      "{} classes give {} kernels",
      kMaxSignaturesPerPack, plan.signatureClasses.size(), plan.groups.size()));
}

void explainLifting(SegmentedFusion& plan) {
  for (const SignatureClass& signature : plan.signatureClasses)
    for (const LiftedConstant& lifted : signature.lifted) {
      std::string values;
      for (size_t i = 0; i < lifted.values.size() && i < 4; ++i)
        values += (i ? ", " : "") + formatConstant(lifted.values[i]);
      if (lifted.values.size() > 4)
        values += ", ...";
      plan.decisions.push_back(fmt::format(
          "signature class {}: constant #{} ({}) differs between members ({}); lifted into "
          "the member table",
          signature.id, lifted.position, shortName(lifted.dtype).str(), values));
    }
}

} // namespace

SegmentedFusion segment(const Fusion& fusion, const SegmentOptions& options) {
  SegmentedFusion plan;
  plan.fusion = &fusion;
  plan.requestedMode = options.mode;
  plan.components = findComponents(fusion);
  plan.signatureClasses = classifySignatures(plan.components);
  plan.classOfComponent.resize(plan.components.size());
  for (const SignatureClass& signature : plan.signatureClasses)
    for (unsigned member : signature.members)
      plan.classOfComponent[member] = signature.id;
  plan.aliasPlans = planAliases(plan.components);

  plan.mode = options.mode;
  if (options.mode == SegmentationMode::Auto) {
    plan.mode = SegmentationMode::Batched;
    plan.decisions.push_back(
        "auto chose batched: the fewest launches whose kernels each run one body; use "
        "packed to merge classes further, per-component for one kernel per component");
  }
  switch (plan.mode) {
  case SegmentationMode::PerComponent:
    groupPerComponent(plan);
    break;
  case SegmentationMode::Packed:
    groupPacked(plan);
    break;
  default:
    groupBatched(plan);
    break;
  }
  explainLifting(plan);
  return plan;
}

} // namespace widefuse
