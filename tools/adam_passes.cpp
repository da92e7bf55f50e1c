#include "tools/adam_passes.h"

#include "tools/compile_report.h"

#include "runtime/cubin_cache.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"

#include <nlohmann/json.hpp>

namespace widefuse {

AdamPasses::AdamPasses(const Fusion& fusion, SegmentationMode mode) : fusion_(fusion) {
  // segment() takes fusions without values that read a reduction; the others are cut first.
  if (needsPasses(fusion))
    plan_ = splitPasses(fusion);
  size_t count = plan_ ? plan_->passes.size() : 1;
  for (size_t k = 0; k < count; ++k)
    segmented_.push_back(std::make_shared<const SegmentedFusion>(segment(this->fusion(k), {mode})));
}

const Fusion& AdamPasses::fusion(size_t k) const {
  return plan_ ? *plan_->passes[k].fusion : fusion_;
}

size_t AdamPasses::numLaunches() const {
  size_t launches = 0;
  for (const auto& segmented : segmented_)
    launches += segmented->numLaunches();
  return launches;
}

size_t AdamPasses::numComponents() const {
  size_t components = 0;
  for (const auto& segmented : segmented_)
    components += segmented->components.size();
  return components;
}

nlohmann::json AdamPasses::segmentsJson() const {
  if (size() == 1)
    return segmentedFusionToJson(*segmented_.front());
  nlohmann::json passes = nlohmann::json::array();
  for (const auto& segmented : segmented_)
    passes.push_back(segmentedFusionToJson(*segmented));
  return passes;
}

std::vector<CompiledFusion> compilePasses(const AdamPasses& passes,
                                          const FusionCompileOptions& options) {
  std::vector<CompiledFusion> compiled;
  for (size_t k = 0; k < passes.size(); ++k) {
    FusionCompileOptions passOptions = options;
    passOptions.mode = passes.segmented(k).requestedMode;
    // The segmentation is shared, not redone.
    compiled.push_back(compileFusion(passes.fusion(k), passOptions, CubinCache::global(), nullptr,
                                     passes.sharedSegmented(k)));
  }
  return compiled;
}

nlohmann::json compilePassesJson(const std::vector<CompiledFusion>& compiled) {
  nlohmann::json report = compileReportJson(compiled.front());
  for (size_t k = 1; k < compiled.size(); ++k) {
    nlohmann::json pass = compileReportJson(compiled[k]);
    report["launches"] = report["launches"].get<size_t>() + pass["launches"].get<size_t>();
    report["kernels"] = report["kernels"].get<size_t>() + pass["kernels"].get<size_t>();
    report["compile_ms"] = report["compile_ms"].get<double>() + pass["compile_ms"].get<double>();
    for (const nlohmann::json& kernel : pass["kernel_stats"])
      report["kernel_stats"].push_back(kernel);
  }
  return report;
}

size_t launchesOf(const std::vector<std::shared_ptr<const CompiledFusion>>& compiled) {
  size_t launches = 0;
  for (const auto& pass : compiled)
    if (pass)
      launches += pass->numLaunches();
  return launches;
}

} // namespace widefuse
